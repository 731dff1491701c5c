package dbadmin

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/fxamacker/cbor/v2"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/dbadmin/sqlview"
	"github.com/loci-dev/loci/fault"
)

// signedIn is a client signed in on a fresh listener with authentication
// off.
func signedIn(t *testing.T, enc string, edit ...func(*Admin)) (*client, *Admin) {
	t.Helper()
	a, _ := newAdmin(t, false)
	for _, e := range edit {
		e(a)
	}
	c := dial(t, open(t, a, api.DBOpen{}), enc, nil)
	c.call("signin", signin("loci", "loci"))
	return c, a
}

// recorder is a query function that records what it was given and
// answers one OK statement.
type recorder struct {
	mu   sync.Mutex
	sql  []string
	vars []map[string]any
}

func (r *recorder) query(_ context.Context, sql string, vars map[string]any) ([]sqlview.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sql = append(r.sql, sql)
	r.vars = append(r.vars, vars)
	return []sqlview.Result{{Statement: sql, Columns: []sqlview.Column{{Name: "n", Type: "BIGINT"}},
		Rows: [][]any{{int64(1)}}, RowsRead: 1, Duration: 1234 * time.Microsecond}}, nil
}

func (r *recorder) last() (string, map[string]any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sql[len(r.sql)-1], r.vars[len(r.vars)-1]
}

