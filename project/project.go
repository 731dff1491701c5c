// Package project reads a project's scope: the .loci.toml found in the
// working directory or a parent (or the file LOCI_PROJECT names), which
// sets the default wing, room and memory mode of the CLI and the agents'
// hooks run in that project, and the wing the integrations' instructions
// name.
package project

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"

	"github.com/pelletier/go-toml/v2"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/names"
)

// FileName is the project scope file looked for in a directory and its
// parents.
const FileName = ".loci.toml"

// EnvVar names a project scope file (or a directory holding one) directly,
// instead of the search from the working directory.
const EnvVar = "LOCI_PROJECT"

// maxFileBytes bounds a scope file: it holds three short keys.
const maxFileBytes = 64 << 10

// Scope is a project's defaults. The zero Scope is no project: every field
// empty, the daemon's own defaults apply.
type Scope struct {
	// File is the absolute path of the scope file that applies; "" when
	// none does.
	File string `json:"file,omitempty"`
	// Wing is the project's default wing.
	Wing string `json:"wing,omitempty"`
	// Room is the project's default room.
	Room string `json:"room,omitempty"`
	// Mode is the project's memory mode: full, read_only or disabled; ""
	// leaves the daemon's default.
	Mode string `json:"mode,omitempty"`
}

// settings are the keys a scope file takes, each a string.
var settings = []string{"wing", "room", "mode"}

// Find returns the scope for a command run in dir: the file getenv(EnvVar)
// names if set, else the nearest FileName in dir or a parent. No file is
// the zero Scope and no error; a file that cannot be read or holds a bad
// key is loci::project::invalid naming the file and the key.
func Find(dir string, getenv func(string) string) (Scope, error) {
	if named := getenv(EnvVar); named != "" {
		path, err := filepath.Abs(named)
		if err != nil {
			return Scope{}, invalid(named, "", err.Error())
		}
		if fi, err := os.Stat(path); err == nil && fi.IsDir() {
			path = filepath.Join(path, FileName)
		}
		return Load(path)
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return Scope{}, nil
	}
	for {
		path := filepath.Join(dir, FileName)
		if _, err := os.Lstat(path); err == nil {
			return Load(path)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return Scope{}, invalid(path, "", err.Error())
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return Scope{}, nil
		}
		dir = parent
	}
}

// Load reads one scope file. It never blocks: anything but a regular file
// (a FIFO, a device, a directory) is refused before it is opened, the open
// does not wait for a FIFO's writer should one be swapped in after that
// check, and kernel files (under /proc or /sys) are refused, as is a file
// whose read fails.
func Load(path string) (Scope, error) {
	if fi, err := os.Stat(path); err != nil {
		return Scope{}, invalid(path, "", err.Error())
	} else if !fi.Mode().IsRegular() || kernelFile(path) {
		return Scope{}, invalid(path, "", "not a regular file")
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return Scope{}, invalid(path, "", err.Error())
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return Scope{}, invalid(path, "", "not a regular file")
	}
	b, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return Scope{}, invalid(path, "", "cannot be read: "+err.Error())
	}
	if len(b) > maxFileBytes {
		return Scope{}, invalid(path, "", fmt.Sprintf("larger than %d bytes", maxFileBytes))
	}
	var doc map[string]any
	if err := toml.Unmarshal(b, &doc); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			return Scope{}, invalid(path, strings.Join(de.Key(), "."), fmt.Sprintf("line %d, column %d: %s", row, col, de.Error()))
		}
		return Scope{}, invalid(path, "", err.Error())
	}
	keys := make([]string, 0, len(doc))
	for k := range doc {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	raw := map[string]string{}
	for _, k := range keys {
		if !slices.Contains(settings, k) {
			return Scope{}, invalid(path, k, "is not a project setting (wing, room and mode are)")
		}
		v, ok := doc[k].(string)
		if !ok {
			return Scope{}, invalid(path, "", k+" must be a string (a quoted name)")
		}
		raw[k] = v
	}
	abs, _ := filepath.Abs(path)
	s := Scope{File: abs, Wing: raw["wing"], Room: raw["room"], Mode: raw["mode"]}
	if s.Wing != "" {
		if p := names.Place(s.Wing); p != "" {
			return Scope{}, invalid(path, "wing", string(p))
		}
	}
	if s.Room != "" {
		if p := names.Place(s.Room); p != "" {
			return Scope{}, invalid(path, "room", string(p))
		}
	}
	switch s.Mode {
	case "", "full", "read_only", "disabled":
	default:
		return Scope{}, invalid(path, "mode", fmt.Sprintf("%q is not a memory mode (full, read_only or disabled)", s.Mode))
	}
	return s, nil
}

// kernelFile reports a path under /proc or /sys, symbolic links followed:
// such files stat as regular and empty but are the kernel's (reading
// /proc/self/mem fails, others change under the reader), never a scope.
func kernelFile(path string) bool {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	for _, dir := range []string{"/proc", "/sys"} {
		if path == dir || strings.HasPrefix(path, dir+"/") {
			return true
		}
	}
	return false
}

// invalid is loci::project::invalid naming the file and, when known, the
// key.
func invalid(path, key, why string) error {
	where := path
	if key != "" {
		where = path + ": " + key
	}
	return fault.Newf(fault.ProjectInvalid,
		fmt.Sprintf("fix or remove %s (it takes wing, room and mode), or point %s at another file", path, EnvVar),
		"project scope %s: %s", where, why)
}
