package dbadmin

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/fxamacker/cbor/v2"

	"github.com/loci-dev/loci/fault"
)

// The /rpc encodings, named by the WebSocket subprotocol.
const (
	encJSON = "json"
	encCBOR = "cbor"
)

// JSON-RPC error codes.
const (
	codeParse          = -32700
	codeInvalidRequest = -32600
	codeNoMethod       = -32601
	codeInvalidParams  = -32602
	codeFailed         = -32000
)

// codec reads requests from and writes answers to one encoding.
type codec struct {
	name   string
	msg    websocket.MessageType
	decode func([]byte) (any, error)
	encode func(any) ([]byte, error)
}

var (
	cborDec, _ = cbor.DecOptions{
		DefaultMapType: reflect.TypeOf(map[string]any(nil)),
		DupMapKey:      cbor.DupMapKeyEnforcedAPF,
		IntDec:         cbor.IntDecConvertNone,
		TimeTagToAny:   cbor.TimeTagToTime,
	}.DecMode()
	cborEnc, _ = cbor.EncOptions{
		Time:    cbor.TimeRFC3339Nano,
		TimeTag: cbor.EncTagRequired,
	}.EncMode()
)

var codecs = map[string]codec{
	encJSON: {name: encJSON, msg: websocket.MessageText, decode: decodeJSON, encode: encodeJSON},
	encCBOR: {name: encCBOR, msg: websocket.MessageBinary,
		decode: func(b []byte) (any, error) {
			var v any
			err := cborDec.Unmarshal(b, &v)
			return v, err
		},
		encode: cborEnc.Marshal},
}

// decodeJSON reads one JSON value, its numbers as json.Number (an id or
// an integer keeps every digit); anything after it is an error.
func decodeJSON(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("data after the request")
	}
	return v, nil
}

func encodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// answer is a request's result; failure its error.
type answer struct {
	ID     any `json:"id"`
	Result any `json:"result"`
}

type failure struct {
	ID    any      `json:"id"`
	Error rpcError `json:"error"`
}

type rpcError struct {
	Code    int     `json:"code"`
	Message string  `json:"message"`
	Data    errData `json:"data"`
}

// errData is the house's error body.
type errData struct {
	Error string `json:"error"`
	Code  string `json:"code"`
	Help  string `json:"help"`
}

// rpcFail is a method's failure: its JSON-RPC code and the house's error.
type rpcFail struct {
	code int
	err  *fault.Error
}

func fail(code int, e *fault.Error) *rpcFail { return &rpcFail{code: code, err: e} }

// invalidParams is a method's -32602.
func invalidParams(method, help, format string, args ...any) *rpcFail {
	return fail(codeInvalidParams, fault.Newf(fault.DBInvalidRequest, help, method+": "+format, args...))
}

func (f *rpcFail) wire(id any) failure {
	b := f.err.Body()
	return failure{ID: id, Error: rpcError{Code: f.code, Message: b.Error, Data: errData{Error: b.Error, Code: b.Code, Help: b.Help}}}
}

// chooseEncoding picks the encoding among the subprotocols a client asks
// for, in its order; none asked is json.
func chooseEncoding(r *http.Request) (string, *fault.Error) {
	var asked []string
	for _, v := range r.Header.Values("Sec-WebSocket-Protocol") {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				asked = append(asked, p)
			}
		}
	}
	if len(asked) == 0 {
		return encJSON, nil
	}
	for _, p := range asked {
		if p = strings.ToLower(p); p == encJSON || p == encCBOR {
			return p, nil
		}
	}
	what := "the subprotocols " + fault.Clip(strings.Join(asked, ", "), fault.MaxQuoted) + " are not served"
	if slices.ContainsFunc(asked, func(p string) bool { return strings.EqualFold(p, "flatbuffers") }) {
		what = "the flatbuffers encoding is not served"
	}
	return "", fault.New(fault.DBUnsupported, what+": this listener speaks json and cbor", "ask for the json or cbor subprotocol")
}

