package dbadmin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/fxamacker/cbor/v2"
	"go.uber.org/goleak"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/config"
	"github.com/loci-dev/loci/dbadmin/sqlview"
	"github.com/loci-dev/loci/store/badgerdb"
)

// engine is an SQL engine over a real (empty) Badger store, shared by the
// tests of this package.
var engine *sqlview.Engine

// TestMain opens the store the tests share, runs them, and fails when a
// goroutine is left running.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "dbadmin-test-")
	if err != nil {
		panic(err)
	}
	db, err := badgerdb.Open(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		panic(err)
	}
	engine = sqlview.New(db, sqlview.Limits{ScanRows: 100_000, ResultRows: 1_000, Timeout: time.Minute})
	code := m.Run()
	_ = db.Close()
	_ = os.RemoveAll(dir)
	http.DefaultClient.CloseIdleConnections()
	// Every listener closed waits for its goroutines: none is left.
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: goroutines left after the tests: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// logBuf collects a listener's log.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// daemon is what a listener is built with in a test: authentication on or
// off, and the daemon's current token (rotate changes it).
type daemon struct {
	auth  atomic.Bool
	token atomic.Value
	log   *logBuf
}

const token1 = "loci_tok_first-secret-0123456789"

func (d *daemon) rotate(tok string) { d.token.Store(tok) }

