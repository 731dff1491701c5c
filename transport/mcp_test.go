package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
)

// The plain result written for a text answer must be, on the wire, what
// the SDK writes for the same CallToolResult; anything it cannot express
// keeps the SDK's own result.
func TestPlainToolResultsMatchTheSDK(t *testing.T) {
	text := "{\n  \"content\": \"a \\\"quoted\\\" <b>bold</b> & tab\\t, ünïcode, \u2028, 🙂\"\n}"
	call := func(r *mcp.CallToolResult, meta mcp.Meta, failure error) (mcp.Result, error) {
		next := func(context.Context, string, mcp.Request) (mcp.Result, error) {
			if failure != nil {
				return nil, failure
			}
			return r, nil
		}
		req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Meta: meta, Name: "loci_search"}}
		return plainToolResults(next)(context.Background(), "tools/call", req)
	}
	decoded := func(v any) any {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var out any
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}

	for _, isError := range []bool{false, true} {
		r := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}, &mcp.TextContent{Text: ""}}, IsError: isError}
		got, err := call(r, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := got.(*textResult); !ok {
			t.Fatalf("isError=%v: got %T, want the plain result", isError, got)
		}
		if want, have := decoded(r), decoded(got); !reflect.DeepEqual(want, have) {
			t.Fatalf("isError=%v: wire differs:\nSDK:  %v\nours: %v", isError, want, have)
		}
	}

	keep := map[string]struct {
		r    *mcp.CallToolResult
		meta mcp.Meta
	}{
		"request with _meta":  {&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, mcp.Meta{"progressToken": 1}},
		"result with _meta":   {&mcp.CallToolResult{Meta: mcp.Meta{"k": "v"}, Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil},
		"structured content":  {&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: map[string]any{"a": 1}}, nil},
		"image content":       {&mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: []byte{1}, MIMEType: "image/png"}}}, nil},
		"annotated text":      {&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text, Annotations: &mcp.Annotations{Priority: 1}}}}, nil},
		"text with its _meta": {&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text, Meta: mcp.Meta{"k": "v"}}}}, nil},
	}
	for name, c := range keep {
		got, err := call(c.r, c.meta, nil)
		if err != nil || got != mcp.Result(c.r) {
			t.Errorf("%s: got %T %v, want the SDK's own result", name, got, err)
		}
	}

	boom := errors.New("boom")
	if got, err := call(nil, nil, boom); got != nil || !errors.Is(err, boom) {
		t.Fatalf("a failure must pass through: %v %v", got, err)
	}
}

// mapArgs are arguments with a map of strings, as a mine job's options.
type mapArgs struct {
	Path    string            `json:"path,omitempty"`
	Options map[string]string `json:"options,omitempty"`
}

// Whatever a client sends as a tool's arguments decodes or is
// loci::input::invalid; nothing panics.
func FuzzDecodeArgs(f *testing.F) {
	for _, seed := range []string{`{"query":"deploy","limit":3,"tags":["a"]}`, `{"query":1}`, `[]`, `null`, ``, `{"room":"r","query":"x","as_of":"2026-01-01"}`,
		`{"path":"/tmp","options":{"a":"b"}}`, `{"options":{"a":1}}`, `{"query":"x","limit":1e400}`, `{"query":"\ud800"}`, `{"x":{}}`} {
		f.Add([]byte(seed))
	}
	search, _ := jsonschema.For[searchArgs](nil)
	mine, _ := jsonschema.For[mapArgs](nil)
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, c := range []struct {
			schema *jsonschema.Schema
			v      any
		}{{search, &searchArgs{}}, {mine, &mapArgs{}}} {
			if err := decodeArgs(raw, c.schema, c.v); err != nil && fault.As(err).Code != fault.InputInvalid {
				t.Fatalf("%q: %v", raw, err)
			}
		}
	})
}

