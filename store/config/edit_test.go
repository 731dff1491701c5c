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
