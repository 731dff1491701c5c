package transport

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
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
		// The sleeps here run on synctest's fake clock: synctest.Wait
		// returns once the stream is blocked again, so what was not sent
		// by then is proved absent, without real waiting.
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

// pacedRecorder is a stream's client that takes each flush in pace (a slow
// reader), or, once stuck, takes nothing: a flush then fails when the
// write deadline passes.
type pacedRecorder struct {
	streamRecorder
	pace     time.Duration
	stuck    atomic.Bool
	deadline atomic.Int64 // Unix ns; 0: none
}

func (r *pacedRecorder) SetWriteDeadline(t time.Time) error {
	if t.IsZero() {
		r.deadline.Store(0)
	} else {
		r.deadline.Store(t.UnixNano())
	}
	return nil
}

func (r *pacedRecorder) FlushError() error {
	if r.stuck.Load() {
		d := r.deadline.Load()
		if d == 0 {
			select {} // never taken: the test fails by its own timeout
		}
		// A stuck client: the flush ends when its deadline passes.
		time.Sleep(time.Until(time.Unix(0, d)))
		return os.ErrDeadlineExceeded
	}
	time.Sleep(r.pace) // a slow client: the load, not a wait
	r.streamRecorder.Flush()
	return nil
}

// flood publishes n frames every tick until stop is closed.
func flood(bus *actors.Bus, n int, tick time.Duration, stop <-chan struct{}) {
	f := actors.Event{Kind: "drawer", Action: "created", ID: "x"}.Frame()
	for {
		select {
		case <-stop:
			return
		case <-time.After(tick):
		}
		for range n {
			bus.Publish(f)
		}
	}
}

// streamOn runs the events handler of a server with a stall bound of one
// second on w, and returns a channel closed when it returns.
func streamOn(t *testing.T, bus *actors.Bus, w http.ResponseWriter, log *slog.Logger) <-chan struct{} {
	t.Helper()
	s := &Server{Events: bus, Log: log, StreamStall: time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.events(w, httptest.NewRequest(http.MethodGet, "/api/events", nil))
	}()
	return done
}

// A client that reads, but slower than the events come (each flush takes
// it 200 ms while 2,000 frames a second are published), stays behind:
// after the stall bound the stream sends a last dropped frame, ends, and
// the bus forgets it.
func TestSlowSubscriberDroppedWithAFrame(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bus := actors.NewBus(emptyLog{}, slog.New(slog.DiscardHandler))
		if err := bus.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer bus.Close()
		var logged strings.Builder
		w := &pacedRecorder{streamRecorder: streamRecorder{header: http.Header{}}, pace: 200 * time.Millisecond}
		done := streamOn(t, bus, w, slog.New(slog.NewTextHandler(&syncWriter{b: &logged}, nil)))
		stop := make(chan struct{})
		defer close(stop)
		go flood(bus, 20, 10*time.Millisecond, stop)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("a subscriber behind for 5 s was not dropped (bound: 1 s)")
		}
		got := w.sent()
		if last := got[len(got)-1]; !strings.HasSuffix(last, string(droppedFrame)) {
			t.Fatalf("the last flush is not the dropped frame: %q", last)
		}
		if !strings.Contains(strings.Join(got, ""), string(resyncFrame)) {
			t.Fatal("a subscriber that missed events was not sent resync")
		}
		if n := bus.Subscribers(); n != 0 {
			t.Fatalf("%d subscribers after the drop", n)
		}
		if !strings.Contains(logged.String(), "dropped an event stream that stayed behind") {
			t.Fatalf("the drop is not logged: %s", logged.String())
		}
	})
}

// A client that takes nothing fails its write at the stall bound: the
// stream ends (no frame can reach it) and the bus forgets it.
func TestStuckSubscriberDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bus := actors.NewBus(emptyLog{}, slog.New(slog.DiscardHandler))
		if err := bus.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer bus.Close()
		var logged strings.Builder
		w := &pacedRecorder{streamRecorder: streamRecorder{header: http.Header{}}}
		done := streamOn(t, bus, w, slog.New(slog.NewTextHandler(&syncWriter{b: &logged}, nil)))
		synctest.Wait()
		w.stuck.Store(true)
		began := time.Now()
		bus.Publish(actors.Event{Kind: "drawer", Action: "created", ID: "x"}.Frame())
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("a subscriber that takes nothing was not dropped in 5 s (bound: 1 s)")
		}
		if took := time.Since(began); took < time.Second || took > time.Second+2*flushDelay {
			t.Fatalf("dropped after %s, want the stall bound (1 s)", took)
		}
		if n := bus.Subscribers(); n != 0 {
			t.Fatalf("%d subscribers after the drop", n)
		}
		if !strings.Contains(logged.String(), "its client took nothing for 1s") {
			t.Fatalf("the drop is not logged with its reason: %s", logged.String())
		}
	})
}

