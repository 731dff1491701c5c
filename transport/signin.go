package transport

import (
	"net/http"

	"github.com/loci-dev/loci/fault"
)

// startPackageSignIn is being built.
func (s *Server) startPackageSignIn(w http.ResponseWriter, r *http.Request) error {
	return fault.New(fault.ServerFailed, "this route is being built", "wait for the next loci")
}

// waitPackageSignIn is being built.
func (s *Server) waitPackageSignIn(w http.ResponseWriter, r *http.Request) error {
	return fault.New(fault.ServerFailed, "this route is being built", "wait for the next loci")
}

// startConfigSignIn is being built.
func (s *Server) startConfigSignIn(w http.ResponseWriter, r *http.Request) error {
	return fault.New(fault.ServerFailed, "this route is being built", "wait for the next loci")
}

// waitConfigSignIn is being built.
func (s *Server) waitConfigSignIn(w http.ResponseWriter, r *http.Request) error {
	return fault.New(fault.ServerFailed, "this route is being built", "wait for the next loci")
}