// TestSupportedMethods runs every method that works, in both encodings
// (query through a recording engine; TestQuerySQL runs real SQL).
func TestSupportedMethods(t *testing.T) {
	for _, enc := range encodings {
		t.Run(enc, func(t *testing.T) {
			rec := &recorder{}
			c, a := signedIn(t, enc, func(a *Admin) { a.query = rec.query })
			if r := c.call("ping"); r != nil {
				t.Fatalf("ping %v", r)
			}
			if r := c.call("version"); r != "loci-9.8.7" {
				t.Fatalf("version %v", r)
			}
			if r := c.call("use", "loci", "palace"); r != nil {
				t.Fatalf("use %v", r)
			}
			if r := c.call("use", nil, "palace"); r != nil {
				t.Fatalf("use null %v", r)
			}
			for _, p := range [][]any{{"other", "palace"}, {"loci", "other"}, {1, nil}, {}} {
				if e := c.fails("", "use", p...); e.code != codeInvalidParams || e.lcode != string(fault.DBInvalidRequest) {
					t.Fatalf("use %v: %+v", p, e)
				}
			}
			info := c.call("info").(map[string]any)
			def := str(info["session"])

			// let, unset and query's own variables.
			c.call("let", "n", 41)
			c.call("let", "@who", "drawers")
			c.call("let", "big", int64(9007199254740993))
			c.call("let", "f", 0.5)
			c.call("let", "gone", true)
			c.call("unset", "gone")
			res := c.call("query", "SELECT @n", map[string]any{"who": "rooms", "extra": nil}).([]any)
			sql, vars := rec.last()
			want := map[string]any{"n": int64(41), "who": "rooms", "big": int64(9007199254740993), "f": 0.5, "extra": nil}
			if sql != "SELECT @n" || !equalVars(vars, want) {
				t.Fatalf("query got %q %#v, want %#v", sql, vars, want)
			}
			if len(res) != 1 {
				t.Fatalf("query answered %v", res)
			}
			st := res[0].(map[string]any)
			cols := st["columns"].([]any)
			if st["status"] != "OK" || st["time"] != "1.23ms" || st["truncated"] != false || num(t, st["rows_read"]) != 1 ||
				len(cols) != 1 || cols[0].(map[string]any)["name"] != "n" || cols[0].(map[string]any)["type"] != "BIGINT" ||
				num(t, st["rows"].([]any)[0].([]any)[0]) != 1 {
				t.Fatalf("statement %v", st)
			}
			c.call("query", "SELECT 2", nil)
			if _, vars := rec.last(); !equalVars(vars, map[string]any{"n": int64(41), "who": "drawers", "big": int64(9007199254740993), "f": 0.5}) {
				t.Fatalf("the session's variables changed: %#v", vars)
			}
			for _, p := range [][]any{{}, {1}, {"SELECT 1", "x"}, {"SELECT 1", map[string]any{"no-name": 1}}, {"SELECT 1", nil, 3}} {
				if e := c.fails("", "query", p...); e.code != codeInvalidParams {
					t.Fatalf("query %v: %+v", p, e)
				}
			}
			for _, p := range [][]any{{"1x", 1}, {"a-b", 1}, {"", 1}, {"x"}} {
				if e := c.fails("", "let", p...); e.code != codeInvalidParams {
					t.Fatalf("let %v: %+v", p, e)
				}
			}

			// attach, sessions, a request on a session, detach.
			id := c.call("attach").(string)
			if id == "" || id == def {
				t.Fatalf("attach %q", id)
			}
			if e := c.fails(id, "query", "SELECT 1"); e.lcode != string(fault.DBSignInRequired) {
				t.Fatalf("a new session is signed out: %+v", e)
			}
			c.do(id, "signin", signin("loci", "loci"))
			if m := c.do(id, "let", "n", 7); m["error"] != nil {
				t.Fatalf("let on the attached session: %v", m)
			}
			c.do(id, "query", "SELECT @n")
			if _, vars := rec.last(); !equalVars(vars, map[string]any{"n": int64(7)}) {
				t.Fatalf("the attached session's variables: %#v", vars)
			}
			if m := c.do(id, "info"); m["result"].(map[string]any)["session"] != id {
				t.Fatalf("info on the session: %v", m)
			}
			list := c.call("sessions").([]any)
			if len(list) != 2 || list[0].(map[string]any)["id"] != def || list[1].(map[string]any)["id"] != id ||
				list[1].(map[string]any)["signed_in"] != true || list[0].(map[string]any)["namespace"] != "loci" ||
				list[0].(map[string]any)["database"] != "palace" {
				t.Fatalf("sessions %v", list)
			}
			if e := c.fails("", "detach", def); e.code != codeInvalidParams {
				t.Fatalf("detach the default: %+v", e)
			}
			if r := c.call("detach", id); r != nil {
				t.Fatalf("detach %v", r)
			}
			if e := c.fails("", "detach", id); e.code != codeInvalidParams {
				t.Fatalf("detach twice: %+v", e)
			}
			if e := c.fails(id, "ping"); e.code != codeInvalidRequest || e.lcode != string(fault.DBInvalidRequest) {
				t.Fatalf("a request on a detached session: %+v", e)
			}

			// authenticate with a session token on a new session.
			tok := c.call("signin", signin("loci", "loci")).(string)
			id2 := c.call("attach").(string)
			if m := c.do(id2, "authenticate", tok); m["error"] != nil || m["result"] != nil {
				t.Fatalf("authenticate: %v", m)
			}
			if m := c.do(id2, "info"); m["error"] != nil {
				t.Fatalf("info after authenticate: %v", m)
			}

			// reset: signed out, variables gone.
			if r := c.call("reset"); r != nil {
				t.Fatalf("reset %v", r)
			}
			if e := c.fails("", "info"); e.lcode != string(fault.DBSignInRequired) {
				t.Fatalf("after reset: %+v", e)
			}
			// reset forgot the token the session's signin issued.
			if e := c.fails("", "authenticate", tok); e.lcode != string(fault.DBSignInRefused) {
				t.Fatalf("authenticate after reset: %+v", e)
			}
			c.call("signin", signin("loci", "loci"))
			c.call("query", "SELECT 3")
			if _, vars := rec.last(); len(vars) != 0 {
				t.Fatalf("variables after reset: %#v", vars)
			}
			// invalidate: signed out.
			if r := c.call("invalidate"); r != nil {
				t.Fatalf("invalidate %v", r)
			}
			if e := c.fails("", "let", "x", 1); e.lcode != string(fault.DBSignInRequired) {
				t.Fatalf("after invalidate: %+v", e)
			}
			if got := a.State().Sessions; got != 2 {
				t.Fatalf("sessions %d", got)
			}
		})
	}
}

// equalVars compares variables, numbers by value.
func equalVars(got, want map[string]any) bool {
	if len(got) != len(want) {
		return false
	}
	for k, w := range want {
		g, ok := got[k]
		if !ok || g != w {
			return false
		}
	}
	return true
}

