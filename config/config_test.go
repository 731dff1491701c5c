package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loci-dev/loci/fault"
)

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestDefaultsAndXDG(t *testing.T) {
	tests := []struct {
		name       string
		env        map[string]string
		wantPalace string
	}{
		{"home", map[string]string{"HOME": "/home/u"}, "/home/u/.local/share/loci/palace"},
		{"xdg absolute", map[string]string{"HOME": "/home/u", "XDG_DATA_HOME": "/data"}, "/data/loci/palace"},
		{"xdg empty ignored", map[string]string{"HOME": "/home/u", "XDG_DATA_HOME": ""}, "/home/u/.local/share/loci/palace"},
		{"xdg relative ignored", map[string]string{"HOME": "/home/u", "XDG_DATA_HOME": "rel/data"}, "/home/u/.local/share/loci/palace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default(envOf(tt.env))
			if c.Palace.Path != tt.wantPalace {
				t.Fatalf("palace %q, want %q", c.Palace.Path, tt.wantPalace)
			}
			if err := c.Validate(); err != nil {
				t.Fatalf("defaults invalid: %v", err)
			}
			if c.Server.Port != 8420 || c.Server.Bind != "127.0.0.1" || c.Dedup.NearThreshold != 0.9 || c.DB.Port != 8000 ||
				c.Webhook.Port != 8787 || c.Jobs.BackgroundConcurrency != 2 || c.Mining.ChunkChars != 6000 || c.Mining.MaxFileBytes != 2<<20 {
				t.Fatalf("defaults %+v", c)
			}
		})
	}
}

func TestPrecedence(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "config.toml")
	os.WriteFile(file, []byte("[server]\nport = 9000\nbind = \"127.0.0.2\"\n[dedup]\nnear_threshold = 0.8\n"), 0o600)
	env := map[string]string{"HOME": dir, "LOCI_PORT": "9100"}
	c, err := Load(file, envOf(env))
	if err != nil {
		t.Fatal(err)
	}
	if c.Server.Port != 9100 || c.Server.Bind != "127.0.0.2" || c.Dedup.NearThreshold != 0.8 || c.File != file {
		t.Fatalf("env over file over defaults: %+v", c)
	}
	if err := c.Set("server.port", "9200"); err != nil || c.Server.Port != 9200 {
		t.Fatalf("flag over env: %v %d", err, c.Server.Port)
	}
	// The default file is read from XDG_CONFIG_HOME when present.
	xdg := filepath.Join(dir, "xdg")
	os.MkdirAll(filepath.Join(xdg, "loci"), 0o700)
	os.WriteFile(filepath.Join(xdg, "loci", "config.toml"), []byte("[server]\nport = 9300\n"), 0o600)
	c, err = Load("", envOf(map[string]string{"HOME": dir, "XDG_CONFIG_HOME": xdg}))
	if err != nil || c.Server.Port != 9300 {
		t.Fatalf("default file: %v %d", err, c.Server.Port)
	}
}

func TestErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(s string) string {
		f := filepath.Join(t.TempDir(), "c.toml")
		os.WriteFile(f, []byte(s), 0o600)
		return f
	}
	env := envOf(map[string]string{"HOME": dir})
	tests := []struct {
		name    string
		load    func() (Config, error)
		code    fault.Code
		mention string
	}{
		{"explicit missing file", func() (Config, error) { return Load(filepath.Join(dir, "nope.toml"), env) }, fault.IOFailed, "nope.toml"},
		{"LOCI_CONFIG missing", func() (Config, error) {
			return Load("", envOf(map[string]string{"HOME": dir, "LOCI_CONFIG": "/nope/c.toml"}))
		}, fault.IOFailed, "/nope/c.toml"},
		{"unknown key", func() (Config, error) { return Load(write("[server]\nprot = 1\n"), env) }, fault.ConfigInvalid, "server.prot"},
		{"bad toml", func() (Config, error) { return Load(write("[server\n"), env) }, fault.ConfigInvalid, "line"},
		{"wrong type", func() (Config, error) { return Load(write("[server]\nport = \"x\"\n"), env) }, fault.ConfigInvalid, "server.port"},
		{"bad env int", func() (Config, error) { return Load("", envOf(map[string]string{"HOME": dir, "LOCI_PORT": "eighty"})) }, fault.ConfigInvalid, "LOCI_PORT"},
		{"bad env bool", func() (Config, error) {
			return Load("", envOf(map[string]string{"HOME": dir, "LOCI_AUTH_ENABLED": "maybe"}))
		}, fault.ConfigInvalid, "LOCI_AUTH_ENABLED"},
		// A secret HTTP cannot carry would lock everyone out.
		{"secret with a trailing space", func() (Config, error) {
			return Load("", envOf(map[string]string{"HOME": dir, "LOCI_AUTH_TOKEN": "0123456789abcdef1234 "}))
		}, fault.ConfigInvalid, "LOCI_AUTH_TOKEN"},
		{"secret with a leading tab", func() (Config, error) {
			return Load("", envOf(map[string]string{"HOME": dir, "LOCI_AUTH_TOKEN": "\t0123456789abcdef1234"}))
		}, fault.ConfigInvalid, "LOCI_AUTH_TOKEN"},
		{"secret with a control character", func() (Config, error) {
			return Load("", envOf(map[string]string{"HOME": dir, "LOCI_AUTH_TOKEN": "0123456789\x00abcdef1234"}))
		}, fault.ConfigInvalid, "LOCI_AUTH_TOKEN"},
		{"secret in the file with a newline", func() (Config, error) {
			c, err := Load(write("[auth]\ntoken = \"0123456789abcdef1234\\n\"\n"), env)
			if err == nil {
				err = c.Validate()
			}
			return c, err
		}, fault.ConfigInvalid, "auth.token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.load()
			fe := fault.As(err)
			if err == nil || fe.Code != tt.code || !strings.Contains(fe.Msg, tt.mention) {
				t.Fatalf("got %v, want %s mentioning %q", err, tt.code, tt.mention)
			}
			if strings.Contains(fe.Msg+fe.Help, "0123456789") {
				t.Fatalf("the secret is echoed: %v", err)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		key string
		mut func(*Config)
	}{
		{"palace.path", func(c *Config) { c.Palace.Path = "relative/palace" }},
		{"palace.path", func(c *Config) { c.Palace.Path = "" }},
		{"store.min_free_bytes", func(c *Config) { c.Store.MinFreeBytes = -1 }},
		{"server.bind", func(c *Config) { c.Server.Bind = "localhost" }},
		{"server.bind", func(c *Config) { c.Server.Bind = "127.0.0.1:80" }},
		{"server.port", func(c *Config) { c.Server.Port = 70000 }},
		{"auth.token", func(c *Config) { c.Auth.Token = "short" }},
		{"db.port", func(c *Config) { c.DB.Port = c.Server.Port }},
		{"webhook.port", func(c *Config) { c.Webhook.Port = c.DB.Port }},
		{"dedup.near_threshold", func(c *Config) { c.Dedup.NearThreshold = 0.4 }},
		{"dedup.near_threshold", func(c *Config) { c.Dedup.NearThreshold = 1.1 }},
		{"jobs.max_concurrency", func(c *Config) { c.Jobs.MaxConcurrency = 0 }},
		{"mining.max_documents", func(c *Config) { c.Mining.MaxDocuments = -1 }},
		{"credentials.backend", func(c *Config) { c.Credentials.Backend = "vault" }},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			c := Default(envOf(map[string]string{"HOME": "/h"}))
			tt.mut(&c)
			err := c.Validate()
			fe := fault.As(err)
			if err == nil || fe.Code != fault.ConfigInvalid || !strings.Contains(fe.Msg, tt.key) {
				t.Fatalf("got %v, want config::invalid naming %s", err, tt.key)
			}
		})
	}
}

func TestTokenNeverInJSON(t *testing.T) {
	c := Default(envOf(map[string]string{"HOME": "/h"}))
	c.Auth.Token = "super-secret-token-value"
	b, _ := json.Marshal(c)
	if strings.Contains(string(b), "super-secret") {
		t.Fatal("token serialised")
	}
}

// The disk reserve: 256 MiB by default, set by the file or
// LOCI_STORE_MIN_FREE_BYTES (which wins), refused when not a number.
func TestMinFreeBytes(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "c.toml")
	if err := os.WriteFile(file, []byte("[store]\nmin_free_bytes = 1000000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if c := Default(envOf(map[string]string{"HOME": dir})); c.Store.MinFreeBytes != 256<<20 {
		t.Fatalf("default %d", c.Store.MinFreeBytes)
	}
	c, err := Load(file, envOf(map[string]string{"HOME": dir}))
	if err != nil || c.Store.MinFreeBytes != 1000000 {
		t.Fatalf("from the file: %d %v", c.Store.MinFreeBytes, err)
	}
	c, err = Load(file, envOf(map[string]string{"HOME": dir, "LOCI_STORE_MIN_FREE_BYTES": "2048"}))
	if err != nil || c.Store.MinFreeBytes != 2048 {
		t.Fatalf("from the environment: %d %v", c.Store.MinFreeBytes, err)
	}
	_, err = Load(file, envOf(map[string]string{"HOME": dir, "LOCI_STORE_MIN_FREE_BYTES": "lots"}))
	if fe := fault.As(err); err == nil || fe.Code != fault.ConfigInvalid || !strings.Contains(fe.Msg, "LOCI_STORE_MIN_FREE_BYTES") {
		t.Fatalf("a bad value: %v", err)
	}
}
