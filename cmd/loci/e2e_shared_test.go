package main_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/store/postgres/pgtest"
)

// Issue 31: the daemon on a shared PostgreSQL store (datastore.url).

// sharedEnv is the environment of a daemon on database db of cluster s:
// the URL without the password, the password in LOCI_DATASTORE_PASSWORD.
func sharedEnv(s *pgtest.Server, db string) []string {
	return []string{"LOCI_DATASTORE_URL=" + s.URL(db), "LOCI_DATASTORE_PASSWORD=" + pgtest.Password}
}

// newSharedDB is a fresh database on the test binary's cluster.
func newSharedDB(t *testing.T) (*pgtest.Server, string) {
	t.Helper()
	s := pgtest.Shared(t)
	db, err := s.NewDatabase()
	if err != nil {
		t.Fatal(err)
	}
	return s, db
}

// noPassword fails when what (named) shows the password.
func noPassword(t *testing.T, name, what string) {
	t.Helper()
	if strings.Contains(what, pgtest.Password) {
		t.Fatalf("%s shows the database password:\n%s", name, what)
	}
}

// A start against a database it cannot use fails at once with
// loci::store::backend_failed naming host:port/database (every host of a
// URL naming several) and its real cause, never the password (nor a wrong
// one): no host listening (connection refused), a wrong password, no
// password at all (where to give one), TLS the server does not offer, a
// database that does not exist. A password written in the URL, or a
// relative datastore.password_file, is refused by the configuration's
// validation, not echoed; a password file others may read is warned
// about, naming it and its mode. Nothing is left running.
func TestSharedStoreStartRefused(t *testing.T) {
	t.Parallel()
	s, db := newSharedDB(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().(*net.TCPAddr).Port
	l.Close()
	const wrong = "not-the-password-4711"
	// A password file the group and others may read: the start warns,
	// naming it and its mode.
	pwFile := filepath.Join(t.TempDir(), "db-password")
	os.WriteFile(pwFile, []byte(pgtest.Password+"\n"), 0o644)
	os.Chmod(pwFile, 0o644)
	for _, c := range []struct {
		name   string
		env    []string
		code   string
		says   []string
		secret string
		logs   []string
	}{
		{"nothing listening", []string{"LOCI_DATASTORE_URL=" + fmt.Sprintf("postgres://loci@127.0.0.1:%d/%s?sslmode=disable", closed, db),
			"LOCI_DATASTORE_PASSWORD=" + pgtest.Password}, "loci::store::backend_failed",
			[]string{fmt.Sprintf("127.0.0.1:%d/%s", closed, db), "connection refused", "listen_addresses"}, pgtest.Password, nil},
		{"several hosts, none listening", []string{"LOCI_DATASTORE_URL=" + fmt.Sprintf("postgres://loci@127.0.0.1:%d,localhost:%d/%s?sslmode=disable", closed, closed, db),
			"LOCI_DATASTORE_PASSWORD=" + pgtest.Password}, "loci::store::backend_failed",
			[]string{fmt.Sprintf("127.0.0.1:%d,localhost:%d/%s", closed, closed, db), "connection refused"}, pgtest.Password, nil},
		{"wrong password", []string{"LOCI_DATASTORE_URL=" + s.URL(db), "LOCI_DATASTORE_PASSWORD=" + wrong},
			"loci::store::backend_failed", []string{fmt.Sprintf("127.0.0.1:%d/%s", s.Port, db), "password was refused"}, wrong, nil},
		{"no password", []string{"LOCI_DATASTORE_URL=" + s.URL(db), "PGPASSWORD=", "PGPASSFILE=/nonexistent/pgpass"},
			"loci::store::backend_failed", []string{"none was given", fmt.Sprintf("127.0.0.1:%d/%s", s.Port, db), "LOCI_DATASTORE_PASSWORD", "datastore.password_file"}, pgtest.Password, nil},
		{"TLS the server does not offer", []string{"LOCI_DATASTORE_URL=" + strings.Replace(s.URL(db), "sslmode=disable", "sslmode=require", 1),
			"LOCI_DATASTORE_PASSWORD=" + pgtest.Password}, "loci::store::backend_failed",
			[]string{"does not offer TLS", fmt.Sprintf("127.0.0.1:%d/%s", s.Port, db)}, pgtest.Password, nil},
		{"no such database", []string{"LOCI_DATASTORE_URL=" + s.URL("no_such_db"), "LOCI_DATASTORE_PASSWORD=" + pgtest.Password},
			"loci::store::backend_failed", []string{fmt.Sprintf("127.0.0.1:%d/no_such_db", s.Port), "does not exist"}, pgtest.Password, nil},
		{"password in the URL", []string{"LOCI_DATASTORE_URL=" + s.URLWithPassword(db)},
			"loci::config::invalid", []string{"datastore.url", "LOCI_DATASTORE_PASSWORD", "datastore.password_file"}, pgtest.Password, nil},
		{"relative password file", []string{"LOCI_DATASTORE_URL=" + s.URL(db), "LOCI_DATASTORE_PASSWORD_FILE=db-password"},
			"loci::config::invalid", []string{"datastore.password_file", "must be an absolute path"}, pgtest.Password, nil},
		{"password file others may read", []string{"LOCI_DATASTORE_URL=" + fmt.Sprintf("postgres://loci@127.0.0.1:%d/%s?sslmode=disable", closed, db),
			"LOCI_DATASTORE_PASSWORD_FILE=" + pwFile}, "loci::store::backend_failed", []string{"connection refused"}, pgtest.Password,
			[]string{"datastore.password_file " + pwFile + " has mode 0644"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			home, palace := newPalace(t)
			began := time.Now()
			stdout, stderr, code := runCLI(home, "", []string{"serve", "--json", "--port", "0", "--palace", palace}, c.env)
			if code == 0 {
				t.Fatalf("the start succeeded:\n%s\n%s", stdout, stderr)
			}
			if took := time.Since(began); took > 20*time.Second {
				t.Fatalf("the refusal took %s", took)
			}
			all := stdout + stderr
			var body struct{ Error, Code, Help string }
			at := strings.LastIndex("\n"+stderr, "\n{\n")
			if at < 0 || json.Unmarshal([]byte(stderr[at:]), &body) != nil || body.Code != c.code {
				t.Fatalf("want %s as JSON on stderr:\nstdout %s\nstderr %s", c.code, stdout, stderr)
			}
			for _, w := range c.says {
				if !strings.Contains(body.Error+" "+body.Help, w) {
					t.Fatalf("the error does not say %q: %+v", w, body)
				}
			}
			if strings.Contains(all, c.secret) || strings.Contains(all, pgtest.Password) {
				t.Fatalf("the output shows a password:\n%s", all)
			}
			for _, w := range c.logs {
				if !strings.Contains(stderr, w) {
					t.Fatalf("the log does not say %q:\n%s", w, stderr)
				}
			}
			if _, err := os.Stat(filepath.Join(palace, "daemon.json")); err == nil {
				t.Fatal("a registry file was written")
			}
			// loci doctor says the same.
			out, errOut, code := runCLI(home, "", []string{"doctor"}, append(c.env, "LOCI_PALACE_PATH="+palace))
			if code == 0 || !strings.Contains(out, "ERROR") || !strings.Contains(out, c.says[0]) || strings.Contains(out+errOut, c.secret) {
				t.Fatalf("loci doctor: %d\n%s\n%s", code, out, errOut)
			}
			// The CLI's own words (not JSON) name the host too.
			_, stderr, code = runCLI(home, "", []string{"serve", "--port", "0", "--palace", palace}, c.env)
			if code == 0 || !strings.Contains(stderr, c.code) || strings.Contains(stderr, c.secret) {
				t.Fatalf("without --json: %d\n%s", code, stderr)
			}
		})
	}
}

// reply is an HTTP answer with its headers.
type reply struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

func request(t *testing.T, method, u string, body any) (reply, error) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, u, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := reply{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
	_ = json.Unmarshal(raw, &r.body)
	return r, nil
}

// Two daemons on one database, each with its own palace folder (its own
// indexes): a drawer filed on A is found by a search on B within a
// second; A's event stream announces it, B's does not (the bus is per
// daemon) while B's announces B's own write. Status, GET /api/config,
// the registry file, `loci doctor` and the logs name the backend and
// host:port/database and never the password; /api/db is refused with
// loci::db::unavailable naming the database; backups say pg_dump.
func TestSharedStoreTwoDaemons(t *testing.T) {
	s, db := newSharedDB(t)
	where := fmt.Sprintf("127.0.0.1:%d/%s", s.Port, db)
	homeA, palaceA := newPalace(t)
	homeB, palaceB := newPalace(t)
	a := start(t, homeA, palaceA, sharedEnv(s, db)...)
	// B reads the URL and the password file from its configuration file.
	pwFile := filepath.Join(homeB, "db-password")
	cfgB := filepath.Join(homeB, "config.toml")
	os.WriteFile(pwFile, []byte(pgtest.Password+"\n"), 0o600)
	os.WriteFile(cfgB, []byte(fmt.Sprintf("[datastore]\nurl = %q\npassword_file = %q\n", s.URL(db), pwFile)), 0o600)
	b := start(t, homeB, palaceB, "LOCI_CONFIG="+cfgB)
	passwordFrom := map[*daemon]string{a: "env LOCI_DATASTORE_PASSWORD", b: "file datastore.password_file"}

	evA, closeA := frames(t, a)
	defer closeA()
	evB, closeB := frames(t, b)
	defer closeB()
	next(t, evA, "open", func(name string, _ map[string]any) bool { return name == "open" })
	next(t, evB, "open", func(name string, _ map[string]any) bool { return name == "open" })

	began := time.Now()
	id, err := fileDrawer(a.addr, "team", "notes", "the aurora borealis shimmered over the harbour")
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Second+time.Since(began), "A's drawer found by a search on B", func() bool {
		ids := searchIDs(t, b, "aurora harbour", 5)
		return len(ids) == 1 && ids[0] == id
	})
	t.Logf("searchable on B %s after A's write began", time.Since(began).Round(time.Millisecond))
	next(t, evA, "A's drawer on A's stream", func(name string, e map[string]any) bool { return name == "drawer" && e["id"] == id })

	idB, err := fileDrawer(b.addr, "team", "notes", "a second note filed through daemon B")
	if err != nil {
		t.Fatal(err)
	}
	// B's stream: its own drawer, and never A's before it.
	next(t, evB, "B's drawer on B's stream", func(name string, e map[string]any) bool {
		if e["id"] == id {
			t.Fatalf("B's stream announced A's write: %v", e)
		}
		return name == "drawer" && e["id"] == idB
	})
	// A's stream never announces B's drawer (B's wing and room were A's).
	select {
	case f := <-evA:
		if strings.Contains(f[1], idB) {
			t.Fatalf("A's stream announced B's write: %v", f)
		}
	case <-time.After(1500 * time.Millisecond):
	}

	// Status and configuration: postgres at host:port/database.
	for _, d := range []*daemon{a, b} {
		st := d.do("GET", "/api/status", nil)
		if get[string](st.body, "datastore", "backend") != "postgres" || get[string](st.body, "datastore", "location") != "postgres://"+where ||
			!get[bool](st.body, "datastore", "healthy") {
			t.Fatalf("status: %s", st.raw)
		}
		cfg := d.do("GET", "/api/config", nil)
		if get[string](cfg.body, "datastore", "backend") != "postgres" || get[string](cfg.body, "datastore", "location") != "postgres://"+where ||
			get[string](cfg.body, "datastore", "password") != passwordFrom[d] || strings.Contains(cfg.raw, pwFile) {
			t.Fatalf("config: %s", cfg.raw)
		}
		noPassword(t, "status", st.raw)
		noPassword(t, "GET /api/config", cfg.raw)
		out, _, code := d.cli("", "status")
		if code != 0 || !strings.Contains(out, "postgres at postgres://"+where) {
			t.Fatalf("loci status: %d\n%s", code, out)
		}
		noPassword(t, "loci status", out)

		r := d.do("GET", "/api/db", nil)
		if r.status != 503 || r.code() != "loci::db::unavailable" || !strings.Contains(r.raw, where) || !strings.Contains(get[string](r.body, "help"), "psql") {
			t.Fatalf("GET /api/db: %d %s", r.status, r.raw)
		}
		if r := d.do("POST", "/api/db", map[string]any{}); r.status != 503 || r.code() != "loci::db::unavailable" {
			t.Fatalf("POST /api/db: %d %s", r.status, r.raw)
		}
		if r := d.do("DELETE", "/api/db", nil); r.status != 503 || r.code() != "loci::db::unavailable" {
			t.Fatalf("DELETE /api/db: %d %s", r.status, r.raw)
		}
		if r := d.do("POST", "/api/backups", map[string]any{}); r.status != 501 || r.code() != "loci::backup::unsupported" || !strings.Contains(r.raw, "pg_dump") {
			t.Fatalf("POST /api/backups: %d %s", r.status, r.raw)
		}
		if r := d.do("GET", "/api/backup", nil); r.status != 501 || !strings.Contains(r.raw, "pg_dump") {
			t.Fatalf("GET /api/backup: %d %s", r.status, r.raw)
		}
		reg, err := os.ReadFile(filepath.Join(d.palace, "daemon.json"))
		if err != nil {
			t.Fatal(err)
		}
		noPassword(t, "the registry file", string(reg))
	}
	// Each daemon's palace folder holds its own indexes, no store.
	for _, p := range []string{palaceA, palaceB} {
		if _, err := os.Stat(filepath.Join(p, "index", "lexical")); err != nil {
			t.Fatalf("%s has no lexical index: %v", p, err)
		}
		if _, err := os.Stat(filepath.Join(p, "store")); err == nil {
			t.Fatalf("%s holds an embedded store beside the shared one", p)
		}
	}
	// loci doctor, run beside the daemon with the same configuration.
	out, errOut, _ := runCLI(homeA, "", []string{"doctor"}, append(sharedEnv(s, db), "LOCI_PALACE_PATH="+palaceA))
	noPassword(t, "loci doctor", out+errOut)
	if !strings.Contains(out, "held by the running daemon") || !strings.Contains(out, "pg_dump") {
		t.Fatalf("loci doctor:\n%s\n%s", out, errOut)
	}
	// Without a daemon: the shared store opens, named by host:port/database.
	homeC, palaceC := newPalace(t)
	out, errOut, _ = runCLI(homeC, "", []string{"doctor"}, append(sharedEnv(s, db), "LOCI_PALACE_PATH="+palaceC))
	noPassword(t, "loci doctor", out+errOut)
	if !strings.Contains(out, "the shared store at "+where+" opens cleanly") {
		t.Fatalf("loci doctor without a daemon:\n%s\n%s", out, errOut)
	}
	// A restore into a shared store is refused: pg_restore is the way.
	_, errOut, code := runCLI(homeA, "", []string{"restore", "--palace", palaceA, filepath.Join(homeA, "none.lociback")}, sharedEnv(s, db))
	if code == 0 {
		t.Fatalf("loci restore on a shared store: %s", errOut)
	}
	noPassword(t, "loci restore", errOut)
	noPassword(t, "daemon A's log", a.log.String())
	noPassword(t, "daemon B's log", b.log.String())
}