// newAdmin is a closed listener on 127.0.0.1, port 0, with auth as given
// and token1 as the daemon's token.
func newAdmin(t *testing.T, auth bool, edit ...func(*Config)) (*Admin, *daemon) {
	t.Helper()
	d := &daemon{log: &logBuf{}}
	d.auth.Store(auth)
	d.rotate(token1)
	c := Config{
		Settings:    config.DB{Bind: "127.0.0.1", Port: 0, QueryTimeoutSecs: 30, MaxScanRows: 100_000, MaxResultRows: 1_000},
		AuthEnabled: d.auth.Load,
		CheckToken:  func(tok string) bool { return tok == d.token.Load().(string) },
		Engine:      engine,
		Version:     "9.8.7",
		Log:         slog.New(slog.NewTextHandler(d.log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		ServerPort:  7700,
		WebhookPort: 8787,
	}
	for _, e := range edit {
		e(&c)
	}
	a := New(c)
	t.Cleanup(func() {
		if _, err := a.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		if strings.Contains(d.log.String(), token1) {
			t.Errorf("the daemon's token reached the log:\n%s", d.log)
		}
	})
	return a, d
}

// open opens a with o, failing the test on an error.
func open(t *testing.T, a *Admin, o api.DBOpen) api.DBState {
	t.Helper()
	st, err := a.Open(o)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return st
}

// client is a real WebSocket client of /rpc.
type client struct {
	t   *testing.T
	ws  *websocket.Conn
	enc string
	id  int
}

var clientCBOR, _ = cbor.DecOptions{DefaultMapType: reflect.TypeOf(map[string]any(nil))}.DecMode()

// dial connects to st's /rpc with the encoding (subprotocol) enc ("" asks
// for none) and the headers h.
func dial(t *testing.T, st api.DBState, enc string, h http.Header) *client {
	t.Helper()
	c, resp, err := tryDial(t, st, enc, h)
	if err != nil {
		t.Fatalf("dial %s: %v (%s)", st.URL, err, body(resp))
	}
	return c
}

func tryDial(t *testing.T, st api.DBState, enc string, h http.Header) (*client, *http.Response, error) {
	t.Helper()
	o := &websocket.DialOptions{HTTPHeader: h}
	if enc != "" {
		o.Subprotocols = []string{enc}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	ws, resp, err := websocket.Dial(ctx, st.URL, o)
	if err != nil {
		return nil, resp, err
	}
	ws.SetReadLimit(-1)
	t.Cleanup(func() { _ = ws.CloseNow() })
	if enc == "" {
		enc = encJSON
	}
	return &client{t: t, ws: ws, enc: enc}, resp, nil
}

// body reads an HTTP error answer's body.
func body(resp *http.Response) string {
	if resp == nil || resp.Body == nil {
		return ""
	}
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// errBody decodes the house's {error, code, help}.
func errBody(t *testing.T, resp *http.Response) map[string]string {
	t.Helper()
	var m map[string]string
	if resp == nil {
		t.Fatal("no HTTP answer")
	}
	raw := body(resp)
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		t.Fatalf("the body is not the house's error JSON: %v: %q", err, raw)
	}
	if m["error"] == "" || m["code"] == "" || m["help"] == "" {
		t.Fatalf("the error body lacks error, code or help: %q", raw)
	}
	return m
}

// send writes one raw message.
func (c *client) send(typ websocket.MessageType, b []byte) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.ws.Write(ctx, typ, b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// encode marshals v in the client's encoding.
func (c *client) encode(v any) ([]byte, websocket.MessageType) {
	c.t.Helper()
	if c.enc == encCBOR {
		b, err := cborTimes.Marshal(v)
		if err != nil {
			c.t.Fatal(err)
		}
		return b, websocket.MessageBinary
	}
	b, err := json.Marshal(v)
	if err != nil {
		c.t.Fatal(err)
	}
	return b, websocket.MessageText
}

// read reads one answer.
func (c *client) read() map[string]any {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	typ, b, err := c.ws.Read(ctx)
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	var m map[string]any
	if c.enc == encCBOR {
		if typ != websocket.MessageBinary {
			c.t.Fatalf("a cbor answer came as %v", typ)
		}
		err = clientCBOR.Unmarshal(b, &m)
	} else {
		if typ != websocket.MessageText {
			c.t.Fatalf("a json answer came as %v", typ)
		}
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		err = d.Decode(&m)
	}
	if err != nil {
		c.t.Fatalf("the answer is not %s: %v: %q", c.enc, err, b)
	}
	return m
}

// do sends a request with a new id (on session s when not "") and reads
// its answer, checking the id comes back.
func (c *client) do(session, method string, params ...any) map[string]any {
	c.t.Helper()
	c.id++
	req := map[string]any{"id": c.id, "method": method}
	if params != nil {
		req["params"] = params
	} else {
		req["params"] = []any{}
	}
	if session != "" {
		req["session"] = session
	}
	b, typ := c.encode(req)
	c.send(typ, b)
	m := c.read()
	if n := num(c.t, m["id"]); n != int64(c.id) {
		c.t.Fatalf("%s: answer id %v, want %d", method, m["id"], c.id)
	}
	return m
}

// call is do on the default session, failing on an error answer.
func (c *client) call(method string, params ...any) any {
	c.t.Helper()
	m := c.do("", method, params...)
	if e, ok := m["error"]; ok {
		c.t.Fatalf("%s: error %v", method, e)
	}
	r, ok := m["result"]
	if !ok {
		c.t.Fatalf("%s: the answer has no result: %v", method, m)
	}
	return r
}

// rpcErr is an error answer's parts.
type rpcErr struct {
	code             int64
	msg, lcode, help string
}

// fails is do expecting an error answer.
func (c *client) fails(session, method string, params ...any) rpcErr {
	c.t.Helper()
	return c.errOf(method, c.do(session, method, params...))
}

func (c *client) errOf(method string, m map[string]any) rpcErr {
	c.t.Helper()
	e, ok := m["error"].(map[string]any)
	if !ok {
		c.t.Fatalf("%s: want an error, got %v", method, m)
	}
	if _, has := m["result"]; has {
		c.t.Fatalf("%s: an error answer carries a result: %v", method, m)
	}
	d, _ := e["data"].(map[string]any)
	r := rpcErr{code: num(c.t, e["code"]), msg: str(e["message"]), lcode: str(d["code"]), help: str(d["help"])}
	if r.msg == "" || r.help == "" || str(d["error"]) != r.msg {
		c.t.Fatalf("%s: the error lacks its message or help: %v", method, e)
	}
	return r
}

// closeStatus reads until the connection closes and returns the status.
func (c *client) closeStatus() (websocket.StatusCode, string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		_, _, err := c.ws.Read(ctx)
		if err != nil {
			var ce websocket.CloseError
			if errors.As(err, &ce) {
				return ce.Code, ce.Reason
			}
			c.t.Fatalf("the connection ended without a close status: %v", err)
		}
	}
}

func str(v any) string { s, _ := v.(string); return s }

// num reads an integer of either encoding.
func num(t *testing.T, v any) int64 {
	t.Helper()
	switch x := v.(type) {
	case json.Number:
		n, err := x.Int64()
		if err != nil {
			t.Fatalf("%v is not an integer", x)
		}
		return n
	case uint64:
		return int64(x)
	case int64:
		return x
	}
	t.Fatalf("%#v is not an integer", v)
	return 0
}

// get is an HTTP GET (or another method) on the listener.
func get(t *testing.T, st api.DBState, method, path string, h http.Header) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, "http://"+st.Address+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// eventually retries cond until it holds or 10 s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func ptr[T any](v T) *T { return &v }

// ioNop is s as a response body.
func ioNop(s string) io.ReadCloser { return io.NopCloser(strings.NewReader(s)) }
