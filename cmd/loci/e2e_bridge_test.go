package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// tsSDK is the official TypeScript MCP SDK pinned in .ci/npm, or a skip.
func tsSDK(t *testing.T) string {
	t.Helper()
	dir, _ := filepath.Abs(filepath.Join("..", "..", ".ci", "npm", "node_modules", "@modelcontextprotocol", "sdk"))
	if _, err := os.Stat(filepath.Join(dir, "dist", "esm", "client", "stdio.js")); err != nil {
		t.Skip("the MCP TypeScript SDK is not installed; run: npm install --prefix .ci/npm")
	}
	return dir
}

// toolAnswer is a tool's answer as the TypeScript client saw it.
type toolAnswer struct {
	IsError bool   `json:"is_error"`
	Text    string `json:"text"`
}

func (a toolAnswer) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(a.Text), &m); err != nil {
		t.Fatalf("not a JSON object: %s", a.Text)
	}
	return m
}

// tsBridge runs the TypeScript SDK's stdio client against `loci mcp`.
func tsBridge(t *testing.T, home string, extraEnv []string, args ...string) map[string]json.RawMessage {
	t.Helper()
	sdk := tsSDK(t)
	script, _ := filepath.Abs(filepath.Join("testdata", "mcp_stdio_client.mjs"))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{script, sdk, bin}, args...)...)
	cmd.Env = env(home, extraEnv...)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node client: %v\n%s", err, stderr.String())
	}
	var got map[string]json.RawMessage
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("node client printed %q: %v\n%s", out, err, stderr.String())
	}
	return got
}

// TestMCPBridgeTypeScriptSDK drives `loci mcp` with the official
// TypeScript SDK's stdio client transport: the tools are listed, a search
// finds a drawer, a checkpoint is filed and found, and the memory mode set
// with loci_set_mode holds for the calls after it (one daemon session).
func TestMCPBridgeTypeScriptSDK(t *testing.T) {
	t.Parallel()
	tsSDK(t)
	home, palace := newPalace(t)
	d := start(t, home, palace)
	if r := d.do("POST", "/api/wings/projects/rooms/ops/drawers", map[string]any{"name": "deploy", "content": "Deploys happen on Fridays after the review."}); r.status != 201 {
		t.Fatalf("file: %s", r.raw)
	}
	got := tsBridge(t, home, nil, "--addr", d.addr, "mcp")
	if e, ok := got["connect_error"]; ok {
		t.Fatalf("connect: %s", e)
	}
	var tools []string
	json.Unmarshal(got["tools"], &tools)
	for _, want := range []string{"loci_search", "loci_checkpoint", "loci_set_mode", "loci_status"} {
		if !slices.Contains(tools, want) {
			t.Fatalf("tools/list through the bridge lacks %s: %v", want, tools)
		}
	}
	answer := func(key string) toolAnswer {
		var a toolAnswer
		if err := json.Unmarshal(got[key], &a); err != nil || a.Text == "" {
			t.Fatalf("%s: %s", key, got[key])
		}
		return a
	}
	hitsOf := func(a toolAnswer) string {
		var names []string
		for _, h := range get[[]any](a.json(t), "hits") {
			names = append(names, h.(map[string]any)["content"].(string))
		}
		return strings.Join(names, "|")
	}
	if s := answer("search"); s.IsError || !strings.Contains(hitsOf(s), "Deploys happen on Fridays") {
		t.Fatalf("loci_search: %+v", s)
	}
	if c := answer("checkpoint"); c.IsError || c.json(t)["kind"] != "checkpoint" {
		t.Fatalf("loci_checkpoint: %+v", c)
	}
	if string(got["job_status"]) != `"completed"` {
		t.Fatalf("checkpoint job: %s", got["job_status"])
	}
	if f := answer("found"); f.IsError || !strings.Contains(hitsOf(f), "Rollbacks need the on-call engineer.") {
		t.Fatalf("the checkpoint is not found by search: %+v", f)
	}
	if m := answer("set_mode"); m.IsError || m.json(t)["mode"] != "read_only" {
		t.Fatalf("loci_set_mode: %+v", m)
	}
	if st := answer("status"); st.IsError || st.json(t)["mode"] != "read_only" {
		t.Fatalf("the mode did not hold for the next call: %+v", st)
	}
	if w := answer("diary_write"); !w.IsError || w.json(t)["code"] != "loci::mode::forbidden" {
		t.Fatalf("a write in read_only: %+v", w)
	}
	if s := answer("search_read_only"); s.IsError {
		t.Fatalf("a read in read_only: %+v", s)
	}
}

