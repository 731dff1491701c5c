package transport

import (
	"context"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/loci-dev/loci/fault"
)

// Request limits of the HTTP server. Streams (GET /api/events, GET /mcp)
// are exempt from the body deadline; everything else must send its body
// within BodyTimeout and idle keep-alive connections close after
// IdleTimeout.
const (
	// HeaderTimeout bounds reading a request's line and headers.
	HeaderTimeout = 10 * time.Second
	// BodyTimeout bounds reading a request's body.
	BodyTimeout = 30 * time.Second
	// IdleTimeout closes a keep-alive connection that sends nothing.
	IdleTimeout = 60 * time.Second
)

// Limits are the HTTP server's timeouts; a zero field takes its default
// (HeaderTimeout, BodyTimeout, IdleTimeout). Tests shorten them.
type Limits struct {
	Header, Body, Idle time.Duration
}

func (l Limits) body() time.Duration {
	if l.Body > 0 {
		return l.Body
	}
	return BodyTimeout
}

// HTTPServer is the daemon's HTTP server with its limits. Write timeouts
// are left to handlers: event and MCP streams stay open.
func (s *Server) HTTPServer() *http.Server {
	hdr, idle := s.Limits.Header, s.Limits.Idle
	if hdr <= 0 {
		hdr = HeaderTimeout
	}
	if idle <= 0 {
		idle = IdleTimeout
	}
	return &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: hdr,
		IdleTimeout:       idle,
		MaxHeaderBytes:    64 << 10,
		ConnContext:       withConn,
	}
}

type connKey struct{}

// withConn is the main server's ConnContext: a stream finds its
// connection (to bound its send buffer).
func withConn(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// StreamSendBuffer is the kernel send buffer of an event stream's
// connection (the kernel doubles it). Left to autotuning, a client that
// stops reading had the kernel hold up to 4 MiB for it (tcp_wmem); 64 KiB
// still carries about 6,000 frames a second to a client 100 ms away.
const StreamSendBuffer = 64 << 10

// boundSendBuffer sets the request's connection's send buffer to
// StreamSendBuffer, where it can.
func boundSendBuffer(r *http.Request) {
	if c, ok := r.Context().Value(connKey{}).(interface{ SetWriteBuffer(int) error }); ok {
		_ = c.SetWriteBuffer(StreamSendBuffer)
	}
}

// routedPath is the path loci routes on: the request's escaped path, so a
// name is percent-decoded exactly once (by param). Routing on the decoded
// path would decode twice: GET /api/wings/a%2541 reached wing "aA".
func routedPath(r *http.Request) string { return r.URL.EscapedPath() }

// pathGuard makes the router route on the escaped path and refuses, before
// authentication, paths with a "." or ".." segment (encoded or not) and
// encoded slashes anywhere but in a drawer name, which may hold '/'. The
// open routes are then decided on the same path the router uses.
func (s *Server) pathGuard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		esc := routedPath(r)
		if err := checkPath(esc); err != nil {
			renderError(s.Log, w, r, err)
			return
		}
		if rctx := chi.RouteContext(r.Context()); rctx != nil {
			rctx.RoutePath = esc
		}
		next.ServeHTTP(w, r)
	})
}

// checkPath refuses dot segments and misplaced encoded slashes.
func checkPath(esc string) error {
	segs := strings.Split(esc, "/")
	for i, seg := range segs {
		dec, err := url.PathUnescape(seg)
		if err != nil {
			return fault.Newf(fault.PalacePathInvalid, "percent-encode names correctly (a '%' is %25)",
				"path segment %q is not valid percent-encoding", seg)
		}
		if dec == "." || dec == ".." {
			return fault.Newf(fault.PalacePathInvalid, "name the route itself; paths are not resolved",
				"the path %q has a %q segment", esc, dec)
		}
		if strings.Contains(dec, "/") && !drawerTail(segs, i) {
			return fault.Newf(fault.PalacePathInvalid, "only a drawer name may hold '/'; wing, room and other names are one segment",
				"path segment %q holds an encoded slash", seg)
		}
	}
	return nil
}