// Whatever body a client posts to /api/search is answered 200, or 4xx with
// {error, code, help}; never a 5xx, never a panic.
func FuzzSearchBody(f *testing.F) {
	ts := newTestServer(f, false, "")
	h := ts.Handler()
	for _, c := range []string{"The deploy moved to Thursday.", "Lunch is at noon."} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, localRequest("POST", "/api/wings/w/rooms/r/drawers", strings.NewReader(`{"content":`+strconv.Quote(c)+`}`)))
		if rec.Code != 201 {
			f.Fatalf("seed drawer: %d %s", rec.Code, rec.Body)
		}
	}
	for _, seed := range []string{`{"text":"deploy"}`, `{"text":"deploy","limit":0,"filter":{"wing":"w","room":"r","tags":["a"],"temporal":{"as_of":"2026-01-01"}}}`,
		`{"text":"x","filter":{"temporal":"all"}}`, `{"text":"x","filter":{"temporal":{"between":{"from":"2026-01-01","until":"2025-01-01"}}}}`,
		`{"text":"x","ranking":"semantic"}`, `{"text":"x","query_embedding":[1,2],"profile":"p"}`, `{"text":""}`, `[]`, `{"text":"x","limit":-1}`, `{"text":"x","expand":true,"filter":{"room":"r"}}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		rec := httptest.NewRecorder()
		req := localRequest("POST", "/api/search", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		h.ServeHTTP(rec, req)
		if rec.Code == 200 {
			return
		}
		refusal(t, rec, fmt.Sprintf("%q", body))
	})
}

// Whatever body a client sends to a write route is taken (2xx), or refused
// with a 4xx {error, code, help} that changed nothing: no wing, room,
// drawer or link created or removed.
func FuzzWriteBodies(f *testing.F) {
	ts := newTestServer(f, false, "")
	h := ts.Handler()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, localRequest("POST", "/api/wings/w/rooms/r/drawers", strings.NewReader(`{"content":"The deploy moved to Thursday."}`)))
	var seed struct{ Drawer struct{ ID string } }
	if rec.Code != 201 || json.Unmarshal(rec.Body.Bytes(), &seed) != nil {
		f.Fatalf("seed drawer: %d %s", rec.Code, rec.Body)
	}
	routes := []struct{ method, path string }{
		{"POST", "/api/wings"}, {"POST", "/api/wings/%s/rooms"}, {"POST", "/api/wings/w/rooms/%s/drawers"}, {"POST", "/api/notes"},
		{"POST", "/api/diary"}, {"POST", "/api/drawers/%s/supersede"}, {"PUT", "/api/drawers/%s/embedding"},
	}
	for i, body := range []string{`{"name":"w2","description":"d"}`, `{"name":"r2"}`, `{"content":"x","name":"a/b","tags":["t"],"source":{"kind":"file","uri":"/tmp/a"}}`,
		`{"wing":"w","room":"n","content":"a note"}`, `{"agent_identity":"a","wing":"w","content":"entry"}`, `{"content":"The deploy moved to Friday."}`,
		`{"profile":"p","embedding":[1,2]}`} {
		f.Add(uint8(i), []byte(body), "r")
		f.Add(uint8(i), []byte(body), seed.Drawer.ID)
	}
	for _, body := range []string{`{"content":""}`, `{"content":"x","name":"."}`, `{"content":"x","valid_from":"2026-01-01"}`, `{"content":"x","source":{"kind":"nope"}}`,
		`{"content":"x","tags":[1]}`, `{}`, `[]`, `{"content":"x","extra":1}`, `{"content":"x","name":"01a201c5-9e66-74c4-844c-2615a39b7134"}`} {
		f.Add(uint8(2), []byte(body), "r")
	}
	f.Fuzz(func(t *testing.T, route uint8, body []byte, seg string) {
		rt := routes[int(route)%len(routes)]
		path := rt.path
		if strings.Contains(path, "%s") {
			path = fmt.Sprintf(path, url.PathEscape(seg))
		}
		before, err := ts.Palace.Counts(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		req := localRequest(rt.method, path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		h.ServeHTTP(rec, req)
		if rec.Code/100 == 2 {
			return
		}
		e := refusal(t, rec, fmt.Sprintf("%s %s %q", rt.method, path, body))
		after, err := ts.Palace.Counts(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if after != before {
			t.Fatalf("%s %s %q refused (%s) but changed the palace: %+v -> %+v", rt.method, path, body, e.Code, before, after)
		}
	})
}

// Whatever body a client posts to /api/jobs is submitted (202), or refused
// with a 4xx {error, code, help} that created no job.
func FuzzJobBody(f *testing.F) {
	ts := newTestServer(f, false, "")
	h := ts.Handler()
	for _, seed := range []string{`{"type":"audit"}`, `{"type":"repair","dry_run":true}`, `{"type":"repair","based_on_job":"x"}`, `{"type":"demo","steps":2}`,
		`{"type":"demo","steps":99}`, `{"type":"checkpoint","payload":{"items":[{"destination":"d","content":"c"}]}}`, `{"type":"checkpoint","payload":"{"}`,
		`{"type":"mine","path":"relative"}`, `{"type":"embed"}`, `{"type":"extract"}`, `{"type":"nope"}`, `{"type":"audit","priority":"urgent"}`, `{}`, `null`} {
		f.Add([]byte(seed))
	}
	jobs := func(t *testing.T) int {
		n := 0
		if err := ts.Jobs.DB.View(context.Background(), func(r store.Reader) error {
			return r.Jobs(func(*store.Job) bool { n++; return true })
		}); err != nil {
			t.Fatal(err)
		}
		return n
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		before := jobs(t)
		rec := httptest.NewRecorder()
		req := localRequest("POST", "/api/jobs", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		h.ServeHTTP(rec, req)
		if rec.Code == 202 {
			return
		}
		e := refusal(t, rec, fmt.Sprintf("%q", body))
		if after := jobs(t); after != before {
			t.Fatalf("%q refused (%s) but jobs went %d -> %d", body, e.Code, before, after)
		}
	})
}

// Whatever query string a client sends to a read route is answered 200, or
// 4xx with {error, code, help}; never a 5xx.
func FuzzReadQueries(f *testing.F) {
	ts := newTestServer(f, false, "")
	h := ts.Handler()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, localRequest("POST", "/api/wings/w/rooms/r/drawers", strings.NewReader(`{"content":"The deploy moved to Thursday."}`)))
	if rec.Code != 201 {
		f.Fatalf("seed drawer: %d %s", rec.Code, rec.Body)
	}
	paths := []string{"/api/search", "/api/recall", "/api/jobs", "/api/wake-up", "/api/diary", "/api/wings/w/rooms/r/drawers", "/api/wings", "/api/status"}
	for i, q := range []string{"q=deploy&limit=3&wing=w&room=r&tags=a,b&as_of=2026-01-01", "q=x&from=2026-01-01&until=2025-01-01&ranking=hybrid", "status=queued&kind=audit&limit=2",
		"agent_identity=a&wing=w&max_items=3&max_bytes=100", "agent_identity=a&wing=w&limit=0", "limit=5&current=false&before=x", "", ""} {
		f.Add(uint8(i), q)
		f.Add(uint8(i), q+"&limit=-1&include_historical=maybe")
	}
	f.Fuzz(func(t *testing.T, route uint8, query string) {
		path := paths[int(route)%len(paths)]
		rec := httptest.NewRecorder()
		req := localRequest("GET", path, nil)
		req.URL.RawQuery = query
		h.ServeHTTP(rec, req)
		if rec.Code == 200 {
			return
		}
		refusal(t, rec, fmt.Sprintf("GET %s?%s", path, query))
	})
}

// Whatever arguments an MCP client sends to any tool, the answer is a tool
// result: its text is JSON, and an error result's text is {error, code,
// help}; the call itself never fails.
func FuzzMCPTools(f *testing.F) {
	ts := newTestServer(f, false, "")
	ctx := context.Background()
	cl := mcp.NewClient(&mcp.Implementation{Name: "fuzz", Version: "1"}, nil)
	sess, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.http.URL + "/mcp"}, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { sess.Close() })
	list, err := sess.ListTools(ctx, nil)
	if err != nil {
		f.Fatal(err)
	}
	names := make([]string, len(list.Tools))
	for i, tl := range list.Tools {
		names[i] = tl.Name
	}
	for i := range names {
		for _, args := range []string{`{}`, `{"query":"deploy","limit":2}`, `{"mode":"read_only"}`, `{"id":"x"}`, `{"drawer_id":"01a201c5-9e66-74c4-844c-2615a39b7134"}`,
			`{"agent_identity":"a","wing":"w","content":"c"}`, `{"payload":"{\"items\":[]}"}`, `{"path":"/tmp"}`, `{"dry_run":false}`, `{"status":"queued"}`} {
			f.Add(uint8(i), []byte(args))
		}
	}
	f.Fuzz(func(t *testing.T, tool uint8, args []byte) {
		if !json.Valid(args) {
			return // the client cannot send it
		}
		name := names[int(tool)%len(names)]
		res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
		if err != nil {
			t.Fatalf("%s %s: the call failed: %v", name, args, err)
		}
		if len(res.Content) != 1 {
			t.Fatalf("%s %s: %d content items", name, args, len(res.Content))
		}
		text := res.Content[0].(*mcp.TextContent).Text
		var e struct{ Error, Code, Help string }
		if !json.Valid([]byte(text)) || (res.IsError && (json.Unmarshal([]byte(text), &e) != nil || e.Error == "" || e.Code == "" || e.Help == "")) {
			t.Fatalf("%s %s: %v %s", name, args, res.IsError, text)
		}
	})
}

// Whatever names or ids a client puts in a route's path, the answer is 2xx
// or a 4xx with {error, code, help}; never a 5xx.
func FuzzPathSegments(f *testing.F) {
	ts := newTestServer(f, false, "")
	h := ts.Handler()
	routes := []struct{ method, path string }{
		{"GET", "/api/wings/%s"}, {"GET", "/api/wings/w/rooms/%s"}, {"GET", "/api/wings/w/rooms/r/drawers/%s"}, {"GET", "/api/drawers/%s/history"},
		{"GET", "/api/drawers/%s/duplicates"}, {"GET", "/api/jobs/%s"}, {"POST", "/api/jobs/%s/pause"}, {"POST", "/api/jobs/%s/resume"},
		{"POST", "/api/jobs/%s/cancel"}, {"POST", "/api/jobs/%s/retry"}, {"POST", "/api/jobs/%s/force-cancel"},
		{"DELETE", "/api/drawers/x/duplicates/%s"}, {"DELETE", "/api/wings/w/rooms/r/drawers/%s"}, {"DELETE", "/api/wings/w/rooms/%s"}, {"DELETE", "/api/wings/%s"},
	}
	for i := range routes {
		for _, seg := range []string{"w", "r", "a/b/c", "01a201c5-9e66-74c4-844c-2615a39b7134", "..", "%", " x ", "\x00"} {
			f.Add(uint8(i), seg)
		}
	}
	f.Fuzz(func(t *testing.T, route uint8, seg string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, localRequest("POST", "/api/wings/w/rooms/r/drawers", strings.NewReader(`{"content":"A drawer to find or delete.","name":"d"}`)))
		rt := routes[int(route)%len(routes)]
		req := localRequest(rt.method, "/", nil)
		req.URL.RawPath = fmt.Sprintf(rt.path, url.PathEscape(seg))
		req.URL.Path, _ = url.PathUnescape(req.URL.RawPath)
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code/100 == 2 {
			return
		}
		refusal(t, rec, fmt.Sprintf("%s %s", rt.method, req.URL.RawPath))
	})
}

// localRequest is an httptest request addressed to localhost (httptest's
// default Host, example.com, is refused on a loopback daemon).
func localRequest(method, target string, body io.Reader) *http.Request {
	r := httptest.NewRequest(method, target, body)
	r.Host = "localhost"
	return r
}

// refusal is the {error, code, help} of a refused request: a 4xx with every
// field set, else the test fails naming what was sent.
func refusal(t *testing.T, rec *httptest.ResponseRecorder, sent string) (e struct{ Error, Code, Help string }) {
	t.Helper()
	if rec.Code < 400 || rec.Code >= 500 || json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Error == "" || e.Code == "" || e.Help == "" {
		t.Fatalf("%s: %d %s", sent, rec.Code, rec.Body)
	}
	return e
}

// A mistyped argument is named as the client sent it, also when it lives
// in an embedded argument struct (loci_search's limit is recall's).
func TestDecodeArgsNamesTheArgument(t *testing.T) {
	schema, _ := jsonschema.For[searchArgs](nil)
	for raw, want := range map[string]string{
		`{"query":"x","limit":"two"}`:  "limit: must be a number, not JSON string",
		`{"query":"x","tags":"a"}`:     "tags: must be an array, not JSON string",
		`{"query":"x","room":1}`:       "room: must be a string, not JSON number",
		`{"query":"x","expand":"yes"}`: "expand: must be true or false, not JSON string",
	} {
		t.Run(raw, func(t *testing.T) {
			err := decodeArgs(json.RawMessage(raw), schema, &searchArgs{})
			if err == nil || !strings.Contains(err.Error(), want) || fault.As(err).Code != fault.InputInvalid {
				t.Errorf("%v, want %q", err, want)
			}
		})
	}
	mine, _ := jsonschema.For[mapArgs](nil)
	if err := decodeArgs(json.RawMessage(`{"options":{"a":1}}`), mine, &mapArgs{}); err == nil || !strings.Contains(err.Error(), "options: must be a string") {
		t.Errorf("nested: %v", err)
	}
	// Several unknown arguments: the first as written, every time (not the
	// map's random order).
	for range 20 {
		err := decodeArgs(json.RawMessage(`{"query":"x","zeta":1,"nested":{"b":2},"alpha":3,"mid":4}`), schema, &searchArgs{})
		if err == nil || !strings.HasPrefix(fault.As(err).Msg, "zeta: is not an argument") {
			t.Fatalf("several unknown arguments: %v", err)
		}
	}
}
