package config

import (
	"strings"
	"testing"

	"github.com/loci-dev/loci/fault"
)

// A value of the wrong type names the key as the file writes it and the
// type expected, never the Go field (config.Server.Port) behind it.
func TestDecodeTypeErrorsNameTheKey(t *testing.T) {
	for _, c := range []struct{ file, key, want, got string }{
		{"[server]\nport = \"abc\"\n", "server.port", "a whole number", "a string"},
		{"[auth]\nenabled = 3\n", "auth.enabled", "true or false", "a whole number"},
		{"[jobs]\nmax_concurrency = 1.5\n", "jobs.max_concurrency", "a whole number", "a decimal number"},
		{"[palace]\npath = 3\n", "palace.path", "a string", "a whole number"},
		{"[db]\nallowed_origins = \"x\"\n", "db.allowed_origins", "a list", "a string"},
		{"server = 3\n", "server", "a table", "a whole number"},
		{"[search]\nsemantic_weight = \"high\"\n", "search.semantic_weight", "a number", "a string"},
	} {
		t.Run(c.key, func(t *testing.T) {
			var cfg Config
			err := decode([]byte(c.file), &cfg)
			fe := fault.As(err)
			if err == nil || fe.Code != fault.ConfigInvalid {
				t.Fatalf("%q: %v", c.file, err)
			}
			msg := fe.Msg + " " + fe.Help
			if !strings.Contains(fe.Msg, c.key+" must be "+c.want) || !strings.Contains(fe.Msg, c.got) {
				t.Errorf("%q: message %q, want %q must be %s (not %s)", c.file, fe.Msg, c.key, c.want, c.got)
			}
			for _, leak := range []string{"config.", "struct field", "of type", "toml:"} {
				if strings.Contains(msg, leak) {
					t.Errorf("%q: %q leaks %q", c.file, msg, leak)
				}
			}
		})
	}
}

// A value where a table goes names the table's keys, and for
// backup.schedule gives an example ("1h" is a common first try).
func TestDecodeTableErrorsNameTheKeys(t *testing.T) {
	var cfg Config
	err := decode([]byte("[backup]\nschedule = \"1h\"\n"), &cfg)
	fe := fault.As(err)
	if err == nil || fe.Code != fault.ConfigInvalid {
		t.Fatalf("%v", err)
	}
	if !strings.Contains(fe.Msg, "backup.schedule must be a table (keys: every, at), not a string") {
		t.Fatalf("message %q", fe.Msg)
	}
	if !strings.Contains(fe.Help, `backup.schedule = { every = "1h" }`) {
		t.Fatalf("help %q", fe.Help)
	}
}
