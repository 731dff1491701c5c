package transport

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/backup"
	"github.com/loci-dev/loci/config"
	"github.com/loci-dev/loci/services"
	"github.com/loci-dev/loci/services/kinds"
	"github.com/loci-dev/loci/store"
)

// GET /api/backups lists backup.dir and POST /api/backups queues a
// backup job (202 with the job); no query parameter or body field names
// a path, and a refused request queues nothing.
func TestBackupRoutes(t *testing.T) {
	ts := newTestServer(t, false, "")
	dir := t.TempDir()
	ts.Backups = &services.Backups{DB: ts.Palace.DB, Jobs: ts.Jobs, Settings: config.Backup{Keep: 3, WarnAfter: "7d"}, Dir: dir}

	code, out := ts.call(t, http.MethodGet, "/api/backups", "")
	if code != http.StatusOK || out["dir"] != dir || out["last"] != nil {
		t.Fatalf("GET /api/backups: %d %v", code, out)
	}
	if list, ok := out["backups"].([]any); !ok || len(list) != 0 {
		t.Fatalf("backups %v, want an empty list", out["backups"])
	}
	for _, c := range []struct{ method, path, body, want string }{
		{http.MethodGet, "/api/backups?dir=/tmp", "", "dir: is not a query parameter of GET /api/backups"},
		{http.MethodPost, "/api/backups?path=/tmp/x.backup", "{}", "path: is not a query parameter of POST /api/backups"},
		{http.MethodPost, "/api/backups", `{"path":"/tmp/x.backup"}`, "path"},
		{http.MethodPost, "/api/backups", `{"dir":"/tmp"}`, "dir"},
		{http.MethodPost, "/api/backups", `[]`, ""},
		{http.MethodPost, "/api/jobs", `{"type":"backup","path":"/tmp/x.backup"}`, "path: is not a field of a backup job"},
	} {
		t.Run(c.method+" "+c.path+" "+c.body, func(t *testing.T) {
			code, out := ts.call(t, c.method, c.path, c.body)
			if code != http.StatusBadRequest || out["code"] != "loci::input::invalid" || !strings.Contains(out["error"].(string), c.want) || out["help"] == "" {
				t.Fatalf("%d %v, want 400 loci::input::invalid naming %q", code, out, c.want)
			}
		})
	}
	if jobs, _ := ts.Jobs.List(context.Background(), "", kinds.KindBackup, 0); len(jobs) != 0 {
		t.Fatalf("refused requests queued %d backup jobs", len(jobs))
	}
	for _, body := range []string{"", "{}"} {
		code, out = ts.call(t, http.MethodPost, "/api/backups", body)
		if code != http.StatusAccepted || out["kind"] != kinds.KindBackup || out["requested_by"] != "http" || out["id"] == "" {
			t.Fatalf("POST /api/backups %q: %d %v", body, code, out)
		}
	}
	if jobs, _ := ts.Jobs.List(context.Background(), "", kinds.KindBackup, 0); len(jobs) != 2 {
		t.Fatalf("%d backup jobs, want 2", len(jobs))
	}
	// The status report carries the backups' state.
	ts.Reporter = ts.reporter()
	ts.Reporter.Backups = ts.Backups
	code, out = ts.call(t, http.MethodGet, "/api/status", "")
	if b, ok := out["backup"].(map[string]any); code != http.StatusOK || !ok || b["dir"] != dir {
		t.Fatalf("status backup: %d %v", code, out["backup"])
	}
}

