package transport

import (
	"net/http"

	"github.com/loci-dev/loci/fault"
)

// searchRegistry is being built.
func (s *Server) searchRegistry(w http.ResponseWriter, r *http.Request) error {
	return fault.New(fault.ServerFailed, "this route is being built", "wait for the next loci")
}

// showRegistrySource is being built.
func (s *Server) showRegistrySource(w http.ResponseWriter, r *http.Request) error {
	return fault.New(fault.ServerFailed, "this route is being built", "wait for the next loci")
}

// installFromRegistry is being built.
func (s *Server) installFromRegistry(w http.ResponseWriter, r *http.Request) error {
	return fault.New(fault.ServerFailed, "this route is being built", "wait for the next loci")
}

// registryUpdates is being built.
func (s *Server) registryUpdates(w http.ResponseWriter, r *http.Request) error {
	return fault.New(fault.ServerFailed, "this route is being built", "wait for the next loci")
}

// updateFromRegistry is being built.
func (s *Server) updateFromRegistry(w http.ResponseWriter, r *http.Request) error {
	return fault.New(fault.ServerFailed, "this route is being built", "wait for the next loci")
}
