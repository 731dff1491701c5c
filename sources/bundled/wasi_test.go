package bundled

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/loci-dev/loci/sources/contract"
)

// wasi runs the embedded modules as WASI commands under wazero directly
// (the sandbox's job in the daemon, here only to show the committed
// modules work where they will run): the locator mounted read-only at
// its own path (cleaned: wazero mounts a path as spelled), the request
// on standard input.
type wasi struct {
	r       wazero.Runtime
	modules map[string]wazero.CompiledModule
}

func newWASI(t testing.TB) *wasi {
	t.Helper()
	ctx := t.Context()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCloseOnContextDone(true))
	t.Cleanup(func() { r.Close(context.Background()) })
	wasi_snapshot_preview1.MustInstantiate(ctx, r)
	ps, err := Packages()
	if err != nil {
		t.Fatal(err)
	}
	w := &wasi{r: r, modules: map[string]wazero.CompiledModule{}}
	for _, p := range ps {
		m, err := r.CompileModule(ctx, p.Module)
		if err != nil {
			t.Fatalf("compiling %s: %v", p.Manifest.Name, err)
		}
		w.modules[p.Manifest.Name] = m
	}
	return w
}

// call runs one request, its needs run natively (git, the one program
// the git-history manifest names), round after round.
func (w *wasi) call(t testing.TB, name string, req contract.Request) *contract.Answer {
	t.Helper()
	req.Contract = contract.Version
	for range 32 {
		in, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		var stdout, stderr bytes.Buffer
		cfg := wazero.NewModuleConfig().WithStdin(bytes.NewReader(in)).WithStdout(&stdout).WithStderr(&stderr).WithName("").
			WithFSConfig(wazero.NewFSConfig().WithReadOnlyDirMount(filepath.Clean(req.Locator), filepath.Clean(req.Locator)))
		mod, err := w.r.InstantiateModule(t.Context(), w.modules[name], cfg)
		var exit *sys.ExitError
		if err != nil && (!errors.As(err, &exit) || exit.ExitCode() != 0) {
			t.Fatalf("%s: %v\n%s", name, err, stderr.Bytes())
		}
		if mod != nil {
			mod.Close(t.Context())
		}
		var a contract.Answer
		if err := json.Unmarshal(stdout.Bytes(), &a); err != nil {
			t.Fatalf("%s answered %q: %v", name, stdout.Bytes(), err)
		}
		if len(a.Needs) == 0 {
			return &a
		}
		req.Results, req.State = nil, a.State
		for _, n := range a.Needs {
			if n.Kind != contract.NeedRun || n.Program != "git" {
				t.Fatalf("%s asked for %+v", name, n)
			}
			cmd := exec.Command("git", n.Args...)
			cmd.Dir = req.Locator
			if n.Dir != "" {
				cmd.Dir = n.Dir
			}
			var o, e bytes.Buffer
			cmd.Stdout, cmd.Stderr = &o, &e
			r := contract.Result{}
			if err := cmd.Run(); err != nil {
				var x *exec.ExitError
				if !errors.As(err, &x) {
					t.Fatal(err)
				}
				r.Exit = x.ExitCode()
			}
			r.Stdout, r.Stderr = o.Bytes(), e.Bytes()
			req.Results = append(req.Results, r)
		}
	}
	t.Fatalf("%s asked for too many rounds", name)
	return nil
}

