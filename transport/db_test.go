package transport

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/dbadmin"
	"github.com/loci-dev/loci/dbadmin/sqlview"
	"github.com/loci-dev/loci/fault"
)

// withDBAdmin gives the test server a real admin listener over its store,
// on a port the OS chooses (db.port 0), as the daemon builds it.
func withDBAdmin(t *testing.T, ts *testServer) *dbadmin.Admin {
	t.Helper()
	set := ts.Config.DB
	set.Port = 0
	a := dbadmin.New(dbadmin.Config{Settings: set, AuthEnabled: func() bool { return ts.Config.Auth.Enabled },
		CheckToken: ts.Auth.Check, Engine: sqlview.New(ts.Palace.DB, sqlview.Limits{ScanRows: set.MaxScanRows, ResultRows: set.MaxResultRows,
			Timeout: time.Duration(set.QueryTimeoutSecs) * time.Second}), Version: "test", Log: ts.Log})
	ts.DBAdmin = a
	t.Cleanup(func() { _, _ = a.Close() })
	return a
}

// dbState decodes an answer of /api/db.
func dbState(t *testing.T, raw map[string]any) api.DBState {
	t.Helper()
	b, _ := json.Marshal(raw)
	var st api.DBState
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("not a DBState: %s", b)
	}
	return st
}

// /api/db answers the listener's state for GET and DELETE (closing a
// closed listener succeeds), under any memory mode (never mode-gated); a
// POST whose body is not an api.DBOpen (bad JSON, an unknown field, a
// wrong type, data after the object) is loci::input::invalid naming the
// problem and opens nothing; a query string is refused; PUT is 405; a
// server built without a listener says so instead of answering a state.
func TestDBEndpointEmbedded(t *testing.T) {
	ts := newTestServer(t, false, "")
	if code, body := ts.call(t, "GET", "/api/db", ""); code != 500 || body["code"] != "loci::server::failed" || !strings.Contains(fmt.Sprint(body["error"]), "not set up") {
		t.Fatalf("GET /api/db without a listener: %d %v", code, body)
	}
	a := withDBAdmin(t, ts)
	for _, mode := range []string{"full", "read_only", "disabled"} {
		code, body := ts.call(t, "GET", "/api/db", "", "X-Loci-Mode", mode)
		st := dbState(t, body)
		if code != 200 || st.Open || st.User != "loci" || st.URL != "" || !reflect.DeepEqual(st, a.State()) {
			t.Fatalf("GET /api/db (%s): %d %v", mode, code, body)
		}
	}
	for _, c := range []struct{ body, says string }{
		{"{", "not a valid JSON object"},
		{`{"hostname":"0.0.0.0"}`, "hostname"},
		{`{"port":"8000"}`, "port"},
		{`{"allow_remote":"yes"}`, "allow_remote"},
		{`{"allowed_origins":"https://a.example"}`, "allowed_origins"},
		{`{} {}`, "after the JSON object"},
		{`[]`, "body"},
	} {
		code, body := ts.call(t, "POST", "/api/db", c.body)
		if code != 400 || body["code"] != "loci::input::invalid" || !strings.Contains(fmt.Sprint(body["error"]), c.says) || body["help"] == "" {
			t.Fatalf("POST /api/db %s: %d %v", c.body, code, body)
		}
		if a.State().Open {
			t.Fatalf("POST /api/db %s opened the listener", c.body)
		}
	}
	if code, body := ts.call(t, "GET", "/api/db?open=1", ""); code != 400 || body["code"] != "loci::input::invalid" {
		t.Fatalf("GET /api/db?open=1: %d %v", code, body)
	}
	if code, body := ts.call(t, "DELETE", "/api/db", ""); code != 200 || dbState(t, body).Open {
		t.Fatalf("DELETE /api/db of a closed listener: %d %v", code, body)
	}
	if code, _ := ts.call(t, "PUT", "/api/db", "{}"); code != 405 {
		t.Fatalf("PUT /api/db: %d", code)
	}
}

