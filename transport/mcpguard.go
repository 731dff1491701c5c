package transport

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loci-dev/loci/fault"
)

// MCP session limits: a session idle for MCPSessionIdle is closed (its
// memory mode with it), and at most MCPMaxSessions live at once; a new
// one beyond that is refused with 503 loci::server::busy.
const (
	MCPSessionIdle = 30 * time.Minute
	MCPMaxSessions = 256
)

// mcpSessionIdle and mcpMaxSessions apply the Server's overrides.
func (s *Server) mcpSessionIdle() time.Duration {
	if s.MCPIdle > 0 {
		return s.MCPIdle
	}
	return MCPSessionIdle
}

func (s *Server) mcpMaxSessions() int {
	if s.MCPMax > 0 {
		return s.MCPMax
	}
	return MCPMaxSessions
}

// credKey carries the digest of the credential a request authenticated
// with (only when authentication is on).
type credKey struct{}

func credentialOf(r *http.Request) (sum [32]byte, ok bool) {
	sum, ok = r.Context().Value(credKey{}).([32]byte)
	return sum, ok
}

// mcpCreds remembers which credential opened each MCP session, by digest,
// so that a revoked or rotated token ends the sessions it opened.
type mcpCreds struct {
	mu   sync.Mutex
	byID map[string][32]byte
}

// put remembers a session's credential and returns how many are held.
func (c *mcpCreds) put(id string, sum [32]byte) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byID == nil {
		c.byID = map[string][32]byte{}
	}
	c.byID[id] = sum
	return len(c.byID)
}

// dropStaleMCPSessions closes every session whose credential no longer holds, and
// forgets sessions that have ended.
func (s *Server) dropStaleMCPSessions() {
	srv := s.mcpServer
	if srv == nil || s.Auth == nil {
		return
	}
	live := map[string]*mcp.ServerSession{}
	for ss := range srv.Sessions() {
		live[ss.ID()] = ss
	}
	s.mcpCreds.mu.Lock()
	var stale []*mcp.ServerSession
	for id, sum := range s.mcpCreds.byID {
		ss, ok := live[id]
		switch {
		case !ok:
			delete(s.mcpCreds.byID, id)
		case !s.Auth.Holds(sum):
			delete(s.mcpCreds.byID, id)
			stale = append(stale, ss)
		}
	}
	s.mcpCreds.mu.Unlock()
	for _, ss := range stale {
		_ = ss.Close()
		s.mcpModes.Delete(ss.ID())
	}
}

// endOnRevoke returns a context of r that ends when the credential r
// authenticated with stops holding (the token is revoked or rotated), and
// its cancel. Without authentication it is r's own context.
func (s *Server) endOnRevoke(r *http.Request) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(r.Context())
	sum, ok := credentialOf(r)
	if !ok || s.Auth == nil {
		return ctx, cancel
	}
	go func() {
		for {
			changed := s.Auth.Changed()
			if !s.Auth.Holds(sum) {
				cancel()
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-changed:
			}
		}
	}()
	return ctx, cancel
}

// guardMCP wraps the SDK's handler: caps new sessions, binds sessions and
// streams to their credential, and answers the SDK's plain-text failures
// as {error, code, help}. JSON-RPC error objects pass unchanged: they are
// the protocol's own answers.
func (s *Server) guardMCP(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		newSession := r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == ""
		if newSession && s.mcpServer != nil {
			n := 0
			for range s.mcpServer.Sessions() {
				n++
			}
			if n >= s.mcpMaxSessions() {
				renderError(s.Log, w, r, fault.Newf(fault.ServerBusy,
					"close sessions you no longer use (DELETE /mcp with their Mcp-Session-Id); idle ones expire after "+s.mcpSessionIdle().String(),
					"%d MCP sessions are open, the most this daemon keeps", n))
				return
			}
		}
		if r.Method == http.MethodGet {
			ctx, cancel := s.endOnRevoke(r)
			defer cancel()
			r = r.WithContext(ctx)
			// The session's stream of notifications: a client that takes
			// nothing for the stall bound ends it.
			boundSendBuffer(r)
			rc := http.NewResponseController(w)
			defer func() { _ = rc.SetWriteDeadline(time.Time{}) }()
			w = &stallWriter{ResponseWriter: w, rc: rc, stall: s.streamStall(), fail: func(err error) {
				if errors.Is(err, os.ErrDeadlineExceeded) {
					s.Log.Warn("dropped an MCP stream that stayed behind", "client", r.RemoteAddr,
						"reason", "its client took nothing for "+s.streamStall().String())
				}
				cancel()
			}}
		}
		pw := &plainErrors{ResponseWriter: w}
		h.ServeHTTP(pw, r)
		pw.finish(s, r)
		if id := w.Header().Get("Mcp-Session-Id"); newSession && id != "" {
			if sum, ok := credentialOf(r); ok && s.mcpCreds.put(id, sum) > 2*s.mcpMaxSessions() {
				// Forget sessions that ended (expired or closed): the map
				// would otherwise grow with every session ever opened.
				s.dropStaleMCPSessions()
			}
		}
	})
}

