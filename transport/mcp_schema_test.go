package transport

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/graph"
)

// toolList connects a real MCP client to a test server and lists its
// tools, each input schema as the client received it.
func toolList(t *testing.T) (*mcp.ClientSession, map[string]*mcp.Tool, map[string]*jsonschema.Schema) {
	t.Helper()
	ts := newTestServer(t, false, "")
	cl := mcp.NewClient(&mcp.Implementation{Name: "schema-test", Version: "1"}, nil)
	sess, err := cl.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: ts.http.URL + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	list, err := sess.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	tools, schemas := map[string]*mcp.Tool{}, map[string]*jsonschema.Schema{}
	for _, tl := range list.Tools {
		b, err := json.Marshal(tl.InputSchema)
		if err != nil {
			t.Fatal(err)
		}
		var s jsonschema.Schema
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatalf("%s: the input schema is not a JSON Schema: %v", tl.Name, err)
		}
		tools[tl.Name], schemas[tl.Name] = tl, &s
	}
	return sess, tools, schemas
}

// metaSchema is JSON Schema draft 2020-12's own schema, read from the
// jsonschema-go module the SDK validates with.
func metaSchema(t *testing.T) *jsonschema.Resolved {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/google/jsonschema-go").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "jsonschema", "meta-schemas", "draft2020-12")
	load := func(rel string) (*jsonschema.Schema, error) {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)+".json"))
		if err != nil {
			return nil, err
		}
		var s jsonschema.Schema
		return &s, json.Unmarshal(b, &s)
	}
	root, err := load("schema")
	if err != nil {
		t.Fatal(err)
	}
	const prefix = "https://json-schema.org/draft/2020-12/"
	r, err := root.Resolve(&jsonschema.ResolveOptions{Loader: func(u *url.URL) (*jsonschema.Schema, error) {
		rel, ok := strings.CutPrefix(u.String(), prefix)
		if !ok {
			return nil, fmt.Errorf("no meta-schema %s", u)
		}
		return load(rel)
	}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// walk calls fn on every property schema under s (nested objects, array
// items and every branch of oneOf/anyOf/allOf), with its path.
func walk(s *jsonschema.Schema, path string, fn func(path string, p *jsonschema.Schema)) {
	if s == nil {
		return
	}
	for name, p := range s.Properties {
		fn(path+"."+name, p)
		walk(p, path+"."+name, fn)
	}
	walk(s.Items, path+"[]", fn)
	for i, branches := range [][]*jsonschema.Schema{s.OneOf, s.AnyOf, s.AllOf} {
		for j, b := range branches {
			walk(b, fmt.Sprintf("%s<%s %d>", path, []string{"oneOf", "anyOf", "allOf"}[i], j), fn)
		}
	}
}

// An agent reading only tools/list can call every tool: each input schema
// is valid JSON Schema (draft 2020-12, and it resolves for validation),
// every property of every tool is described, and closed values are
// enumerations.
func TestMCPToolSchemasAreComplete(t *testing.T) {
	_, tools, schemas := toolList(t)
	meta := metaSchema(t)
	for name, s := range schemas {
		var instance any
		b, _ := json.Marshal(tools[name].InputSchema)
		json.Unmarshal(b, &instance)
		if err := meta.Validate(instance); err != nil {
			t.Errorf("%s: not valid JSON Schema 2020-12: %v", name, err)
		}
		if _, err := s.Resolve(nil); err != nil {
			t.Errorf("%s: the schema does not resolve: %v", name, err)
		}
		if s.Type != "object" || len(s.OneOf)+len(s.AnyOf)+len(s.AllOf) > 0 {
			t.Errorf("%s: the input schema must be a plain object (some clients refuse combinators at the top)", name)
		}
		if strings.TrimSpace(tools[name].Description) == "" {
			t.Errorf("%s: no description", name)
		}
		walk(s, name, func(path string, p *jsonschema.Schema) {
			if strings.TrimSpace(p.Description) == "" {
				t.Errorf("%s: no description", path)
			}
		})
		for _, r := range s.Required {
			if s.Properties[r] == nil {
				t.Errorf("%s: required %s is no property", name, r)
			}
		}
	}

	// Closed values are enumerations, exactly the vocabularies.
	enum := func(tool string, path ...string) []string {
		p := schemas[tool]
		for _, step := range path {
			if p == nil {
				break
			}
			if step == "[]" {
				p = p.Items
			} else {
				p = p.Properties[step]
			}
		}
		if p == nil {
			t.Fatalf("%s: no %v", tool, path)
		}
		var out []string
		for _, v := range p.Enum {
			out = append(out, v.(string))
		}
		return out
	}
	for _, c := range []struct {
		tool string
		path []string
		want []string
	}{
		{"loci_set_mode", []string{"mode"}, []string{"full", "read_only", "disabled"}},
		{"loci_search", []string{"ranking"}, []string{"auto", "lexical", "semantic", "hybrid"}},
		{"loci_recall", []string{"ranking"}, []string{"auto", "lexical", "semantic", "hybrid"}},
		{"loci_search", []string{"source_kind"}, store.SourceKinds},
		{"loci_job_list", []string{"status"}, store.JobStatuses},
	} {
		t.Run(c.tool+" "+strings.Join(c.path, "."), func(t *testing.T) {
			if got := enum(c.tool, c.path...); !slices.Equal(got, c.want) {
				t.Errorf("%s %v: enum %v, want %v", c.tool, c.path, got, c.want)
			}
		})
	}
	for _, tl := range []string{"loci_search", "loci_recall"} {
		t.Run(tl, func(t *testing.T) {
			for _, arg := range []string{"as_of", "from", "until", "known_at"} {
				if p := schemas[tl].Properties[arg]; p.Pattern != store.InstantPattern || !strings.Contains(p.Description, "RFC 3339") {
					t.Errorf("%s: %+v", arg, p)
				}
			}
		})
	}

	// The checkpoint payload: an object or a JSON string; its items with
	// their closed values; each fact operation with its fields.
	payload := schemas["loci_checkpoint"].Properties["payload"]
	if payload == nil || len(payload.OneOf) != 2 || payload.OneOf[0].Type != "object" || payload.OneOf[1].Type != "string" {
		t.Fatalf("payload: %+v", payload)
	}
	item := payload.OneOf[0].Properties["items"].Items
	if item == nil || !slices.Equal(item.Required, []string{"destination", "content", "tags", "source"}) {
		t.Fatalf("an item: %+v", item)
	}
	if got := enum("loci_checkpoint", "payload"); got != nil {
		t.Fatalf("payload enum %v", got)
	}
	strEnum := func(p *jsonschema.Schema) []string {
		var out []string
		for _, v := range p.Enum {
			out = append(out, v.(string))
		}
		return out
	}
	if got := strEnum(item.Properties["destination"]); !slices.Equal(got, []string{"preference", "project", "diary", "general"}) {
		t.Errorf("destination enum %v", got)
	}
	if got := strEnum(item.Properties["source"].Properties["kind"]); !slices.Equal(got, store.SourceKinds) {
		t.Errorf("source.kind enum %v", got)
	}
	fact := item.Properties["fact"]
	var ops []string
	for _, b := range fact.OneOf {
		ops = append(ops, strEnum(b.Properties["op"])...)
		switch op := strEnum(b.Properties["op"])[0]; op {
		case "add":
			if !slices.Equal(strEnum(b.Properties["predicate"]), graph.Predicates) || !slices.Equal(strEnum(b.Properties["subject_kind"]), graph.Kinds) ||
				!slices.Equal(b.Required, []string{"op", "subject", "predicate", "object"}) {
				t.Errorf("add: %+v", b)
			}
			for _, side := range []string{"subject", "object"} {
				if s := b.Properties[side]; len(s.OneOf) != 2 || s.OneOf[0].Type != "string" || s.OneOf[1].Type != "object" ||
					!slices.Equal(strEnum(s.OneOf[1].Properties["kind"]), graph.Kinds) {
					t.Errorf("add %s: not a name or {name, kind}: %+v", side, s)
				}
			}
		case "link":
			if !slices.Equal(strEnum(b.Properties["kind"]), graph.LinkKinds) || !slices.Contains(b.Required, "reason") {
				t.Errorf("link: %+v", b)
			}
		}
	}
	if !slices.Equal(ops, store.FactOps) {
		t.Errorf("fact operations %v, want %v", ops, store.FactOps)
	}
}

// What a tool's schema allows, the tool accepts (it may still not find
// what the arguments name), and what the tool refuses as bad input, the
// schema refuses: the published schema and the decoder agree, both ways,
// on every case here.
func TestMCPToolSchemasAgreeWithTheTools(t *testing.T) {
	sess, _, schemas := toolList(t)
	tmp := t.TempDir()
	const id = "6f0f7ad5-5d4c-4b40-9a52-7d2d3bcb1c2a"
	example := map[string]any{"items": []any{map[string]any{"destination": "general", "content": "The standup moved to ten.", "tags": []any{},
		"source": map[string]any{"kind": "manual"}}}}
	exampleText, _ := json.Marshal(example)
	for _, c := range []struct {
		tool string
		args string
		ok   bool
	}{
		{"loci_status", `{}`, true},
		{"loci_status", `{"verbose":true}`, false},
		{"loci_set_mode", `{"mode":"full"}`, true},
		{"loci_set_mode", `{"mode":"sleepy"}`, false},
		{"loci_set_mode", `{"mode":""}`, false},
		{"loci_set_mode", `{}`, false},
		{"loci_search", `{"query":"standup"}`, true},
		{"loci_search", `{"query":"standup","ranking":"lexical","limit":5,"source_kind":"manual","as_of":"2026-01-01","tags":["a"],"expand":true}`, true},
		{"loci_search", `{"query":"standup","from":"2026-01-01","until":"2026-02-01T00:00:00Z","known_at":"2026-03-01T10:00:00.5+02:00"}`, true},
		{"loci_search", `{"query":"standup","tags":null,"limit":0,"include_historical":true}`, true},
		{"loci_search", `{}`, false},
		{"loci_search", `{"query":" "}`, false},
		{"loci_search", `{"query":"x","ranking":"fuzzy"}`, false},
		{"loci_search", `{"query":"x","limit":201}`, false},
		{"loci_search", `{"query":"x","limit":-1}`, false},
		{"loci_search", `{"query":"x","limit":"5"}`, false},
		{"loci_search", `{"query":"x","source_kind":"email"}`, false},
		{"loci_search", `{"query":"x","as_of":"yesterday"}`, false},
		{"loci_search", `{"query":"x","colour":"red"}`, false},
		{"loci_recall", `{"query":"standup","wing":"general"}`, true},
		{"loci_recall", `{"query":"x","room":"r"}`, false},
		{"loci_history", `{"drawer_id":"` + id + `"}`, true},
		{"loci_history", `{}`, false},
		{"loci_fact_history", `{"relationship_id":"` + id + `","as_of":"2026-05-01","known_at":"2026-05-01T00:00:00Z"}`, true},
		{"loci_fact_history", `{"relationship_id":"` + id + `","as_of":"May"}`, false},
		{"loci_wake_up", `{"agent_identity":"claude","wing":"general","max_items":3,"max_bytes":100}`, true},
		{"loci_wake_up", `{"agent_identity":"claude","max_items":-1}`, false},
		{"loci_wake_up", `{"agent_identity":" "}`, false},
		{"loci_diary_write", `{"agent_identity":"claude","wing":"general","content":"Learned the standup time."}`, true},
		{"loci_diary_write", `{"agent_identity":"claude","wing":"general","content":" "}`, false},
		{"loci_diary_write", `{"agent_identity":"claude","content":"x"}`, false},
		{"loci_diary_read", `{"agent_identity":"claude","wing":"general","limit":200}`, true},
		{"loci_diary_read", `{"agent_identity":"claude","wing":"general","limit":201}`, false},
		{"loci_diary_read", `{"agent_identity":"claude","wing":" "}`, false},
		{"loci_job_list", `{"status":"completed"}`, true},
		{"loci_job_list", `{"status":"done"}`, false},
		{"loci_job_list", `{"automatic":false}`, true},
		{"loci_job_list", `{"automatic":"no"}`, false},
		{"loci_job_get", `{"id":"` + id + `"}`, true},
		{"loci_job_get", `{}`, false},
		{"loci_checkpoint", `{"payload":` + string(exampleText) + `}`, true},
		{"loci_checkpoint", `{"payload":` + strconvQuote(string(exampleText)) + `,"emergency":true}`, true},
		{"loci_checkpoint", `{}`, false},
		{"loci_checkpoint", `{"payload":{"items":[]}}`, false},
		{"loci_checkpoint", `{"payload":5}`, false},
		{"loci_checkpoint", `{"payload":` + string(exampleText) + `,"emergency":"yes"}`, false},
		{"loci_mine", `{"path":` + strconvQuote(tmp) + `,"full":true}`, true},
		{"loci_mine", `{"path":` + strconvQuote(tmp) + `,"options":{"since":1}}`, false},
		{"loci_audit", `{"wing":"general"}`, true},
		{"loci_audit", `{"wing":5}`, false},
		{"loci_repair", `{"dry_run":true}`, true},
		{"loci_repair", `{"dry_run":"no"}`, false},
	} {
		t.Run(c.tool+" "+c.args, func(t *testing.T) {
			s := schemas[c.tool]
			if s == nil {
				t.Fatalf("no tool %s", c.tool)
			}
			resolved, err := s.Resolve(nil)
			if err != nil {
				t.Fatal(err)
			}
			var args map[string]any
			if err := json.Unmarshal([]byte(c.args), &args); err != nil {
				t.Fatalf("%s: %v", c.args, err)
			}
			schemaErr := resolved.Validate(args)
			res, err := sess.CallTool(t.Context(), &mcp.CallToolParams{Name: c.tool, Arguments: json.RawMessage(c.args)})
			if err != nil {
				t.Fatal(err)
			}
			var body struct{ Code, Error string }
			json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &body)
			refused := res.IsError && slices.Contains([]string{"loci::input::invalid", "loci::graph::empty_label", "loci::palace::path_invalid"}, body.Code)
			if (schemaErr == nil) != c.ok || refused == c.ok {
				t.Errorf("%s %s: schema %v; tool refused it %v (%s); want both to accept: %v", c.tool, c.args, schemaErr, refused, body.Code, c.ok)
			}
			// An invalid-input refusal names the argument as the tool's schema
			// does (REST's names differ: "text" for loci_search's "query").
			if name, why, ok := strings.Cut(body.Error, ":"); refused && body.Code == "loci::input::invalid" && ok && !strings.Contains(name, " ") &&
				!strings.Contains(why, "is not an argument of this tool") {
				if top, _, _ := strings.Cut(name, "."); s.Properties[top] == nil && top != "arguments" {
					t.Errorf("%s %s: the refusal names %q, not an argument of the tool: %s", c.tool, c.args, name, body.Error)
				}
			}
		})
	}
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// A checkpoint made exactly from the example in loci_checkpoint's
// description is accepted, as an object and as a JSON string, and runs.
func TestMCPCheckpointExampleRuns(t *testing.T) {
	sess, tools, schemas := toolList(t)
	desc := tools["loci_checkpoint"].Description
	_, text, ok := strings.Cut(desc, "Example payload: ")
	if !ok {
		t.Fatalf("no example in %q", desc)
	}
	var example map[string]any
	if err := json.Unmarshal([]byte(text), &example); err != nil {
		t.Fatalf("the example is not JSON: %v\n%s", err, text)
	}
	resolved, _ := schemas["loci_checkpoint"].Resolve(nil)
	if err := resolved.Validate(map[string]any{"payload": example}); err != nil {
		t.Fatalf("the example does not match the schema: %v", err)
	}
	for _, payload := range []any{example, text} {
		res, err := sess.CallTool(t.Context(), &mcp.CallToolParams{Name: "loci_checkpoint", Arguments: map[string]any{"payload": payload}})
		if err != nil || res.IsError {
			t.Fatalf("the example (%T): %v %v", payload, err, res.Content)
		}
		var job struct{ ID string }
		json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &job)
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			res, err := sess.CallTool(context.Background(), &mcp.CallToolParams{Name: "loci_job_get", Arguments: map[string]any{"id": job.ID}})
			if err != nil {
				t.Fatal(err)
			}
			var j struct {
				Status string
				Result map[string]any
			}
			json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &j)
			if j.Status == "completed" && reflect.DeepEqual(j.Result["items"], 1.0) {
				break
			}
			if j.Status == "failed" || time.Now().After(deadline) {
				t.Fatalf("the example's job: %s", res.Content[0].(*mcp.TextContent).Text)
			}
		}
	}
}
