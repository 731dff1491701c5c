package transport

import (
	"errors"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/loci-dev/loci/actors"
	"github.com/loci-dev/loci/fault"
)

// KeepAlive is the interval of the stream's comment lines.
var KeepAlive = 15 * time.Second

// flushDelay gathers the frames of a burst into one write: a subscriber
// is flushed at most this often while frames keep coming.
const flushDelay = 50 * time.Millisecond

// StreamStall is how long an event or MCP stream may stay behind before
// it is dropped (server.slow_subscriber_secs; Server.StreamStall
// overrides it).
const StreamStall = 30 * time.Second

// busyRetry is the Retry-After of a refused stream, in seconds.
const busyRetry = 5

var (
	openFrame    = actors.Event{Kind: "open", Action: "created"}.Frame()
	resyncFrame  = actors.Event{Kind: "resync", Action: "updated"}.Frame()
	droppedFrame = actors.Event{Kind: "dropped", Action: "deleted", Status: "behind"}.Frame()
)

func (s *Server) streamStall() time.Duration {
	if s.StreamStall > 0 {
		return s.StreamStall
	}
	return StreamStall
}

// events streams change notices as server-sent events until the client
// leaves, falls behind for good, or the daemon stops.
//
// A stream is behind when a batch of frames took its client longer than
// flushDelay to take and the bounded queue overflowed meanwhile (the
// client is slower than the events: it is sent resync). One that stays
// behind for the stall bound is sent a last frame, dropped, and ends; one
// whose client takes nothing at all fails its write at the same bound and
// is closed (no frame can reach it). Either way its queue, goroutine and
// connection are freed.
func (s *Server) events(w http.ResponseWriter, r *http.Request) error {
	if _, ok := w.(http.Flusher); !ok || s.Events == nil {
		return fault.New(fault.ServerFailed, "this server cannot stream events", "report it")
	}
	sub, err := s.Events.Subscribe()
	switch {
	case errors.Is(err, actors.ErrBusFull):
		w.Header().Set("Retry-After", strconv.Itoa(busyRetry))
		s.warnBusy()
		return fault.Newf(fault.ServerBusy,
			"close event streams no longer read (each dashboard tab and `loci events` holds one) or raise server.max_subscribers; try again in a few seconds",
			"%d event streams are open, the most this daemon keeps (server.max_subscribers)", s.Events.Max)
	case err != nil:
		return fault.New(fault.ServerFailed, "the daemon is stopping", "reconnect once it runs again")
	}
	defer s.Events.Unsubscribe(sub)
	// A stream opened with a token ends when that token is revoked or
	// rotated: it authenticated once, at its start.
	ctx, cancel := s.endOnRevoke(r)
	defer cancel()
	boundSendBuffer(r)
	stall := s.streamStall()
	rc := http.NewResponseController(w)
	// Every write must be taken within the stall bound; the deadline is
	// lifted at the end for the connection's next request.
	defer func() { _ = rc.SetWriteDeadline(time.Time{}) }()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	_ = rc.SetWriteDeadline(time.Now().Add(stall))
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write(openFrame); err != nil {
		return nil
	}
	if rc.Flush() != nil {
		return nil
	}
	// dropped logs why the stream ends, when a write failed on its
	// deadline (its client takes nothing).
	dropped := func(err error) error {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			s.Log.Warn("dropped an event stream that stayed behind", "client", r.RemoteAddr,
				"reason", "its client took nothing for "+stall.String())
		}
		return nil
	}
	keep := time.NewTicker(KeepAlive)
	defer keep.Stop()
	var behind time.Time // since when the stream has stayed behind
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-sub.Done:
			return nil
		case <-keep.C:
			_ = rc.SetWriteDeadline(time.Now().Add(stall))
			if _, err := w.Write([]byte(": keep-alive\n\n")); err != nil {
				return dropped(err)
			}
			if err := rc.Flush(); err != nil {
				return dropped(err)
			}
		case f := <-sub.C:
			began := time.Now()
			_ = rc.SetWriteDeadline(began.Add(stall))
			if _, err := w.Write(f); err != nil {
				return dropped(err)
			}
			// Whatever else arrives within flushDelay goes out in the
			// same flush: the subscriber sleeps instead of waking for
			// every frame (1,000 subscribers at 1,000 frames a second).
			pause := time.NewTimer(flushDelay)
			select {
			case <-pause.C:
			case <-ctx.Done():
				pause.Stop()
				return nil
			case <-sub.Done:
				pause.Stop()
			}
			writing := time.Now()
		drain:
			for {
				select {
				case f := <-sub.C:
					if _, err := w.Write(f); err != nil {
						return dropped(err)
					}
				default:
					break drain
				}
			}
			missed := sub.Missed.Swap(false)
			if missed {
				if _, err := w.Write(resyncFrame); err != nil {
					return dropped(err)
				}
			}
			if err := rc.Flush(); err != nil {
				return dropped(err)
			}
			// Behind: the client took this batch slower than the events
			// came and missed some.
			now := time.Now()
			switch slow := now.Sub(writing) > flushDelay || writing.Sub(began) > 2*flushDelay; {
			case !missed || !slow:
				behind = time.Time{}
			case behind.IsZero():
				behind = now
			case now.Sub(behind) >= stall:
				s.Log.Warn("dropped an event stream that stayed behind", "client", r.RemoteAddr,
					"reason", "it missed events for "+stall.String())
				_ = rc.SetWriteDeadline(now.Add(time.Second))
				if _, err := w.Write(droppedFrame); err == nil {
					_ = rc.Flush()
				}
				return nil
			}
		}
	}
}

// warnBusy logs a refused stream at most once a minute.
func (s *Server) warnBusy() {
	now := time.Now().UnixNano()
	last := s.busyWarned.Load()
	if now-last < int64(time.Minute) || !s.busyWarned.CompareAndSwap(last, now) {
		return
	}
	s.Log.Warn("refused an event stream: server.max_subscribers are open", "max_subscribers", s.Events.Max)
}