// POST /api/db opens the listener (an empty body takes db.*; the state
// names its ws:// URL and /health answers there), a second POST with the
// same settings reports it, other settings are loci::db::already_running;
// DELETE closes it (its address then refuses connections). Every answer
// is the listener's own state.
func TestDBEndpointOpenClose(t *testing.T) {
	ts := newTestServer(t, false, "")
	a := withDBAdmin(t, ts)
	code, body := ts.call(t, "POST", "/api/db", "")
	st := dbState(t, body)
	if code != 200 || !st.Open || st.Address == "" || st.URL != "ws://"+st.Address+"/rpc" || st.Auth || st.User != "loci" {
		t.Fatalf("POST /api/db: %d %v", code, body)
	}
	resp, err := http.Get("http://" + st.Address + "/health")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /health on the listener: %v %v", resp, err)
	}
	resp.Body.Close()
	if code, body := ts.call(t, "POST", "/api/db", "{}"); code != 200 || dbState(t, body).Address != st.Address {
		t.Fatalf("POST /api/db again with the same settings: %d %v", code, body)
	}
	if code, body := ts.call(t, "POST", "/api/db", `{"allowed_origins":["https://console.example"]}`); code != 409 || body["code"] != "loci::db::already_running" {
		t.Fatalf("POST /api/db with other settings: %d %v", code, body)
	}
	if code, body := ts.call(t, "GET", "/api/db", ""); code != 200 || !reflect.DeepEqual(dbState(t, body).URL, a.State().URL) || !dbState(t, body).Open {
		t.Fatalf("GET /api/db while open: %d %v", code, body)
	}
	code, body = ts.call(t, "DELETE", "/api/db", "")
	if code != 200 || dbState(t, body).Open || a.State().Open {
		t.Fatalf("DELETE /api/db: %d %v", code, body)
	}
	if resp, err := http.Get("http://" + st.Address + "/health"); err == nil {
		resp.Body.Close()
		t.Fatalf("the closed listener still answers: %d", resp.StatusCode)
	}
}

// A fault with RetryAfter (the shared store out of reach) is answered
// with its status and the Retry-After header; others have none.
func TestRetryAfterHeader(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("POST", "/api/notes", nil)
	renderError(log, rec, req, &fault.Error{Code: fault.StoreBackendFailed, Status: 503, RetryAfter: 5, Msg: "the shared store is unreachable",
		Help: "try again", Err: errors.New("dial tcp: connection refused")})
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "5" || !strings.Contains(rec.Body.String(), "loci::store::backend_failed") {
		t.Fatalf("%d %q %s", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
	rec = httptest.NewRecorder()
	renderError(log, rec, req, fault.New(fault.StoreBackendFailed, "refused", "see the log"))
	if rec.Code != 500 || rec.Header().Get("Retry-After") != "" {
		t.Fatalf("%d %q", rec.Code, rec.Header().Get("Retry-After"))
	}
}

// The state of /api/db as `loci db status` and the dashboard read it,
// open and closed, is pinned (its token-free shape included).
func TestDBStateAnswer(t *testing.T) {
	opened := time.Date(2026, 11, 26, 20, 0, 0, 0, time.UTC)
	limits := api.DBLimits{QueryTimeoutSecs: 30, MaxScanRows: 2000000, MaxResultRows: 10000, MaxResultBytes: 64 << 20}
	sameAnswer(t, "db state open", api.DBState{Open: true, Address: "127.0.0.1:8000", URL: "ws://127.0.0.1:8000/rpc", Bind: "127.0.0.1", Port: 8000,
		AllowedOrigins: []string{"https://console.example"}, OpenedAt: &opened, Connections: 2, Sessions: 3, Encodings: []string{"json", "cbor"},
		User: "loci", Auth: true, Limits: limits})
	sameAnswer(t, "db state closed", api.DBState{Bind: "127.0.0.1", Port: 8000, AllowedOrigins: []string{}, Encodings: []string{"json", "cbor"},
		User: "loci", Limits: limits})
}
