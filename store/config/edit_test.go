package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/loci-dev/loci/store/fault"
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
		if err := SetMinerEnabled(file, c.name, c.on); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(file)
		if string(b) != c.want {
			t.Fatalf("%s %v:\n%s\nwant\n%s", c.name, c.on, b, c.want)
		}
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
