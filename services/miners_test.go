package services

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/loci-dev/loci/config"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/sources"
)

// newFileMiners is a Miners service of a daemon that read no
// configuration file: its changes go to file, created by the first.
func newFileMiners(t *testing.T, file string) *Miners {
	t.Helper()
	load := func() (config.Config, error) {
		return config.Load("", func(k string) (string, bool) {
			if k == "XDG_CONFIG_HOME" {
				return filepath.Dir(filepath.Dir(file)), true
			}
			return "", false
		})
	}
	c, err := load()
	if err != nil || c.File != "" {
		t.Fatalf("a file was read: %v %q", err, c.File)
	}
	return &Miners{Defined: c.Miners, Configs: c.SourceConfigs, Sources: sources.NewRegistry(sources.Directory{MaxFileBytes: 1 << 20}),
		Load: load, NewFile: file, Writer: "test", CredentialsDir: c.Credentials.Dir}
}

// Miners saved at the same moment on a daemon that read no file: one
// creates the file, every one lands in it, none lost.
func TestConcurrentPutsCreateTheFileOnce(t *testing.T) {
	file := filepath.Join(t.TempDir(), "xdg", "loci", "config.toml")
	if got := config.DefaultFile(func(k string) (string, bool) { return filepath.Dir(filepath.Dir(file)), k == "XDG_CONFIG_HOME" }); got != file {
		t.Fatalf("default file %s, want %s", got, file)
	}
	m := newFileMiners(t, file)
	if m.FileToCreate() != file {
		t.Fatalf("file to create: %q", m.FileToCreate())
	}
	dir := t.TempDir()
	var wg sync.WaitGroup
	var mu sync.Mutex
	created := 0
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, saved, err := m.Put(fmt.Sprintf("m%d", i), MinerChange{Locator: &dir, Wing: ptr("w")})
			if err != nil || saved.File != file || !saved.Created {
				t.Errorf("put m%d: %+v %v", i, saved, err)
			}
			mu.Lock()
			if saved.FileCreated {
				created++
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	if created != 1 {
		t.Fatalf("%d puts say they created the file", created)
	}
	if len(m.List()) != 16 || m.FileToCreate() != "" {
		t.Fatalf("after the puts: %d miners, file to create %q", len(m.List()), m.FileToCreate())
	}
	b, _ := os.ReadFile(file)
	if n := strings.Count(string(b), "\n[miners.m"); n != 16 || !strings.HasPrefix(string(b), "# loci configuration file, created by the loci daemon (test)") {
		t.Fatalf("%d tables in the file:\n%s", n, b)
	}
}

// Without a file to create, a change is loci::miner::config_file, and a
// credential file with no credentials.dir is refused, saying what to set.
func TestPutWithoutFileOrCredentialsDir(t *testing.T) {
	m := newFileMiners(t, filepath.Join(t.TempDir(), "loci", "config.toml"))
	dir := t.TempDir()
	m.NewFile = ""
	if _, _, err := m.Put("docs", MinerChange{Locator: &dir}); !fault.Is(err, fault.MinerConfigFile) {
		t.Fatalf("no file to create: %v", err)
	}
	m.CredentialsDir = ""
	_, _, err := m.Put("docs", MinerChange{Locator: &dir, Credential: &config.CredentialRef{File: filepath.Join(dir, "key")}})
	if e := fault.As(err); !fault.Is(err, fault.MinerInvalid) || !strings.Contains(e.Msg, "credentials.dir is not set") || !strings.Contains(e.Help, "environment variable") {
		t.Fatalf("a credential file without credentials.dir: %v", err)
	}
	if _, _, err := m.Put("docs", MinerChange{Locator: &dir, Credential: &config.CredentialRef{Env: "KEY"}}); !fault.Is(err, fault.MinerConfigFile) {
		t.Fatalf("an env credential is not refused for it: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }

// A credential file named through the API may not be one of the
// daemon's sign-in tokens (credentials.dir's oauth folder): a run gets a
// fresh access token, never the refresh token a token file holds.
func TestCredentialFileNotInTheTokenFolder(t *testing.T) {
	m := newFileMiners(t, filepath.Join(t.TempDir(), "loci", "config.toml"))
	dir := t.TempDir()
	m.CredentialsDir = dir
	for _, f := range []string{filepath.Join(dir, "oauth"), filepath.Join(dir, "oauth", "source-notes.json")} {
		_, _, err := m.Put("docs", MinerChange{Locator: &dir, Credential: &config.CredentialRef{File: f}})
		if !fault.Is(err, fault.MinerInvalid) || !strings.Contains(err.Error(), "sign-in tokens") {
			t.Fatalf("%s: %v", f, err)
		}
	}
	if _, _, err := m.Put("docs", MinerChange{Locator: &dir, Credential: &config.CredentialRef{File: filepath.Join(dir, "oauth-key")}}); err != nil {
		t.Fatalf("a file beside the folder: %v", err)
	}
}
