package sandbox

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/sources/contract"
)

// hostile is the hostile guest on the shared runtime.
func hostile(t *testing.T) (*Runtime, *Module) {
	t.Helper()
	rt, m, _ := sharedRuntime(t)
	return rt, m
}

func TestFilesOnlyTheGrantedDirsReadOnly(t *testing.T) {
	rt, m := hostile(t)
	granted, outside := t.TempDir(), t.TempDir()
	const secret = "host-secret-7f3a9c"
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(granted, "note.txt"), []byte("granted text"), 0o600); err != nil {
		t.Fatal(err)
	}
	g := Grants{Dirs: []string{granted}}

	t.Run("outside its dirs", func(t *testing.T) {
		for _, path := range []string{filepath.Join(outside, "secret.txt"), "/etc/passwd", filepath.Join(granted, "..", filepath.Base(outside), "secret.txt")} {
			got := probe(t, rt, m, g, map[string]string{"do": "readfile", "path": path})
			if got["error"] == "" || got["content"] != "" {
				t.Fatalf("reading %s: %v", path, got)
			}
			b, _ := json.Marshal(got)
			if strings.Contains(string(b), secret) {
				t.Fatalf("the host file's content came back: %s", b)
			}
		}
		got := probe(t, rt, m, g, map[string]string{"do": "listdir", "path": "/"})
		if names, _ := got["names"].([]any); slices.Contains(names, any("etc")) {
			t.Fatalf("the guest lists the host's root: %v", names)
		}
	})
	t.Run("no dirs at all", func(t *testing.T) {
		got := probe(t, rt, m, Grants{}, map[string]string{"do": "readfile", "path": filepath.Join(granted, "note.txt")})
		if got["error"] == "" || got["content"] != "" {
			t.Fatalf("read without a grant: %v", got)
		}
	})
	t.Run("a granted dir is readable", func(t *testing.T) {
		got := probe(t, rt, m, g, map[string]string{"do": "readfile", "path": filepath.Join(granted, "note.txt")})
		if got["content"] != "granted text" || got["error"] != "" {
			t.Fatalf("reading the granted file: %v", got)
		}
		got = probe(t, rt, m, g, map[string]string{"do": "listdir", "path": granted})
		if names, _ := got["names"].([]any); !slices.Equal(names, []any{"note.txt"}) {
			t.Fatalf("listing the granted dir: %v", got)
		}
	})
	t.Run("and read-only", func(t *testing.T) {
		for _, path := range []string{filepath.Join(granted, "new.txt"), filepath.Join(granted, "note.txt")} {
			got := probe(t, rt, m, g, map[string]string{"do": "writefile", "path": path})
			if got["error"] == "" {
				t.Fatalf("writing %s worked", path)
			}
		}
		if _, err := os.Stat(filepath.Join(granted, "new.txt")); !os.IsNotExist(err) {
			t.Fatalf("the guest created a file: %v", err)
		}
		if b, _ := os.ReadFile(filepath.Join(granted, "note.txt")); string(b) != "granted text" {
			t.Fatalf("the guest changed a file: %q", b)
		}
	})
	stillGood(t, rt, m)
}

func TestEnvOnlyTheGranted(t *testing.T) {
	rt, m := hostile(t)
	t.Setenv("LOCI_SANDBOX_HOST_ONLY", "host-value")
	g := Grants{Env: map[string]string{"TOKEN": "granted-token"}}
	got := probe(t, rt, m, g, map[string]string{"do": "env", "name": "LOCI_SANDBOX_HOST_ONLY"})
	if got["value"] != "" {
		t.Fatalf("the guest read a variable not granted: %v", got)
	}
	if env, _ := got["environ"].([]any); !slices.Equal(env, []any{"TOKEN=granted-token"}) {
		t.Fatalf("the guest's environment is %v, want only TOKEN", got["environ"])
	}
	if args, _ := got["args"].([]any); !slices.Equal(args, []any{"hostile"}) {
		t.Fatalf("the guest's args are %v, want only its name", got["args"])
	}
	got = probe(t, rt, m, g, map[string]string{"do": "env", "name": "TOKEN"})
	if got["value"] != "granted-token" {
		t.Fatalf("the granted variable: %v", got)
	}
}

