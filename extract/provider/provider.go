// Package provider names the extraction providers (the configuration's
// extraction.provider). It is a pure enum apart from extract, whose
// providers run programs and speak HTTP, so that the configuration,
// which the CLI links, validates the setting without linking them.
package provider

// Name is an extraction provider's name.
type Name string

// The extraction providers.
const (
	// Heuristic is built in and offline (extract.Heuristic).
	Heuristic Name = "heuristic"
	// Command runs a program reading JSON on stdin and writing JSON, no
	// shell (extract.Command).
	Command Name = "command"
	// HTTP posts the same JSON to an endpoint (extract.HTTP).
	HTTP Name = "http"
)

// Names are the extraction providers, in the order the configuration's
// messages name them. A configuration may also name none ("").
var Names = []Name{Heuristic, Command, HTTP}
