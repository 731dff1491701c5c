package transport

import (
	"context"
	"net"
	"sync"
)

// readingListener bounds the connections still reading their request: a
// connection takes a place when accepted and gives it back when its
// request has been read (doneReading) or it closes. While every place is
// taken Accept waits, so further connections queue in the kernel's
// backlog (costing the daemon nothing) until a reader finishes or its read
// deadline cuts it. The server using it must serve one request per
// connection (keep-alives off): a connection never reads again once done.
type readingListener struct {
	net.Listener
	places chan struct{}
	done   chan struct{}
	once   sync.Once
}

func newReadingListener(ln net.Listener, n int) *readingListener {
	return &readingListener{Listener: ln, places: make(chan struct{}, max(n, 1)), done: make(chan struct{})}
}

// Accept waits for a place, then for a connection.
func (l *readingListener) Accept() (net.Conn, error) {
	select {
	case l.places <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.places
		return nil, err
	}
	return &readingConn{Conn: c, places: l.places}, nil
}

// Close closes the listener and ends an Accept waiting for a place.
func (l *readingListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// readingConn is a connection holding a reader's place until doneReading
// or Close.
type readingConn struct {
	net.Conn
	places chan struct{}
	once   sync.Once
}

// doneReading gives the connection's place back (once).
func (c *readingConn) doneReading() { c.once.Do(func() { <-c.places }) }

// Close gives the place back and closes the connection.
func (c *readingConn) Close() error {
	c.doneReading()
	return c.Conn.Close()
}

// CloseWrite half-closes a TCP connection (http.Server uses it to let a
// response reach a client before closing).
func (c *readingConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

type readingKey struct{}

// withReadingConn is an http.Server's ConnContext: it lets the handler
// find its connection's place (doneRead).
func withReadingConn(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, readingKey{}, c)
}

// doneRead gives back the place of the connection the request came on,
// once its body has been read.
func doneRead(ctx context.Context) {
	if c, ok := ctx.Value(readingKey{}).(*readingConn); ok {
		c.doneReading()
	}
}
