package transport

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/loci-dev/loci/actors"
	"github.com/loci-dev/loci/store"
)

// emptyLog is a store whose change log is empty: enough for a bus.
type emptyLog struct{ store.DB }

func (emptyLog) View(_ context.Context, fn func(store.Reader) error) error { return fn(emptyReader{}) }

type emptyReader struct{ store.Reader }

func (emptyReader) LastSeq() (uint64, error)                      { return 0, nil }
func (emptyReader) Changes(uint64, func(store.Change) bool) error { return nil }

// streamRecorder is a ResponseWriter that records what each flush sent.
type streamRecorder struct {
	mu      sync.Mutex
	header  http.Header
	pending strings.Builder
	flushes []string
}

func (r *streamRecorder) Header() http.Header { return r.header }
func (r *streamRecorder) WriteHeader(int)     {}
func (r *streamRecorder) Write(b []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pending.Write(b)
}
func (r *streamRecorder) Flush() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.flushes = append(r.flushes, r.pending.String())
	r.pending.Reset()
}
func (r *streamRecorder) sent() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.flushes...)
}

// An event stream, on the bubble's clock: the open frame at once, a
// comment line every KeepAlive and nothing else while idle, a burst of
// frames within flushDelay in one flush, and the end when the bus closes.
func TestStreamKeepAliveAndBurstsOnTheClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bus := actors.NewBus(emptyLog{}, slog.New(slog.DiscardHandler))
		if err := bus.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		s := &Server{Events: bus}
		w := &streamRecorder{header: http.Header{}}
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = s.events(w, httptest.NewRequest(http.MethodGet, "/api/events", nil))
		}()
		synctest.Wait()
		if got := w.sent(); len(got) != 1 || got[0] != string(openFrame) {
			t.Fatalf("at the start: %q", got)
		}
		time.Sleep(3*KeepAlive + KeepAlive/2)
		synctest.Wait()
		got := w.sent()
		if len(got) != 4 || got[1] != ": keep-alive\n\n" || got[3] != ": keep-alive\n\n" {
			t.Fatalf("after 3.5 keep-alive intervals: %q", got)
		}
		frame := func(id string) []byte { return actors.Event{Kind: "drawer", Action: "created", ID: id}.Frame() }
		bus.Publish(frame("a"))
		time.Sleep(flushDelay / 5)
		bus.Publish(frame("b"))
		time.Sleep(flushDelay / 5)
		bus.Publish(frame("c"))
		synctest.Wait()
		if n := len(w.sent()); n != 4 {
			t.Fatalf("flushed before the burst's pause ended: %q", w.sent()[4:])
		}
		time.Sleep(flushDelay)
		synctest.Wait()
		got = w.sent()
		if len(got) != 5 || got[4] != string(frame("a"))+string(frame("b"))+string(frame("c")) {
			t.Fatalf("a burst of three frames: %q", got[4:])
		}
		bus.Close()
		synctest.Wait()
		select {
		case <-done:
		default:
			t.Fatal("the stream did not end when the bus closed")
		}
	})
}
