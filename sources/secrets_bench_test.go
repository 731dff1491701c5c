package sources

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// benchDocument is about size bytes of the given lines drawn from a fixed
// seed, so that runs compare.
func benchDocument(size int, lines []string) string {
	rng := rand.New(rand.NewPCG(25, 7))
	var b strings.Builder
	for b.Len() < size {
		b.WriteString(lines[rng.IntN(len(lines))])
		b.WriteByte('\n')
	}
	return b.String()
}

// codeLines are lines of code, configuration and documentation with the
// words secret rules look for.
var codeLines = []string{
	"func (s *Server) handleToken(w http.ResponseWriter, r *http.Request) error {",
	"\ttoken := r.Header.Get(\"Authorization\")",
	"\tif token == \"\" { return errUnauthorized }",
	"\tkey := cache.Key(req.ID, req.Version)",
	"\tpassword := r.FormValue(\"password\")",
	"\tclient, err := api.NewClient(ctx, cfg.BaseURL)",
	"\t// The secret store keeps credentials out of logs; see docs/SECURITY.md.",
	"\tresp, err := http.Get(\"https://example.com/api/v1/items?page=2\")",
	"\tfor i, item := range items { out = append(out, item.Name) }",
	"\treturn fmt.Errorf(\"open %s: %w\", path, err)",
	"}",
	"",
	"import os, sys",
	"def access_key_for(user):",
	"    return settings.ACCESS_KEY_PREFIX + user.id",
	"server:",
	"  port: 8080",
	"  private_key_file: /etc/ssl/private/server.pem",
	"  client_id: dashboard",
	"The deploy queue runs nightly and the token is rotated by the operator.",
	"Set the API key in your environment before running the client; never commit it.",
	"Copper kettles hold heat for a long time, and the kitchen stays warm.",
	"| name | type | default |",
	"| secret_ref | string | none |",
	"const sha = \"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\"",
	"id := \"01a20500-88ef-7153-939a-56085edc1fd3\"",
	"<script src=\"/static/app.js\" integrity=\"sha384-oqVuAfXRKap7fdgcCY5uykM6+R9GqQ8K\"></script>",
}

// proseLines are lines of prose without those words.
var proseLines = []string{
	"Copper kettles hold heat for a long time, and the kitchen stays warm.",
	"We met at the station at nine and walked along the river to the market.",
	"The committee agreed to revisit the budget after the summer holidays.",
	"Her notes on the migration of swallows fill three small notebooks.",
	"",
	"## Minutes of the meeting",
	"- Alice will draft the schedule; Bob reviews it on Friday.",
}

// BenchmarkScanFile scans 1 MiB of ordinary text: code with the words
// secret rules look for (token, key, password, api, client, secret, URLs)
// as a source file and as a configuration file, and prose without them.
func BenchmarkScanFile(b *testing.B) {
	code, prose := benchDocument(1<<20, codeLines), benchDocument(1<<20, proseLines)
	for _, c := range []struct{ name, doc string }{{"main.go", code}, {"settings.yaml", code}, {"notes.md", prose}} {
		name, doc := c.name, c.doc
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			for b.Loop() {
				ScanFile(name, doc)
			}
		})
	}
}