func TestClocksAreReal(t *testing.T) {
	rt, m := hostile(t)
	got := probe(t, rt, m, Grants{}, map[string]string{"do": "clock"})
	now, err := time.Parse(time.RFC3339Nano, got["now"].(string))
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(now); d < -time.Minute || d > time.Minute {
		t.Fatalf("the guest's clock says %v", now)
	}
}

// results decodes the Results the hostile guest got back for its Need.
func results(t *testing.T, got map[string]any) []contract.Result {
	t.Helper()
	b, _ := json.Marshal(got["results"])
	var rs []contract.Result
	if err := json.Unmarshal(b, &rs); err != nil || len(rs) != 1 {
		t.Fatalf("results %s: %v", b, err)
	}
	if got["state"] != `{"round":1}` {
		t.Fatalf("the state came back as %v", got["state"])
	}
	return rs
}

func TestRunOnlyGrantedPrograms(t *testing.T) {
	rt, m := hostile(t)
	dir := t.TempDir()
	g := Grants{Dirs: []string{dir}, Programs: []string{"echo", "env", "pwd", "yes", "true"}, Env: map[string]string{"TOKEN": "granted-token"}}
	t.Setenv("LOCI_SANDBOX_HOST_ONLY", "host-value")

	for _, tc := range []struct{ name, program, dir, want string }{
		{"an unlisted program", "git", "", "asked to run git, which its permissions do not grant"},
		{"a shell", "sh", "", "asked to run sh, which its permissions do not grant"},
		{"an absolute path", "/bin/echo", "", "asked to run /bin/echo"},
		{"a relative path", "./echo", "", "asked to run ./echo"},
		{"outside its dirs", "echo", "/etc", "asked to run echo in /etc, outside the directories"},
		{"a relative dir", "echo", "x", "asked to run echo in x, outside the directories"},
		{"climbing out", "echo", dir + "/..", "asked to run echo in " + dir + "/.., outside the directories"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := rt.Call(t.Context(), m, "hostile", g, limits, resolveReq("/x", map[string]string{"do": "run", "program": tc.program, "dir": tc.dir}))
			wantFault(t, err, fault.SourcePermissionDenied, "the source hostile "+tc.want)
			stillGood(t, rt, m)
		})
	}
	t.Run("granted, its output comes back", func(t *testing.T) {
		r := results(t, probe(t, rt, m, g, map[string]string{"do": "run", "program": "echo", "args": "hello sandbox"}))[0]
		if r.Error != nil || r.Exit != 0 || string(r.Stdout) != "hello sandbox\n" {
			t.Fatalf("echo: %+v", r)
		}
	})
	t.Run("in the first dir by default, or one inside a granted one", func(t *testing.T) {
		r := results(t, probe(t, rt, m, g, map[string]string{"do": "run", "program": "pwd"}))[0]
		if strings.TrimSpace(string(r.Stdout)) != dir {
			t.Fatalf("pwd: %q, want %s", r.Stdout, dir)
		}
		sub := filepath.Join(dir, "sub")
		if err := os.Mkdir(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		r = results(t, probe(t, rt, m, g, map[string]string{"do": "run", "program": "pwd", "dir": sub}))[0]
		if strings.TrimSpace(string(r.Stdout)) != sub {
			t.Fatalf("pwd in sub: %q", r.Stdout)
		}
	})
	t.Run("its environment is PATH, HOME, LANG and the granted", func(t *testing.T) {
		r := results(t, probe(t, rt, m, g, map[string]string{"do": "run", "program": "env"}))[0]
		var names []string
		for _, ln := range strings.Split(strings.TrimSpace(string(r.Stdout)), "\n") {
			names = append(names, strings.SplitN(ln, "=", 2)[0])
		}
		slices.Sort(names)
		if !slices.Equal(names, []string{"HOME", "LANG", "PATH", "TOKEN"}) {
			t.Fatalf("env: %s", r.Stdout)
		}
	})
	t.Run("a non-zero exit is its exit code", func(t *testing.T) {
		g := g
		g.Programs = append(g.Programs, "false")
		r := results(t, probe(t, rt, m, g, map[string]string{"do": "run", "program": "false"}))[0]
		if r.Error != nil || r.Exit != 1 {
			t.Fatalf("false: %+v", r)
		}
	})
	t.Run("granted but not on PATH", func(t *testing.T) {
		g := g
		g.Programs = []string{"loci-no-such-program"}
		r := results(t, probe(t, rt, m, g, map[string]string{"do": "run", "program": "loci-no-such-program"}))[0]
		if r.Error == nil || r.Error.Kind != contract.ErrNotFound {
			t.Fatalf("a missing program: %+v", r)
		}
	})
	t.Run("output over the cap is too_large and the program is stopped", func(t *testing.T) {
		start := time.Now()
		a, err := rt.Call(t.Context(), m, "hostile", g, Limits{Timeout: 30 * time.Second, OutputBytes: 1 << 20}, resolveReq("/x", map[string]string{"do": "run", "program": "yes"}))
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		_ = json.Unmarshal([]byte(a.Identity.Locator), &got)
		r := results(t, got)[0]
		if r.Error == nil || r.Error.Kind != ErrTooLarge || len(r.Stdout) != 0 {
			t.Fatalf("yes: error %+v, %d bytes", r.Error, len(r.Stdout))
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("stopping yes took %v", d)
		}
	})
	t.Run("a round's needs share twice the cap", func(t *testing.T) {
		g := g
		g.Programs = []string{"head"}
		a, err := rt.Call(t.Context(), m, "hostile", g, Limits{Timeout: 30 * time.Second, OutputBytes: 1 << 20},
			resolveReq("/x", map[string]string{"do": "run", "program": "head", "args": "-c 900000 /dev/zero", "count": "3", "sizes": "1"}))
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		_ = json.Unmarshal([]byte(a.Identity.Locator), &got)
		b, _ := json.Marshal(got["results"])
		var rs []contract.Result
		if err := json.Unmarshal(b, &rs); err != nil || len(rs) != 3 {
			t.Fatalf("results: %v", err)
		}
		if lens, _ := got["lens"].([]any); rs[0].Error != nil || rs[1].Error != nil || len(lens) != 3 || lens[0] != 900000.0 || lens[1] != 900000.0 || lens[2] != 0.0 {
			t.Fatalf("the first two: %+v, %+v, sizes %v", rs[0].Error, rs[1].Error, got["lens"])
		}
		if rs[2].Error == nil || rs[2].Error.Kind != ErrTooLarge || !strings.Contains(rs[2].Error.Message, "2 MiB of output in all") {
			t.Fatalf("the third: %+v", rs[2].Error)
		}
	})
	stillGood(t, rt, m)
}