// stallWriter gives each write of a stream the stall bound to be taken by
// its client; a write that fails calls fail (once), which ends the
// request.
type stallWriter struct {
	http.ResponseWriter
	rc    *http.ResponseController
	stall time.Duration
	fail  func(error)
	once  sync.Once
}

func (w *stallWriter) failed(err error) {
	if err != nil {
		w.once.Do(func() { w.fail(err) })
	}
}

func (w *stallWriter) Write(b []byte) (int, error) {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.stall))
	n, err := w.ResponseWriter.Write(b)
	w.failed(err)
	return n, err
}

// Flush sends what is buffered within the stall bound.
func (w *stallWriter) Flush() { _ = w.FlushError() }

// FlushError is Flush with its failure (http.ResponseController uses it).
func (w *stallWriter) FlushError() error {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.stall))
	err := w.rc.Flush()
	w.failed(err)
	return err
}

// Unwrap lets http.ResponseController reach the connection.
func (w *stallWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// plainErrors holds back a plain-text failure the SDK writes (http.Error)
// so that it can be answered as {error, code, help} with the same status.
type plainErrors struct {
	http.ResponseWriter
	status int
	text   bytes.Buffer
}

func (p *plainErrors) WriteHeader(code int) {
	if code >= 400 && !strings.HasPrefix(p.Header().Get("Content-Type"), "application/json") {
		p.status = code
		return
	}
	p.ResponseWriter.WriteHeader(code)
}

func (p *plainErrors) Write(b []byte) (int, error) {
	if p.status != 0 {
		if p.text.Len() < 4096 {
			p.text.Write(b)
		}
		return len(b), nil
	}
	return p.ResponseWriter.Write(b)
}

// Flush passes through unless a failure is being held back.
func (p *plainErrors) Flush() {
	if f, ok := p.ResponseWriter.(http.Flusher); ok && p.status == 0 {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (p *plainErrors) Unwrap() http.ResponseWriter { return p.ResponseWriter }

// finish writes the held-back failure in loci's form.
func (p *plainErrors) finish(s *Server, r *http.Request) {
	if p.status == 0 {
		return
	}
	msg := "MCP: " + strings.TrimSpace(p.text.String())
	var e *fault.Error
	switch {
	case p.status == http.StatusRequestEntityTooLarge:
		e = fault.New(fault.InputTooLarge, msg, "send a smaller message")
	case p.status == http.StatusNotFound:
		e = fault.New(fault.InputInvalid, msg, "the session has ended or expired; initialize a new one")
	case p.status >= 500:
		e = fault.New(fault.ServerFailed, msg, "see the daemon log; report it if it repeats")
	default:
		e = fault.New(fault.InputInvalid, msg, "use an MCP client (streamable HTTP): POST JSON-RPC to /mcp with Content-Type: application/json")
	}
	e.Status = p.status
	h := p.Header()
	h.Del("X-Content-Type-Options")
	h.Del("Content-Length")
	renderError(s.Log, p.ResponseWriter, r, e)
}

// CloseSessions ends every MCP session (at shutdown): their streams would
// otherwise hold the HTTP server's drain.
func (s *Server) CloseSessions() {
	if s.mcpServer == nil {
		return
	}
	for ss := range s.mcpServer.Sessions() {
		_ = ss.Close()
	}
}