// serveRPC upgrades /rpc to a WebSocket and serves it until it closes.
func (l *listener) serveRPC(w http.ResponseWriter, r *http.Request) {
	a := l.admin
	if r.Method != http.MethodGet {
		writeError(w, notAllowed(r, "GET (a WebSocket upgrade)"))
		return
	}
	if !headerHas(r.Header, "Connection", "upgrade") || !headerHas(r.Header, "Upgrade", "websocket") {
		writeError(w, fault.New(fault.DBInvalidRequest, "/rpc is a WebSocket endpoint: this request is no WebSocket upgrade",
			"connect with a WebSocket client to ws://ADDRESS/rpc, subprotocol json or cbor (`loci db query`, the dashboard's SQL view)"))
		return
	}
	if why := badHandshake(r); why != "" {
		w.Header().Set("Sec-WebSocket-Version", "13")
		writeError(w, fault.New(fault.DBInvalidRequest, "the WebSocket handshake is not valid: "+why,
			"connect with a WebSocket client (RFC 6455, version 13)"))
		return
	}
	enc, ferr := chooseEncoding(r)
	if ferr != nil {
		writeError(w, ferr)
		return
	}
	signedIn := false
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, tok, _ := strings.Cut(h, " ")
		if !strings.EqualFold(scheme, "Bearer") || !l.authenticates(strings.TrimSpace(tok)) {
			a.refusedLog(refusedBearer, r.RemoteAddr, 1)
			if t := a.cfg.Throttle; t != nil {
				wait, retry := t.Refused(r.RemoteAddr)
				if !sleep(r.Context(), wait) {
					return
				}
				if retry > 0 {
					writeError(w, throttled(retry))
					return
				}
			}
			writeError(w, fault.New(fault.DBSignInRefused, "the Authorization header does not sign in",
				"send Authorization: Bearer TOKEN with the daemon's token (or a session token of this listener), or connect without it and call signin"))
			return
		}
		signedIn = true
	}

	// A connection signed in by its bearer takes a signed-in slot; any
	// other one a slot among those not signed in, until it signs in.
	l.mu.Lock()
	if signedIn && l.signedConns >= a.maxConns || !signedIn && l.pendingConns >= a.maxPending {
		l.mu.Unlock()
		msg := fmt.Sprintf("the database admin listener holds its most connections (%d)", a.maxConns)
		if !signedIn {
			msg = fmt.Sprintf("the database admin listener holds its most connections not yet signed in (%d)", a.maxPending)
		}
		e := fault.New(fault.ServerBusy, msg, "close a console or wait for one to close (a connection not signed in within "+
			a.signInDeadline.String()+" is closed), then connect again")
		e.RetryAfter = 5
		writeError(w, e)
		return
	}
	if signedIn {
		l.signedConns++
	} else {
		l.pendingConns++
	}
	l.mu.Unlock()
	c := &conn{l: l, remote: r.RemoteAddr, promoted: signedIn}
	defer func() {
		l.mu.Lock()
		if c.promoted {
			l.signedConns--
		} else {
			l.pendingConns--
		}
		l.mu.Unlock()
	}()

	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{
		// The one chosen (the library would prefer its list's order to
		// the client's).
		Subprotocols: []string{enc},
		// The Origin was checked by this listener's rule (ServeHTTP);
		// the library's own check (same host only) would refuse the
		// desktop client and the allowed origins.
		InsecureSkipVerify: true,
	})
	if err != nil {
		a.log.Debug("database admin upgrade failed", "remote", r.RemoteAddr, "err", err)
		return
	}
	c.init(ws, codecs[enc], signedIn)
	l.mu.Lock()
	if l.closing {
		l.mu.Unlock()
		c.cancel()
		_ = ws.Close(websocket.StatusGoingAway, "the database admin listener is closing")
		return
	}
	l.conns[c] = struct{}{}
	l.sessions++
	l.mu.Unlock()
	ws.SetReadLimit(MaxMessageBytes)
	a.log.Debug("database admin connection", "remote", r.RemoteAddr, "encoding", enc, "signed_in", signedIn)

	// The sign-in deadline: a connection with no session signed in by
	// then is closed (1008), its slot freed.
	stop := make(chan struct{})
	var timer sync.WaitGroup
	// The idle timeout: a signed-in connection with no request for
	// a.idle is closed (1001), its slot freed.
	timer.Add(1)
	go func() {
		defer timer.Done()
		c.watchIdle(stop)
	}()
	if !signedIn {
		timer.Add(1)
		go func() {
			defer timer.Done()
			t := time.NewTimer(a.signInDeadline)
			defer t.Stop()
			select {
			case <-stop:
			case <-c.signed:
			case <-t.C:
				if c.expire() {
					a.log.Info("database admin connection closed: not signed in in time", "remote", c.remote, "deadline", a.signInDeadline.String())
					_ = ws.Close(websocket.StatusPolicyViolation, fmt.Sprintf("not signed in within %s: connect again and sign in first", a.signInDeadline))
				}
			}
		}()
	}

	defer func() {
		close(stop)
		timer.Wait()
		c.cancel()
		if c.refused > 0 {
			a.refusedLog(refusedConn, c.remote, c.refused)
		}
		l.mu.Lock()
		delete(l.conns, c)
		l.sessions -= len(c.sessions)
		l.mu.Unlock()
		_ = ws.CloseNow()
	}()
	c.serve()
}

// sleep waits d unless ctx ends first (false).
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// throttled is the answer to a refused sign-in from an address that made
// too many: loci::auth::throttled with when to try again.
func throttled(retry int) *fault.Error {
	e := fault.Newf(fault.AuthThrottled,
		fmt.Sprintf("wait %d s, then sign in with the valid password (the daemon's token): a valid one is never throttled", retry),
		"too many refused sign-ins from this address (here or on the daemon's REST API): try again in %d s", retry)
	e.RetryAfter = retry
	return e
}