func TestFetchOnlyWithTheNetwork(t *testing.T) {
	rt, m := hostile(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			chunk := make([]byte, 64<<10)
			for i := 0; i < 40; i++ {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
			return
		}
		w.Header().Set("X-Answer", "42")
		w.WriteHeader(http.StatusTeapot)
		_, _ = w.Write([]byte("fetched body"))
	}))
	defer srv.Close()

	_, err := rt.Call(t.Context(), m, "hostile", Grants{}, limits, resolveReq("/x", map[string]string{"do": "fetch", "url": srv.URL + "/?token=abc"}))
	fe := wantFault(t, err, fault.SourcePermissionDenied, "the source hostile asked to fetch from "+srv.URL, "(no network)")
	if strings.Contains(fe.Msg, "token=abc") {
		t.Fatalf("the message repeats the query: %s", fe.Msg)
	}
	stillGood(t, rt, m)

	g := Grants{Network: true}
	r := results(t, probe(t, rt, m, g, map[string]string{"do": "fetch", "url": srv.URL + "/hello"}))[0]
	if r.Error != nil || r.Status != http.StatusTeapot || string(r.Body) != "fetched body" || r.Headers["X-Answer"] != "42" {
		t.Fatalf("fetch: %+v", r)
	}
	a, err := rt.Call(t.Context(), m, "hostile", g, Limits{Timeout: 30 * time.Second, OutputBytes: 1 << 20}, resolveReq("/x", map[string]string{"do": "fetch", "url": srv.URL + "/big"}))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	_ = json.Unmarshal([]byte(a.Identity.Locator), &got)
	if r := results(t, got)[0]; r.Error == nil || r.Error.Kind != ErrTooLarge {
		t.Fatalf("a body over the cap: %+v", r)
	}
	r = results(t, probe(t, rt, m, g, map[string]string{"do": "fetch", "url": "file:///etc/passwd"}))[0]
	if r.Error == nil || r.Error.Kind != contract.ErrInvalid || len(r.Body) != 0 {
		t.Fatalf("a file URL: %+v", r)
	}
}