// A backup streamed whole through GET /api/backup counts as the
// palace's last backup in GET /api/backups and the status, says it was
// downloaded and names no path; a refused request records nothing.
func TestDownloadedBackupCounts(t *testing.T) {
	ts := newTestServer(t, false, "")
	dir := t.TempDir()
	ts.Store = ts.Palace.DB
	ts.Backups = &services.Backups{DB: ts.Palace.DB, Jobs: ts.Jobs, Settings: config.Backup{Schedule: config.BackupSchedule{Every: "1d"}, Keep: 3, WarnAfter: "7d"}, Dir: dir}
	ts.Reporter = ts.reporter()
	ts.Reporter.Backups = ts.Backups
	if _, err := ts.Palace.CreateDrawer(context.Background(), store.NewDrawer{Wing: "w", Room: "r", Content: "a drawer to back up", Source: store.Source{Kind: "manual"}}); err != nil {
		t.Fatal(err)
	}
	code, out := ts.call(t, http.MethodGet, "/api/backups", "")
	if w, _ := out["warning"].(string); code != http.StatusOK || out["last"] != nil || !strings.Contains(w, "no backup yet: the palace holds 1 current drawer,") {
		t.Fatalf("before a download: %d %v", code, out)
	}
	// A refused download (since beyond the store) records nothing.
	if code, _ := ts.call(t, http.MethodGet, "/api/backup?since=999999", ""); code != http.StatusBadRequest {
		t.Fatalf("since beyond: %d", code)
	}
	if _, out = ts.call(t, http.MethodGet, "/api/backups", ""); out["last"] != nil {
		t.Fatalf("a refused download counted: %v", out["last"])
	}
	resp, err := http.Get(ts.http.URL + "/api/backup")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/backup: %d %v", resp.StatusCode, err)
	}
	h, err := backup.DecodeHeader(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/api/backups", "/api/status"} {
		_, out = ts.call(t, http.MethodGet, path, "")
		st := out
		if path == "/api/status" {
			st, _ = out["backup"].(map[string]any)
		}
		last, _ := st["last"].(map[string]any)
		if last == nil || last["downloaded"] != true || last["name"] != services.DownloadedName || last["store_version"] != float64(h.StoreVersion) ||
			last["size"] != float64(len(body)) || st["warning"] != nil {
			t.Fatalf("%s after a download: %v", path, st)
		}
	}
	if list, _ := out["backups"].([]any); len(list) != 0 {
		t.Fatalf("the download listed as a file in backup.dir: %v", list)
	}
}

// The backup answers as clients read them.
func TestBackupAnswers(t *testing.T) {
	at := time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC)
	next := at.Add(24 * time.Hour)
	last := api.BackupFile{Name: "loci-0b6f4c1e-6a1d-4c5e-9a49-1f3c2d4e5f60-20261126T030000.000Z.backup", Size: 4096,
		CreatedAt: at, StoreVersion: 812, Drawers: 120}
	st := api.BackupStatus{Dir: "/home/u/.local/share/loci/backups", Schedule: "every 1d at 03:00 UTC", NextDue: &next, Keep: 7,
		WarnAfterSecs: 604800, Last: &last, AgeSecs: 3600}
	sameAnswer(t, "backup list", api.BackupList{BackupStatus: st, Backups: []api.BackupFile{last,
		{Name: "loci-0b6f4c1e-6a1d-4c5e-9a49-1f3c2d4e5f60-20261125T030000.000Z.backup", Size: 17, CreatedAt: at.Add(-24 * time.Hour), Error: "backup header: truncated"}}})
	_, _, text := services.BackupWarning(services.BackupFacts{Held: services.Held{Current: 3, Stored: 3}, Now: at, WarnAfter: 7 * 24 * time.Hour, Dir: st.Dir})
	warn := api.BackupStatus{Dir: st.Dir, Keep: 7, WarnAfterSecs: 604800, Warning: text}
	// A readable store's status: its counts and migrations are there (they
	// are null only while a shared store is unreachable).
	sameAnswer(t, "status backup", api.Status{Version: "1.0.0", StartedAt: "2026-11-26T03:00:00Z", Address: "127.0.0.1:8420", Mode: "full", Backup: &warn,
		Migrations: &api.Migrations{}, Counts: &api.Counts{}})
	// A backup a client downloaded (GET /api/backup) is the last one.
	dl := api.BackupFile{Name: services.DownloadedName, Downloaded: true, Size: 812345, CreatedAt: at.Add(time.Hour), StoreVersion: 840, Since: 812, Drawers: 121}
	withDownload := st
	withDownload.Last, withDownload.Downloaded, withDownload.AgeSecs = &dl, &dl, 0
	sameAnswer(t, "backup list with a download", api.BackupList{BackupStatus: withDownload, Backups: []api.BackupFile{last}})
}
