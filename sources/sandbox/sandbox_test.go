package sandbox

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/sources/contract"
)

func TestMinimalModuleAnswers(t *testing.T) {
	rt := newRuntime(t)
	m := compile(t, rt, minimalModule())
	for i := 0; i < 3; i++ { // a fresh instance each time
		a, err := rt.Call(t.Context(), m, "minimal", Grants{}, limits, resolveReq("x", nil))
		if err != nil {
			t.Fatal(err)
		}
		if a.Identity == nil || a.Identity.Locator != "minimal" {
			t.Fatalf("answer %+v", a)
		}
	}
}

func TestCompileChecksTheDigest(t *testing.T) {
	rt := newRuntime(t)
	wasm := minimalModule()
	other := digestOf([]byte("other bytes"))
	_, err := rt.Compile(t.Context(), other, wasm)
	wantFault(t, err, fault.SourceIntegrity, digestOf(wasm), other)
	// Upper-case hex is the same digest.
	if _, err := rt.Compile(t.Context(), strings.ToUpper(digestOf(wasm)), wasm); err != nil {
		t.Fatal(err)
	}
}

func TestCompileOncePerDigest(t *testing.T) {
	rt := newRuntime(t)
	wasm := minimalModule()
	const n = 8
	got := make([]*Module, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			m, err := rt.Compile(context.Background(), digestOf(wasm), wasm)
			if err != nil {
				t.Error(err)
			}
			got[i] = m
		})
	}
	wg.Wait()
	for i := 1; i < n; i++ {
		if got[i] == nil || got[i] != got[0] {
			t.Fatalf("caller %d got module %p, caller 0 %p: compiled more than once", i, got[i], got[0])
		}
	}
	if again := compile(t, rt, wasm); again != got[0] {
		t.Fatal("a later Compile of the same digest compiled again")
	}
	if n := rt.compiles.Load(); n != 1 {
		t.Fatalf("%d compilations of one digest", n)
	}
}

func TestCompileRefusesWhatIsNoCommand(t *testing.T) {
	rt := newRuntime(t)
	for _, tc := range []struct {
		name, want string
		wasm       []byte
	}{
		{"garbage", "not valid WebAssembly", []byte("\x00asm but not really")},
		{"foreign import", "imports env.fd_write", foreignModule()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := rt.Compile(t.Context(), digestOf(tc.wasm), tc.wasm)
			wantFault(t, err, fault.SourceFailed, tc.want)
		})
	}
}

func TestGoGuestAnswersEachCall(t *testing.T) {
	rt, _, m := sharedRuntime(t)
	a, err := rt.Call(t.Context(), m, "echo", Grants{}, limits, resolveReq("/some/where", nil))
	if err != nil {
		t.Fatal(err)
	}
	if a.Identity == nil || a.Identity.Locator != "/some/where" {
		t.Fatalf("resolve answered %+v", a)
	}
	a, err = rt.Call(t.Context(), m, "echo", Grants{}, limits, &contract.Request{Contract: contract.Version, Call: contract.CallDiscover, Options: map[string]string{"b": "1", "a": "2"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Items) != 2 || a.Items[0].ID != "a" || a.Items[1].ID != "b" {
		t.Fatalf("discover answered %+v", a.Items)
	}
	a, err = rt.Call(t.Context(), m, "echo", Grants{}, limits, &contract.Request{Contract: contract.Version, Call: contract.CallRead, Items: a.Items})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Documents) != 2 || a.Documents[1].Document.Units[0] != "text of b" {
		t.Fatalf("read answered %+v", a.Documents)
	}
	// A discover with nothing new is an answer, not a failure.
	a, err = rt.Call(t.Context(), m, "echo", Grants{}, limits, &contract.Request{Contract: contract.Version, Call: contract.CallDiscover})
	if err != nil || len(a.Items) != 0 || a.More {
		t.Fatalf("an empty discover: %+v, %v", a, err)
	}
}

func TestGuestErrorIsAnAnswer(t *testing.T) {
	rt, m := hostile(t)
	a, err := rt.Call(t.Context(), m, "hostile", Grants{}, limits, resolveReq("/x", map[string]string{"do": "guest-error"}))
	if err != nil {
		t.Fatal(err)
	}
	if a.Error == nil || a.Error.Kind != contract.ErrInvalid {
		t.Fatalf("answer %+v", a)
	}
}

func TestConcurrentCallsOnOneModule(t *testing.T) {
	rt, _, m := sharedRuntime(t)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 3 {
				loc := "/g" + string(rune('a'+i)) + string(rune('0'+j))
				a, err := rt.Call(context.Background(), m, "echo", Grants{}, limits, resolveReq(loc, nil))
				if err != nil {
					t.Error(err)
					return
				}
				if a.Identity == nil || a.Identity.Locator != loc {
					t.Errorf("call %s answered %+v", loc, a)
				}
			}
		})
	}
	wg.Wait()
}

