package transport

import (
	"net/http"
	"time"

	"github.com/loci-dev/loci/actors"
	"github.com/loci-dev/loci/store/fault"
)

// KeepAlive is the interval of the stream's comment lines.
var KeepAlive = 15 * time.Second

// flushDelay gathers the frames of a burst into one write: a subscriber
// is flushed at most this often while frames keep coming.
const flushDelay = 50 * time.Millisecond

var (
	openFrame   = actors.Event{Kind: "open", Action: "created"}.Frame()
	resyncFrame = actors.Event{Kind: "resync", Action: "updated"}.Frame()
)

// events streams change notices as server-sent events until the client
// leaves or the daemon stops.
func (s *Server) events(w http.ResponseWriter, r *http.Request) error {
	fl, ok := w.(http.Flusher)
	if !ok || s.Events == nil {
		return fault.New(fault.ServerFailed, "this server cannot stream events", "report it")
	}
	sub := s.Events.Subscribe()
	if sub == nil {
		return fault.New(fault.ServerFailed, "the daemon is stopping", "reconnect once it runs again")
	}
	defer s.Events.Unsubscribe(sub)
	// A stream opened with a token ends when that token is revoked or
	// rotated: it authenticated once, at its start.
	ctx, cancel := s.endOnRevoke(r)
	defer cancel()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write(openFrame); err != nil {
		return nil
	}
	fl.Flush()
	keep := time.NewTicker(KeepAlive)
	defer keep.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-sub.Done:
			return nil
		case <-keep.C:
			if _, err := w.Write([]byte(": keep-alive\n\n")); err != nil {
				return nil
			}
			fl.Flush()
		case f := <-sub.C:
			if _, err := w.Write(f); err != nil {
				return nil
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
		drain:
			for {
				select {
				case f := <-sub.C:
					if _, err := w.Write(f); err != nil {
						return nil
					}
				default:
					break drain
				}
			}
			if sub.Missed.Swap(false) {
				if _, err := w.Write(resyncFrame); err != nil {
					return nil
				}
			}
			fl.Flush()
		}
	}
}
