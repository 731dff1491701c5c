package main_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// backupWords is the vocabulary of the drawers and queries of these tests.
var backupWords = strings.Fields(`apple river mountain cloud engine garden silver copper lantern harbor
violin meadow thunder quartz falcon orchard canyon glacier ember willow compass saddle beacon marble
tundra cobalt juniper prairie walnut lagoon basalt cedar dynamo fjord granite hollow ivory jasmine
kettle lichen mosaic nectar onyx pebble quiver raven sable timber umber vessel wharf yonder zephyr
anchor bramble citadel dune estuary fern grotto heron inlet jetty kelp larch marsh nook osprey pine`)

func backupText(r *rand.Rand, n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = backupWords[r.IntN(len(backupWords))]
	}
	return strings.Join(w, " ")
}

// fileDrawer posts a drawer and answers its id ("" when refused).
func fileDrawer(addr, wing, room, content string) (string, error) {
	b, _ := json.Marshal(map[string]string{"content": content})
	resp, err := http.Post("http://"+addr+"/api/wings/"+wing+"/rooms/"+room+"/drawers", "application/json", bytes.NewReader(b))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var out struct {
		Drawer struct {
			ID string `json:"id"`
		} `json:"drawer"`
	}
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 || json.Unmarshal(raw, &out) != nil || out.Drawer.ID == "" {
		return "", fmt.Errorf("%d %s", resp.StatusCode, raw)
	}
	return out.Drawer.ID, nil
}

// allDrawers lists every stored drawer of the palace (every wing and
// room, historical ones included), id -> what a listing shows of it.
func allDrawers(t *testing.T, d *daemon) map[string]string {
	t.Helper()
	out := map[string]string{}
	wings := d.do("GET", "/api/wings", nil)
	for _, w := range get[[]any](wings.body, "wings") {
		wing := get[string](w.(map[string]any), "name")
		rooms := d.do("GET", "/api/wings/"+wing+"/rooms", nil)
		for _, rm := range get[[]any](rooms.body, "rooms") {
			room := get[string](rm.(map[string]any), "name")
			cursor := ""
			for {
				path := "/api/wings/" + wing + "/rooms/" + room + "/drawers?limit=200&include_historical=true"
				if cursor != "" {
					path += "&cursor=" + url.QueryEscape(cursor)
				}
				r := d.do("GET", path, nil)
				if r.status != 200 {
					t.Fatalf("listing %s/%s: %d %s", wing, room, r.status, r.raw)
				}
				for _, p := range get[[]any](r.body, "drawers") {
					m := p.(map[string]any)
					id := m["id"].(string)
					delete(m, "id")
					j, _ := json.Marshal(m)
					out[id] = wing + "/" + room + " " + string(j)
				}
				cursor = get[string](r.body, "next_cursor")
				if cursor == "" {
					break
				}
			}
		}
	}
	return out
}

// caughtUp waits until the daemon's indexes hold n drawers and follow the
// store to its end.
func caughtUp(t *testing.T, d *daemon, n int) {
	t.Helper()
	eventually(t, 90*time.Second, "the indexes catch up", func() bool {
		r := d.do("GET", "/api/status", nil)
		ix := get[map[string]any](r.body, "indexes")
		if ix == nil || get[float64](ix, "lexical", "behind") != 0 || int(get[float64](ix, "lexical", "drawers")) != n {
			return false
		}
		for _, v := range get[map[string]any](ix, "vectors") {
			if get[float64](v.(map[string]any), "behind") != 0 {
				return false
			}
		}
		return true
	})
}

// searchIDs answers a search's hit ids in order.
// searchIDs is the ids of a search's first limit hits, in order.
func searchIDs(t *testing.T, d *daemon, q string, limit int) []string {
	t.Helper()
	return hitIDs(t, d, "/api/search?limit="+strconv.Itoa(limit)+"&q="+url.QueryEscape(q))
}

// hitIDs is the ids of the hits a search request (path and query)
// answers, in order.
func hitIDs(t *testing.T, d *daemon, path string) []string {
	t.Helper()
	r := d.do("GET", path, nil)
	if r.status != 200 {
		t.Fatalf("%s: %d %s", path, r.status, r.raw)
	}
	var ids []string
	for _, h := range get[[]any](r.body, "hits") {
		ids = append(ids, h.(map[string]any)["id"].(string))
	}
	return ids
}

