package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/transport/client"
)

// Bridge bounds.
const (
	// bridgeMaxMessage bounds one message read from standard input (the
	// daemon itself takes 4 MiB; a longer line is refused without being
	// held whole).
	bridgeMaxMessage = 16 << 20
	// bridgeDrain is how long in-flight calls may finish after standard
	// input closes.
	bridgeDrain = 5 * time.Second
	// bridgeClose bounds the DELETE that ends the daemon's session.
	bridgeClose = 2 * time.Second
	// bridgeErrorCode is the JSON-RPC error code of an answer the bridge
	// makes itself (the implementation-defined server error range).
	bridgeErrorCode = -32000
)

func (a *app) mcpCmd() *cobra.Command {
	var startIt bool
	c := &cobra.Command{
		Use:   "mcp",
		Short: "MCP on standard input/output, forwarded to the daemon's /mcp (for stdio-only clients)",
		Long: `Serve MCP on standard input and output (newline-delimited JSON-RPC) and
forward every message to the running daemon's /mcp, for clients that only
speak stdio and for agents whose sandbox blocks loopback HTTP. One bridge is
one daemon MCP session: the memory mode set with loci_set_mode holds for as
long as the bridge runs (a session the daemon dropped, on expiry or restart,
is opened again with the same mode). --mode or LOCI_MODE sets the session's
mode at start.

The daemon is found as every command finds it (--addr, the registry file,
the configured listener) and the bearer token comes from LOCI_AUTH_TOKEN or
the configuration. When no daemon answers, each request is answered with a
JSON-RPC error carrying loci::client::not_running; with --start the bridge
starts the daemon in the background first ("loci daemon start").

Standard output carries only the protocol; logs go to standard error. The
bridge ends when standard input closes, closing its daemon session.

  claude mcp add loci -- loci mcp --start`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return a.newBridge(startIt).run(c.Context(), c.InOrStdin())
		},
	}
	c.Flags().BoolVar(&startIt, "start", false, "start the daemon in the background when none is running")
	return c
}

// bridge relays newline-delimited JSON-RPC between standard input/output
// and the daemon's streamable HTTP /mcp, byte for byte: it reads only the
// envelope of what it forwards (method and id), and the initialize answer
// for the session and protocol version.
type bridge struct {
	a       *app
	startIt bool
	log     *slog.Logger
	http    *http.Client
	// broken is the configuration error every request is answered with.
	broken error

	outMu sync.Mutex
	out   io.Writer

	// mu guards the connection state below.
	mu      sync.Mutex
	cl      *client.Client // address, token, palace and initial mode
	session string         // the daemon's Mcp-Session-Id, "" before initialize
	proto   string         // the negotiated protocol version
	initReq []byte         // the client's initialize, replayed to reopen a session
	ready   bool           // the client sent notifications/initialized
	mode    string         // the mode to keep: the last loci_set_mode that held, else --mode
	listen  bool           // a GET stream is open or opening

	// reopen serializes reopening a session and starting the daemon.
	reopen sync.Mutex
	// closing ends the GET stream and retries once standard input closed.
	closing context.Context
}

// newBridge sets a bridge up. A configuration it cannot use (a bad
// setting, LOCI_MODE or LOCI_LOG) makes a broken bridge: it answers every
// request with that error, which an agent shows, rather than exiting with
// it on standard error, which an agent rarely shows.
func (a *app) newBridge(startIt bool) *bridge {
	level, lerr := a.logLevel()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil // the daemon is local
	tr.MaxIdleConnsPerHost = 32
	b := &bridge{a: a, startIt: startIt, out: a.stdout,
		log:  slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: level})),
		http: &http.Client{Transport: tr}}
	cl, err := a.client()
	if err == nil {
		err = lerr
	}
	if err != nil {
		b.broken = err
		b.log.Error("the bridge cannot reach a daemon with this configuration; every request is answered with this error",
			"code", fault.As(err).Code, "error", fault.As(err).Msg)
		return b
	}
	b.cl = cl
	if cl.Mode != "" && cl.Mode != "full" {
		b.mode = cl.Mode
	}
	return b
}

