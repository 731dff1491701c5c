package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/sources/contract"
)

// guestDir holds the Go guests built for this test binary.
var guestDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sandbox-guests-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	guestDir = dir
	code := m.Run()
	if shared.rt != nil {
		_ = shared.rt.Close(context.Background())
	}
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

var (
	buildOnce sync.Once
	buildErr  error
)

// guest is the module of the Go guest testdata/guests/name, built once per
// test binary with GOOS=wasip1 GOARCH=wasm (the go build cache makes
// reruns fast).
func guest(t testing.TB, name string) []byte {
	t.Helper()
	buildOnce.Do(func() {
		goBin, err := exec.LookPath("go")
		if err != nil {
			buildErr = err
			return
		}
		entries, err := os.ReadDir(filepath.Join("testdata", "guests"))
		if err != nil {
			buildErr = err
			return
		}
		for _, e := range entries {
			cmd := exec.Command(goBin, "build", "-o", filepath.Join(guestDir, e.Name()+".wasm"), "./"+filepath.Join("testdata", "guests", e.Name()))
			cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("building the guest %s: %v\n%s", e.Name(), err, out)
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	b, err := os.ReadFile(filepath.Join(guestDir, name+".wasm"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func digestOf(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// shared is one runtime for the tests with the Go guests compiled once
// (compiling a Go guest takes seconds under the race detector): every
// test's hostile calls and the good calls after them share it.
var shared struct {
	once          sync.Once
	rt            *Runtime
	hostile, echo *Module
	err           error
}

// sharedRuntime is the shared runtime and its compiled guests.
func sharedRuntime(t testing.TB) (rt *Runtime, hostile, echo *Module) {
	t.Helper()
	h, e := guest(t, "hostile"), guest(t, "echo")
	shared.once.Do(func() {
		ctx := context.Background()
		if shared.rt, shared.err = New(ctx); shared.err != nil {
			return
		}
		if shared.hostile, shared.err = shared.rt.Compile(ctx, digestOf(h), h); shared.err != nil {
			return
		}
		shared.echo, shared.err = shared.rt.Compile(ctx, digestOf(e), e)
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.rt, shared.hostile, shared.echo
}

// newRuntime is a runtime closed at the test's end.
func newRuntime(t testing.TB) *Runtime {
	t.Helper()
	rt, err := New(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	return rt
}

func compile(t testing.TB, rt *Runtime, wasm []byte) *Module {
	t.Helper()
	m, err := rt.Compile(context.Background(), digestOf(wasm), wasm)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// limits are a test call's: generous time, the default cap.
var limits = Limits{Timeout: 30 * time.Second}

func resolveReq(locator string, opts map[string]string) *contract.Request {
	return &contract.Request{Contract: contract.Version, Call: contract.CallResolve, Locator: locator, Options: opts}
}

// probe runs the hostile guest's "do" with options and decodes what it
// reports.
func probe(t *testing.T, rt *Runtime, m *Module, g Grants, opts map[string]string) map[string]any {
	t.Helper()
	a, err := rt.Call(t.Context(), m, "hostile", g, limits, resolveReq("/x", opts))
	if err != nil {
		t.Fatalf("%v", err)
	}
	if a.Identity == nil {
		t.Fatalf("no identity: %+v", a)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(a.Identity.Locator), &got); err != nil {
		t.Fatalf("the guest reported %q: %v", a.Identity.Locator, err)
	}
	return got
}

// wantFault checks err is a *fault.Error of code whose message holds
// every part.
func wantFault(t *testing.T, err error, code fault.Code, parts ...string) *fault.Error {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %s", code)
	}
	fe, ok := err.(*fault.Error)
	if !ok {
		t.Fatalf("error %T %v, want a *fault.Error", err, err)
	}
	if fe.Code != code {
		t.Fatalf("code %s (%s), want %s", fe.Code, fe.Msg, code)
	}
	for _, p := range parts {
		if !strings.Contains(fe.Msg, p) {
			t.Fatalf("message %q lacks %q", fe.Msg, p)
		}
	}
	return fe
}

// stillGood checks a good call on rt works after whatever came before.
func stillGood(t *testing.T, rt *Runtime, m *Module) {
	t.Helper()
	a, err := rt.Call(t.Context(), m, "hostile", Grants{}, limits, resolveReq("/still/good", nil))
	if err != nil {
		t.Fatalf("a good call after: %v", err)
	}
	if a.Identity == nil || a.Identity.Locator != "/still/good" {
		t.Fatalf("a good call after answered %+v", a)
	}
}