// The directory module under WASI: resolve, discovery in pages with the
// change-time order, reads of many files, filters.
func TestDirectoryModuleUnderWASI(t *testing.T) {
	w := newWASI(t)
	root := t.TempDir()
	for i := range 30 {
		p := filepath.Join(root, fmt.Sprintf("d%d", i%3), fmt.Sprintf("naïve %02d.md", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(fmt.Sprintf("note %d\r\n", i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, body := range map[string]string{"bin.dat": "a\x00b", "empty": "", ".git/HEAD": "ref"} {
		os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755)
		if err := os.WriteFile(filepath.Join(root, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	a := w.call(t, "directory-wasm", contract.Request{Call: contract.CallResolve, Locator: root + "/d0/.."})
	if a.Error != nil || a.Identity.Locator != root {
		t.Fatalf("resolve: %+v %+v", a.Error, a.Identity)
	}
	var items []contract.Item
	var cur json.RawMessage
	for {
		a := w.call(t, "directory-wasm", contract.Request{Call: contract.CallDiscover, Locator: root, Cursor: cur, Limit: 7})
		if a.Error != nil || len(a.Items) > 7 {
			t.Fatalf("discover: %+v", a)
		}
		items = append(items, a.Items...)
		if !a.More {
			break
		}
		cur = a.Items[len(a.Items)-1].Cursor
	}
	if len(items) != 32 {
		t.Fatalf("%d items, want 30 notes, bin.dat and empty", len(items))
	}
	// The cursor's change times are the host's (inode change time or later).
	for _, it := range items {
		var c struct {
			CTime int64 `json:"ctime_ns"`
		}
		json.Unmarshal(it.Cursor, &c)
		info, err := os.Stat(filepath.Join(root, it.ID))
		if err != nil {
			t.Fatal(err)
		}
		if c.CTime < info.ModTime().UnixNano() {
			t.Errorf("%s: change time %d before its modification time %d", it.ID, c.CTime, info.ModTime().UnixNano())
		}
		if it.ID == "empty" && it.Filtered != "empty" {
			t.Errorf("empty: filtered %q", it.Filtered)
		}
	}
	a = w.call(t, "directory-wasm", contract.Request{Call: contract.CallRead, Locator: root, Items: items})
	if a.Error != nil || len(a.Documents) != len(items) {
		t.Fatalf("read: %+v", a.Error)
	}
	for i, r := range a.Documents {
		switch r.ID {
		case "bin.dat":
			if r.Error == nil || r.Error.Message != "binary" {
				t.Errorf("bin.dat: %+v", r.Error)
			}
		case "empty":
		default:
			if r.Error != nil || !strings.HasPrefix(r.Document.Units[0], "note ") || strings.Contains(r.Document.Units[0], "\r") || r.ID != items[i].ID {
				t.Errorf("%s: %+v %+v", r.ID, r.Error, r.Document)
			}
		}
	}
	// Outside the mount there is nothing.
	a = w.call(t, "directory-wasm", contract.Request{Call: contract.CallRead, Locator: root, Items: []contract.Item{{ID: "../../etc/hostname"}}})
	if a.Error != nil || a.Documents[0].Error == nil || a.Documents[0].Error.Kind != contract.ErrNotFound {
		t.Fatalf("a path outside: %+v", a)
	}
}

// The git-history module under WASI, git run natively for it.
func TestGitHistoryModuleUnderWASI(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	w := newWASI(t)
	repo := t.TempDir()
	run := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=Ada", "GIT_AUTHOR_EMAIL=ada@example.com", "GIT_COMMITTER_NAME=Ada", "GIT_COMMITTER_EMAIL=ada@example.com")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	run("init", "-q")
	for i := range 5 {
		os.WriteFile(filepath.Join(repo, fmt.Sprintf("f%d.go", i)), []byte("package x"), 0o644)
		run("add", ".")
		run("commit", "-q", "-m", fmt.Sprintf("change %d\n\nbecause the lease timeout was %d seconds", i, i*10))
	}
	a := w.call(t, "git-history", contract.Request{Call: contract.CallResolve, Locator: repo})
	top, _ := filepath.EvalSymlinks(repo)
	if a.Error != nil || a.Identity.Locator != top {
		t.Fatalf("resolve: %+v %+v", a.Error, a.Identity)
	}
	a = w.call(t, "git-history", contract.Request{Call: contract.CallDiscover, Locator: repo, Limit: 3})
	if a.Error != nil || len(a.Items) != 3 || !a.More {
		t.Fatalf("discover: %+v", a)
	}
	a = w.call(t, "git-history", contract.Request{Call: contract.CallDiscover, Locator: repo, Limit: 3, Cursor: a.Items[2].Cursor})
	if a.Error != nil || len(a.Items) != 2 || a.More {
		t.Fatalf("the second page: %+v", a)
	}
	last := a.Items[1].Document
	if !strings.Contains(last.Units[0], "because the lease timeout was 40 seconds") || !strings.Contains(last.Units[0], "Changed: f4.go") {
		t.Fatalf("the last commit's text: %q", last.Units)
	}
	ids := []string{a.Items[0].ID, a.Items[1].ID}
	r := w.call(t, "git-history", contract.Request{Call: contract.CallRead, Locator: repo, Items: a.Items})
	if r.Error != nil || !slices.Equal([]string{r.Documents[0].ID, r.Documents[1].ID}, ids) || r.Documents[1].Document.Units[0] != last.Units[0] {
		t.Fatalf("read: %+v", r)
	}
}
