package transport

import (
	"container/list"
	"net"
	"net/http"
	"sync"
)

// Connection budget. A listener may hold at most its cap of connections;
// the daemon keeps FileReserve descriptors for its own files (store,
// indexes, watches, logs, outgoing connections) and gives the main
// listener half of the rest, at most MaxConnsDefault, and the webhook
// listener a quarter, at most WebhookMaxConns.
const (
	FileReserve     = 256
	MaxConnsDefault = 4096
	WebhookMaxConns = 2 * WebhookMaxReading
	minConns        = 16
)

// ConnBudget sizes the listeners' connection caps against the open-file
// limit: main is the main listener's default cap (server.max_connections
// = 0), webhook the webhook listener's cap, and reading how many webhook
// connections may be reading at once. A limit too small for the reserve
// still gets minConns and minConns/2; an unknown limit (0) the defaults.
func ConnBudget(nofile uint64) (main, webhook, reading int) {
	if nofile == 0 {
		return MaxConnsDefault, WebhookMaxConns, WebhookMaxReading
	}
	spare := 0
	if nofile > FileReserve {
		spare = int(min(nofile-FileReserve, 1<<30))
	}
	main = max(min(spare/2, MaxConnsDefault), minConns)
	webhook = max(min(spare/4, WebhookMaxConns), minConns/2)
	return main, webhook, max(min(webhook/2, WebhookMaxReading), 1)
}

// connLimit bounds the connections a listener holds open. Accept takes a
// connection, and when that makes one too many it closes the connection
// that has been idle longest: one accepted but not yet through its
// request's headers (http.StateNew: it has sent nothing, or trickles its
// headers) or one waiting between requests (http.StateIdle). A connection
// in a request (or a stream) is never closed. When every connection is in
// a request, Accept waits with the new one until one closes or falls
// idle, so further connections wait in the kernel's backlog, costing the
// daemon nothing. Half-open and idle connections thus never starve a
// client that sends its request: each new connection displaces the
// oldest of them.
//
// Without evict, nothing is ever closed to make room: Accept waits (the
// webhook listener, whose connections carry one request each under a
// short read deadline).
//
// The http.Server serving it must report its connections' states to
// track (its ConnState).
type connLimit struct {
	net.Listener
	max   int
	evict bool

	mu     sync.Mutex
	cond   *sync.Cond
	n      int        // open connections, counted from Accept to Close
	idle   *list.List // of *limitedConn, longest idle first
	closed bool
}

// limitedConn is a connection counted by its connLimit.
type limitedConn struct {
	net.Conn
	l      *connLimit
	elem   *list.Element // in l.idle while idle
	gone   bool          // counted out (closed)
	closer sync.Once
}

func newConnLimit(ln net.Listener, n int, evict bool) *connLimit {
	l := &connLimit{Listener: ln, max: max(n, 1), evict: evict, idle: list.New()}
	l.cond = sync.NewCond(&l.mu)
	return l
}

// LimitConns caps the connections hs serves from ln at n (at least 1):
// it sets hs.ConnState and returns the listener to serve. With evict, the
// connection idle longest is closed to make room (see connLimit);
// without, a connection past the cap waits in the backlog.
func LimitConns(hs *http.Server, ln net.Listener, n int, evict bool) net.Listener {
	l := newConnLimit(ln, n, evict)
	prev := hs.ConnState
	hs.ConnState = func(c net.Conn, st http.ConnState) {
		l.track(c, st)
		if prev != nil {
			prev(c, st)
		}
	}
	return l
}

// Accept takes a connection and makes room for it, waiting while every
// connection is busy.
func (l *connLimit) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	lc := &limitedConn{Conn: c, l: l}
	l.mu.Lock()
	l.n++
	for l.n > l.max && !l.closed {
		if e := l.idle.Front(); e != nil && l.evict {
			old := e.Value.(*limitedConn)
			l.idle.Remove(e)
			old.elem = nil
			l.mu.Unlock()
			_ = old.Close()
			l.mu.Lock()
			continue
		}
		l.cond.Wait()
	}
	if l.closed {
		l.mu.Unlock()
		_ = lc.Close()
		return nil, net.ErrClosed
	}
	if l.evict {
		// New and not yet through its headers: evictable from now.
		lc.elem = l.idle.PushBack(lc)
	}
	l.mu.Unlock()
	return lc, nil
}

// Close closes the listener and ends an Accept waiting for room.
func (l *connLimit) Close() error {
	l.mu.Lock()
	l.closed = true
	l.cond.Broadcast()
	l.mu.Unlock()
	return l.Listener.Close()
}

// track follows a connection's state: new and idle connections may be
// closed to make room, active and hijacked ones may not; a closed one is
// counted out.
func (l *connLimit) track(c net.Conn, st http.ConnState) {
	lc, ok := c.(*limitedConn)
	if !ok {
		return
	}
	switch st {
	case http.StateNew, http.StateIdle:
		l.mu.Lock()
		if l.evict && !lc.gone && lc.elem == nil {
			lc.elem = l.idle.PushBack(lc)
			l.cond.Broadcast()
		}
		l.mu.Unlock()
	case http.StateActive, http.StateHijacked:
		l.mu.Lock()
		if lc.elem != nil {
			l.idle.Remove(lc.elem)
			lc.elem = nil
		}
		l.mu.Unlock()
	case http.StateClosed:
		_ = lc.Close()
	}
}

// Close counts the connection out (once) and closes it.
func (c *limitedConn) Close() error {
	err := net.ErrClosed
	c.closer.Do(func() {
		l := c.l
		l.mu.Lock()
		c.gone = true
		if c.elem != nil {
			l.idle.Remove(c.elem)
			c.elem = nil
		}
		l.n--
		l.cond.Broadcast()
		l.mu.Unlock()
		err = c.Conn.Close()
	})
	return err
}

// CloseWrite half-closes a TCP connection (http.Server uses it to let a
// response reach a client before closing).
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// SetWriteBuffer passes through to a TCP connection (event streams bound
// the kernel's send buffer they hold).
func (c *limitedConn) SetWriteBuffer(n int) error {
	if b, ok := c.Conn.(interface{ SetWriteBuffer(int) error }); ok {
		return b.SetWriteBuffer(n)
	}
	return nil
}