func TestHostileGuestsFailCleanly(t *testing.T) {
	rt, m := hostile(t)
	for _, tc := range []struct {
		do    string
		g     Grants
		parts []string
	}{
		{"alloc", Grants{MemoryMiB: 32}, []string{"the source hostile ran out of memory (its ceiling is 32 MiB)"}},
		{"flood", Grants{}, []string{"the source hostile answered more than 16 MiB"}},
		{"malformed", Grants{}, []string{"the source hostile answered malformed JSON"}},
		{"not-object", Grants{}, []string{"answered malformed JSON: not an object"}},
		{"nothing", Grants{}, []string{"the source hostile answered nothing"}},
		{"neither", Grants{}, []string{"answered neither an error nor an identity"}},
		{"panic", Grants{}, []string{"the source hostile exited with code 2", "panic: runtime error: invalid memory address or nil pointer dereference"}},
		{"exit", Grants{Env: map[string]string{"TOKEN": "secret-token-value"}}, []string{"exited with code 3", "giving up with [TOKEN]"}},
		{"unknown-need", Grants{}, []string{`asked for a need of unknown kind "teleport"`}},
		{"needs-and-error", Grants{Programs: []string{"true"}}, []string{"answered needs together with an error"}},
		{"needs-forever", Grants{Programs: []string{"true"}}, []string{"asked for more than 32 rounds of needs"}},
	} {
		t.Run(tc.do, func(t *testing.T) {
			_, err := rt.Call(t.Context(), m, "hostile", tc.g, limits, resolveReq("/x", map[string]string{"do": tc.do}))
			fe := wantFault(t, err, fault.SourceFailed, tc.parts...)
			if strings.Contains(fe.Msg, "secret-token-value") {
				t.Fatalf("the message carries a granted variable's value: %s", fe.Msg)
			}
			stillGood(t, rt, m)
		})
	}
}

func TestTimeLimitStopsTheGuest(t *testing.T) {
	rt, m := hostile(t)
	for _, do := range []string{"loop", "sleep"} {
		t.Run(do, func(t *testing.T) {
			start := time.Now()
			_, err := rt.Call(t.Context(), m, "hostile", Grants{}, Limits{Timeout: time.Second}, resolveReq("/x", map[string]string{"do": do}))
			took := time.Since(start)
			wantFault(t, err, fault.SourceTimeout, "the source hostile did not answer within 1s (mining.source_timeout_secs)")
			if took > 2500*time.Millisecond {
				t.Fatalf("the timeout took %v", took)
			}
			stillGood(t, rt, m)
		})
	}
	t.Run("a program's time counts", func(t *testing.T) {
		start := time.Now()
		_, err := rt.Call(t.Context(), m, "hostile", Grants{Programs: []string{"sleep"}}, Limits{Timeout: time.Second},
			resolveReq("/x", map[string]string{"do": "run", "program": "sleep", "args": "30"}))
		wantFault(t, err, fault.SourceTimeout, "within 1s")
		if took := time.Since(start); took > 2500*time.Millisecond {
			t.Fatalf("the timeout took %v", took)
		}
	})
}

