package config

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/loci-dev/loci/extract/provider"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/search/rank"
	"github.com/loci-dev/loci/sources/secret"
)

// sectionChecks are Validate's parts by name: each section's own method,
// and the listeners' ports against each other.
var sectionChecks = map[string]func(c *Config) error{
	"server":      func(c *Config) error { return c.Server.validate() },
	"palace":      func(c *Config) error { return c.Palace.validate() },
	"store":       func(c *Config) error { return c.Store.validate() },
	"auth":        func(c *Config) error { return c.Auth.validate() },
	"db":          func(c *Config) error { return c.DB.validate() },
	"webhook":     func(c *Config) error { return c.Webhook.validate() },
	"ports":       func(c *Config) error { return c.validatePorts() },
	"dedup":       func(c *Config) error { return c.Dedup.validate() },
	"jobs":        func(c *Config) error { return c.Jobs.validate() },
	"mining":      func(c *Config) error { return c.Mining.validate() },
	"credentials": func(c *Config) error { return c.Credentials.validate() },
	"assets":      func(c *Config) error { return c.Assets.validate() },
	"embedding":   func(c *Config) error { return c.Embedding.validate() },
	"extraction":  func(c *Config) error { return c.Extraction.validate() },
	"search":      func(c *Config) error { return c.Search.validate() },
	"backup":      func(c *Config) error { return c.validateBackup() },
}

