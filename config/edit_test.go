package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/fault"
)

// Enabling and disabling a miner changes its one line (or adds it) and
// keeps every other byte: comments, spacing, other tables.
func TestSetMinerEnabledKeepsTheRest(t *testing.T) {
	file := filepath.Join(t.TempDir(), "config.toml")
	before := "# my loci\n[server]\nport = 8420 # the usual\n\n[miners.docs]   # project docs\nlocator = \"/p\"\n  enabled   =  false  # for now\noptions = { dir = \"docs\" }\n\n[miners.notes]\nlocator = \"/n\"\n\n[miners.docs-old]\nenabled = true\n"
	if err := os.WriteFile(file, []byte(before), 0o640); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		on   bool
		want string
	}{
		{"docs", true, "# my loci\n[server]\nport = 8420 # the usual\n\n[miners.docs]   # project docs\nlocator = \"/p\"\n  enabled   =  true  # for now\noptions = { dir = \"docs\" }\n\n[miners.notes]\nlocator = \"/n\"\n\n[miners.docs-old]\nenabled = true\n"},
		{"notes", true, "# my loci\n[server]\nport = 8420 # the usual\n\n[miners.docs]   # project docs\nlocator = \"/p\"\n  enabled   =  true  # for now\noptions = { dir = \"docs\" }\n\n[miners.notes]\nenabled = true\nlocator = \"/n\"\n\n[miners.docs-old]\nenabled = true\n"},
		{"docs-old", false, "# my loci\n[server]\nport = 8420 # the usual\n\n[miners.docs]   # project docs\nlocator = \"/p\"\n  enabled   =  true  # for now\noptions = { dir = \"docs\" }\n\n[miners.notes]\nenabled = true\nlocator = \"/n\"\n\n[miners.docs-old]\nenabled = false\n"},
		{"docs", true, "# my loci\n[server]\nport = 8420 # the usual\n\n[miners.docs]   # project docs\nlocator = \"/p\"\n  enabled   =  true  # for now\noptions = { dir = \"docs\" }\n\n[miners.notes]\nenabled = true\nlocator = \"/n\"\n\n[miners.docs-old]\nenabled = false\n"},
	} {
		t.Run(fmt.Sprintf("%s on=%v", c.name, c.on), func(t *testing.T) {
			if err := SetMinerEnabled(file, c.name, c.on); err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(file)
			if string(b) != c.want {
				t.Fatalf("%s %v:\n%s\nwant\n%s", c.name, c.on, b, c.want)
			}
		})
	}
	if st, _ := os.Stat(file); st.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v", st.Mode().Perm())
	}
	if err := SetMinerEnabled(file, "absent", true); !fault.Is(err, fault.MinerConfigFile) {
		t.Fatalf("an absent miner: %v", err)
	}
	if err := SetMinerEnabled("", "docs", true); !fault.Is(err, fault.MinerConfigFile) {
		t.Fatalf("no file: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Dir(file))
	if len(entries) != 1 {
		t.Fatalf("temporary files left: %v", entries)
	}
}

// A miner's table is written in place, appended when new, and removed,
// the rest of the file unchanged; what is written reads back the same.
func TestPutAndDeleteMinerTable(t *testing.T) {
	file := filepath.Join(t.TempDir(), "config.toml")
	before := "# mine\n[server]\nport = 8421\n\n[miners.docs]\n# about docs\nlocator = \"/old\"\n\n# the next table\n[miners.other]\nlocator = \"/o\"\n"
	if err := os.WriteFile(file, []byte(before), 0o600); err != nil {
		t.Fatal(err)
	}
	five := 5
	m := Miner{Locator: `/new "quoted" \ path`, Wing: "w", Enabled: true, MaxDocuments: &five,
		Options: map[string]string{"dir": "src/*", "since": "2026-01-01"}, Credential: &CredentialRef{Env: "KEY"},
		Schedule: &MinerSchedule{Every: "1d", At: "03:00"}}
	if err := PutMinerTable(file, "docs", m); err != nil {
		t.Fatal(err)
	}
	if err := PutMinerTable(file, "fresh", Miner{Locator: "/f"}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(file)
	want := "# mine\n[server]\nport = 8421\n\n" + MinerTable("docs", m) + "\n# the next table\n[miners.other]\nlocator = \"/o\"\n\n" + MinerTable("fresh", Miner{Locator: "/f"})
	if string(b) != want {
		t.Fatalf("file:\n%s\nwant\n%s", b, want)
	}
	c, err := Load(file, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	got := c.Miners["docs"]
	if got.Locator != m.Locator || *got.MaxDocuments != 5 || got.Options["dir"] != "src/*" || got.Credential.Env != "KEY" ||
		got.Schedule.At != "03:00" || !got.Enabled || c.Miners["fresh"].Locator != "/f" {
		t.Fatalf("read back: %+v", c.Miners)
	}
	if err := DeleteMinerTable(file, "docs"); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(file)
	if want := "# mine\n[server]\nport = 8421\n\n# the next table\n[miners.other]\nlocator = \"/o\"\n\n" + MinerTable("fresh", Miner{Locator: "/f"}); string(b) != want {
		t.Fatalf("after delete:\n%s\nwant\n%s", b, want)
	}
}

// The file the daemon reads at its next start is created on the first
// change: its directory made private when missing, the file private, a
// header naming its writer and the moment; an existing file is never
// replaced, and nothing temporary is left.
func TestCreateFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "home", ".config", "loci")
	file := filepath.Join(dir, "config.toml")
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	created, err := CreateFile(file, "loci 1.2.3 (pid 42)", at)
	if err != nil || !created {
		t.Fatalf("create: %v %v", created, err)
	}
	st, err := os.Stat(file)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("file: %v %v", st, err)
	}
	for d := dir; d != filepath.Dir(filepath.Dir(dir)); d = filepath.Dir(d) {
		if st, err := os.Stat(d); err != nil || st.Mode().Perm() != 0o700 {
			t.Fatalf("directory %s: %v %v", d, st, err)
		}
	}
	b, _ := os.ReadFile(file)
	if !strings.HasPrefix(string(b), "# loci configuration file, created by the loci daemon (loci 1.2.3 (pid 42)) on 2026-03-04T05:06:07Z") {
		t.Fatalf("header:\n%s", b)
	}
	if c, err := Load(file, func(string) (string, bool) { return "", false }); err != nil || c.File != file {
		t.Fatalf("the created file does not load: %v", err)
	}
	if err := PutMinerTable(file, "docs", Miner{Locator: "/p"}); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(file)
	if created, err := CreateFile(file, "another", at); err != nil || created {
		t.Fatalf("create again: %v %v", created, err)
	}
	if after, _ := os.ReadFile(file); string(after) != string(before) {
		t.Fatalf("an existing file was replaced:\n%s", after)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("temporary files left: %v", entries)
	}
	// A directory that exists keeps its mode.
	open := t.TempDir()
	if err := os.Chmod(open, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := CreateFile(filepath.Join(open, "config.toml"), "x", at); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(open); st.Mode().Perm() != 0o755 {
		t.Fatalf("an existing directory's mode changed: %v", st.Mode())
	}
}

// A credential file given through the API lies inside credentials.dir:
// no "..", no relative path, no link inside leading out, whether or not
// what it leads to exists.
func TestCredentialFileInside(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "creds")
	outside := filepath.Join(base, "outside")
	for _, err := range []error{
		os.MkdirAll(filepath.Join(dir, "sub"), 0o700),
		os.MkdirAll(outside, 0o700),
		os.WriteFile(filepath.Join(dir, "token"), []byte("x"), 0o600),
		os.WriteFile(filepath.Join(outside, "exists"), []byte("x"), 0o600),
		os.Symlink(outside, filepath.Join(dir, "out")),
		os.Symlink(filepath.Join(outside, "exists"), filepath.Join(dir, "leak")),
		os.Symlink(filepath.Join(outside, "nope"), filepath.Join(dir, "leak-nope")),
		os.Symlink("../outside", filepath.Join(dir, "rel")),
		os.Symlink("token", filepath.Join(dir, "inner")),
		os.Symlink("sub/../token", filepath.Join(dir, "inner2")),
		os.Symlink("../creds/token", filepath.Join(dir, "roundtrip")),
		os.Symlink(filepath.Join(dir, "token"), filepath.Join(dir, "absinner")),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		dir, file string
		inside    bool
	}{
		{dir, filepath.Join(dir, "token"), true},
		{dir, filepath.Join(dir, "inner"), true},
		{dir, filepath.Join(dir, "inner2"), true},
		{dir, filepath.Join(dir, "sub", "later"), true},
		{dir, filepath.Join(dir, "new", "later"), true},
		{dir, filepath.Join(dir, "token", "x"), true},
		{dir + "/", filepath.Join(dir, "token"), true},
		{filepath.Join(base, "absent"), filepath.Join(base, "absent", "token"), true},
		{dir, dir, false},
		{dir, dir + "/", false},
		{dir, "token", false},
		{dir, "creds/token", false},
		{dir, "", false},
		{dir, filepath.Join(outside, "exists"), false},
		{dir, filepath.Join(outside, "nope"), false},
		{dir, dir + "/../outside/exists", false},
		{dir, dir + "/sub/../../outside/nope", false},
		{dir, dir + "x/token", false},
		{dir, filepath.Join(dir, "out", "exists"), false},
		{dir, filepath.Join(dir, "out", "nope"), false},
		{dir, filepath.Join(dir, "leak"), false},
		{dir, filepath.Join(dir, "leak-nope"), false},
		{dir, filepath.Join(dir, "rel", "exists"), false},
		{dir, filepath.Join(dir, "rel", "nope"), false},
		{dir, filepath.Join(dir, "roundtrip"), false},
		{dir, filepath.Join(dir, "absinner"), false},
		{"", filepath.Join(dir, "token"), false},
		{"creds", filepath.Join(dir, "token"), false},
	} {
		// The temporary base is left out of the name.
		t.Run(strings.ReplaceAll(c.file+" in "+c.dir, base, ""), func(t *testing.T) {
			if got := CredentialFileInside(c.dir, c.file); got != c.inside {
				t.Errorf("CredentialFileInside(%q, %q) = %v, want %v", c.dir, c.file, got, c.inside)
			}
		})
	}
}