// envelope is what the bridge reads of a message.
type envelope struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// run relays until standard input ends or ctx does, then closes the
// daemon session.
func (b *bridge) run(ctx context.Context, stdin io.Reader) error {
	closing, stop := context.WithCancel(ctx)
	b.closing = closing
	// In-flight calls get bridgeDrain after standard input closes.
	calls, cancelCalls := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelCalls()
	defer context.AfterFunc(ctx, cancelCalls)()
	// Standard input is read apart: a signal ends the bridge while a
	// read blocks.
	type read struct {
		line []byte
		err  error
	}
	lines := make(chan read)
	go func() {
		rd := bufio.NewReaderSize(stdin, 64<<10)
		for {
			line, err := readLine(rd)
			select {
			case lines <- read{line, err}:
			case <-closing.Done():
				return
			}
			if err != nil && !errors.Is(err, errTooLong) {
				return
			}
		}
	}()
	var wg sync.WaitGroup
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case r := <-lines:
			if errors.Is(r.err, errTooLong) {
				b.answerError(nil, fault.Newf(fault.InputTooLarge, "send smaller messages (the daemon takes at most 4 MiB)",
					"a message on standard input is longer than %d bytes", bridgeMaxMessage))
				continue
			}
			if line := bytes.TrimSpace(r.line); len(line) > 0 {
				b.handle(calls, &wg, line)
			}
			if r.err != nil {
				break loop
			}
		}
	}
	stop()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(bridgeDrain):
		cancelCalls()
		<-done
	}
	b.closeSession()
	return nil
}

var errTooLong = errors.New("line too long")

// readLine reads one line (without its newline), refusing one longer than
// bridgeMaxMessage after skipping the rest of it.
func readLine(rd *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := rd.ReadSlice('\n')
		if len(line)+len(chunk) > bridgeMaxMessage {
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = rd.ReadSlice('\n')
			}
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, err
			}
			return nil, errTooLong
		}
		line = append(line, chunk...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}

// handle forwards one message. Requests run concurrently (a slow tool call
// does not hold a cancellation behind it); notifications and answers to
// the daemon's own requests go in order, before anything read after them.
func (b *bridge) handle(ctx context.Context, wg *sync.WaitGroup, msg []byte) {
	if msg[0] == '[' && b.broken != nil {
		b.answerError(nil, b.broken)
		return
	}
	if msg[0] == '[' {
		// A batch (protocol versions before 2025-06-18): passed through.
		b.forward(ctx, msg, nil, "")
		return
	}
	var env envelope
	if err := json.Unmarshal(msg, &env); err != nil {
		b.write(rpcError(nil, -32700, fault.Newf(fault.InputInvalid, "write one JSON-RPC message per line",
			"standard input: not a JSON-RPC message: %v", err).Body()))
		return
	}
	isCall := env.Method != "" && len(env.ID) > 0 && string(env.ID) != "null"
	switch {
	case b.broken != nil:
		if isCall {
			b.answerError(env.ID, b.broken)
		}
	case env.Method == "initialize" && isCall:
		b.mu.Lock()
		old := b.session
		b.initReq, b.ready, b.session = append([]byte(nil), msg...), false, ""
		b.mu.Unlock()
		if old != "" {
			b.deleteSession(old)
		}
		b.forward(ctx, msg, env.ID, env.Method)
	case isCall:
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.forward(ctx, msg, env.ID, b.modeCall(env))
		}()
	default:
		b.forward(ctx, msg, nil, env.Method)
		if env.Method == "notifications/initialized" {
			// Kept even when it could not be forwarded: a session opened
			// later is initialized the same way.
			b.mu.Lock()
			b.ready = true
			b.mu.Unlock()
		}
	}
}

// modeCall names a call for forward: "set:<mode>" for a loci_set_mode
// call (its answer is watched so that a reopened session gets the mode
// back), else its method.
func (b *bridge) modeCall(env envelope) string {
	if env.Method != "tools/call" {
		return env.Method
	}
	var p struct {
		Name      string `json:"name"`
		Arguments struct {
			Mode string `json:"mode"`
		} `json:"arguments"`
	}
	if json.Unmarshal(env.Params, &p) != nil || p.Name != "loci_set_mode" {
		return env.Method
	}
	return "set:" + p.Arguments.Mode
}