// Each section's bad value is caught by that section's own method, by no
// other, and Validate reports that very error. Where msg is given, it is
// the message Validate gave before it was split (the enums' lists are now
// their owners', the words the same).
func TestValidateBySection(t *testing.T) {
	tests := []struct {
		section, key string
		mut          func(*Config)
		msg          string
	}{
		{"server", "server.bind", func(c *Config) { c.Server.Bind = "localhost" }, ""},
		{"server", "server.port", func(c *Config) { c.Server.Port = -1 }, "server.port: -1 is not a port (0 to 65535; 0 lets the OS choose)"},
		{"server", "server.max_connections", func(c *Config) { c.Server.MaxConnections = 4 }, ""},
		{"server", "server.max_subscribers", func(c *Config) { c.Server.MaxSubscribers = 0 }, ""},
		{"server", "server.slow_subscriber_secs", func(c *Config) { c.Server.SlowSubscriberSecs = 0 }, ""},
		{"palace", "palace.path", func(c *Config) { c.Palace.Path = "rel" }, `palace.path: "rel" is relative; an absolute path is required`},
		{"store", "store.min_free_bytes", func(c *Config) { c.Store.MinFreeBytes = -1 }, ""},
		{"auth", "auth.token", func(c *Config) { c.Auth.Token = "short" }, "auth.token: is shorter than 16 characters"},
		{"db", "db.bind", func(c *Config) { c.DB.Bind = "db.example" }, ""},
		{"db", "db.port", func(c *Config) { c.DB.Port = 65536 }, "db.port: 65536 is not a port (0 to 65535; 0 lets the OS choose)"},
		{"db", "db.allowed_origins", func(c *Config) { c.DB.AllowedOrigins = []string{"https://console.example", "*"} },
			`db.allowed_origins: "*" is not an origin: it needs a scheme and a host; list origins as a browser sends them: scheme://host[:port], e.g. https://console.example.com or http://192.168.1.20:3000 (no path, no wildcard)`},
		{"db", "db.allowed_origins", func(c *Config) { c.DB.AllowedOrigins = []string{"not a url"} }, ""},
		{"webhook", "webhook.port", func(c *Config) { c.Webhook.Port = -2 }, "webhook.port: -2 is not a port (0 to 65535; 0 lets the OS choose)"},
		{"webhook", "webhook.bind", func(c *Config) { c.Webhook.Bind = "" }, ""},
		{"webhook", "webhook.max_body_bytes", func(c *Config) { c.Webhook.MaxBodyBytes = 0 }, ""},
		{"webhook", "webhook.max_concurrent", func(c *Config) { c.Webhook.MaxConcurrent = 0 }, ""},
		{"ports", "db.port", func(c *Config) { c.DB.Port = c.Server.Port }, ""},
		{"ports", "webhook.port", func(c *Config) { c.Webhook.Port = c.Server.Port }, ""},
		{"dedup", "dedup.near_threshold", func(c *Config) { c.Dedup.NearThreshold = 2 }, "dedup.near_threshold: 2 is outside 0.5 to 1"},
		{"jobs", "jobs.lease_ttl_secs", func(c *Config) { c.Jobs.LeaseTTLSecs = 2 }, ""},
		{"jobs", "jobs.drain_timeout_secs", func(c *Config) { c.Jobs.DrainTimeoutSecs = -1 }, ""},
		{"mining", "mining.chunk_chars", func(c *Config) { c.Mining.ChunkChars = 99 }, ""},
		{"mining", "mining.secrets", func(c *Config) { c.Mining.Secrets = "shred" }, `mining.secrets: "shred" is not redact, skip or allow`},
		{"mining", "mining.signature_policy", func(c *Config) { c.Mining.SignaturePolicy = "sometimes" }, `mining.signature_policy: "sometimes" is not optional or required`},
		{"mining", "mining.trusted_keys", func(c *Config) { c.Mining.TrustedKeys = []string{"ssh-ed25519 AAAA"} }, `mining.trusted_keys: entry 0 is not a public key ("loci-ed25519 <base64>", as loci source keygen writes to NAME.pub)`},
		{"credentials", "credentials.backend", func(c *Config) { c.Credentials.Backend = "vault" }, `credentials.backend: "vault" is not auto or file`},
		{"credentials", "credentials.dir", func(c *Config) { c.Credentials.Dir = "creds" }, ""},
		{"assets", "assets.dir", func(c *Config) { c.Assets.Dir = "assets" }, ""},
		{"embedding", "embedding.save_secs", func(c *Config) { c.Embedding.SaveSecs = 0 }, ""},
		{"embedding", "embedding.default", func(c *Config) { c.Embedding.Default = "nope" }, `embedding.default: "nope" is not a configured profile`},
		{"embedding", "embedding.profiles.p.provider", func(c *Config) { c.Embedding.Profiles = map[string]Profile{"p": {Provider: "magic"}} },
			`embedding.profiles.p.provider: "magic" is not static, http, command or hash`},
		{"extraction", "extraction.provider", func(c *Config) { c.Extraction.Provider = "oracle" }, `extraction.provider: "oracle" is not heuristic, command or http`},
		{"extraction", "extraction.command", func(c *Config) { c.Extraction.Provider = provider.Command }, "extraction.command: a command provider needs the program and its arguments"},
		{"extraction", "extraction.url", func(c *Config) { c.Extraction.Provider = provider.HTTP }, "extraction.url: an http provider needs its endpoint"},
		{"search", "search.fusion", func(c *Config) { c.Search.Fusion = "average" }, `search.fusion: "average" is not scores or rrf`},
		{"search", "search.depth", func(c *Config) { c.Search.Depth = 1001 }, ""},
		{"search", "search.feedback_docs", func(c *Config) { c.Search.FeedbackDocs = 0 }, ""},
		{"backup", "backup.dir", func(c *Config) { c.Backup.Dir = "backups" }, `backup.dir: "backups" is relative; an absolute path is required`},
		{"backup", "backup.dir", func(c *Config) { c.Backup.Dir = c.Palace.Path + "/old" }, ""},
		{"backup", "backup.keep", func(c *Config) { c.Backup.Keep = 0 }, "backup.keep: must be at least 1 (the scheduled backups kept)"},
		{"backup", "backup.keep", func(c *Config) { c.Backup.Keep = 100001 }, ""},
		{"backup", "backup.warn_after", func(c *Config) { c.Backup.WarnAfter = "a week" }, ""},
		{"backup", "backup.warn_after", func(c *Config) { c.Backup.WarnAfter = "30s" }, ""},
		{"backup", "backup.warn_after", func(c *Config) { c.Backup.Schedule.Every, c.Backup.WarnAfter = "20s", "20s" },
			`backup.warn_after: "20s" is shorter than 1m, its minimum: a backup takes a while to write, so a tighter warning would come and go between backups even when backup.schedule.every is shorter (which it may be, down to 1s); give at least "1m", e.g. "7d"`},
		{"backup", "backup.schedule.every", func(c *Config) { c.Backup.Schedule.Every = "often" }, ""},
		{"backup", "backup.schedule.every", func(c *Config) { c.Backup.Schedule.At = "03:00" }, ""},
		{"backup", "backup.schedule.at", func(c *Config) { c.Backup.Schedule = BackupSchedule{Every: "1d", At: "3am"} }, ""},
		{"backup", "backup.schedule.at", func(c *Config) { c.Backup.Schedule = BackupSchedule{Every: "1h", At: "03:00"} }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.section+"/"+tt.key, func(t *testing.T) {
			c := Default(envOf(map[string]string{"HOME": "/h"}))
			tt.mut(&c)
			own := sectionChecks[tt.section]
			if own == nil {
				t.Fatalf("no section %s", tt.section)
			}
			err := own(&c)
			fe := fault.As(err)
			if err == nil || fe.Code != fault.ConfigInvalid || !strings.HasPrefix(fe.Msg, tt.key+": ") {
				t.Fatalf("the %s section's check: %v, want config::invalid naming %s", tt.section, err, tt.key)
			}
			if tt.msg != "" && fe.Msg != tt.msg {
				t.Fatalf("message %q, want %q", fe.Msg, tt.msg)
			}
			for name, other := range sectionChecks {
				if name != tt.section && other(&c) != nil {
					t.Errorf("the %s section's check caught it too: %v", name, other(&c))
				}
			}
			all := fault.As(c.Validate())
			if all == nil || all.Msg != fe.Msg || all.Help != fe.Help {
				t.Fatalf("Validate: %v, want the section's %v", all, fe)
			}
		})
	}
}