// Losing the database (a cluster of the test's own, stopped and started):
// while PostgreSQL is down a write answers 503
// loci::store::backend_failed with Retry-After, a search still answers
// from the local index with a warning, status says the store is
// unhealthy; once it is back, writes are acknowledged again without a
// restart of the daemon, its indexes catch up, and every acknowledged
// write is there.
func TestSharedStoreLosesDatabase(t *testing.T) {
	t.Parallel()
	pgtest.Shared(t) // skips (or fails under LOCI_REQUIRE_POSTGRES) without PostgreSQL
	s, err := pgtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Remove)
	db, err := s.NewDatabase()
	if err != nil {
		t.Fatal(err)
	}
	home, palace := newPalace(t)
	d := start(t, home, palace, sharedEnv(s, db)...)
	base := "http://" + d.addr
	acked := map[string]string{}
	write := func(content string) reply {
		t.Helper()
		r, err := request(t, "POST", base+"/api/wings/ops/rooms/log/drawers", map[string]any{"content": content})
		if err != nil {
			t.Fatalf("write: %v", err)
		}
		if r.status == 201 {
			acked[get[string](r.body, "drawer", "id")] = content
		}
		return r
	}
	if r := write("the lighthouse lamp was serviced on monday"); r.status != 201 {
		t.Fatalf("first write: %d %s", r.status, r.raw)
	}
	if ids := searchIDs(t, d, "lighthouse", 5); len(ids) != 1 {
		t.Fatalf("search before: %v", ids)
	}

	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	r := write("written while the database is down")
	if r.status != 503 || r.header.Get("Retry-After") == "" || get[string](r.body, "code") != "loci::store::backend_failed" ||
		!strings.Contains(get[string](r.body, "error"), fmt.Sprintf("127.0.0.1:%d/%s", s.Port, db)) {
		t.Fatalf("a write while down: %d %v %s", r.status, r.header, r.raw)
	}
	noPassword(t, "the refused write", r.raw)
	sr, err := request(t, "GET", base+"/api/search?q=lighthouse", nil)
	if err != nil || sr.status != 200 || get[string](sr.body, "warning") == "" {
		t.Fatalf("a search while down: %v %d %s", err, sr.status, sr.raw)
	}
	hits := get[[]any](sr.body, "hits")
	if len(hits) != 1 || !strings.Contains(get[string](hits[0].(map[string]any), "content"), "lighthouse lamp") {
		t.Fatalf("a search while down: %s", sr.raw)
	}
	st := d.do("GET", "/api/status", nil)
	if st.status != 200 || get[bool](st.body, "datastore", "healthy") {
		t.Fatalf("status while down: %d %s", st.status, st.raw)
	}
	noPassword(t, "status while down", st.raw)
	out, _, _ := d.cli("", "search", "lighthouse")
	if !strings.Contains(out, "warning:") || !strings.Contains(out, "lighthouse lamp") {
		t.Fatalf("loci search while down:\n%s", out)
	}
	_, errOut, code := runCLI(home, "", []string{"--addr", d.addr, "note", "add", "a note from the CLI while down"}, []string{"LOCI_WING=ops", "LOCI_ROOM=log"})
	if code == 0 || !strings.Contains(errOut, "backend_failed") || !strings.Contains(errOut, "Retry-After") {
		t.Fatalf("loci note while down: %d\n%s", code, errOut)
	}

	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	eventually(t, 20*time.Second, "a write acknowledged once PostgreSQL is back", func() bool {
		return write("written after the database came back").status == 201
	})
	t.Logf("writes acknowledged %s after PostgreSQL started again", time.Since(back).Round(time.Millisecond))
	for i := range 5 {
		if r := write(fmt.Sprintf("after the outage, note %d about the harbour", i)); r.status != 201 {
			t.Fatalf("write %d after: %d %s", i, r.status, r.raw)
		}
	}
	eventually(t, 5*time.Second, "the lexical index caught up", func() bool {
		st := d.do("GET", "/api/status", nil)
		return get[float64](st.body, "indexes", "lexical", "behind") == 0 && get[float64](st.body, "indexes", "lexical", "drawers") == float64(len(acked))
	})
	if ids := hitIDs(t, d, "/api/search?ranking=lexical&limit=20&q=harbour"); len(ids) != 5 {
		t.Fatalf("the drawers written after the outage found: %v", ids)
	}
	if sr := d.do("GET", "/api/search?q=lighthouse", nil); sr.status != 200 || get[string](sr.body, "warning") != "" {
		t.Fatalf("search after: %s", sr.raw)
	}
	for id, content := range acked {
		r := d.do("GET", "/api/wings/ops/rooms/log/drawers/"+url.PathEscape(id), nil)
		if r.status != 200 || get[string](r.body, "content") != content {
			t.Fatalf("acknowledged drawer %s: %d %s", id, r.status, r.raw)
		}
	}
	if len(acked) != 7 {
		t.Fatalf("%d writes acknowledged, want 7", len(acked))
	}
	noPassword(t, "the daemon's log", d.log.String())
}