func TestClosedRuntimeRefuses(t *testing.T) {
	rt, err := New(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	wasm := minimalModule()
	m := compile(t, rt, wasm)
	if err := rt.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	_, err = rt.Call(t.Context(), m, "minimal", Grants{}, limits, resolveReq("x", nil))
	wantFault(t, err, fault.SourceUnavailable, "closed")
	_, err = rt.Compile(t.Context(), digestOf(wasm), wasm)
	wantFault(t, err, fault.SourceUnavailable, "closed")
	if err := rt.Close(t.Context()); err != nil {
		t.Fatal("a second Close:", err)
	}
}

func TestModuleOfAnotherRuntimeRefused(t *testing.T) {
	a, b := newRuntime(t), newRuntime(t)
	m := compile(t, a, minimalModule())
	_, err := b.Call(t.Context(), m, "minimal", Grants{}, limits, resolveReq("x", nil))
	wantFault(t, err, fault.SourceFailed, "minimal")
}

func TestCallerCancellationIsNotATimeout(t *testing.T) {
	rt, m := hostile(t)
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(300*time.Millisecond, cancel)
	_, err := rt.Call(ctx, m, "hostile", Grants{}, Limits{Timeout: time.Minute}, resolveReq("/x", map[string]string{"do": "loop"}))
	fe := wantFault(t, err, fault.SourceFailed, "stopped")
	if fe.Err != context.Canceled {
		t.Fatalf("cause %v, want context.Canceled", fe.Err)
	}
	stillGood(t, rt, m)
}

func TestCappedWriterNeverHoldsPastItsCap(t *testing.T) {
	stopped := 0
	w := &capped{limit: 1 << 20, stop: func() { stopped++ }}
	chunk := make([]byte, 64<<10)
	written := 0
	for i := 0; i < 20<<4; i++ { // 20 MiB offered
		n, err := w.Write(chunk)
		written += n
		if err != nil {
			break
		}
	}
	if written != 1<<20 || !w.over || stopped != 1 {
		t.Fatalf("kept %d bytes, over %v, stopped %d times", written, w.over, stopped)
	}
	if cap(w.buf) > 1<<20 {
		t.Fatalf("the buffer reserved %d bytes, past the 1 MiB cap", cap(w.buf))
	}
	if _, err := w.Write([]byte("x")); err == nil {
		t.Fatal("a write past the cap was taken")
	}
}

func TestSizeAndSecondsWords(t *testing.T) {
	for n, want := range map[int64]string{16 << 20: "16 MiB", 64 << 10: "64 KiB", 1000: "1000 bytes", 1088 << 10: "1088 KiB"} {
		if got := size(n); got != want {
			t.Errorf("size(%d) = %q, want %q", n, got, want)
		}
	}
	if got := seconds(60 * time.Second); got != "60s" {
		t.Errorf("seconds(60s) = %q", got)
	}
}

func TestLinearMemoryKeepsItsCeiling(t *testing.T) {
	c := &ceiling{limit: 4 << 20, hint: 2 << 20}
	l := c.Allocate(0, 0)
	b := l.Reallocate(64 << 10)
	if len(b) != 64<<10 || cap(b) != 2<<20 {
		t.Fatalf("the first allocation: len %d cap %d, want the hint reserved", len(b), cap(b))
	}
	b[100] = 7
	b = l.Reallocate(3 << 20)
	if len(b) != 3<<20 || cap(b) > 4<<20 || b[100] != 7 {
		t.Fatalf("grown: len %d cap %d, content kept %v", len(b), cap(b), b[100] == 7)
	}
	if l.Reallocate(4<<20+pageBytes) != nil || !c.refused.Load() {
		t.Fatal("a growth past the ceiling was given")
	}
	if c.peak.Load() != 3<<20 {
		t.Fatalf("peak %d", c.peak.Load())
	}
	if b := l.Reallocate(4 << 20); len(b) != 4<<20 || b[100] != 7 {
		t.Fatal("growing to the ceiling exactly failed")
	}
}

func TestCompilationCacheDirectory(t *testing.T) {
	dir := t.TempDir()
	rt, err := NewWith(t.Context(), Options{CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	m := compile(t, rt, minimalModule())
	if a, err := rt.Call(t.Context(), m, "minimal", Grants{}, limits, resolveReq("x", nil)); err != nil || a.Identity.Locator != "minimal" {
		t.Fatalf("%+v %v", a, err)
	}
	if err := rt.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	var files int
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, _ error) error {
		if d != nil && !d.IsDir() {
			files++
		}
		return nil
	})
	if files == 0 {
		t.Fatal("nothing was cached in the directory")
	}

	notDir := filepath.Join(dir, "file")
	if err := os.WriteFile(notDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = NewWith(t.Context(), Options{CacheDir: notDir})
	wantFault(t, err, fault.IOFailed, notDir)
}