// forward posts one message and writes what the daemon answers; id is
// the message's id when it is a request (it is answered with an error when
// the daemon cannot be reached), method its method.
func (b *bridge) forward(ctx context.Context, msg, id json.RawMessage, method string) {
	resp, err := b.post(ctx, msg, method == "initialize")
	if err != nil {
		if id != nil {
			b.answerError(id, err)
		} else {
			b.log.Warn("a message could not be forwarded to the daemon", "method", method, "error", fault.As(err).Msg)
		}
		return
	}
	defer resp.Body.Close()
	ct := resp.Header.Get("Content-Type")
	switch {
	case resp.StatusCode == http.StatusAccepted:
		io.Copy(io.Discard, resp.Body)
	case resp.StatusCode < 300 && strings.HasPrefix(ct, "text/event-stream"):
		b.relayEvents(resp.Body, method, resp.Header.Get("Mcp-Session-Id"))
	case resp.StatusCode < 300:
		raw, err := io.ReadAll(resp.Body)
		if err != nil {
			if id != nil {
				b.answerError(id, fault.Wrap(fault.ClientRequestFailed, err, "the daemon's answer was cut off", "call again"))
			}
			return
		}
		b.answered(raw, method)
		if method == "initialize" {
			b.opened(resp.Header.Get("Mcp-Session-Id"), raw)
		}
		b.write(raw)
	default:
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if isRPC(raw) {
			// The SDK's own JSON-RPC error (a bad protocol version).
			b.write(raw)
			return
		}
		var body fault.Body
		if json.Unmarshal(raw, &body) != nil || body.Code == "" {
			body = fault.Newf(fault.ClientRequestFailed, "check that the address belongs to a loci daemon",
				"the daemon answered %d without an error body", resp.StatusCode).Body()
		}
		if id != nil {
			b.write(rpcError(id, bridgeErrorCode, body))
		} else {
			b.log.Warn("the daemon refused a message", "method", method, "status", resp.StatusCode, "code", body.Code, "error", body.Error)
		}
	}
	if method == "notifications/initialized" {
		b.initialized(ctx)
	}
}

// post sends a message on the session, reopening the session when the
// daemon no longer knows it and starting the daemon (with --start) when
// none answers.
func (b *bridge) post(ctx context.Context, msg []byte, initialize bool) (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		b.mu.Lock()
		session, haveInit := b.session, b.initReq != nil
		b.mu.Unlock()
		if !initialize && session == "" && haveInit && attempt == 0 {
			// The client's initialize failed (no daemon then): open the
			// session now that one may answer.
			if err := b.reopenSession(ctx, ""); err != nil {
				return nil, err
			}
			continue
		}
		resp, err := b.send(ctx, http.MethodPost, msg, !initialize)
		if err != nil {
			if attempt == 0 && fault.Is(err, fault.ClientNotRunning) && b.revive(ctx) {
				if !initialize {
					if err := b.reopenSession(ctx, session); err != nil {
						return nil, err
					}
				}
				continue
			}
			return nil, err
		}
		if resp.StatusCode == http.StatusNotFound && session != "" && !initialize && attempt == 0 {
			// The daemon dropped the session (idle expiry, restart).
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err := b.reopenSession(ctx, session); err != nil {
				return nil, err
			}
			continue
		}
		return resp, nil
	}
}

// send makes one HTTP request to /mcp with the session's headers.
func (b *bridge) send(ctx context.Context, method string, body []byte, withSession bool) (*http.Response, error) {
	b.mu.Lock()
	cl, session, proto := b.cl, b.session, b.proto
	b.mu.Unlock()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, cl.Base+"/mcp", rd)
	if err != nil {
		return nil, fault.Wrap(fault.ClientRequestFailed, err, "cannot build the request: "+err.Error(), "check the daemon address")
	}
	h := req.Header
	if body != nil {
		h.Set("Content-Type", "application/json")
	}
	h.Set("Accept", "application/json, text/event-stream")
	if cl.Token != "" {
		h.Set("Authorization", "Bearer "+cl.Token)
	}
	if cl.Palace != "" {
		h.Set(client.PalaceHeader, url.PathEscape(cl.Palace))
	}
	if withSession && session != "" {
		h.Set("Mcp-Session-Id", session)
		if proto != "" {
			h.Set("Mcp-Protocol-Version", proto)
		}
	}
	resp, err := b.http.Do(req)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fault.Wrap(fault.ClientNotRunning, err, "no loci daemon answers at "+cl.Base,
				"start one with `loci daemon start`, or run the bridge as `loci mcp --start` to start it when needed")
		}
		return nil, fault.Wrap(fault.ClientRequestFailed, err, "the request to "+cl.Base+" failed: "+err.Error(),
			"check the daemon is healthy (loci status) and call again")
	}
	return resp, nil
}