func TestHandMadeTrapsAndCeilings(t *testing.T) {
	rt := newRuntime(t)
	trap := compile(t, rt, trapModule())
	_, err := rt.Call(t.Context(), trap, "trapper", Grants{}, limits, resolveReq("x", nil))
	wantFault(t, err, fault.SourceFailed, "the source trapper trapped: wasm error: unreachable")

	big := compile(t, rt, bigModule(17)) // 1088 KiB at start
	_, err = rt.Call(t.Context(), big, "big", Grants{MemoryMiB: 1}, limits, resolveReq("x", nil))
	wantFault(t, err, fault.SourceFailed, "the source big needs 1088 KiB of memory to start, more than its ceiling of 1 MiB")

	good := compile(t, rt, minimalModule())
	if a, err := rt.Call(t.Context(), good, "minimal", Grants{MemoryMiB: 1}, limits, resolveReq("x", nil)); err != nil || a.Identity.Locator != "minimal" {
		t.Fatalf("after: %+v %v", a, err)
	}
}

func TestSymlinksCannotLeadOutOfAGrantedDir(t *testing.T) {
	rt, m := hostile(t)
	granted, outside := t.TempDir(), t.TempDir()
	const secret = "behind-a-link-5b1e"
	for dir, text := range map[string]string{outside: secret, granted: "inside text"} {
		if err := os.WriteFile(filepath.Join(dir, "file.txt"), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"abs":     filepath.Join(outside, "file.txt"),
		"rel":     filepath.Join("..", filepath.Base(outside), "file.txt"),
		"dirlink": outside,
		"inside":  "file.txt",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(granted, name)); err != nil {
			t.Fatal(err)
		}
	}
	g := Grants{Dirs: []string{granted}}
	for _, p := range []string{"abs", "rel", "dirlink/file.txt"} {
		got := probe(t, rt, m, g, map[string]string{"do": "readfile", "path": filepath.Join(granted, p)})
		if got["error"] == "" || strings.Contains(got["content"].(string), secret) {
			t.Fatalf("reading %s through a link: %v", p, got)
		}
	}
	got := probe(t, rt, m, g, map[string]string{"do": "readfile", "path": filepath.Join(granted, "inside")})
	if got["content"] != "inside text" {
		t.Fatalf("a link that stays inside: %v", got)
	}

	_, err := rt.Call(t.Context(), m, "hostile", Grants{Dirs: []string{filepath.Join(granted, "gone")}}, limits, resolveReq("/x", nil))
	wantFault(t, err, fault.SourceFailed, "the source hostile cannot be given its directory "+filepath.Join(granted, "gone"))
}

// With the network granted, a fetch still cannot reach the daemon's own
// listeners on this machine, by any name for it (127.0.0.1, localhost,
// an interface's address): with authentication off, the daemon's API
// would install packages for it. Other ports of this machine stay open.
func TestFetchNeverReachesTheDaemon(t *testing.T) {
	serve := func() (*httptest.Server, int) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("answered")) }))
		u, _ := url.Parse(srv.URL)
		port, _ := strconv.Atoi(u.Port())
		return srv, port
	}
	daemon, daemonPort := serve()
	defer daemon.Close()
	other, _ := serve()
	defer other.Close()
	h := guest(t, "hostile")
	rt, err := NewWith(t.Context(), Options{DaemonPorts: func() []int { return []int{daemonPort} }})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(t.Context())
	m, err := rt.Compile(t.Context(), digestOf(h), h)
	if err != nil {
		t.Fatal(err)
	}
	g := Grants{Network: true}
	for _, u := range []string{daemon.URL, strings.Replace(daemon.URL, "127.0.0.1", "localhost", 1), strings.Replace(daemon.URL, "127.0.0.1", "[::ffff:127.0.0.1]", 1)} {
		r := results(t, probe(t, rt, m, g, map[string]string{"do": "fetch", "url": u + "/api/source-packages"}))[0]
		if r.Error == nil || !strings.Contains(r.Error.Message, "the loci daemon's own listener") || len(r.Body) != 0 {
			t.Fatalf("%s: %+v", u, r)
		}
	}
	if r := results(t, probe(t, rt, m, g, map[string]string{"do": "fetch", "url": other.URL})); r[0].Error != nil || string(r[0].Body) != "answered" {
		t.Fatalf("another local port: %+v", r[0])
	}
}