// recorder is a reverse proxy in front of a daemon that records each
// request to /mcp as "METHOD session-id".
type recorder struct {
	addr string
	mu   sync.Mutex
	seen []string
}

func recordingProxy(t *testing.T, daemonAddr string) *recorder {
	t.Helper()
	target, _ := url.Parse("http://" + daemonAddr)
	rec := &recorder{}
	proxy := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(target)
		pr.Out.Host = pr.In.Host
	}, FlushInterval: -1}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.seen = append(rec.seen, r.Method+" "+r.Header.Get("Mcp-Session-Id"))
		rec.mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	rec.addr = strings.TrimPrefix(srv.URL, "http://")
	return rec
}

func (r *recorder) requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.seen)
}

// TestMCPBridgeGoSDK drives `loci mcp` with the go-sdk's CommandTransport
// through a recording proxy: one daemon session carries every call; the
// mode set with loci_set_mode is given back to the session the bridge
// opens again after the daemon restarts; closing standard input ends the
// bridge, which closes its session with DELETE.
func TestMCPBridgeGoSDK(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	if r := d.do("POST", "/api/wings/projects/rooms/ops/drawers", map[string]any{"name": "deploy", "content": "Deploys happen on Fridays after the review."}); r.status != 201 {
		t.Fatalf("file: %s", r.raw)
	}
	rec := recordingProxy(t, d.addr)
	cmd := exec.Command(bin, "--addr", rec.addr, "mcp")
	cmd.Env = env(home)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	c := mcp.NewClient(&mcp.Implementation{Name: "loci-bridge-test", Version: "1"}, nil)
	s, err := c.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	tools, err := s.ListTools(context.Background(), nil)
	if err != nil || len(tools.Tools) < 20 {
		t.Fatalf("tools/list: %v %v", err, tools)
	}
	if res, isErr := callTool(t, s, "loci_search", map[string]any{"query": "deploys fridays"}); isErr || len(get[[]any](res, "hits")) != 1 {
		t.Fatalf("loci_search: %v", res)
	}
	// Calls in flight at once are each answered (the bridge sends them
	// concurrently; the client matches the answers by id).
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q := []string{"deploys fridays", "review"}[i%2]
			res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: "loci_search", Arguments: map[string]any{"query": q}})
			if err == nil && (res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "Deploys happen")) {
				err = fmt.Errorf("call %d: %v", i, res.Content)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if res, isErr := callTool(t, s, "loci_set_mode", map[string]any{"mode": "read_only"}); isErr || res["mode"] != "read_only" {
		t.Fatalf("loci_set_mode: %v", res)
	}
	wantError(t, s, "loci_diary_write", map[string]any{"agent_identity": "claude", "wing": "projects", "content": "x"}, "loci::mode::forbidden", "read-only")

	// One daemon session for everything so far.
	var sessions []string
	for _, r := range rec.requests() {
		if _, id, _ := strings.Cut(r, " "); id != "" && !slices.Contains(sessions, id) {
			sessions = append(sessions, id)
		}
	}
	if len(sessions) != 1 {
		t.Fatalf("want one daemon session, saw %v", rec.requests())
	}

	// The daemon restarts (its sessions are gone): the bridge opens a new
	// one with the same mode, and the client notices nothing.
	_, port, _ := net.SplitHostPort(d.addr)
	d.cmd.Process.Signal(syscall.SIGTERM)
	if err := d.wait(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	startOn(t, port, home, palace)
	if st, isErr := callTool(t, s, "loci_status", nil); isErr || st["mode"] != "read_only" {
		t.Fatalf("the mode after the daemon restarted: %v", st)
	}
	wantError(t, s, "loci_diary_write", map[string]any{"agent_identity": "claude", "wing": "projects", "content": "x"}, "loci::mode::forbidden", "read-only")
	if res, isErr := callTool(t, s, "loci_search", map[string]any{"query": "deploys fridays"}); isErr || len(get[[]any](res, "hits")) != 1 {
		t.Fatalf("loci_search after the restart: %v", res)
	}

	// Closing the client closes standard input: the bridge exits at once
	// (no SIGTERM needed) and closes its session.
	t0 := time.Now()
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v\n%s", err, stderr.String())
	}
	if cmd.ProcessState == nil || !cmd.ProcessState.Success() || time.Since(t0) > 4*time.Second {
		t.Fatalf("the bridge did not exit cleanly on EOF: %v after %s\n%s", cmd.ProcessState, time.Since(t0), stderr.String())
	}
	reqs := rec.requests()
	last := ""
	for _, r := range reqs {
		if m, id, _ := strings.Cut(r, " "); m == "POST" && id != "" {
			last = id
		}
	}
	if last == "" || last == sessions[0] || !slices.Contains(reqs, "DELETE "+last) {
		t.Fatalf("want a new session after the restart, closed with DELETE: %v", reqs)
	}
}

