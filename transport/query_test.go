package transport

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/loci-dev/loci/services"
)

// Every query parameter of every REST route is read strictly, one way: a
// parameter the route does not take, one given twice, a malformed query
// string, a number that is not a whole number or is out of its range, a
// boolean that is not true or false and an instant that is neither RFC
// 3339 nor a date are each 400 loci::input::invalid naming the parameter,
// and change nothing.
func TestQueryParametersAreStrict(t *testing.T) {
	ts := newTestServer(t, false, "")
	ts.Graph = &services.Graph{DB: ts.Palace.DB, Sys: ts.Palace.Sys}
	const id = "6f0f7ad5-5d4c-4b40-9a52-7d2d3bcb1c2a"
	if _, _, err := ts.Palace.CreateRoom(context.Background(), "w", "r", ""); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ method, path, param string }{
		// Parameters a route does not take.
		{"GET", "/api/wings?limit=x", "limit"},
		{"GET", "/api/wings?limit=5", "limit"},
		{"GET", "/api/stats/filed?days=abc", "days"},
		{"GET", "/api/status?verbose=1", "verbose"},
		{"GET", "/api/health?x=1", "x"},
		{"GET", "/api/wings/w/rooms?limit=x", "limit"},
		{"GET", "/api/drawers/" + id + "/history?limit=2", "limit"},
		{"GET", "/api/search?q=a&lmit=3", "lmit"},
		{"GET", "/api/jobs?state=running", "state"},
		{"POST", "/api/wings?name=w2", "name"},
		{"POST", "/api/jobs/" + id + "/cancel?force=true", "force"},
		// Given twice, or not a query string.
		{"GET", "/api/wings/w/rooms/r/drawers?limit=1&limit=2", "limit"},
		{"GET", "/api/entities?limit=%zz", "query"},
		// Whole numbers and their ranges.
		{"GET", "/api/stats/filed?buckets=abc", "buckets"},
		{"GET", "/api/stats/filed?buckets=367", "buckets"},
		{"GET", "/api/stats/filed?step_secs=1.5", "step_secs"},
		{"GET", "/api/stats/filed?step_secs=59", "step_secs"},
		{"GET", "/api/wings/w/rooms/r/drawers?limit=x", "limit"},
		{"GET", "/api/wings/w/rooms/r/drawers?limit=-1", "limit"},
		{"GET", "/api/wings/w/rooms/r/drawers?limit=201", "limit"},
		{"GET", "/api/diary?agent_identity=a&limit=x", "limit"},
		{"GET", "/api/entities?limit=ten", "limit"},
		{"GET", "/api/graph?depth=x", "depth"},
		{"GET", "/api/graph?depth=4", "depth"},
		{"GET", "/api/graph?limit=201", "limit"},
		{"GET", "/api/wake-up?agent_identity=a&max_items=x", "max_items"},
		{"GET", "/api/wake-up?agent_identity=a&max_items=-1", "max_items"},
		{"GET", "/api/wake-up?agent_identity=a&max_bytes=8k", "max_bytes"},
		{"GET", "/api/search?q=a&limit=x", "limit"},
		{"GET", "/api/search?q=a&limit=201", "limit"},
		{"GET", "/api/recall?q=a&max_bytes=x", "max_bytes"},
		{"GET", "/api/jobs?limit=x", "limit"},
		{"GET", "/api/jobs?limit=1e2", "limit"},
		// Booleans.
		{"GET", "/api/wings/w/rooms/r/drawers?include_historical=maybe", "include_historical"},
		{"GET", "/api/search?q=a&expand=yes", "expand"},
		{"GET", "/api/jobs?automatic=2", "automatic"},
		{"GET", "/api/entities/" + id + "/relationships?include_expired=maybe", "include_expired"},
		// Instants.
		{"GET", "/api/stats/filed?since=yesterday", "since"},
		{"GET", "/api/search?q=a&as_of=tomorrow", "as_of"},
		{"GET", "/api/graph?known_at=now", "known_at"},
		{"GET", "/api/relationships/" + id + "/history?as_of=1/2/2026", "as_of"},
	}
	for _, c := range cases {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			status, _, body := ts.request(t, c.method, c.path, "")
			var e struct{ Error, Code, Help string }
			if err := json.Unmarshal([]byte(body), &e); err != nil {
				t.Fatalf("%d %s: %v", status, body, err)
			}
			if status != http.StatusBadRequest || e.Code != "loci::input::invalid" || !strings.HasPrefix(e.Error, c.param+":") || e.Help == "" {
				t.Fatalf("%d %s, want 400 loci::input::invalid naming %s with help", status, body, c.param)
			}
		})
	}
	// A query on no route is still the 404 of that route.
	for _, p := range []string{"/api/nosuch?x=1", "/api/wings/w/nothing?limit=x"} {
		if status, _, body := ts.request(t, "GET", p, ""); status != http.StatusNotFound || !strings.Contains(body, "loci::server::route_not_found") {
			t.Errorf("GET %s: %d %s, want the 404 of no route", p, status, body)
		}
	}
	// The refused write created nothing.
	if _, _, body := ts.request(t, "GET", "/api/wings", ""); strings.Contains(body, `"w2"`) {
		t.Fatalf("a refused POST created a wing: %s", body)
	}
	// The parameters each route takes still pass.
	for _, p := range []string{
		"/api/wings/w/rooms/r/drawers?limit=0&include_historical=true",
		"/api/stats/filed?buckets=3&step_secs=3600&since=2026-01-01",
		"/api/graph?depth=3&limit=200",
		"/api/wake-up?agent_identity=a&max_items=0&max_bytes=100",
		"/api/search?q=a&limit=200&expand=false&as_of=2026-01-01T00:00:00Z",
		"/api/jobs?limit=200&automatic=true",
		"/api/diary?agent_identity=a&wing=w&limit=200",
	} {
		if status, _, body := ts.request(t, "GET", p, ""); status != 200 {
			t.Errorf("GET %s: %d %s", p, status, body)
		}
	}
}

// Every /api route says which query parameters it takes: one added
// without a line in queryParams takes none.
func TestEveryRouteDeclaresItsQuery(t *testing.T) {
	ts := newTestServer(t, false, "")
	seen := map[string]bool{}
	err := chi.Walk(ts.Handler().(chi.Routes), func(method, pattern string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if !strings.HasPrefix(pattern, "/api/") {
			return nil
		}
		k := method + " " + pattern
		seen[k] = true
		if _, ok := queryParams[k]; !ok {
			t.Errorf("%s has no line in queryParams", k)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for k := range queryParams {
		if !seen[k] {
			t.Errorf("queryParams line %s names no route", k)
		}
	}
}

// TestRepeatableParamsAreDeclared: a parameter a route takes more than
// once is one it takes (queryParams), of a route that exists there.
func TestRepeatableParamsAreDeclared(t *testing.T) {
	for route, names := range repeatable {
		allowed, ok := queryParams[route]
		if !ok {
			t.Errorf("repeatable names %s, which queryParams does not hold", route)
		}
		for _, n := range names {
			if !slices.Contains(allowed, n) {
				t.Errorf("%s: %s is repeatable but not a parameter of the route", route, n)
			}
		}
	}
}