// The configuration accepts exactly the values their owners list: every
// fusion method, secret policy and extraction provider validates, and the
// defaults are among them.
func TestValidateEnumsAreTheOwners(t *testing.T) {
	def := Default(envOf(map[string]string{"HOME": "/h"}))
	for _, m := range rank.Methods {
		c := def
		c.Search.Fusion = m
		if err := c.Validate(); err != nil {
			t.Errorf("search.fusion %s: %v", m, err)
		}
	}
	for _, p := range secret.Policies {
		c := def
		c.Mining.Secrets = p
		if err := c.Validate(); err != nil {
			t.Errorf("mining.secrets %s: %v", p, err)
		}
	}
	for _, p := range append([]provider.Name{""}, provider.Names...) {
		c := def
		c.Extraction = Extraction{Provider: p, Command: []string{"x"}, URL: "http://127.0.0.1:1/x"}
		if err := c.Validate(); err != nil {
			t.Errorf("extraction.provider %q: %v", p, err)
		}
	}
	if def.Search.Fusion != rank.MethodScores || def.Mining.Secrets != secret.Redact {
		t.Errorf("defaults: fusion %q, secrets %q", def.Search.Fusion, def.Mining.Secrets)
	}
	// The file sets them as before: words, read into the owners' types.
	f := filepath.Join(t.TempDir(), "c.toml")
	os.WriteFile(f, []byte("[search]\nfusion = \"rrf\"\n[mining]\nsecrets = \"skip\"\n[extraction]\nprovider = \"heuristic\"\n"), 0o600)
	c, err := Load(f, envOf(map[string]string{"HOME": "/h"}))
	if err == nil {
		err = c.Validate()
	}
	if err != nil || c.Search.Fusion != rank.MethodRRF || c.Mining.Secrets != secret.Skip || c.Extraction.Provider != provider.Heuristic {
		t.Fatalf("read %q, %q, %q: %v", c.Search.Fusion, c.Mining.Secrets, c.Extraction.Provider, err)
	}
}