func stopDaemon(t *testing.T, d *daemon) {
	t.Helper()
	if r := d.do("POST", "/api/shutdown", nil); r.status != 202 {
		t.Fatalf("shutdown: %d %s", r.status, r.raw)
	}
	if err := d.wait(30 * time.Second); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, d.log.String())
	}
}

func readHeader(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || len(b) < 4096 {
		t.Fatalf("%s: %v", path, err)
	}
	var h map[string]any
	if err := json.Unmarshal(bytes.TrimRight(b[:4096], " \n"), &h); err != nil {
		t.Fatal(err)
	}
	return h
}

// A backup taken while 16 writers file drawers holds every drawer
// acknowledged before it began and nothing beyond its version; restored
// into a fresh folder, a daemon started there serves exactly that. Then,
// the writers stopped, the full backup and an incremental restored give a
// palace that answers 100 searches with the same ids in the same order as
// the original; and after a deletion and a supersession, the chain of the
// full backup and two incrementals restores the palace exactly.
func TestBackupUnderWritersAndRestore(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	r := rand.New(rand.NewPCG(37, 1))
	for i := range 300 {
		if _, err := fileDrawer(d.addr, fmt.Sprintf("wing-%d", i%3), fmt.Sprintf("room-%d", i%4), backupText(r, 14)); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	full := filepath.Join(dir, "full.backup")

	var (
		mu        sync.Mutex
		acked     = map[string]bool{}
		stop      atomic.Bool
		wg        sync.WaitGroup
		failures  atomic.Int64
		ackedLen  atomic.Int64
		writerErr atomic.Value
	)
	for w := range 16 {
		wg.Go(func() {
			wr := rand.New(rand.NewPCG(uint64(w), 2))
			for !stop.Load() {
				id, err := fileDrawer(d.addr, fmt.Sprintf("wing-%d", w%3), fmt.Sprintf("writer-%d", w), backupText(wr, 10))
				if err != nil {
					failures.Add(1)
					writerErr.Store(err.Error())
					continue
				}
				mu.Lock()
				acked[id] = true
				mu.Unlock()
				ackedLen.Add(1)
			}
		})
	}
	eventually(t, 30*time.Second, "the writers file", func() bool { return ackedLen.Load() >= 100 })
	mu.Lock()
	before := maps.Clone(acked)
	mu.Unlock()
	out, errOut, code := d.cli("", "backup", "--out", full, "--json")
	if code != 0 {
		t.Fatalf("backup: %d %s", code, errOut)
	}
	mid := ackedLen.Load()
	eventually(t, 30*time.Second, "the writers file after the backup", func() bool { return ackedLen.Load() >= mid+50 })
	stop.Store(true)
	wg.Wait()
	if failures.Load() > 0 {
		t.Fatalf("%d writes failed: %v", failures.Load(), writerErr.Load())
	}
	var h map[string]any
	if err := json.Unmarshal([]byte(out), &h); err != nil || h["file"] != full {
		t.Fatalf("backup --json: %v %s", err, out)
	}
	if v, ok := readHeader(t, full)["store_version"].(float64); !ok || v != h["store_version"] {
		t.Fatalf("the file's header %v, the CLI's %v", readHeader(t, full), h)
	}
	if _, errOut, code := runCLI(home, "", []string{"backup", "verify", full}, nil); code != 0 {
		t.Fatalf("verify: %s", errOut)
	}
	original := allDrawers(t, d)

	// The full backup, restored into a fresh folder.
	home2, palace2 := newPalace(t)
	if out, errOut, code := runCLI(home2, "", []string{"restore", full, "--data-dir", palace2, "--json"}, nil); code != 0 {
		t.Fatalf("restore: %s %s", out, errOut)
	}
	d2 := start(t, home2, palace2)
	restored := allDrawers(t, d2)
	for id := range before {
		if _, ok := restored[id]; !ok {
			t.Fatalf("drawer %s, acknowledged before the backup began, is not restored", id)
		}
	}
	wantDrawers := int(get[float64](h, "counts", "drawers"))
	if len(restored) != wantDrawers {
		t.Fatalf("restored %d drawers; the backup's header counts %d", len(restored), wantDrawers)
	}
	if len(restored) >= len(original) {
		t.Fatalf("the restore holds %d drawers, the original %d after more writes: the backup is not at one earlier version", len(restored), len(original))
	}
	for id, v := range restored {
		if original[id] != v {
			t.Fatalf("drawer %s restored as %s; the original holds %s", id, v, original[id])
		}
	}
	if st := d2.do("GET", "/api/status", nil); get[float64](st.body, "counts", "drawers") != float64(wantDrawers) {
		t.Fatalf("restored status %v", st.body["counts"])
	}
	stopDaemon(t, d2)

	// The writers stopped, an incremental: the original holds exactly
	// what the full backup and it hold, and only filed drawers (an update
	// leaves the original's lexical index with statistics of the replaced
	// document until its segments merge, which a rebuilt index has not),
	// so both answer searches alike. The incremental is taken once the
	// original's embed jobs have made every drawer's vector: a vector it
	// made after the backup is not in it, and the restored daemon would
	// make its own, weighed with its own frequencies (another vector).
	vectorsHold(t, d, len(original))
	inc1, inc2 := filepath.Join(dir, "inc1.backup"), filepath.Join(dir, "inc2.backup")
	if _, errOut, code := d.cli("", "backup", "--since", full, "--out", inc1); code != 0 {
		t.Fatalf("incremental 1: %s", errOut)
	}
	home3, palace3 := newPalace(t)
	if _, errOut, code := runCLI(home3, "", []string{"restore", "--data-dir", palace3, full, inc1}, nil); code != 0 {
		t.Fatalf("restore of full and incremental: %s", errOut)
	}
	d3 := start(t, home3, palace3)
	if got := allDrawers(t, d3); !maps.Equal(got, original) {
		t.Fatalf("full + incremental restore %d drawers, the original holds %d", len(got), len(original))
	}
	caughtUp(t, d, len(original))
	caughtUp(t, d3, len(original))
	qr := rand.New(rand.NewPCG(37, 3))
	for i := range 100 {
		q := backupText(qr, 1+i%3)
		a, b := searchIDs(t, d, q, 10), searchIDs(t, d3, q, 10)
		if len(a) == 0 {
			t.Fatalf("search %q finds nothing in the original", q)
		}
		if !slices.Equal(a, b) {
			t.Fatalf("search %d %q: the original answers %v, the restored palace %v", i, q, a, b)
		}
	}
	stopDaemon(t, d3)

	// A second incremental after new drawers, a supersession and a
	// deletion: the chain of three restores the palace exactly.
	var someID string
	for id := range before {
		someID = id
		break
	}
	for i := range 20 {
		if _, err := fileDrawer(d.addr, "wing-new", "room-new", backupText(r, 12)+fmt.Sprint(" ", i)); err != nil {
			t.Fatal(err)
		}
	}
	if r := d.do("POST", "/api/drawers/"+someID+"/supersede", map[string]any{"content": "a correction: " + backupText(r, 8)}); r.status >= 300 {
		t.Fatalf("supersede: %d %s", r.status, r.raw)
	}
	victim := ""
	for id, v := range original {
		if id != someID && strings.HasPrefix(v, "wing-0/room-0 ") {
			victim = id
			break
		}
	}
	if r := d.do("DELETE", "/api/wings/wing-0/rooms/room-0/drawers/"+victim, nil); r.status >= 300 {
		t.Fatalf("delete: %d %s", r.status, r.raw)
	}
	if _, errOut, code := d.cli("", "backup", "--since", inc1, "--out", inc2); code != 0 {
		t.Fatalf("incremental 2: %s", errOut)
	}
	final := allDrawers(t, d)
	if _, ok := final[victim]; ok {
		t.Fatal("the deleted drawer is still listed")
	}
	home4, palace4 := newPalace(t)
	if _, errOut, code := runCLI(home4, "", []string{"restore", "--data-dir", palace4, full, inc2}, nil); code != 1 || !strings.Contains(errOut, "loci::backup::gap") {
		t.Fatalf("a chain with a gap: %d %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(palace4, "store")); err == nil {
		t.Fatal("a refused restore created a store")
	}
	if _, errOut, code := runCLI(home4, "", []string{"restore", "--data-dir", palace4, full, inc1, inc2}, nil); code != 0 {
		t.Fatalf("restore of the chain: %s", errOut)
	}
	d4 := start(t, home4, palace4)
	if got := allDrawers(t, d4); !maps.Equal(got, final) {
		t.Fatalf("the chain restores %d drawers, the original holds %d", len(got), len(final))
	}
	if a, b := d.do("GET", "/api/status", nil), d4.do("GET", "/api/status", nil); fmt.Sprint(a.body["counts"]) != fmt.Sprint(b.body["counts"]) {
		t.Fatalf("counts: original %v, restored %v", a.body["counts"], b.body["counts"])
	}
}

// kill -9 of `loci backup` while it writes leaves no file at --out (the
// temporary file it wrote is not at that name), and the daemon serves on.
func TestBackupKilledLeavesNoFile(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 9))
			for i := range 150 {
				if _, err := fileDrawer(d.addr, "wing", fmt.Sprintf("room-%d", w), backupText(r, 60)+fmt.Sprint(" ", i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	dir := t.TempDir()
	out := filepath.Join(dir, "killed.backup")
	caught := 0
	for attempt := 0; attempt < 30 && caught < 3; attempt++ {
		cmd := exec.Command(bin, "--addr", d.addr, "backup", "--out", out)
		cmd.Env = env(home)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var tmp string
		deadline := time.Now().Add(20 * time.Second)
		for tmp == "" && time.Now().Before(deadline) {
			m, _ := filepath.Glob(filepath.Join(dir, ".killed.backup.tmp-*"))
			if len(m) > 0 {
				tmp = m[0]
				break
			}
			if _, err := os.Stat(out); err == nil {
				break // finished before a temporary file was seen
			}
		}
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		if _, err := os.Stat(out); err == nil {
			// The backup finished before the kill: a whole file, which
			// verify accepts; try again.
			if _, errOut, code := runCLI(home, "", []string{"backup", "verify", out}, nil); code != 0 {
				t.Fatalf("a finished backup does not verify: %s", errOut)
			}
			os.Remove(out)
			continue
		}
		if tmp != "" {
			caught++
			if _, _, code := runCLI(home, "", []string{"backup", "verify", out}, nil); code == 0 {
				t.Fatal("verify accepts a file at --out after a kill")
			}
			os.Remove(tmp)
		}
	}
	if caught == 0 {
		t.Fatal("no backup was killed while it wrote: the test proved nothing")
	}
	if r := d.do("GET", "/api/status", nil); r.status != 200 {
		t.Fatalf("the daemon after killed backups: %d", r.status)
	}
	// And one more backup goes through.
	if _, errOut, code := d.cli("", "backup", "--out", out); code != 0 {
		t.Fatalf("backup after the kills: %s", errOut)
	}
}

// Every broken file and every wrong use is refused with {error, code,
// help} and changes nothing.
func TestBackupRefusals(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	r := rand.New(rand.NewPCG(5, 5))
	for i := range 40 {
		if _, err := fileDrawer(d.addr, "wing", "room", backupText(r, 20)+fmt.Sprint(" ", i)); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	full := filepath.Join(dir, "full.backup")
	if _, errOut, code := d.cli("", "backup", "--out", full); code != 0 {
		t.Fatalf("backup: %s", errOut)
	}
	good, _ := os.ReadFile(full)

	// REST: the query is checked; the palace must match.
	for _, c := range []struct {
		query  string
		status int
		code   string
	}{
		{"?since=abc", 400, "loci::input::invalid"},
		{"?since=99999999999", 400, "loci::backup::invalid"},
		{"?palace=another", 409, "loci::backup::palace_mismatch"},
		{"?bogus=1", 400, "loci::input::invalid"},
	} {
		res := d.do("GET", "/api/backup"+c.query, nil)
		if res.status != c.status || res.code() != c.code || res.body["help"] == "" || res.body["error"] == "" {
			t.Fatalf("GET /api/backup%s: %d %s", c.query, res.status, res.raw)
		}
	}
	// Never an MCP tool.
	tools, err := mcpSession(t, d).ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		if strings.Contains(tool.Name, "backup") || strings.Contains(tool.Name, "restore") {
			t.Fatalf("MCP offers %s", tool.Name)
		}
	}
	// --since of another palace's backup is refused by the daemon.
	homeO, palaceO := newPalace(t)
	other := start(t, homeO, palaceO)
	if _, err := fileDrawer(other.addr, "w", "r", "another palace"); err != nil {
		t.Fatal(err)
	}
	otherFull := filepath.Join(dir, "other.backup")
	if _, errOut, code := other.cli("", "backup", "--out", otherFull); code != 0 {
		t.Fatalf("backup: %s", errOut)
	}
	ovOut, ovErr, ovCode := runCLI(home, "", []string{"backup", "verify", otherFull, "--json"}, nil)
	var ohdr map[string]any
	if ovCode != 0 || json.Unmarshal([]byte(ovOut), &ohdr) != nil || get[string](ohdr, "palace_id") == "" {
		t.Fatalf("verify of the other palace's backup: %s %s", ovOut, ovErr)
	}
	if _, errOut, code := d.cli("", "backup", "--since", otherFull, "--out", filepath.Join(dir, "x.backup")); code == 0 || !strings.Contains(errOut, "palace_mismatch") {
		t.Fatalf("an incremental on another palace's backup: %d %s", code, errOut)
	}

	flip := func(at int) []byte { b := bytes.Clone(good); b[at] ^= 0x55; return b }
	future := bytes.Clone(good)
	copy(future, bytes.Replace(good[:4096], []byte(`"version":1,`), []byte(`"version":9,`), 1))
	for _, c := range []struct {
		name, code, mention string
		body                []byte
	}{
		{"truncated", "loci::backup::truncated", fmt.Sprintf("byte %d", len(good)-100), good[:len(good)-100]},
		{"corrupted", "loci::backup::corrupt", "digest", flip(len(good) - 30)},
		{"future", "loci::backup::future_version", "version 9", future},
		{"not-a-backup", "loci::backup::invalid", "not a loci backup", []byte("just some text, not a backup\n")},
	} {
		p := filepath.Join(dir, c.name+".backup")
		if err := os.WriteFile(p, c.body, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, errOut, code := runCLI(home, "", []string{"backup", "verify", p}, nil); code != 1 || !strings.Contains(errOut, c.code) || !strings.Contains(errOut, c.mention) || !strings.Contains(errOut, "help:") {
			t.Fatalf("verify %s: %d %s", c.name, code, errOut)
		}
		homeR, palaceR := newPalace(t)
		if _, errOut, code := runCLI(homeR, "", []string{"restore", p, "--data-dir", palaceR}, nil); code != 1 || !strings.Contains(errOut, c.code) {
			t.Fatalf("restore %s: %d %s", c.name, code, errOut)
		}
		if _, err := os.Stat(palaceR); err == nil {
			t.Fatalf("restore of a %s file created %s", c.name, palaceR)
		}
	}
	// The daemon holds its palace: restore is refused and changes nothing.
	if _, errOut, code := runCLI(home, "", []string{"restore", full, "--data-dir", palace, "--force"}, nil); code != 1 || !strings.Contains(errOut, "loci::backup::daemon_running") {
		t.Fatalf("restore under a daemon: %d %s", code, errOut)
	}
	before := allDrawers(t, d)
	stopDaemon(t, d)
	// A palace holding data: refused without --force, replaced with it.
	if _, errOut, code := runCLI(home, "", []string{"restore", otherFull, "--data-dir", palace}, nil); code != 1 || !strings.Contains(errOut, "loci::backup::not_empty") {
		t.Fatalf("restore over data without --force: %d %s", code, errOut)
	}
	d = start(t, home, palace)
	if got := allDrawers(t, d); !maps.Equal(got, before) {
		t.Fatal("a refused restore changed the palace")
	}
	stopDaemon(t, d)
	out, errOut, code := runCLI(home, "", []string{"restore", otherFull, "--data-dir", palace, "--force"}, nil)
	if code != 0 {
		t.Fatalf("restore --force: %s", errOut)
	}
	// It says that the palace's identity changes (the backup is of
	// another palace).
	if !strings.Contains(out, "identity changes from") || !strings.Contains(out, get[string](ohdr, "palace_id")) {
		t.Fatalf("restore --force of another palace's backup says nothing of it: %s", out)
	}
	if m, _ := filepath.Glob(filepath.Join(palace, "store.*")); len(m) != 0 {
		t.Fatalf("left beside the store: %v", m)
	}
	d = start(t, home, palace)
	if got := allDrawers(t, d); len(got) != 1 {
		t.Fatalf("after restore --force the palace holds %d drawers, want the other palace's 1", len(got))
	}
}

// With authentication on, GET /api/backup needs the token.
func TestBackupNeedsTheToken(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	secret := "backup-secret-0123456789abcdef"
	d := start(t, home, palace, "LOCI_AUTH_ENABLED=true", "LOCI_AUTH_TOKEN="+secret)
	if r := d.do("GET", "/api/backup", nil); r.status != 401 || r.code() != "loci::auth::unauthorized" {
		t.Fatalf("without a token: %d %s", r.status, r.raw)
	}
	out := filepath.Join(t.TempDir(), "b.backup")
	if _, errOut, code := runCLI(home, "", []string{"--addr", d.addr, "backup", "--out", out}, []string{"LOCI_AUTH_TOKEN=" + secret}); code != 0 {
		t.Fatalf("with the token: %s", errOut)
	}
	if _, errOut, code := runCLI(home, "", []string{"backup", "verify", out}, nil); code != 0 {
		t.Fatalf("verify: %s", errOut)
	}
}
