package transport

import (
	"context"
	"net"
	"testing"
	"time"
)

// The bound on connections still reading: with every place taken Accept
// waits; a connection done reading (doneRead through its request's
// context) or closed gives its place to the next; Close ends a waiting
// Accept.
func TestReadingListenerBoundsReaders(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := newReadingListener(inner, 2)
	accepted := make(chan net.Conn, 10)
	acceptErr := make(chan error, 1)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				acceptErr <- err
				return
			}
			accepted <- c
		}
	}()
	for range 4 {
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	// next(false) shows an absence, which only waiting can: the four
	// connections are dialled (in the backlog), so an Accept that ignored
	// the readers' places would return at once; 300ms is ample.
	next := func(want bool) net.Conn {
		t.Helper()
		select {
		case c := <-accepted:
			if !want {
				t.Fatal("a connection was accepted with every reader's place taken")
			}
			return c
		case <-time.After(300 * time.Millisecond):
			if want {
				t.Fatal("no connection accepted with a reader's place free")
			}
			return nil
		}
	}
	first, second := next(true), next(true)
	next(false)
	doneRead(withReadingConn(context.Background(), first)) // its body read
	doneRead(withReadingConn(context.Background(), first)) // twice gives back one place
	third := next(true)
	next(false)
	second.Close()
	second.Close()
	fourth := next(true)
	next(false)
	first.Close() // done reading already: no place to give back
	next(false)
	defer third.Close()
	defer fourth.Close()
	// Both places taken: Accept waits for one, and Close ends the wait.
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-acceptErr:
		if err == nil {
			t.Fatal("Accept after Close: no error")
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Accept still waiting after Close")
	}
}