func TestHandshakeOnlyBeforeSignIn(t *testing.T) {
	a, _ := newAdmin(t, true)
	c := dial(t, open(t, a, api.DBOpen{}), encJSON, nil)
	for _, m := range []struct {
		name   string
		params []any
	}{{"ping", nil}, {"version", nil}, {"use", []any{"loci", "palace"}}, {"invalidate", nil}, {"reset", nil}} {
		if r := c.do("", m.name, m.params...); r["error"] != nil {
			t.Fatalf("%s before sign-in: %v", m.name, r)
		}
	}
	for _, m := range []string{"info", "let", "unset", "query", "attach", "detach", "sessions"} {
		e := c.fails("", m, "x", 1)
		if e.code != codeFailed || e.lcode != string(fault.DBSignInRequired) || !strings.Contains(e.help, "signin") {
			t.Fatalf("%s before sign-in: %+v", m, e)
		}
	}
}

func TestUnsupportedMethods(t *testing.T) {
	for _, enc := range encodings {
		t.Run(enc, func(t *testing.T) {
			c, _ := signedIn(t, enc)
			for _, m := range []string{"live", "kill", "begin", "commit", "cancel", "select", "create", "update", "insert", "signup"} {
				e := c.fails("", m, "x")
				if e.code != codeFailed || e.lcode != string(fault.DBUnsupported) || !strings.Contains(e.msg, m) || e.help == "" {
					t.Fatalf("%s: %+v", m, e)
				}
			}
			e := c.fails("", "frobnicate")
			if e.code != codeNoMethod || e.lcode != string(fault.DBInvalidRequest) || !strings.Contains(e.msg, "frobnicate") || !strings.Contains(e.help, "query") {
				t.Fatalf("unknown method: %+v", e)
			}
		})
	}
}

func TestEncodingChoice(t *testing.T) {
	a, _ := newAdmin(t, false)
	st := open(t, a, api.DBOpen{})
	for _, protos := range [][]string{{"flatbuffers"}, {"msgpack"}, {"flatbuffers", "bogus"}} {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		_, resp, err := websocket.Dial(ctx, st.URL, &websocket.DialOptions{Subprotocols: protos})
		cancel()
		if err == nil || resp == nil || resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("%v: %v %v", protos, err, resp)
		}
		b := errBody(t, resp)
		if b["code"] != string(fault.DBUnsupported) || b["help"] != "ask for the json or cbor subprotocol" {
			t.Fatalf("%v: %v", protos, b)
		}
		if protos[0] == "flatbuffers" && !strings.Contains(b["error"], "flatbuffers") {
			t.Fatalf("%v: %v", protos, b)
		}
	}
	for _, tc := range []struct {
		ask  []string
		want string
	}{{nil, ""}, {[]string{"json"}, "json"}, {[]string{"cbor"}, "cbor"}, {[]string{"flatbuffers", "cbor", "json"}, "cbor"}, {[]string{"x", "json", "cbor"}, "json"}} {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		ws, _, err := websocket.Dial(ctx, st.URL, &websocket.DialOptions{Subprotocols: tc.ask})
		cancel()
		if err != nil {
			t.Fatalf("%v: %v", tc.ask, err)
		}
		if ws.Subprotocol() != tc.want {
			t.Fatalf("%v: chose %q, want %q", tc.ask, ws.Subprotocol(), tc.want)
		}
		enc := tc.want
		if enc == "" {
			enc = encJSON
		}
		c := &client{t: t, ws: ws, enc: enc}
		if v := c.call("version"); v != "loci-9.8.7" {
			t.Fatalf("%v: version %v", tc.ask, v)
		}
		_ = ws.Close(websocket.StatusNormalClosure, "")
	}
}