// bridgeProc is a `loci mcp` run with pipes, for raw JSON-RPC.
type bridgeProc struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Scanner
	stderr *syncBuffer
	done   chan error
}

func runBridge(t *testing.T, home string, extraEnv []string, args ...string) *bridgeProc {
	t.Helper()
	p := &bridgeProc{cmd: exec.Command(bin, args...), stderr: &syncBuffer{}, done: make(chan error, 1)}
	p.cmd.Env = env(home, extraEnv...)
	p.cmd.Stderr = p.stderr
	p.in, _ = p.cmd.StdinPipe()
	stdout, _ := p.cmd.StdoutPipe()
	p.out = bufio.NewScanner(stdout)
	p.out.Buffer(make([]byte, 64<<10), 16<<20)
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() { p.cmd.Process.Kill() })
	return p
}

// call writes one message and, for a request, reads one answer line.
func (p *bridgeProc) call(t *testing.T, msg string) map[string]any {
	t.Helper()
	if _, err := io.WriteString(p.in, msg+"\n"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(msg, `"id"`) {
		return nil
	}
	if !p.out.Scan() {
		t.Fatalf("no answer to %s: %v\n%s", msg, p.out.Err(), p.stderr.String())
	}
	var m map[string]any
	if err := json.Unmarshal(p.out.Bytes(), &m); err != nil || m["jsonrpc"] != "2.0" {
		t.Fatalf("standard output carries a line that is not JSON-RPC: %q", p.out.Text())
	}
	return m
}

// exit closes standard input and waits for the bridge to end.
func (p *bridgeProc) exit(t *testing.T, within time.Duration) {
	t.Helper()
	p.in.Close()
	select {
	case err := <-p.done:
		if err != nil {
			t.Fatalf("the bridge exited with %v\n%s", err, p.stderr.String())
		}
	case <-time.After(within):
		t.Fatalf("the bridge did not exit within %s of standard input closing\n%s", within, p.stderr.String())
	}
	if p.out.Scan() {
		t.Fatalf("more output after the answers: %q", p.out.Text())
	}
}

const (
	initMsg  = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	readyMsg = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
)

// rpcErrorBody is loci's {error, code, help} in a JSON-RPC error answer:
// its message (what an agent shows) and its data.
func rpcErrorBody(t *testing.T, answer map[string]any) map[string]any {
	t.Helper()
	msg := get[string](answer, "error", "message")
	var body map[string]any
	if err := json.Unmarshal([]byte(msg), &body); err != nil || body["code"] == nil || body["help"] == "" || body["error"] == "" {
		t.Fatalf("want a JSON-RPC error whose message is {error, code, help}: %v", answer)
	}
	if data := get[map[string]any](answer, "error", "data"); data["code"] != body["code"] {
		t.Fatalf("error data differs from the message: %v", answer)
	}
	return body
}

// TestMCPBridgeDaemonDown: with no daemon and no --start, every request is
// answered with loci::client::not_running (a notification is not
// answered), standard output carries only JSON-RPC, and the bridge exits
// when standard input closes.
func TestMCPBridgeDaemonDown(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	port := strconv.Itoa(freePort(t))
	p := runBridge(t, home, []string{"LOCI_PALACE_PATH=" + palace, "LOCI_PORT=" + port}, "mcp")
	for i, msg := range []string{initMsg, readyMsg, `{"jsonrpc":"2.0","id":"two","method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"loci_search","arguments":{"query":"x"}}}`} {
		a := p.call(t, msg)
		if a == nil {
			continue
		}
		body := rpcErrorBody(t, a)
		if body["code"] != "loci::client::not_running" || !strings.Contains(body["help"].(string), "loci mcp --start") {
			t.Fatalf("message %d: %v", i, a)
		}
		if id := mustJSON(a["id"]); !strings.Contains(msg, `"id":`+id+`,`) {
			t.Fatalf("message %d answered with id %s", i, id)
		}
	}
	if bad := p.call(t, `{"jsonrpc":"2.0","id":4,`); get[float64](bad, "error", "code") != -32700 {
		t.Fatalf("a broken line: %v", bad)
	}
	// A line beyond 16 MiB is refused without being held whole.
	huge := `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"loci_search","arguments":{"query":"` + strings.Repeat("a", 17<<20) + `"}}}`
	if body := rpcErrorBody(t, p.call(t, huge)); body["code"] != "loci::input::too_large" {
		t.Fatalf("a huge line: %v", body)
	}
	if _, err := os.Stat(filepath.Join(palace, "daemon.json")); err == nil {
		t.Fatal("a daemon was started without --start")
	}

	// A daemon comes up: the next request opens the session the failed
	// initialize could not, and is answered.
	startOn(t, port, home, palace)
	if a := p.call(t, `{"jsonrpc":"2.0","id":6,"method":"tools/list"}`); len(get[[]any](a, "result", "tools")) < 20 {
		t.Fatalf("tools/list once the daemon runs: %v\n%s", a, p.stderr.String())
	}
	p.exit(t, 5*time.Second)
}

// TestMCPBridgeBadConfig: a configuration the bridge cannot use (here
// LOCI_MODE) is the answer to every request, where an agent shows it; the
// bridge still ends when standard input closes.
func TestMCPBridgeBadConfig(t *testing.T) {
	t.Parallel()
	home, _ := newPalace(t)
	p := runBridge(t, home, []string{"LOCI_MODE=sometimes"}, "mcp")
	for _, msg := range []string{initMsg, readyMsg, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`} {
		if a := p.call(t, msg); a != nil {
			if body := rpcErrorBody(t, a); body["code"] != "loci::input::invalid" || !strings.Contains(body["error"].(string), "LOCI_MODE") {
				t.Fatalf("%s: %v", msg, body)
			}
		}
	}
	p.exit(t, 5*time.Second)
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestMCPBridgeStart: with --start and no daemon running, the bridge
// starts one in the background (standard output still carries only the
// protocol) and the session works; the daemon outlives the bridge.
func TestMCPBridgeStart(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	extra := []string{"LOCI_PALACE_PATH=" + palace, "LOCI_PORT=" + strconv.Itoa(freePort(t)), "LOCI_MODE=read_only"}
	t.Cleanup(func() { runCLI(home, "", []string{"daemon", "stop"}, extra) })
	p := runBridge(t, home, extra, "mcp", "--start")
	if a := p.call(t, initMsg); get[string](a, "result", "serverInfo", "name") != "loci" {
		t.Fatalf("initialize: %v\n%s", a, p.stderr.String())
	}
	p.call(t, readyMsg)
	a := p.call(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"loci_status","arguments":{}}}`)
	var st map[string]any
	if err := json.Unmarshal([]byte(get[string](a["result"].(map[string]any)["content"].([]any)[0].(map[string]any), "text")), &st); err != nil {
		t.Fatalf("status: %v", a)
	}
	// LOCI_MODE is the session's mode from the start.
	if st["palace"] != palace || st["mode"] != "read_only" {
		t.Fatalf("status through the bridge: %v", st)
	}
	p.exit(t, 5*time.Second)
	if out, errOut, code := runCLI(home, "", []string{"status"}, extra); code != 0 {
		t.Fatalf("the daemon the bridge started is not running: %d %s %s", code, out, errOut)
	}
}

// TestMCPBridgeAuth: with authentication on, the bridge sends the token
// from the environment (LOCI_AUTH_TOKEN, as the CLI does); without it
// every request is answered with the daemon's loci::auth::unauthorized.
func TestMCPBridgeAuth(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	const token = "bridge-test-token-0123456789abcdef"
	d := start(t, home, palace, "LOCI_AUTH_ENABLED=true", "LOCI_AUTH_TOKEN="+token)

	p := runBridge(t, home, nil, "--addr", d.addr, "mcp")
	body := rpcErrorBody(t, p.call(t, initMsg))
	if body["code"] != "loci::auth::unauthorized" {
		t.Fatalf("without the token: %v", body)
	}
	p.exit(t, 5*time.Second)

	p = runBridge(t, home, []string{"LOCI_AUTH_TOKEN=" + token}, "--addr", d.addr, "mcp")
	if a := p.call(t, initMsg); get[string](a, "result", "serverInfo", "name") != "loci" {
		t.Fatalf("initialize with the token: %v", a)
	}
	p.call(t, readyMsg)
	a := p.call(t, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if tools := get[[]any](a, "result", "tools"); len(tools) < 20 {
		t.Fatalf("tools/list with the token: %v", a)
	}
	p.exit(t, 5*time.Second)
	if strings.Contains(p.stderr.String(), token) {
		t.Fatal("the token reached the bridge's log")
	}
}