// revive finds a daemon after a refused connection: at a new address (it
// restarted elsewhere), or started with --start. It reports whether to try
// again.
func (b *bridge) revive(ctx context.Context) bool {
	b.reopen.Lock()
	defer b.reopen.Unlock()
	b.mu.Lock()
	before := b.cl.Base
	b.mu.Unlock()
	b.a.cfg = nil
	if cl, err := b.a.client(); err == nil && cl.Base != before {
		b.setClient(cl)
		return true
	}
	if !b.startIt || ctx.Err() != nil {
		return false
	}
	if b.a.healthy(ctx, strings.TrimPrefix(before, "http://")) {
		return true // another caller started it
	}
	// "loci daemon start" prints for people: here that goes to stderr,
	// standard output carries only the protocol.
	quiet := *b.a
	quiet.stdout, quiet.jsonOut, quiet.cfg = b.a.stderr, false, nil
	b.log.Info("no loci daemon answers; starting one", "address", before)
	if err := quiet.start(ctx, &listenerFlags{port: -1}); err != nil {
		b.log.Error("the daemon did not start", "error", fault.As(err).Msg, "code", fault.As(err).Code)
		return false
	}
	b.a.cfg = nil
	if cl, err := b.a.client(); err == nil {
		b.setClient(cl)
	}
	return true
}

func (b *bridge) setClient(cl *client.Client) {
	b.mu.Lock()
	defer b.mu.Unlock()
	// The token and mode stay what this bridge started with.
	b.cl = &client.Client{Base: cl.Base, Token: b.cl.Token, Mode: b.cl.Mode, Palace: b.cl.Palace}
}

// reopenSession opens a new daemon session in place of stale by replaying
// the client's initialize and initialized, then gives it back the mode the
// old one had. A caller that finds the session already replaced returns.
func (b *bridge) reopenSession(ctx context.Context, stale string) error {
	b.reopen.Lock()
	defer b.reopen.Unlock()
	b.mu.Lock()
	current, init, ready := b.session, b.initReq, b.ready
	b.mu.Unlock()
	if current != stale || init == nil {
		return nil
	}
	resp, err := b.send(ctx, http.MethodPost, init, false)
	if err != nil {
		return err
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") == "" {
		var body fault.Body
		if json.Unmarshal(raw, &body) == nil && body.Code != "" {
			return &fault.Error{Code: fault.Code(body.Code), Msg: body.Error, Help: body.Help, Status: resp.StatusCode}
		}
		return fault.Newf(fault.ClientRequestFailed, "see the daemon log", "the daemon refused to open an MCP session again (%d)", resp.StatusCode)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		raw = firstEvent(raw)
	}
	b.opened(resp.Header.Get("Mcp-Session-Id"), raw)
	b.log.Info("the daemon's MCP session was opened again", "was", stale != "")
	if ready {
		r, err := b.send(ctx, http.MethodPost, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), true)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
		b.initialized(ctx)
	}
	return nil
}

// opened takes the session id and protocol version of an initialize answer.
func (b *bridge) opened(session string, raw []byte) {
	var res struct {
		Result struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
	}
	_ = json.Unmarshal(raw, &res)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.session, b.proto, b.listen = session, res.Result.ProtocolVersion, false
}

// initialized follows the client's notifications/initialized: the mode to
// keep is set on the session, and the stream of the daemon's own messages
// is opened.
func (b *bridge) initialized(ctx context.Context) {
	b.mu.Lock()
	mode, session, listening := b.mode, b.session, b.listen
	b.listen = true
	b.mu.Unlock()
	if session == "" {
		return
	}
	if mode != "" {
		msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "loci-bridge-mode", "method": "tools/call",
			"params": map[string]any{"name": "loci_set_mode", "arguments": map[string]string{"mode": mode}}})
		resp, err := b.send(ctx, http.MethodPost, msg, true)
		if err != nil {
			b.log.Warn("the memory mode could not be set on the session", "mode", mode, "error", fault.As(err).Msg)
		} else {
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !modeHeld(raw) {
				b.log.Warn("the daemon refused the memory mode", "mode", mode, "status", resp.StatusCode)
			}
		}
	}
	if !listening {
		go b.listenStream(session)
	}
}

// answered watches a loci_set_mode answer: the mode that held is kept for
// a reopened session.
func (b *bridge) answered(raw []byte, method string) {
	mode, ok := strings.CutPrefix(method, "set:")
	if ok && modeHeld(raw) {
		b.mu.Lock()
		b.mode = mode
		b.mu.Unlock()
	}
}

// modeHeld reports whether a tools/call answer is a success.
func modeHeld(raw []byte) bool {
	var res struct {
		Result *struct {
			IsError bool `json:"isError"`
		} `json:"result"`
	}
	return json.Unmarshal(raw, &res) == nil && res.Result != nil && !res.Result.IsError
}

