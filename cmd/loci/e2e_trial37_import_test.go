package main_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loci-dev/loci/export"
)

// The trial of issue 37 found the import side's checks too loose or too
// quiet; each test here is one of its findings.

// withImportMax writes a configuration with import.max_bytes.
func withImportMax(t *testing.T, home, max string) string {
	t.Helper()
	cfg := filepath.Join(home, "loci.toml")
	if err := os.WriteFile(cfg, []byte("[import]\nmax_bytes = "+max+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return "LOCI_CONFIG=" + cfg
}

// twoWingPalace is the export of a palace with wings alpha and beta, one
// drawer each.
func twoWingPalace(t *testing.T) []byte {
	t.Helper()
	home, palace := newPalace(t)
	a := start(t, home, palace)
	for _, p := range []string{"/api/wings/alpha/rooms/r/drawers", "/api/wings/beta/rooms/r/drawers"} {
		if r := a.do("POST", p, map[string]any{"content": "A memory filed under " + p}); r.status != 201 {
			t.Fatalf("write: %s", r.raw)
		}
	}
	stop(t, a)
	return exportStore(t, palace, export.Options{})
}

// Item 3: an upload longer than import.max_bytes is refused with 413 and
// {error, code, help} while it is still arriving (a chunked body of
// unknown length), and at once when its Content-Length says so; nothing is
// left in the spool folder.
func TestTrial37ImportUploadIsBounded(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace, withImportMax(t, home, "1048576"))
	before := counts(d)
	checkRefusal := func(what string, status int, raw []byte) {
		t.Helper()
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		if status != 413 || body["code"] != "loci::export::too_large" || !strings.Contains(get[string](body, "error"), "import.max_bytes (1048576 bytes)") {
			t.Fatalf("%s: %d %s", what, status, fault(string(raw)))
		}
		if help := get[string](body, "help"); !strings.Contains(help, "loci export --wing") || !strings.Contains(help, "import.max_bytes") {
			t.Fatalf("%s: help %q", what, help)
		}
	}

	// A body of unknown length (chunked), 64 MiB if it were all sent,
	// written on a raw connection while its answer is read: the answer
	// must come while the body is still being sent.
	const total = 64 << 20
	conn, err := net.Dial("tcp", d.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var sent atomic.Int64
	go func() {
		w := bufio.NewWriter(conn)
		fmt.Fprintf(w, "POST /api/imports HTTP/1.1\r\nHost: %s\r\nTransfer-Encoding: chunked\r\nContent-Type: application/x-ndjson\r\n\r\n", d.addr)
		chunk := strings.Repeat("x", 64<<10)
		for sent.Load() < total {
			fmt.Fprintf(w, "%x\r\n%s\r\n", len(chunk), chunk)
			if w.Flush() != nil {
				return
			}
			sent.Add(int64(len(chunk)))
		}
		fmt.Fprintf(w, "0\r\n\r\n")
		_ = w.Flush()
	}()
	_ = conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("chunked upload: %v", err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	atAnswer := sent.Load()
	conn.Close()
	checkRefusal("a chunked upload", resp.StatusCode, raw)
	if atAnswer >= total/2 {
		t.Fatalf("the refusal came after %d of %d bytes: the body was read to its end", atAnswer, total)
	}

	// A Content-Length over the limit: refused before the body is read.
	r := d.do("POST", "/api/imports", strings.Repeat("y", 2<<20))
	checkRefusal("a body of 2 MiB", r.status, []byte(r.raw))
	eventually(t, 10*time.Second, "the spool to be empty", func() bool { return len(spoolLeft(palace)) == 0 })
	if c := counts(d); c != before {
		t.Fatalf("counts %s, were %s", c, before)
	}

	// A real export under the limit is still taken.
	file := twoWingPalace(t)
	if r := d.do("POST", "/api/imports?dry_run=true", string(file)); r.status != 200 {
		t.Fatalf("a small import: %d %s", r.status, fault(r.raw))
	}
}

// Items 4 and 10: --skip-unknown counts and names what it skipped (type
// and line) in the dry run and in the job's report, "skipped" is a list
// (never null), and an import counts the same records as the export's
// end record.
func TestTrial37ImportReportsSkippedAndCountsAsTheExport(t *testing.T) {
	t.Parallel()
	file := twoWingPalace(t)
	lines := strings.Split(strings.TrimSuffix(string(file), "\n"), "\n")
	var end export.End
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &end); err != nil {
		t.Fatal(err)
	}
	home, palace := newPalace(t)
	d := start(t, home, palace)

	// A file with nothing skipped: the lists are [], the count is the
	// export's.
	r := d.do("POST", "/api/imports?dry_run=true", string(file))
	sk, okS := r.body["skipped"].([]any)
	cf, okC := r.body["conflicts"].([]any)
	if r.status != 200 || !okS || !okC || len(sk)+len(cf) != 0 {
		t.Fatalf("dry run: %d %s", r.status, fault(r.raw))
	}
	if got := get[float64](r.body, "records"); int64(got) != end.Records {
		t.Fatalf("the dry run counts %v records, the export's end record %d", got, end.Records)
	}

	withUnknown := reseal(t, append([]string{lines[0], `{"type":"widget","id":"x"}`}, lines[1:]...))
	check := func(what string, rep map[string]any) {
		t.Helper()
		if get[float64](rep, "totals", "skipped") != 1 || get[float64](rep, "types", "widget", "skipped") != 1 {
			t.Fatalf("%s: the skipped record is not counted: %v", what, rep)
		}
		sk := get[[]any](rep, "skipped")
		if len(sk) != 1 {
			t.Fatalf("%s: skipped %v", what, sk)
		}
		s := sk[0].(map[string]any)
		if s["type"] != "widget" || s["line"] != float64(2) || !strings.Contains(get[string](s, "reason"), "skip-unknown") {
			t.Fatalf("%s: skipped %v", what, s)
		}
		if int64(get[float64](rep, "records")) != end.Records+1 {
			t.Fatalf("%s: %v records, the file holds %d before its end", what, rep["records"], end.Records+1)
		}
	}
	r = d.do("POST", "/api/imports?dry_run=true&skip_unknown=true", withUnknown)
	if r.status != 200 {
		t.Fatalf("dry run: %d %s", r.status, fault(r.raw))
	}
	check("dry run", r.body)

	r = d.do("POST", "/api/imports?skip_unknown=true", withUnknown)
	if r.status != 202 {
		t.Fatalf("import: %d %s", r.status, fault(r.raw))
	}
	job := waitJob(t, d, get[string](r.body, "id"), 60*time.Second, finished)
	if job["status"] != "completed" {
		t.Fatalf("job: %v", job)
	}
	check("job", get[map[string]any](job, "result"))
	if cur, tot := get[float64](job, "progress", "current"), get[float64](job, "progress", "total"); cur != tot || int64(tot) != end.Records+1 {
		t.Fatalf("progress %v/%v", cur, tot)
	}
	_ = palace
}

// Item 6: a --wing-map whose FROM is not a wing of the file is refused,
// naming it and the file's wings, nothing changed; one onto a wing the
// palace holds says, in the dry run, that the file's wing is merged into
// it, and the import does so.
func TestTrial37WingMapChecked(t *testing.T) {
	t.Parallel()
	file := string(twoWingPalace(t))
	home, palace := newPalace(t)
	d := start(t, home, palace)
	if r := d.do("POST", "/api/wings/team/rooms/mine/drawers", map[string]any{"content": "The palace's own memory in team."}); r.status != 201 {
		t.Fatalf("write: %s", r.raw)
	}
	before := counts(d)
	for _, q := range []string{"?wing_map=nosuch%3Dx", "?dry_run=true&wing_map=nosuch%3Dx", "?wing_map=alpha%3Dteam&wing_map=nosuch%3Dx"} {
		r := d.do("POST", "/api/imports"+q, file)
		if r.status != 400 || r.code() != "loci::input::invalid" || !strings.Contains(get[string](r.body, "error"), `"nosuch"`) {
			t.Fatalf("%s: %d %s", q, r.status, fault(r.raw))
		}
		if help := get[string](r.body, "help"); !strings.Contains(help, `"alpha", "beta"`) {
			t.Fatalf("%s: help %q does not list the file's wings", q, help)
		}
	}
	if got := counts(d); got != before {
		t.Fatalf("a refused import changed the counts: %s, were %s", got, before)
	}
	r := d.do("POST", "/api/imports?dry_run=true&wing_map=alpha%3Dteam&wing_map=beta%3Dfresh", file)
	notes := strings.Join(toStrings(get[[]any](r.body, "notes")), "\n")
	if r.status != 200 || !strings.Contains(notes, `wing-map alpha=team: the palace already holds a wing "team": the file's wing is merged into it`) ||
		!strings.Contains(notes, `wing-map beta=fresh: the file's wing "beta" becomes a new wing "fresh"`) {
		t.Fatalf("dry run: %d notes %q", r.status, notes)
	}
	r = d.do("POST", "/api/imports?wing_map=alpha%3Dteam", file)
	if r.status != 202 {
		t.Fatalf("import: %d %s", r.status, fault(r.raw))
	}
	job := waitJob(t, d, get[string](r.body, "id"), 60*time.Second, finished)
	if notes := strings.Join(toStrings(get[[]any](job, "result", "notes")), "\n"); !strings.Contains(notes, "merged into it") {
		t.Fatalf("the job's report does not say the wing was merged: %q", notes)
	}
	if r := d.do("GET", "/api/wings/team", nil); r.status != 200 || get[float64](r.body, "drawers") != 2 {
		t.Fatalf("wing team: %d %s", r.status, r.raw)
	}
	if r := d.do("GET", "/api/wings/alpha", nil); r.status != 404 {
		t.Fatalf("wing alpha exists: %s", r.raw)
	}
	_ = palace
}

func toStrings(v []any) []string {
	out := make([]string, len(v))
	for i, x := range v {
		out[i], _ = x.(string)
	}
	return out
}

// Item 13: a loci backup given to POST /api/imports is named as a backup,
// with the command that restores it.
func TestTrial37BackupGivenToImport(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	if r := d.do("POST", "/api/wings/w/rooms/r/drawers", map[string]any{"content": "A memory to back up."}); r.status != 201 {
		t.Fatalf("write: %s", r.raw)
	}
	b := d.do("GET", "/api/backup", nil)
	if b.status != 200 || !strings.HasPrefix(b.raw, `{"format":"loci-backup"`) {
		t.Fatalf("backup: %d %s", b.status, fault(b.raw))
	}
	before := counts(d)
	r := d.do("POST", "/api/imports", b.raw)
	if r.status != 400 || !strings.Contains(get[string](r.body, "error"), "is a loci backup") || !strings.Contains(get[string](r.body, "help"), "loci restore") {
		t.Fatalf("a backup imported: %d %s", r.status, fault(r.raw))
	}
	if got := counts(d); got != before || len(spoolLeft(palace)) != 0 {
		t.Fatalf("counts %s (were %s), spool %v", got, before, spoolLeft(palace))
	}
}
