package integration

import (
	"encoding/json"
	"testing"
)

func TestJSONSpliceKeepsBytes(t *testing.T) {
	entry := orderedObject{{"type", "http"}, {"url", "http://127.0.0.1:1/mcp"}}
	cases := []struct {
		name, in, want string
		path           []string
	}{
		{"empty file", "", "{\n  \"mcpServers\": {\n    \"loci\": {\n      \"type\": \"http\",\n      \"url\": \"http://127.0.0.1:1/mcp\"\n    }\n  }\n}\n", []string{"mcpServers", "loci"}},
		{"pretty, parent exists", "{\n    \"a\": 1,\n    \"mcpServers\": {\n        \"x\": {}\n    },\n    \"z\": [1, 2]\n}\n",
			"{\n    \"a\": 1,\n    \"mcpServers\": {\n        \"x\": {},\n        \"loci\": {\n            \"type\": \"http\",\n            \"url\": \"http://127.0.0.1:1/mcp\"\n        }\n    },\n    \"z\": [1, 2]\n}\n", []string{"mcpServers", "loci"}},
		{"one line", `{"a":1}`, `{"a":1, "loci": {"type":"http","url":"http://127.0.0.1:1/mcp"}}`, []string{"loci"}},
		{"jsonc comments kept", "{\n  // mine\n  \"mcp\": {\n    \"x\": {}, // trailing\n  },\n}\n",
			"{\n  // mine\n  \"mcp\": {\n    \"x\": {},\n    \"loci\": {\n      \"type\": \"http\",\n      \"url\": \"http://127.0.0.1:1/mcp\"\n    }, // trailing\n  },\n}\n", []string{"mcp", "loci"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := parseJSON([]byte(c.in))
			if err != nil {
				t.Fatal(err)
			}
			if err := d.set(c.path, entry); err != nil {
				t.Fatal(err)
			}
			if got := string(d.src); got != c.want {
				t.Fatalf("set:\n%s\nwant:\n%s", got, c.want)
			}
			if _, err := parseJSON(d.src); err != nil {
				t.Fatalf("result does not parse: %v", err)
			}
			// Setting again changes nothing; removing restores the
			// original bytes (but for an empty file, which becomes {}).
			again := string(d.src)
			if err := d.set(c.path, entry); err != nil || string(d.src) != again {
				t.Fatalf("second set changed the document:\n%s (%v)", d.src, err)
			}
			if err := d.remove(c.path); err != nil {
				t.Fatal(err)
			}
			if c.in != "" && c.name != "jsonc comments kept" && c.name != "empty file" {
				if len(c.path) == 1 && string(d.src) != c.in {
					t.Fatalf("remove:\n%q\nwant:\n%q", d.src, c.in)
				}
			}
			var v map[string]any
			if err := json.Unmarshal(d.src, &v); err != nil && c.name != "jsonc comments kept" {
				t.Fatalf("after remove: %v\n%s", err, d.src)
			}
		})
	}
}

func TestJSONRemoveMember(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"between members", "{\n  \"a\": 1,\n  \"loci\": {},\n  \"b\": 2\n}", "{\n  \"a\": 1,\n  \"b\": 2\n}"},
		{"first member", "{\n  \"loci\": {},\n  \"b\": 2\n}", "{\n  \"b\": 2\n}"},
		{"last member", "{\n  \"a\": 1,\n  \"loci\": {}\n}", "{\n  \"a\": 1\n}"},
		{"only member", "{\n  \"loci\": {}\n}", "{}"},
		{"absent", "{\"a\":1}", "{\"a\":1}"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, _ := parseJSON([]byte(c.in))
			if err := d.remove([]string{"loci"}); err != nil || string(d.src) != c.want {
				t.Errorf("remove from %q: %q (%v), want %q", c.in, d.src, err, c.want)
			}
		})
	}
}

func TestJSONArrays(t *testing.T) {
	in := "{\n  \"hooks\": {\n    \"SessionStart\": [\n      {\"hooks\": []}\n    ]\n  }\n}\n"
	d, _ := parseJSON([]byte(in))
	p := []string{"hooks", "SessionStart"}
	if err := d.appendElement(p, orderedObject{{"a", 1}}); err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"hooks\": {\n    \"SessionStart\": [\n      {\"hooks\": []},\n      {\n        \"a\": 1\n      }\n    ]\n  }\n}\n"
	if string(d.src) != want {
		t.Fatalf("append:\n%s", d.src)
	}
	if err := d.removeElement(p, 1); err != nil || string(d.src) != in {
		t.Fatalf("remove element:\n%s (%v)", d.src, err)
	}
	if err := d.appendElement([]string{"hooks", "PreCompact"}, orderedObject{{"a", 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := parseJSON(d.src); err != nil {
		t.Fatalf("%v\n%s", err, d.src)
	}
	if err := d.remove([]string{"hooks", "PreCompact"}); err != nil || string(d.src) != in {
		t.Fatalf("remove array:\n%s (%v)", d.src, err)
	}
}

func TestCorruptJSONRefused(t *testing.T) {
	for _, in := range []string{"{", "[1]", "{\"a\": }", "nul"} {
		t.Run(in, func(t *testing.T) {
			if _, err := parseJSON([]byte(in)); err == nil {
				t.Errorf("%q parsed", in)
			}
		})
	}
}

func FuzzJSONSplice(f *testing.F) {
	f.Add("{\n  \"a\": 1\n}")
	f.Add(`{"mcpServers": {"x": {}}, "b": [1, {"c": null}]}`)
	f.Add("{\n  // c\n  \"mcpServers\": {},\n}")
	f.Fuzz(func(t *testing.T, in string) {
		d, err := parseJSON([]byte(in))
		if err != nil {
			return
		}
		path := []string{"mcpServers", "loci"}
		if err := d.set(path, orderedObject{{"type", "http"}}); err != nil {
			return // mcpServers is not an object: refused
		}
		if _, err := parseJSON(d.src); err != nil {
			t.Fatalf("%q -> %q: %v", in, d.src, err)
		}
		got, err := d.get(path)
		if err != nil || !jsonEqual(got, map[string]any{"type": "http"}) {
			t.Fatalf("%q -> %q: loci is %s (%v)", in, d.src, got, err)
		}
		if err := d.remove(path); err != nil {
			t.Fatal(err)
		}
		if _, err := parseJSON(d.src); err != nil {
			t.Fatalf("%q: after remove %q: %v", in, d.src, err)
		}
		if got, _ := d.get(path); got != nil {
			t.Fatalf("%q: still there after remove: %q", in, d.src)
		}
	})
}
