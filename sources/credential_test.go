package sources

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/loci-dev/loci/fault"
)

// A credential shows its kind wherever it is printed, logged or
// marshalled, alone or inside a value, never its secret; Secret gives it
// to the adapter (a copy).
func TestCredentialNeverShowsItsSecret(t *testing.T) {
	const secret = "hunter2-the-value"
	c := NewCredential("env", []byte(secret))
	run := Run{Options: map[string]string{"k": "v"}, Credential: c}
	type wrapped struct {
		run  Run
		cred Credential
	}
	w := wrapped{run: run, cred: c}
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("run", "credential", c, "run", run)
	slog.New(slog.NewTextHandler(&logged, nil)).Info("run", "credential", c, "run", run)
	j, _ := json.Marshal(run)
	shown := map[string]string{
		"%v": fmt.Sprintf("%v", c), "%s": fmt.Sprintf("%s", c), "%+v": fmt.Sprintf("%+v", run), "%#v": fmt.Sprintf("%#v", run),
		"%x": fmt.Sprintf("%x", c), "%q": fmt.Sprintf("%q", c), "unexported fields": fmt.Sprintf("%+v %#v", w, w),
		"json": string(j), "slog": logged.String(), "String": c.String(),
	}
	for how, s := range shown {
		if strings.Contains(s, secret) || strings.Contains(s, fmt.Sprintf("%x", secret)) {
			t.Errorf("%s shows the secret: %s", how, s)
		}
	}
	if !strings.Contains(shown["%v"], "env") || !strings.Contains(shown["json"], "credential(env)") {
		t.Errorf("the kind is not shown: %v", shown)
	}
	got := c.Secret()
	if string(got) != secret {
		t.Fatalf("Secret: %q", got)
	}
	got[0] = 'X'
	if string(c.Secret()) != secret {
		t.Fatal("Secret hands out the credential's own bytes")
	}
	if !(Credential{}).IsZero() || NewCredential("env", nil).Secret() != nil || c.IsZero() {
		t.Fatal("zero credential")
	}
	if s := c.Scrub("401 for token " + secret + "!"); s != "401 for token [credential]!" {
		t.Fatalf("Scrub: %q", s)
	}
}

// Guard turns a panic in an adapter's code into loci::source::failed
// naming the source, with the value (its secrets redacted) and the stack
// kept on the *Panic it wraps; errors and success pass through.
func TestGuard(t *testing.T) {
	plain := errors.New("plain")
	for _, tc := range []struct {
		name string
		fn   func() error
		code fault.Code
		msg  string
	}{
		{"success", func() error { return nil }, "", ""},
		{"an error", func() error { return plain }, "", "plain"},
		{"a panic", func() error { panic("boom") }, fault.SourceFailed, "the notes source panicked: boom"},
		{"a nil map", func() error { var m map[string]int; m["x"] = 1; return nil }, fault.SourceFailed, "the notes source panicked: assignment to entry in nil map"},
		{"a secret in the panic", func() error { panic("token ghp_" + strings.Repeat("a1B2", 9)) }, fault.SourceFailed, "the notes source panicked: token [REDACTED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Guard("notes", tc.fn)
			switch {
			case tc.msg == "" && err != nil:
				t.Fatalf("%v", err)
			case tc.code == "" && tc.msg != "" && !errors.Is(err, plain):
				t.Fatalf("%v, want the error itself", err)
			case tc.code != "":
				var p *Panic
				if !fault.Is(err, tc.code) || !strings.HasPrefix(fault.As(err).Msg, tc.msg) || !errors.As(err, &p) ||
					p.Source != "notes" || len(p.Stack) == 0 || strings.Contains(err.Error(), "a1B2a1B2") {
					t.Fatalf("%v (%+v)", err, p)
				}
			}
		})
	}
}

// Go runs a goroutine of adapter code on the group: its panic reaches
// failed as Guard's error, and Wait returns.
func TestGoRecoversAGoroutine(t *testing.T) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed []error
	ran := 0
	for i := range 3 {
		Go(&wg, "notes", func() {
			if i == 1 {
				panic("in a goroutine")
			}
			mu.Lock()
			ran++
			mu.Unlock()
		}, func(err error) { mu.Lock(); failed = append(failed, err); mu.Unlock() })
	}
	wg.Wait()
	if ran != 2 || len(failed) != 1 || !fault.Is(failed[0], fault.SourceFailed) || !strings.Contains(failed[0].Error(), "notes source panicked: in a goroutine") {
		t.Fatalf("ran %d, failed %v", ran, failed)
	}
}
