package transport

import (
	"net/http"

	"github.com/loci-dev/loci/fault"
)

// listPlugins is being built.
func (s *Server) listPlugins(w http.ResponseWriter, r *http.Request) error {
	return fault.New(fault.ServerFailed, "this route is being built", "wait for the next loci")
}

// installPlugin is being built.
func (s *Server) installPlugin(w http.ResponseWriter, r *http.Request) error {
	return fault.New(fault.ServerFailed, "this route is being built", "wait for the next loci")
}

// previewPlugin is being built.
func (s *Server) previewPlugin(w http.ResponseWriter, r *http.Request) error {
	return fault.New(fault.ServerFailed, "this route is being built", "wait for the next loci")
}

// showPlugin is being built.
func (s *Server) showPlugin(w http.ResponseWriter, r *http.Request) error {
	return fault.New(fault.ServerFailed, "this route is being built", "wait for the next loci")
}

// removePlugin is being built.
func (s *Server) removePlugin(w http.ResponseWriter, r *http.Request) error {
	return fault.New(fault.ServerFailed, "this route is being built", "wait for the next loci")
}

// searchPluginRegistry is being built.
func (s *Server) searchPluginRegistry(w http.ResponseWriter, r *http.Request) error {
	return fault.New(fault.ServerFailed, "this route is being built", "wait for the next loci")
}

// showRegistryPlugin is being built.
func (s *Server) showRegistryPlugin(w http.ResponseWriter, r *http.Request) error {
	return fault.New(fault.ServerFailed, "this route is being built", "wait for the next loci")
}

// installPluginFromRegistry is being built.
func (s *Server) installPluginFromRegistry(w http.ResponseWriter, r *http.Request) error {
	return fault.New(fault.ServerFailed, "this route is being built", "wait for the next loci")
}
