package cli

import (
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/project"
)

// getenv reads the environment the commands see ("" when unset).
func (a *app) getenv(key string) string {
	v, _ := a.env(key)
	return v
}

// project is the project scope of the working directory (.loci.toml, or
// the file LOCI_PROJECT names), read once: the zero Scope when there is
// none, loci::project::invalid naming the file and key when it is bad.
func (a *app) project() (project.Scope, error) {
	if !a.scopeRead {
		dir, err := os.Getwd()
		if err != nil {
			dir = "."
		}
		a.scope, a.scopeErr = project.Find(dir, a.getenv)
		a.scopeRead = true
	}
	return a.scope, a.scopeErr
}

// optionalPlace reads a wing or room from a flag, else the environment,
// else the project file; "" when none gives one. A bad project file is
// its error only when it is needed (no flag, no environment).
func (a *app) optionalPlace(flag, env, what string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if v, ok := a.env(env); ok && strings.TrimSpace(v) != "" {
		return v, nil
	}
	scope, err := a.project()
	if err != nil {
		return "", err
	}
	if what == "room" {
		return scope.Room, nil
	}
	return scope.Wing, nil
}

// effectiveMode is the memory mode of a hook run in scope: --mode, else
// LOCI_MODE, else the project file's ("" leaves the daemon's default).
func (a *app) effectiveMode(scope project.Scope) string {
	if a.mode != "" {
		return a.mode
	}
	if v, ok := a.env("LOCI_MODE"); ok && v != "" {
		return v
	}
	return scope.Mode
}

// filterWing is the wing a command whose --wing is optional (search,
// recall, wake-up) narrows to: --wing when given (--wing= means every
// wing), else the project file's wing ("" when none: every wing).
func (a *app) filterWing(c *cobra.Command, flag string) (string, error) {
	if c.Flags().Changed("wing") {
		return flag, nil
	}
	scope, err := a.project()
	if err != nil {
		return "", err
	}
	return scope.Wing, nil
}

// projectState is the project scope `loci status` reports: the file that
// applies with its settings, or the error of a bad one.
type projectState struct {
	// File is the project file that applies; absent when none does.
	File string `json:"file,omitempty"`
	// Wing, Room and Mode are its settings.
	Wing string `json:"wing,omitempty"`
	Room string `json:"room,omitempty"`
	Mode string `json:"mode,omitempty"`
	// Error is loci::project::invalid when the file is bad.
	Error *fault.Body `json:"error,omitempty"`
}

// projectStatus reads a scope, or its error, for status.
func projectStatus(scope project.Scope, err error) projectState {
	if err != nil {
		b := fault.As(err).Body()
		return projectState{Error: &b}
	}
	return projectState{File: scope.File, Wing: scope.Wing, Room: scope.Room, Mode: scope.Mode}
}

// line is the human form: the file and its settings, none, or the error.
func (p projectState) line() string {
	if p.Error != nil {
		return "INVALID: " + p.Error.Error + " (" + p.Error.Code + ")"
	}
	if p.File == "" {
		return "none (no " + project.FileName + " here or in a parent; " + project.EnvVar + " unset)"
	}
	var set []string
	for _, kv := range [][2]string{{"wing", p.Wing}, {"room", p.Room}, {"mode", p.Mode}} {
		if kv[1] != "" {
			set = append(set, kv[0]+" "+kv[1])
		}
	}
	if len(set) == 0 {
		set = []string{"no settings"}
	}
	return p.File + " (" + strings.Join(set, ", ") + ")"
}
