package transport

import (
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/loci-dev/loci/fault"
)

// Issue 31: /api/db on the embedded store says the admin listener is not
// built in this release (not a bare "no route"), for every method; the
// shared store's refusal (loci::db::unavailable) is tested end to end
// (cmd/loci TestSharedStoreDBEndpoint).
func TestDBEndpointEmbedded(t *testing.T) {
	ts := newTestServer(t, false, "")
	for _, m := range []string{"GET", "POST", "DELETE"} {
		code, _, body := ts.request(t, m, "/api/db", "")
		if code != 404 || !strings.Contains(body, "loci::server::route_not_found") || !strings.Contains(body, "not built in this release") {
			t.Fatalf("%s /api/db: %d %s", m, code, body)
		}
	}
	if code, _, body := ts.request(t, "PUT", "/api/db", ""); code != 405 {
		t.Fatalf("PUT /api/db: %d %s", code, body)
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
