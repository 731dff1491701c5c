package dbadmin

import (
	"net"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// maxRefusalAddrs bounds the addresses the refusal log remembers; past it
// those whose interval ended are forgotten, and if none has, the log
// starts over.
const maxRefusalAddrs = 4096

// refusalLog limits the warnings of connections closed after refused
// sign-ins to one per client address per interval.
type refusalLog struct {
	mu    sync.Mutex
	addrs map[string]*refusalCount
}

// refusalCount is what an address did since its last warning.
type refusalCount struct {
	last         time.Time
	refused, con int
}

// Kinds of refusal the log limits.
const (
	// refusedConn is a connection closed after refused sign-ins.
	refusedConn = "database admin connections closed after refused sign-ins"
	// refusedBearer is an upgrade refused for its Authorization header.
	refusedBearer = "database admin sign-ins refused: bearer on the upgrade"
)

// refusedLog records refused sign-ins (kind: refusedConn or
// refusedBearer) on one connection from remote and warns once per kind,
// address and interval, carrying the refusals and connections since the
// last such warning.
func (a *Admin) refusedLog(kind, remote string, refused int) {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	key := kind + "\x00" + host
	r := &a.refusals
	now := time.Now()
	r.mu.Lock()
	if r.addrs == nil {
		r.addrs = map[string]*refusalCount{}
	}
	n := r.addrs[key]
	if n == nil {
		if len(r.addrs) >= maxRefusalAddrs {
			for h, o := range r.addrs {
				if now.Sub(o.last) >= a.refusalLogEvery {
					delete(r.addrs, h)
				}
			}
			if len(r.addrs) >= maxRefusalAddrs {
				clear(r.addrs)
			}
		}
		n = &refusalCount{}
		r.addrs[key] = n
	}
	n.refused += refused
	n.con++
	if !n.last.IsZero() && now.Sub(n.last) < a.refusalLogEvery {
		r.mu.Unlock()
		return
	}
	refusedN, conns := n.refused, n.con
	n.last, n.refused, n.con = now, 0, 0
	r.mu.Unlock()
	a.log.Warn(kind, "remote", host,
		"refused", refusedN, "connections", conns, "every", a.refusalLogEvery.String())
}

// busy marks the connection's request as being served (true) or done
// (false, the idle clock starts again).
func (c *conn) busy(on bool) bool {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	if c.idled {
		return false
	}
	c.serving = on
	c.active = time.Now()
	return true
}

// watchIdle closes the connection with status 1001 once it held a
// signed-in slot and went idle long with no request being served, until
// stop is closed.
func (c *conn) watchIdle(stop <-chan struct{}) {
	a := c.l.admin
	t := time.NewTimer(a.idle)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		c.l.mu.Lock()
		wait := a.idle - time.Since(c.active)
		if c.serving || !c.promoted {
			wait = a.idle
		} else if wait <= 0 {
			c.idled = true
		}
		c.l.mu.Unlock()
		if c.idled {
			a.log.Info("database admin connection closed: idle", "remote", c.remote, "idle", a.idle.String())
			_ = c.ws.Close(websocket.StatusGoingAway, "idle for "+a.idle.String()+" with no request: connect again (a running query keeps it open)")
			return
		}
		t.Reset(wait)
	}
}