// listenStream holds the GET stream on which the daemon sends messages of
// its own (notifications, requests) and relays them, until the session
// changes or the bridge closes.
func (b *bridge) listenStream(session string) {
	for wait := time.Second; b.closing.Err() == nil; wait = min(2*wait, 30*time.Second) {
		b.mu.Lock()
		current := b.session
		b.mu.Unlock()
		if current != session {
			return
		}
		resp, err := b.send(b.closing, http.MethodGet, nil, true)
		if err != nil {
			b.log.Debug("the daemon's message stream could not be opened", "error", fault.As(err).Msg)
		} else {
			ok := resp.StatusCode == http.StatusOK && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
			if ok {
				b.relayEvents(resp.Body, "", "")
				wait = time.Second
			}
			resp.Body.Close()
			if resp.StatusCode == http.StatusMethodNotAllowed || resp.StatusCode == http.StatusNotFound {
				return // no stream offered, or the session ended
			}
		}
		select {
		case <-b.closing.Done():
			return
		case <-time.After(wait):
		}
	}
}

// relayEvents writes the data of each server-sent event as one line.
func (b *bridge) relayEvents(r io.Reader, method, session string) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), bridgeMaxMessage)
	var data []byte
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0:
			if len(data) > 0 {
				b.answered(data, method)
				if method == "initialize" {
					b.opened(session, data)
				}
				b.write(data)
				data = data[:0]
			}
		case bytes.HasPrefix(line, []byte("data:")):
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))...)
		}
	}
	if len(data) > 0 {
		b.write(data)
	}
}

// firstEvent is the data of the first event of an event stream.
func firstEvent(raw []byte) []byte {
	for line := range bytes.SplitSeq(raw, []byte("\n")) {
		if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			return bytes.TrimSpace(d)
		}
	}
	return raw
}

// write puts one message on standard output, on one line.
func (b *bridge) write(msg []byte) {
	msg = bytes.TrimSpace(msg)
	if bytes.ContainsAny(msg, "\r\n") {
		var c bytes.Buffer
		if json.Compact(&c, msg) == nil {
			msg = c.Bytes()
		}
	}
	b.outMu.Lock()
	defer b.outMu.Unlock()
	buf := make([]byte, 0, len(msg)+1)
	if _, err := b.out.Write(append(append(buf, msg...), '\n')); err != nil {
		b.log.Debug("standard output is closed", "error", err)
	}
}

// answerError answers a request with a JSON-RPC error whose message is
// loci's {error, code, help}, as compact JSON (what an agent shows), and
// whose data is the same object.
func (b *bridge) answerError(id json.RawMessage, err error) {
	fe := fault.As(err)
	b.log.Warn("a request was answered with an error", "code", fe.Code, "error", fe.Msg)
	b.write(rpcError(id, bridgeErrorCode, fe.Body()))
}

func rpcError(id json.RawMessage, code int, body fault.Body) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	text, _ := json.Marshal(body)
	out, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int        `json:"code"`
			Message string     `json:"message"`
			Data    fault.Body `json:"data"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int        `json:"code"`
		Message string     `json:"message"`
		Data    fault.Body `json:"data"`
	}{code, string(text), body}})
	return out
}

// isRPC reports whether raw is a JSON-RPC message.
func isRPC(raw []byte) bool {
	var m struct {
		JSONRPC string `json:"jsonrpc"`
	}
	return json.Unmarshal(raw, &m) == nil && m.JSONRPC == "2.0"
}

// closeSession ends the daemon session (DELETE /mcp), bounded.
func (b *bridge) closeSession() {
	if b.broken != nil {
		return
	}
	b.mu.Lock()
	session := b.session
	b.mu.Unlock()
	if session != "" {
		b.deleteSession(session)
	}
}

func (b *bridge) deleteSession(session string) {
	ctx, cancel := context.WithTimeout(context.Background(), bridgeClose)
	defer cancel()
	b.mu.Lock()
	cl, proto := b.cl, b.proto
	b.mu.Unlock()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, cl.Base+"/mcp", nil)
	if err != nil {
		return
	}
	req.Header.Set("Mcp-Session-Id", session)
	if proto != "" {
		req.Header.Set("Mcp-Protocol-Version", proto)
	}
	if cl.Token != "" {
		req.Header.Set("Authorization", "Bearer "+cl.Token)
	}
	if cl.Palace != "" {
		req.Header.Set(client.PalaceHeader, url.PathEscape(cl.Palace))
	}
	resp, err := b.http.Do(req)
	if err != nil {
		b.log.Debug("the daemon session could not be closed", "error", err)
		return
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}
