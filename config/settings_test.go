package config

import (
	"os"
	"strings"
	"testing"
)

// Every setting of Config has a line in the registry, and the registry
// names no setting that is gone (#36, point 19).
func TestEverySettingIsDocumented(t *testing.T) {
	list, err := Settings(Default(DocEnv))
	if err != nil {
		t.Fatal(err)
	}
	if len(list) < 60 {
		t.Fatalf("only %d settings listed", len(list))
	}
	for _, s := range list {
		if s.Key == "server.port" && (s.Default != "8420" || s.Env != "LOCI_PORT") {
			t.Fatalf("server.port: %+v", s)
		}
		if s.Key == "credentials.dir" && s.Default != `"~/.config/loci/credentials"` {
			t.Fatalf("credentials.dir: %+v", s)
		}
	}
}

// docs/SETTINGS.md is what the registry generates: it cannot drift from
// the code.
func TestSettingsDocIsCurrent(t *testing.T) {
	want, err := SettingsMarkdown(Default(DocEnv))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../docs/SETTINGS.md")
	if err != nil || string(got) != want {
		t.Fatalf("docs/SETTINGS.md is not what the settings registry makes (%v): run go generate ./config", err)
	}
	if !strings.Contains(want, "| `mining.secrets` |") {
		t.Fatal("mining.secrets missing")
	}
}