// A job queued on one daemon is claimed by another at once: the other
// daemons' commits wake the dispatcher, not only its tick (a third of the
// lease, 30 s here). Daemon A's one job slot is held by a slow mine; a
// demo job submitted to A then runs on B within seconds, the mine still
// running on A.
func TestSharedStoreJobClaimedByAnotherDaemon(t *testing.T) {
	t.Parallel()
	s, db := newSharedDB(t)
	home, palaceA := newPalace(t)
	_, palaceB := newPalace(t)
	cfg := filepath.Join(home, "config.toml")
	if err := os.WriteFile(cfg, []byte("[jobs]\nmax_concurrency = 1\nbackground_concurrency = 1\nlease_ttl_secs = 90\n[embedding]\ndefault = \"\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tree := filepath.Join(home, "tree")
	os.MkdirAll(tree, 0o700)
	for i := range 40 {
		os.WriteFile(filepath.Join(tree, fmt.Sprintf("doc%02d.md", i)), []byte(fmt.Sprintf("# note %d\n\nabout the tide tables, page %d\n", i, i)), 0o600)
	}
	env := append(sharedEnv(s, db), "LOCI_CONFIG="+cfg, "LOCI_TEST_MINE_DELAY=500ms")
	a := start(t, home, palaceA, env...)
	r := a.do("POST", "/api/jobs", map[string]any{"type": "mine", "path": tree, "wing": "docs"})
	if r.status != 202 {
		t.Fatalf("mine: %d %s", r.status, r.raw)
	}
	mine := r.body["id"].(string)
	waitJob(t, a, mine, 20*time.Second, func(j map[string]any) bool { return j["status"] == "running" })
	// B starts once A holds the mine: nothing is queued for its start.
	b := start(t, home, palaceB, env...)
	began := time.Now()
	r = a.do("POST", "/api/jobs", map[string]any{"type": "demo", "steps": 1})
	if r.status != 202 {
		t.Fatalf("demo: %d %s", r.status, r.raw)
	}
	demo := r.body["id"].(string)
	j := waitJob(t, a, demo, 20*time.Second, func(j map[string]any) bool { return j["status"] != "queued" })
	if took := time.Since(began); took > 5*time.Second {
		t.Fatalf("the demo job waited %s for a daemon with a free slot", took)
	}
	if owner := get[string](j, "lease_owner"); j["status"] == "running" && !strings.Contains(owner, fmt.Sprintf("/%d/", b.cmd.Process.Pid)) {
		t.Fatalf("the demo job runs on %q, not on B (pid %d)", owner, b.cmd.Process.Pid)
	}
	t.Logf("demo after %s: %v", time.Since(began), j)
	if m := a.do("GET", "/api/jobs/"+mine, nil); m.body["status"] != "running" {
		t.Fatalf("the mine is not running on A any more: %s", m.raw)
	}
	if j := waitJob(t, b, demo, 20*time.Second, finished); j["status"] != "completed" {
		t.Fatalf("demo: %v", j)
	}
}

// `loci service install` writes no secret into the unit: the shared
// store's URL and password from the environment are left out, and the
// command says so (the service would serve the embedded palace) and where
// to put them instead.
func TestServiceInstallLeavesTheDatastoreOut(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	xdg := filepath.Join(t.TempDir(), "xdg")
	if err := os.Mkdir(xdg, 0o700); err != nil {
		t.Fatal(err)
	}
	m := newFakeManager(t, "systemctl", fakeSystemctl)
	env := m.env(false, "XDG_CONFIG_HOME="+xdg, "LOCI_DATASTORE_URL=postgres://loci@db.example:5432/palace", "LOCI_DATASTORE_PASSWORD="+pgtest.Password)
	out, errOut, code := runCLI(home, "", []string{"service", "install"}, env)
	if code != 0 {
		t.Fatalf("install exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "LOCI_DATASTORE_URL and LOCI_DATASTORE_PASSWORD") || !strings.Contains(errOut, "datastore.password_file") {
		t.Fatalf("install said nothing of the shared store:\n%s%s", out, errOut)
	}
	unit, err := os.ReadFile(filepath.Join(xdg, "systemd", "user", "loci.service"))
	if err != nil {
		t.Fatal(err)
	}
	noPassword(t, "the unit file", string(unit))
	noPassword(t, "loci service install", out+errOut)
	if strings.Contains(string(unit), "db.example") {
		t.Fatalf("the unit holds the datastore URL:\n%s", unit)
	}
}

// The programs the daemon runs (here a command embedding provider, run by
// a search to embed its query) do not inherit the database password: the
// daemon drops LOCI_DATASTORE_PASSWORD from its environment once the store
// is open.
func TestSharedStorePasswordNotInherited(t *testing.T) {
	t.Parallel()
	s, db := newSharedDB(t)
	home, palace := newPalace(t)
	dump := filepath.Join(home, "provider-env.txt")
	cfg := filepath.Join(home, "config.toml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`[embedding]
default = "cmd"
[embedding.profiles.cmd]
provider = "command"
command = ["sh", "-c", "env > %s; exit 1"]
dimension = 4
`, dump)), 0o600)
	d := start(t, home, palace, append(sharedEnv(s, db), "LOCI_CONFIG="+cfg)...)
	if r := d.do("GET", "/api/search?q=anything", nil); r.status != 200 {
		t.Fatalf("search: %d %s", r.status, r.raw)
	}
	var env []byte
	eventually(t, 10*time.Second, "the provider run", func() bool {
		var err error
		env, err = os.ReadFile(dump)
		return err == nil && strings.Contains(string(env), "PATH=")
	})
	noPassword(t, "the provider's environment", string(env))
	if strings.Contains(string(env), "LOCI_DATASTORE_PASSWORD") {
		t.Fatalf("the provider inherited LOCI_DATASTORE_PASSWORD:\n%s", env)
	}
	noPassword(t, "the daemon's log", d.log.String())
}