func TestMalformedMessages(t *testing.T) {
	t.Run("json", func(t *testing.T) {
		c, _ := signedIn(t, encJSON)
		for _, raw := range []string{`{"id": 1, "method": `, `not json`, `{"id":1,"method":"ping"} trailing`, ``} {
			c.send(websocket.MessageText, []byte(raw))
			m := c.read()
			if e := c.errOf("parse", m); e.code != codeParse || e.lcode != string(fault.DBInvalidRequest) || m["id"] != nil {
				t.Fatalf("%q: %+v %v", raw, e, m)
			}
			c.call("ping") // the connection stays usable
		}
		for _, raw := range []string{`[1,2]`, `"ping"`, `{"id": 5}`, `{"id": 5, "method": 3}`, `{"id": 5, "method": "ping", "params": {}}`, `{"id": 5, "method": "ping", "session": 1}`} {
			c.send(websocket.MessageText, []byte(raw))
			m := c.read()
			if e := c.errOf("invalid", m); e.code != codeInvalidRequest || e.lcode != string(fault.DBInvalidRequest) {
				t.Fatalf("%q: %+v", raw, e)
			}
			if strings.Contains(raw, `"id": 5`) && num(t, m["id"]) != 5 {
				t.Fatalf("%q: id %v", raw, m["id"])
			}
		}
		// An id keeps every digit; a string id comes back as sent.
		c.send(websocket.MessageText, []byte(`{"id": 123456789012345678901234567890, "method": "ping"}`))
		m := c.read()
		if n, _ := m["id"].(json.Number); n.String() != "123456789012345678901234567890" {
			t.Fatalf("id %v", m["id"])
		}
		c.send(websocket.MessageText, []byte(`{"id": "abc", "method": "ping", "params": null}`))
		if m := c.read(); m["id"] != "abc" || m["error"] != nil {
			t.Fatalf("string id: %v", m)
		}
		c.call("ping")
	})
	t.Run("cbor", func(t *testing.T) {
		c, _ := signedIn(t, encCBOR)
		good, _ := cbor.Marshal(map[string]any{"id": 1, "method": "ping"})
		for _, raw := range [][]byte{{0xff, 0x00}, good[:len(good)-2], append(slices.Clone(good), 0x01), {0xa1, 0x01, 0x02}} {
			c.send(websocket.MessageBinary, raw)
			m := c.read()
			if e := c.errOf("parse", m); e.code != codeParse || m["id"] != nil {
				t.Fatalf("% x: %+v", raw, e)
			}
			c.call("ping")
		}
		notObj, _ := cbor.Marshal([]any{1, "ping"})
		c.send(websocket.MessageBinary, notObj)
		if e := c.errOf("invalid", c.read()); e.code != codeInvalidRequest {
			t.Fatalf("not an object: %+v", e)
		}
		c.call("ping")
	})
}

func TestMessageTooBig(t *testing.T) {
	c, _ := signedIn(t, encJSON)
	big := `{"id":1,"method":"query","params":["SELECT '` + strings.Repeat("x", MaxMessageBytes) + `'"]}`
	c.send(websocket.MessageText, []byte(big))
	if code, _ := c.closeStatus(); code != websocket.StatusMessageTooBig {
		t.Fatalf("close status %v, want 1009", code)
	}
	// Just under the limit is read.
	c2, _ := signedIn(t, encJSON, func(a *Admin) { a.query = (&recorder{}).query })
	pad := strings.Repeat("x", MaxMessageBytes-200)
	res := c2.call("query", "SELECT '"+pad+"'")
	if len(res.([]any)) != 1 {
		t.Fatalf("%v", res)
	}
}

// TestCloseCancelsQuery: a query running does not hold Close up; its
// context is cancelled and the connection closes with 1001.
func TestCloseCancelsQuery(t *testing.T) {
	started := make(chan struct{})
	var cancelled bool
	c, a := signedIn(t, encJSON, func(a *Admin) {
		a.query = func(ctx context.Context, _ string, _ map[string]any) ([]sqlview.Result, error) {
			close(started)
			select {
			case <-ctx.Done():
				cancelled = true
				return nil, fault.New(fault.DBTimeout, "cancelled", "the listener closed")
			case <-time.After(time.Minute):
				return nil, nil
			}
		}
	})
	b, typ := c.encode(map[string]any{"id": 1, "method": "query", "params": []any{"SELECT SLEEP(60)"}})
	c.send(typ, b)
	<-started
	t0 := time.Now()
	if _, err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d > 10*time.Second {
		t.Fatalf("Close took %v", d)
	}
	if !cancelled {
		t.Fatal("the query's context was not cancelled")
	}
	if code, _ := c.closeStatus(); code != websocket.StatusGoingAway {
		t.Fatalf("close status %v", code)
	}
}

// bareConn is a connection (no socket) of a listener whose answers hold
// at most maxAnswer bytes, for statements.
func bareConn(enc string, maxAnswer int) *conn {
	return &conn{l: &listener{admin: &Admin{maxAnswer: maxAnswer}}, codec: codecs[enc]}
}

