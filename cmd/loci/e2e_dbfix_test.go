package main_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// Refused sign-ins on the admin listener count, per client address and
// across connections, in the same throttle as the REST API's refused
// tokens: a loop of fresh connections with wrong passwords ends in
// loci::auth::throttled (with its retry time), the REST API then answers
// that address 429 too, and the valid token still signs in on both.
func TestDBThrottleShared(t *testing.T) {
	t.Parallel()
	const secret = "db-admin-throttle-secret-0042"
	home, palace := newPalace(t)
	d := start(t, home, palace, "LOCI_AUTH_ENABLED=true", "LOCI_AUTH_TOKEN="+secret, "LOCI_DB_PORT=0")
	bearer := []string{"Authorization", "Bearer " + secret}
	st := dbStateOf(t, d.do("POST", "/api/db", map[string]any{}, bearer...))
	throttled := 0
	for i := 1; i <= 12 && throttled == 0; i++ {
		c := mustDialDB(t, st.URL)
		_, rerr := c.call("signin", map[string]string{"user": "loci", "pass": fmt.Sprintf("guess-%d", i)})
		_ = c.ws.Close(websocket.StatusNormalClosure, "")
		switch {
		case rerr == nil:
			t.Fatalf("a wrong password signed in")
		case rerr.Data.Code == "loci::auth::throttled":
			if !strings.Contains(rerr.Message, "try again in 60 s") {
				t.Fatalf("the throttled answer: %+v", rerr)
			}
			throttled = i
		case rerr.Data.Code != "loci::db::signin_refused":
			t.Fatalf("refusal %d: %+v", i, rerr)
		}
	}
	if throttled != 11 {
		t.Fatalf("throttled at the %dth refused sign-in, want the 11th (5 free, 5 slowed, as REST)", throttled)
	}
	// The REST API counts the same refusals: the next wrong token is 429.
	if r := d.do("GET", "/api/status", nil, "Authorization", "Bearer wrong-token"); r.status != 429 || r.code() != "loci::auth::throttled" {
		t.Fatalf("REST after the admin listener's refusals: %d %s", r.status, r.raw)
	}
	// A valid token is never throttled, on either port.
	c := mustDialDB(t, st.URL)
	c.ok("signin", map[string]string{"user": "loci", "pass": secret})
	if len(c.rows("SELECT 1")) != 1 {
		t.Fatal("the signed-in connection cannot query")
	}
	if r := d.do("GET", "/api/status", nil, bearer...); r.status != 200 {
		t.Fatalf("REST with the valid token: %d %s", r.status, r.raw)
	}
	// Connections closed after refused sign-ins warn once per address per
	// minute: here only the first (the address's next line, a minute on,
	// would carry the refusals and connections since).
	eventually(t, 10*time.Second, "the refused connections close", func() bool {
		return dbStateOf(t, d.do("GET", "/api/db", nil, bearer...)).Connections == 1
	})
	log := d.log.String()
	if strings.Count(log, "closed after refused sign-ins") != 1 || !strings.Contains(log, "refused=1 connections=1") ||
		strings.Contains(log, "guess-") || strings.Contains(log, secret) {
		t.Fatalf("the log:\n%s", log)
	}
	// The CLI's rendering of the already-running help reads whole.
	_, errOut, code := runCLI(home, "", []string{"--addr", d.addr, "db", "serve", "--port", "1"}, []string{"LOCI_AUTH_TOKEN=" + secret})
	if code == 0 || !strings.Contains(errOut, "close it first with `loci db stop`, then") || strings.Contains(errOut, "( or") {
		t.Fatalf("loci db serve while open elsewhere: %d %s", code, errOut)
	}
}
