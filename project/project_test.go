package project

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loci-dev/loci/store/fault"
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