// A client that takes every flush at once is never dropped, even when the
// events come faster than a batch holds (it misses some and is sent
// resync, as before).
func TestFastSubscriberNotDroppedUnderABurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bus := actors.NewBus(emptyLog{}, slog.New(slog.DiscardHandler))
		if err := bus.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		w := &pacedRecorder{streamRecorder: streamRecorder{header: http.Header{}}}
		done := streamOn(t, bus, w, slog.New(slog.DiscardHandler))
		stop := make(chan struct{})
		go flood(bus, 100, 10*time.Millisecond, stop)
		select {
		case <-done:
			t.Fatal("a subscriber that reads at once was dropped")
		case <-time.After(5 * time.Second):
		}
		close(stop)
		if !strings.Contains(strings.Join(w.sent(), ""), string(resyncFrame)) {
			t.Fatal("10,000 frames a second did not overflow the queue: the test proves nothing")
		}
		bus.Close()
		<-done
	})
}

// The bus refuses a subscriber past Max and takes one again once another
// leaves; the handler answers the refusal 503 loci::server::busy with
// Retry-After.
func TestSubscriberCap(t *testing.T) {
	bus := actors.NewBus(emptyLog{}, slog.New(slog.DiscardHandler))
	bus.Max = 2
	if err := bus.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	a, err1 := bus.Subscribe()
	_, err2 := bus.Subscribe()
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if _, err := bus.Subscribe(); !errors.Is(err, actors.ErrBusFull) {
		t.Fatalf("a third subscriber of two: %v", err)
	}
	s := &Server{Events: bus, Log: slog.New(slog.DiscardHandler)}
	rec := httptest.NewRecorder()
	s.h(s.events)(rec, httptest.NewRequest(http.MethodGet, "/api/events", nil))
	if rec.Code != 503 || !strings.Contains(rec.Body.String(), "loci::server::busy") || rec.Header().Get("Retry-After") == "" ||
		!strings.Contains(rec.Body.String(), "server.max_subscribers") {
		t.Fatalf("past the cap: %d %v %s", rec.Code, rec.Header(), rec.Body.String())
	}
	bus.Unsubscribe(a)
	if _, err := bus.Subscribe(); err != nil {
		t.Fatalf("after one left: %v", err)
	}
	bus.Close()
	if _, err := bus.Subscribe(); !errors.Is(err, actors.ErrBusClosed) {
		t.Fatalf("after the close: %v", err)
	}
}

// syncWriter serialises writes to a builder (a log read by the test).
type syncWriter struct {
	mu sync.Mutex
	b  *strings.Builder
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// An MCP stream's writer fails a write its client does not take within
// the stall bound, and says so once (the guard then ends the request).
func TestStallWriterFailsAtTheBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &pacedRecorder{streamRecorder: streamRecorder{header: http.Header{}}}
		var fails []error
		sw := &stallWriter{ResponseWriter: w, rc: http.NewResponseController(w), stall: time.Second,
			fail: func(err error) { fails = append(fails, err) }}
		if _, err := sw.Write([]byte("event: message\n\n")); err != nil {
			t.Fatal(err)
		}
		if err := sw.FlushError(); err != nil || len(fails) != 0 {
			t.Fatalf("a flush the client takes: %v %v", err, fails)
		}
		w.stuck.Store(true)
		began := time.Now()
		sw.Flush()
		if took := time.Since(began); took != time.Second {
			t.Fatalf("a flush the client does not take failed after %s, want 1s", took)
		}
		_ = sw.FlushError()
		if len(fails) != 1 || !errors.Is(fails[0], os.ErrDeadlineExceeded) {
			t.Fatalf("fail called with %v, want once with the deadline", fails)
		}
	})
}
