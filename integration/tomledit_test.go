package integration

import (
	"strings"
	"testing"
)

const lociTable = "[mcp_servers.loci]\nurl = \"http://127.0.0.1:1/mcp\"\n"

func TestTOMLSpliceKeepsComments(t *testing.T) {
	key := []string{"mcp_servers", "loci"}
	for _, in := range []string{
		"",
		"model = \"o3\" # my model\n",
		"model = \"o3\"",
		"model = \"o3\"\n\n",
		"# top\nmodel = \"o3\"\n\n[mcp_servers.other] # theirs\ncommand = \"x\"\n\n# about profiles\n[profiles.fast]\nmodel = \"o4\"\n",
		"notes = \"\"\"\n[mcp_servers.loci]\n\"\"\"\n",
	} {
		t.Run(in, func(t *testing.T) {
			out := tomlSetTable(in, key, lociTable)
			doc, err := parseTOML([]byte(out))
			if err != nil {
				t.Fatalf("%q: %v\n%s", in, err, out)
			}
			if v, _ := tomlGet(doc, []string{"mcp_servers", "loci", "url"}); v != "http://127.0.0.1:1/mcp" {
				t.Fatalf("%q: url %v\n%s", in, v, out)
			}
			if !strings.HasPrefix(out, strings.TrimRight(in, "\n")) {
				t.Fatalf("%q: the rest changed:\n%s", in, out)
			}
			if again := tomlSetTable(out, key, lociTable); again != out {
				t.Fatalf("%q: second set changed it:\n%s", in, again)
			}
			back := tomlRemoveTable(out, key)
			if want := in; back != want && !(in == "model = \"o3\"" && back == "model = \"o3\"\n") {
				t.Fatalf("remove: %q, want %q", back, want)
			}
		})
	}
}

func TestTOMLTableInTheMiddle(t *testing.T) {
	in := "a = 1\n\n[mcp_servers.loci]\nurl = \"old\"\n[mcp_servers.loci.env_http_headers]\nX = \"Y\"\n\n# next\n[tui]\nx = 1\n"
	out := tomlSetTable(in, []string{"mcp_servers", "loci"}, lociTable)
	want := "a = 1\n\n" + lociTable + "\n# next\n[tui]\nx = 1\n"
	if out != want {
		t.Fatalf("got:\n%s\nwant:\n%s", out, want)
	}
	if got := tomlRemoveTable(out, []string{"mcp_servers", "loci"}); got != "a = 1\n\n\n# next\n[tui]\nx = 1\n" {
		t.Fatalf("remove:\n%q", got)
	}
	if _, _, ok := tomlTable("[mcp_servers]\nloci = { url = \"x\" }\n", []string{"mcp_servers", "loci"}); ok {
		t.Fatal("an inline table is not a header")
	}
	if k := tomlKey(` mcp_servers . "lo.ci" `); len(k) != 2 || k[1] != "lo.ci" {
		t.Fatalf("key %q", k)
	}
}

func FuzzTOMLSplice(f *testing.F) {
	f.Add("model = \"o3\"\n[x]\ny = 1\n")
	f.Add("# c\n[mcp_servers.loci]\nurl = \"a\"\n")
	f.Fuzz(func(t *testing.T, in string) {
		if _, err := parseTOML([]byte(in)); err != nil {
			return
		}
		key := []string{"mcp_servers", "loci"}
		if _, ok := tomlGet(mustTOML(in), key); ok {
			if _, _, header := tomlTable(in, key); !header {
				return // written inline: a conflict, never spliced
			}
		}
		out := tomlSetTable(in, key, lociTable)
		doc, err := parseTOML([]byte(out))
		if err != nil {
			if strings.Contains(in, "mcp_servers") {
				return // e.g. an inline [mcp_servers] value: refused as invalid
			}
			t.Fatalf("%q -> %q: %v", in, out, err)
		}
		if v, _ := tomlGet(doc, []string{"mcp_servers", "loci", "url"}); v != "http://127.0.0.1:1/mcp" {
			t.Fatalf("%q -> %q: url %v", in, out, v)
		}
	})
}

func mustTOML(s string) map[string]any {
	m, _ := parseTOML([]byte(s))
	return m
}