// Trial 30: the registry locations loci serve refuses are refused by
// validation too (so loci doctor says so), each naming its entry and
// never a password; the ones it takes pass.
func TestValidateRegistries(t *testing.T) {
	c := Default(envOf(map[string]string{"HOME": "/h"}))
	c.Mining.Registries = []string{"https://reg.example.com/loci", "mine=http://127.0.0.1:8080/index.json", "http://[::1]/r/", "http://localhost:9/",
		"file:///srv/loci-registry", "/srv/other/index.json", "two=https://user:pw@reg.example.com/two"}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	for bad, says := range map[string]string{
		"http://10.1.2.3/reg":                 "loopback only",
		"relative/reg":                        "relative path",
		"ftp://x/y":                           "ftp:// is not",
		"":                                    "empty",
		"file://host/srv/x":                   "on this machine",
		"bundled=/srv/x":                      "reserved",
		"Bad=/srv/x":                          "not a registry name",
		"http://user:hunter2@reg.example.com": "loopback only",
	} {
		c := Default(envOf(map[string]string{"HOME": "/h"}))
		c.Mining.Registries = []string{"/srv/ok", bad}
		err := c.Validate()
		if !fault.Is(err, fault.ConfigInvalid) || !strings.Contains(fault.As(err).Msg, "mining.registries[1]") || !strings.Contains(fault.As(err).Msg, says) {
			t.Fatalf("%q: %v; want loci::config::invalid naming mining.registries[1] and saying %q", bad, err, says)
		}
		if strings.Contains(fault.As(err).Msg, "hunter2") {
			t.Fatalf("the message shows a password: %v", err)
		}
	}
	c.Mining.Registries = []string{"a=/srv/x", "a=/srv/y"}
	if err := c.Validate(); !fault.Is(err, fault.ConfigInvalid) || !strings.Contains(fault.As(err).Msg, "given twice") || strings.Contains(fault.As(err).Msg, "bundled") {
		t.Fatalf("a duplicate name: %v", err)
	}
}

// Re-trial 30: a refused registry location's message is whole (not
// clipped at fault.MaxQuoted) and says what a registry is once.
func TestValidateRegistryMessageWhole(t *testing.T) {
	for _, bad := range []string{"relative/reg", "ftp://x/y", "http://10.1.2.3/reg"} {
		c := Default(envOf(map[string]string{"HOME": "/h"}))
		c.Mining.Registries = []string{bad}
		fe := fault.As(c.Validate())
		all := fe.Msg + " " + fe.Help
		if strings.Contains(all, "…") || strings.Count(all, "a registry is") != 1 || !strings.Contains(all, "/abs/path") {
			t.Fatalf("%q: %q / %q; want a whole message saying what a registry is once", bad, fe.Msg, fe.Help)
		}
	}
}

// db.allowed_origins takes what the admin listener takes (dbadmin's
// parseOrigin: its open test's refusals and admissions) and refuses the
// rest, naming the key and the entry.
func TestValidateDBAllowedOrigins(t *testing.T) {
	for _, o := range []string{"*", "https://ex.com/path", "example.com", "null", "https://*.ex.com", "not a url",
		"https://user:pw@ex.com", "https://ex.com?x=1", "https://ex.com#top", "https://ex.com:port", "console.example:8080", ""} {
		c := Default(envOf(map[string]string{"HOME": "/h"}))
		c.DB.AllowedOrigins = []string{"https://ok.example", o}
		fe := fault.As(c.Validate())
		if fe == nil || fe.Code != fault.ConfigInvalid || !strings.HasPrefix(fe.Msg, "db.allowed_origins: ") || !strings.Contains(fe.Msg, strconv.Quote(o)) ||
			!strings.Contains(fe.Help, "db.allowed_origins") {
			t.Errorf("db.allowed_origins %q: %v", o, fe)
		}
	}
	for _, o := range []string{"https://console.example.com", "HTTP://Lan.Example:3000/", "http://192.168.1.20:3000", "http://[fd00::1]:8080",
		"tauri://localhost", "http://tauri.localhost"} {
		c := Default(envOf(map[string]string{"HOME": "/h"}))
		c.DB.AllowedOrigins = []string{o}
		if err := c.Validate(); err != nil {
			t.Errorf("db.allowed_origins %q refused: %v", o, err)
		}
	}
}