// TestStatementsShape: a query's answer, one entry per statement, in the
// contract's shape.
func TestStatementsShape(t *testing.T) {
	out := bareConn(encJSON, MaxAnswerBytes).statements([]sqlview.Result{
		{Statement: "SELECT 1", Columns: []sqlview.Column{{Name: "a", Type: "BIGINT", Doc: "not sent"}}, Rows: [][]any{{int64(1)}}, Truncated: true, RowsRead: 12, Duration: 1500 * time.Microsecond},
		{Statement: "SELECT 1 WHERE 0", Columns: []sqlview.Column{{Name: "a", Type: "BIGINT"}}, Duration: time.Millisecond},
		{Statement: "DELETE FROM wings", Duration: 2 * time.Second, Err: fault.New(fault.DBReadOnly, "writes are refused", "change memory through REST")},
	})
	b, err := encodeJSON(out)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"status":"OK","time":"1.5ms","columns":[{"name":"a","type":"BIGINT"}],"rows":[[1]],"truncated":true,"truncated_by":"rows","rows_read":12},` +
		`{"status":"OK","time":"1ms","columns":[{"name":"a","type":"BIGINT"}],"rows":[],"truncated":false,"rows_read":0},` +
		`{"status":"ERR","time":"2s","result":"writes are refused","code":"loci::db::read_only","help":"change memory through REST"}]`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	var back []map[string]any
	cb, err := cborEnc.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := clientCBOR.Unmarshal(cb, &back); err != nil || back[2]["code"] != "loci::db::read_only" || back[0]["rows_read"] != uint64(12) {
		t.Fatalf("cbor: %v %v", err, back)
	}
}

// TestQueryError: a query that fails as a whole answers -32000 with the
// house's error.
func TestQueryError(t *testing.T) {
	c, _ := signedIn(t, encCBOR, func(a *Admin) {
		a.query = func(context.Context, string, map[string]any) ([]sqlview.Result, error) {
			return nil, fault.New(fault.DBTimeout, "the query ran past 30s", "narrow it")
		}
	})
	e := c.fails("", "query", "SELECT 1")
	if e.code != codeFailed || e.lcode != string(fault.DBTimeout) || e.help != "narrow it" {
		t.Fatalf("%+v", e)
	}
	c.call("ping")
}

// TestCBORValues: integers past 2^53 and times reach the engine as int64
// and time.Time from cbor.
func TestCBORValues(t *testing.T) {
	rec := &recorder{}
	c, _ := signedIn(t, encCBOR, func(a *Admin) { a.query = rec.query })
	at := time.Date(2026, 11, 26, 20, 12, 45, 123456789, time.UTC)
	c.call("let", "t", at)
	c.call("let", "big", int64(1)<<62+1)
	c.call("let", "neg", int64(-5))
	c.call("query", "SELECT @t")
	_, vars := rec.last()
	if tt, ok := vars["t"].(time.Time); !ok || !tt.Equal(at) || vars["big"] != int64(1)<<62+1 || vars["neg"] != int64(-5) {
		t.Fatalf("vars %#v", vars)
	}
	if e := c.fails("", "let", "huge", uint64(1)<<63); e.code != codeInvalidParams {
		t.Fatalf("an integer past int64: %+v", e)
	}
	if e := c.fails("", "let", "tag", cbor.Tag{Number: 99999, Content: 1}); e.code != codeInvalidParams {
		t.Fatalf("an unknown tag: %+v", e)
	}
}

// The tests below run real SQL through dbadmin/sqlview: they await its
// engine (until it lands, Engine.Query answers an error).

func TestQuerySQL(t *testing.T) {
	for _, enc := range encodings {
		t.Run(enc, func(t *testing.T) {
			c, _ := signedIn(t, enc)
			res := c.call("query", "SELECT 1 AS one, 'x' AS s").([]any)
			if len(res) != 1 {
				t.Fatalf("%v", res)
			}
			st := res[0].(map[string]any)
			cols := st["columns"].([]any)
			row := st["rows"].([]any)[0].([]any)
			if st["status"] != "OK" || len(cols) != 2 || cols[0].(map[string]any)["name"] != "one" ||
				cols[1].(map[string]any)["name"] != "s" || num(t, row[0]) != 1 || row[1] != "x" || st["truncated"] != false {
				t.Fatalf("statement %v", st)
			}
			if _, err := time.ParseDuration(str(st["time"])); err != nil {
				t.Fatalf("time %v", st["time"])
			}

			// Variables from let, overlaid by query's own.
			c.call("let", "n", 41)
			c.call("let", "big", int64(9007199254740993))
			res = c.call("query", "SELECT @n + 1 AS answer, @big AS big").([]any)
			row = res[0].(map[string]any)["rows"].([]any)[0].([]any)
			if num(t, row[0]) != 42 || num(t, row[1]) != 9007199254740993 {
				t.Fatalf("row %v", row)
			}
			res = c.call("query", "SELECT @n + 1 AS answer", map[string]any{"n": 1}).([]any)
			if row := res[0].(map[string]any)["rows"].([]any)[0].([]any); num(t, row[0]) != 2 {
				t.Fatalf("query's vars: row %v", row)
			}

			// Statements after a failed one are not run.
			res = c.call("query", "SELECT 1; SELECT * FROM no_such_table; SELECT 2").([]any)
			if len(res) != 2 || res[0].(map[string]any)["status"] != "OK" {
				t.Fatalf("%v", res)
			}
			bad := res[1].(map[string]any)
			if bad["status"] != "ERR" || str(bad["result"]) == "" || !strings.HasPrefix(str(bad["code"]), "loci::db::") || str(bad["help"]) == "" {
				t.Fatalf("failed statement %v", bad)
			}

			// Writes are refused.
			res = c.call("query", "INSERT INTO wings (name) VALUES ('x')").([]any)
			if w := res[0].(map[string]any); w["status"] != "ERR" || w["code"] != string(fault.DBReadOnly) {
				t.Fatalf("a write: %v", w)
			}
		})
	}
}

func TestQuerySQLCloseCancels(t *testing.T) {
	c, a := signedIn(t, encJSON)
	b, typ := c.encode(map[string]any{"id": 1, "method": "query", "params": []any{"SELECT SLEEP(30)"}})
	c.send(typ, b)
	answered := make(chan []byte, 1)
	go func() {
		_, msg, _ := c.ws.Read(context.Background())
		answered <- msg
	}()
	select {
	case msg := <-answered:
		t.Fatalf("SELECT SLEEP(30) answered at once: %s", msg)
	case <-time.After(500 * time.Millisecond):
	}
	t0 := time.Now()
	if _, err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d > 10*time.Second {
		t.Fatalf("Close waited %v for the query", d)
	}
	<-answered
}

func TestCBORTimeSQL(t *testing.T) {
	c, _ := signedIn(t, encCBOR)
	at := time.Date(2026, 11, 26, 20, 12, 45, 123456000, time.UTC)
	c.call("let", "t", at)
	res := c.call("query", "SELECT @t AS t").([]any)
	v := res[0].(map[string]any)["rows"].([]any)[0].([]any)[0]
	var got time.Time
	switch x := v.(type) {
	case time.Time:
		got = x
	case string:
		var err error
		if got, err = time.Parse(time.RFC3339Nano, x); err != nil {
			t.Fatalf("time %q: %v", x, err)
		}
	default:
		t.Fatalf("time came back as %#v", v)
	}
	if !got.Equal(at) {
		t.Fatalf("time %v, want %v", got, at)
	}
}

// cborTimes encodes times as tagged RFC 3339 text, as a cbor client
// sends a time.
var cborTimes, _ = cbor.EncOptions{Time: cbor.TimeRFC3339Nano, TimeTag: cbor.EncTagRequired}.EncMode()

// TestMethodSets: the served methods are the contract's, the handshake
// ones among them, none both served and unsupported; the help of an
// unknown method names each.
func TestMethodSets(t *testing.T) {
	want := strings.Split(methods, ", ")
	var got []string
	for m := range served {
		got = append(got, m)
		if _, both := unsupported[m]; both {
			t.Errorf("%s is served and unsupported", m)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("served %v, the help names %v", got, want)
	}
	for m := range handshake {
		if served[m] == nil {
			t.Errorf("handshake method %s is not served", m)
		}
	}
	if len(handshake) != 7 || len(unsupported) != 10 {
		t.Fatalf("%d handshake methods, %d unsupported", len(handshake), len(unsupported))
	}
}