// drawerTail reports whether segment i of an escaped path is part of the
// drawer name of /api/wings/{wing}/rooms/{room}/drawers/{drawer...}.
func drawerTail(segs []string, i int) bool {
	return i >= 7 && segs[1] == "api" && segs[2] == "wings" && segs[4] == "rooms" && segs[6] == "drawers"
}

// streaming reports the long-lived GET routes (server-sent events).
func streaming(r *http.Request) bool {
	if r.Method != http.MethodGet {
		return false
	}
	p := routedPath(r)
	return p == "/api/events" || p == "/mcp"
}

// limits refuses a declared body over MaxBodyBytes at once (413, before
// reading any of it) and gives every other request's body BodyTimeout to
// arrive: a client declaring 1,000 bytes and sending one no longer holds
// its connection.
func (s *Server) limits(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > MaxBodyBytes && !upload(r) {
			renderError(s.Log, w, r, fault.Newf(fault.InputTooLarge, "send at most 4 MiB; split the content",
				"the request body declares %d bytes; at most %d are taken", r.ContentLength, MaxBodyBytes))
			return
		}
		if hasBody(r) && !streaming(r) && !upload(r) {
			// A timer, not a read deadline set on every request: setting
			// and clearing the connection's deadline added about 0.5 ms to
			// each write (measured in turns with locibench -only writes).
			// When it fires, the deadline is put in the past and the
			// stalled read fails.
			rc := http.NewResponseController(w)
			deadline := time.Now().Add(s.Limits.body())
			t := time.AfterFunc(s.Limits.body(), func() { _ = rc.SetReadDeadline(time.Now()) })
			// On a copy of the request: the server's own keeps its body,
			// whose type it checks when it finishes the response.
			r = r.WithContext(r.Context())
			r.Body = &deadlineBody{ReadCloser: r.Body, done: func() { t.Stop() }}
			defer func() {
				if t.Stop() {
					// The handler left the body unread (a refusal): the
					// server reads the rest to reuse the connection, within
					// what is left of the body's time. The next request
					// sets its own deadline.
					_ = rc.SetReadDeadline(deadline)
				}
			}()
		}
		next.ServeHTTP(w, r)
	})
}

// hasBody reports a request that carries (or may carry) a body.
func hasBody(r *http.Request) bool {
	return r.Body != nil && r.Body != http.NoBody && (r.ContentLength > 0 || r.ContentLength == -1)
}

// deadlineBody stops the body's timer once the body is read, so a handler
// that takes long after reading is not cut off.
type deadlineBody struct {
	io.ReadCloser
	done func()
	once bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.once {
		b.once = true
		b.done()
	}
	return n, err
}

// requireJSON refuses a body declared as anything but application/json: a
// form or plain-text body is what a browser can send across sites without
// a preflight, and it is never what loci's clients send. A body with no
// Content-Type is taken: a browser sends Origin with every cross-site
// POST, PUT and DELETE, and hostGuard refuses those already.
func requireJSON(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil && mt == "application/json" {
		return nil
	}
	return fault.Newf(fault.InputInvalid, "send the body as JSON with Content-Type: application/json (curl: -H 'Content-Type: application/json')",
		"Content-Type: %q is refused; this route takes application/json", ct)
}

// LoopbackOnly serves h only to requests whose Host names this machine by
// a loopback name (the profiler's guard against DNS rebinding).
func LoopbackOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !localHost(r.Host) {
			renderError(slog.New(slog.DiscardHandler), w, r, fault.Newf(fault.InputInvalid,
				"reach the profiler as localhost, 127.0.0.1 or [::1]", "Host %q is refused by the profiler (DNS rebinding protection)", r.Host))
			return
		}
		h.ServeHTTP(w, r)
	})
}
