package project

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/loci-dev/loci/fault"
)

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func noEnv(string) string { return "" }

// The nearest file in the directory or a parent applies; LOCI_PROJECT
// names one directly; no file is no project.
func TestFind(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "repo", FileName), "wing = \"shop\"\nroom = \"backend\"\nmode = \"read_only\"\n")
	write(t, filepath.Join(root, "repo", "sub", "deeper", "x.go"), "package x")
	write(t, filepath.Join(root, "other", "named.toml"), "wing = \"other\"\n")

	s, err := Find(filepath.Join(root, "repo", "sub", "deeper"), noEnv)
	if err != nil || s.Wing != "shop" || s.Room != "backend" || s.Mode != "read_only" || s.File != filepath.Join(root, "repo", FileName) {
		t.Fatalf("from a subdirectory: %+v %v", s, err)
	}
	env := func(k string) string {
		if k == EnvVar {
			return filepath.Join(root, "other", "named.toml")
		}
		return ""
	}
	if s, err := Find(filepath.Join(root, "repo"), env); err != nil || s.Wing != "other" {
		t.Fatalf("named by %s: %+v %v", EnvVar, s, err)
	}
	if s, err := Find(filepath.Join(root, "other"), noEnv); err != nil || s != (Scope{}) {
		t.Fatalf("no file: %+v %v", s, err)
	}
}

// A bad file is loci::project::invalid naming the file and the key.
func TestFindRefusesBadFiles(t *testing.T) {
	for name, tc := range map[string]struct{ text, key string }{
		"unknown key": {"wing = \"a\"\nwnig = \"b\"\n", "wnig"},
		"bad wing":    {"wing = \"a/b\"\n", "wing"},
		"bad room":    {"room = \"a\\nb\"\n", "room"},
		"bad mode":    {"mode = \"sometimes\"\n", "mode"},
		"not toml":    {"wing = \n", ""},
		"wrong type":  {"wing = 3\n", "wing"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, FileName)
			write(t, path, tc.text)
			_, err := Find(dir, noEnv)
			fe := fault.As(err)
			if err == nil || fe.Code != fault.ProjectInvalid || !strings.Contains(fe.Msg, path) || !strings.Contains(fe.Msg, tc.key) || fe.Help == "" {
				t.Fatalf("%q: %v", tc.text, err)
			}
		})
	}
	env := func(string) string { return "/nonexistent/loci/project.toml" }
	if _, err := Find(t.TempDir(), env); fault.As(err).Code != fault.ProjectInvalid {
		t.Fatalf("a missing named file: %v", err)
	}
}

// findWithin runs Find with a deadline, so a scope file that blocks its
// open fails the test instead of hanging it.
func findWithin(t *testing.T, dir string, getenv func(string) string) (Scope, error) {
	t.Helper()
	type result struct {
		s   Scope
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := Find(dir, getenv)
		done <- result{s, err}
	}()
	select {
	case r := <-done:
		return r.s, r.err
	case <-time.After(5 * time.Second):
		t.Fatalf("Find(%s) still blocked after 5s", dir)
		return Scope{}, nil
	}
}

// A FIFO, a device or a kernel file as the scope file is refused at once:
// opening a FIFO blocks until a writer comes, which hung every command
// below a directory anyone can write a .loci.toml into.
func TestFindRefusesFilesThatAreNotRegular(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no FIFOs")
	}
	root := t.TempDir()
	fifo := filepath.Join(root, FileName)
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(root, "repo", "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	refused := func(what string, s Scope, err error, path string) {
		t.Helper()
		fe := fault.As(err)
		if err == nil || fe.Code != fault.ProjectInvalid || !strings.Contains(fe.Msg, path) || !strings.Contains(fe.Msg, "not a regular file") {
			t.Fatalf("%s: %+v %v", what, s, err)
		}
	}
	s, err := findWithin(t, sub, noEnv)
	refused("a FIFO in a parent", s, err, fifo)
	named := func(path string) func(string) string {
		return func(k string) string {
			if k == EnvVar {
				return path
			}
			return ""
		}
	}
	s, err = findWithin(t, t.TempDir(), named(fifo))
	refused("a FIFO named by "+EnvVar, s, err, fifo)
	s, err = findWithin(t, t.TempDir(), named(root))
	refused("a directory whose .loci.toml is a FIFO", s, err, fifo)
	// Load itself never blocks either, whatever it is handed.
	if _, err := Load(fifo); fault.As(err).Code != fault.ProjectInvalid {
		t.Fatalf("Load of a FIFO: %v", err)
	}
	if runtime.GOOS == "linux" {
		for _, path := range []string{"/proc/self/mem", "/proc/self/status", "/sys/kernel/mm/transparent_hugepage/enabled", "/dev/null", "/dev/zero"} {
			if _, err := os.Stat(path); err != nil {
				continue
			}
			s, err := findWithin(t, t.TempDir(), named(path))
			refused(path, s, err, path)
		}
	}
}

// A value of the wrong type names the file, the key and what it takes, in
// words (not the decoder's struct field names).
func TestFindExplainsWrongTypes(t *testing.T) {
	for text, want := range map[string]string{
		"room = 5\n":              "room must be a string (a quoted name)",
		"wing = true\n":           "wing must be a string (a quoted name)",
		"[mode]\nx = \"a\"\n":     "mode must be a string (a quoted name)",
		"wing = \"a\"\nx = 1\n":   "x: is not a project setting (wing, room and mode are)",
		"[tools]\nx = \"a\"\n":    "tools: is not a project setting (wing, room and mode are)",
		"wing = [\"a\", \"b\"]\n": "wing must be a string (a quoted name)",
	} {
		t.Run(text, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, FileName)
			write(t, path, text)
			_, err := Find(dir, noEnv)
			fe := fault.As(err)
			if err == nil || fe.Code != fault.ProjectInvalid || !strings.Contains(fe.Msg, path) || !strings.Contains(fe.Msg, want) {
				t.Fatalf("%q: want %q in %v", text, want, err)
			}
			for _, internal := range []string{"struct", "project.file", "…", "decode"} {
				if strings.Contains(fe.Msg, internal) {
					t.Fatalf("%q: Go internals %q in %q", text, internal, fe.Msg)
				}
			}
		})
	}
}