// badHandshake says what is wrong with an upgrade request the WebSocket
// library would refuse (in its own words, as text): this listener answers
// every error as JSON.
func badHandshake(r *http.Request) string {
	if !r.ProtoAtLeast(1, 1) {
		return "it needs HTTP/1.1"
	}
	if r.Header.Get("Sec-WebSocket-Version") != "13" {
		return "Sec-WebSocket-Version must be 13"
	}
	keys := r.Header.Values("Sec-WebSocket-Key")
	if len(keys) != 1 {
		return "it needs one Sec-WebSocket-Key"
	}
	if k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(keys[0])); err != nil || len(k) != 16 {
		return "Sec-WebSocket-Key must be 16 bytes in base64"
	}
	return ""
}

// headerHas says whether a comma-separated header holds token.
func headerHas(h http.Header, key, token string) bool {
	for _, v := range h.Values(key) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// serve answers the connection's requests one at a time until it closes.
func (c *conn) serve() {
	defer func() {
		if p := recover(); p != nil {
			c.l.admin.log.Error("database admin connection failed", "remote", c.remote, "panic", fmt.Sprint(p))
			_ = c.ws.Close(websocket.StatusInternalError, "internal error")
		}
	}()
	for {
		// Read waits without a deadline: the idle timeout (watchIdle)
		// and Close end the wait by closing the connection.
		_, msg, err := c.ws.Read(context.Background())
		if err != nil || !c.busy(true) {
			return
		}
		out, closeWhy := c.handle(msg)
		b, err := c.codec.encode(out)
		if err != nil || len(b) > c.l.admin.maxAnswer {
			id := any(nil)
			switch o := out.(type) {
			case answer:
				id = o.ID
			case failure:
				id = o.ID
			}
			f := fail(codeFailed, fault.Newf(fault.DBTooLarge,
				"select fewer rows or columns (LIMIT, WHERE, SUBSTRING of long texts), or send the statements in separate queries",
				"the answer would exceed %d bytes (the size one answer holds)", c.l.admin.maxAnswer))
			if err != nil {
				f = fail(codeFailed, fault.Wrap(fault.ServerFailed, err,
					"the answer cannot be encoded in "+c.codec.name,
					"select the values another way (a NaN or infinite number has no JSON form: CAST it to text)"))
			}
			b, err = c.codec.encode(f.wire(id))
			if err != nil || len(b) > c.l.admin.maxAnswer {
				// Only an id near the message limit could do this.
				b, err = c.codec.encode(f.wire(nil))
				if err != nil {
					return
				}
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), answerTimeout)
		err = c.ws.Write(ctx, c.codec.msg, b)
		cancel()
		c.busy(false)
		if err != nil {
			return
		}
		if closeWhy != "" {
			_ = c.ws.Close(websocket.StatusPolicyViolation, closeWhy)
			return
		}
	}
}

// request is one decoded request.
type request struct {
	id      any
	method  string
	params  []any
	session string
	// named says the request named its session.
	named bool
}

// parse reads a request from a decoded message.
func parse(v any) (request, *rpcFail) {
	m, ok := v.(map[string]any)
	if !ok {
		return request{}, fail(codeInvalidRequest, fault.New(fault.DBInvalidRequest, "a request is an object",
			`send {"id": ..., "method": "...", "params": [...]}`))
	}
	req := request{id: m["id"]}
	bad := func(msg string) (request, *rpcFail) {
		return req, fail(codeInvalidRequest, fault.New(fault.DBInvalidRequest, msg,
			`send {"id": ..., "method": "...", "params": [...], "session": "..." (optional)}`))
	}
	switch req.id.(type) {
	case map[string]any, []any:
		req.id = nil
		return bad("id: give a number or a string")
	}
	meth, ok := m["method"].(string)
	if !ok || meth == "" {
		return bad("method: give the method's name as a string")
	}
	req.method = meth
	switch p := m["params"].(type) {
	case nil:
	case []any:
		req.params = p
	default:
		return bad("params: give the parameters as an array")
	}
	if s, present := m["session"]; present && s != nil {
		id, ok := s.(string)
		if !ok {
			return bad("session: give a session id (a string) from attach")
		}
		req.session, req.named = id, true
	}
	return req, nil
}

// value turns a decoded parameter into what the SQL engine takes: int64,
// float64, string, bool, nil, time.Time, []byte, and arrays and objects of
// them.
func value(v any) (any, error) {
	switch x := v.(type) {
	case nil, string, bool, int64, float64, time.Time, []byte:
		return x, nil
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i, nil
		}
		f, err := x.Float64()
		if err != nil || math.IsInf(f, 0) {
			return nil, fmt.Errorf("the number %s is out of range", fault.Clip(x.String(), 40))
		}
		return f, nil
	case uint64:
		if x > math.MaxInt64 {
			return nil, fmt.Errorf("the integer %d is out of range (at most %d)", x, int64(math.MaxInt64))
		}
		return int64(x), nil
	case float32:
		return float64(x), nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			var err error
			if out[i], err = value(e); err != nil {
				return nil, err
			}
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			var err error
			if out[k], err = value(e); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("a value of type %T is not accepted (give a number, string, boolean, null, time, array or object)", v)
}
