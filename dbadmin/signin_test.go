package dbadmin

import (
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/fault"
)

var encodings = []string{encJSON, encCBOR}

func signin(user, pass string) map[string]any { return map[string]any{"user": user, "pass": pass} }

func TestSignIn(t *testing.T) {
	for _, enc := range encodings {
		t.Run(enc, func(t *testing.T) {
			t.Run("auth on: the daemon's token", func(t *testing.T) {
				a, _ := newAdmin(t, true)
				c := dial(t, open(t, a, api.DBOpen{}), enc, nil)
				if e := c.fails("", "info"); e.lcode != string(fault.DBSignInRequired) || e.code != codeFailed {
					t.Fatalf("info before sign-in: %+v", e)
				}
				if e := c.fails("", "signin", signin("loci", "loci")); e.lcode != string(fault.DBSignInRefused) {
					t.Fatalf("the word loci with auth on: %+v", e)
				}
				tok, _ := c.call("signin", signin("loci", token1)).(string)
				if !strings.HasPrefix(tok, "loci_dbs_") || len(tok) < 40 || strings.Contains(tok, token1) {
					t.Fatalf("session token %q", tok)
				}
				info := c.call("info").(map[string]any)
				if info["user"] != "loci" || info["signed_in"] != true || info["auth"] != true ||
					info["namespace"] != "loci" || info["database"] != "palace" || str(info["session"]) == "" {
					t.Fatalf("info %v", info)
				}
			})
			t.Run("auth off: the word loci", func(t *testing.T) {
				a, _ := newAdmin(t, false)
				c := dial(t, open(t, a, api.DBOpen{}), enc, nil)
				if e := c.fails("", "signin", signin("loci", token1)); e.lcode != string(fault.DBSignInRefused) || !strings.Contains(e.help, "loci") {
					t.Fatalf("a token with auth off: %+v", e)
				}
				tok, _ := c.call("signin", signin("loci", "loci")).(string)
				if !strings.HasPrefix(tok, "loci_dbs_") {
					t.Fatalf("session token %q", tok)
				}
				if info := c.call("info").(map[string]any); info["auth"] != false || info["signed_in"] != true {
					t.Fatalf("info %v", info)
				}
				// The session token signs in another connection.
				c2 := dial(t, a.State(), enc, nil)
				if r := c2.call("authenticate", tok); r != nil {
					t.Fatalf("authenticate answered %v", r)
				}
				c2.call("info")
			})
			t.Run("wrong user", func(t *testing.T) {
				a, _ := newAdmin(t, true)
				c := dial(t, open(t, a, api.DBOpen{}), enc, nil)
				e := c.fails("", "signin", signin("root", token1))
				if e.lcode != string(fault.DBSignInRefused) || e.code != codeFailed || !strings.Contains(e.msg, "loci") {
					t.Fatalf("wrong user: %+v", e)
				}
				if e := c.fails("", "info"); e.lcode != string(fault.DBSignInRequired) {
					t.Fatalf("signed in after a wrong user: %+v", e)
				}
			})
			t.Run("malformed signin", func(t *testing.T) {
				a, _ := newAdmin(t, true)
				c := dial(t, open(t, a, api.DBOpen{}), enc, nil)
				for _, p := range [][]any{{}, {"loci"}, {map[string]any{"user": "loci"}}, {signin("loci", token1), 1}} {
					if e := c.fails("", "signin", p...); e.code != codeInvalidParams || e.lcode != string(fault.DBInvalidRequest) {
						t.Fatalf("signin %v: %+v", p, e)
					}
				}
			})
		})
	}
}

func TestFiveRefusalsClose(t *testing.T) {
	for _, enc := range encodings {
		t.Run(enc, func(t *testing.T) {
			a, d := newAdmin(t, true)
			c := dial(t, open(t, a, api.DBOpen{}), enc, nil)
			for i := 1; i <= 4; i++ {
				var e rpcErr
				if i%2 == 0 {
					e = c.fails("", "authenticate", "loci_dbs_not-a-token")
				} else {
					e = c.fails("", "signin", signin("loci", "wrong-password"))
				}
				if e.lcode != string(fault.DBSignInRefused) || !strings.Contains(e.help, "close this connection") {
					t.Fatalf("refusal %d: %+v", i, e)
				}
			}
			// Another connection's count is its own.
			c2 := dial(t, a.State(), enc, nil)
			c2.fails("", "signin", signin("loci", "wrong"))
			e := c.fails("", "signin", signin("loci", "wrong-again"))
			if e.lcode != string(fault.DBSignInRefused) {
				t.Fatalf("fifth: %+v", e)
			}
			code, reason := c.closeStatus()
			if code != websocket.StatusPolicyViolation || !strings.Contains(reason, "refused sign-ins") {
				t.Fatalf("close %v %q, want 1008", code, reason)
			}
			// Other connections are not affected.
			c2.call("signin", signin("loci", token1))
			eventually(t, "the closed connection leaves", func() bool { return a.State().Connections == 1 })
			log := d.log.String()
			if strings.Count(log, "level=WARN") != 1 || !strings.Contains(log, "closed after refused sign-ins") ||
				!strings.Contains(log, "refused=5") || !strings.Contains(log, "remote=127.0.0.1:") ||
				strings.Contains(log, "wrong-password") || strings.Contains(log, "not-a-token") {
				t.Fatalf("the log:\n%s", log)
			}
		})
	}
}

func TestBearerOnUpgrade(t *testing.T) {
	a, d := newAdmin(t, true)
	st := open(t, a, api.DBOpen{})
	c := dial(t, st, encJSON, http.Header{"Authorization": {"Bearer " + token1}})
	if info := c.call("info").(map[string]any); info["signed_in"] != true {
		t.Fatalf("info %v", info)
	}
	// attach makes a signed-out session even so.
	id := c.call("attach").(string)
	if e := c.fails(id, "query", "SELECT 1"); e.lcode != string(fault.DBSignInRequired) {
		t.Fatalf("attached session: %+v", e)
	}
	for _, h := range []string{"Bearer wrong-token", "Basic bG9jaTpsb2Np", "Bearer", "Bearer loci"} {
		_, resp, err := tryDial(t, st, encJSON, http.Header{"Authorization": {h}})
		if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("%q: %v %v", h, err, resp)
		}
		if b := errBody(t, resp); b["code"] != string(fault.DBSignInRefused) {
			t.Fatalf("%q: %v", h, b)
		}
	}
	if log := d.log.String(); !strings.Contains(log, "bearer on the upgrade") || strings.Contains(log, "wrong-token") {
		t.Fatalf("log:\n%s", log)
	}
	// A session token is a bearer too.
	tok := c.call("signin", signin("loci", token1)).(string)
	dial(t, st, encCBOR, http.Header{"Authorization": {"Bearer " + tok}}).call("info")
}

func TestBearerAuthOff(t *testing.T) {
	a, _ := newAdmin(t, false)
	st := open(t, a, api.DBOpen{})
	dial(t, st, encJSON, http.Header{"Authorization": {"Bearer loci"}}).call("info")
	if _, resp, err := tryDial(t, st, encJSON, http.Header{"Authorization": {"Bearer nope"}}); err == nil || resp.StatusCode != 401 {
		t.Fatalf("a wrong bearer with auth off: %v", err)
	}
}

func TestRevokedToken(t *testing.T) {
	for _, enc := range encodings {
		t.Run(enc, func(t *testing.T) {
			a, d := newAdmin(t, true)
			st := open(t, a, api.DBOpen{})
			signedIn := dial(t, st, enc, nil)
			sess := signedIn.call("signin", signin("loci", token1)).(string)
			bearer := dial(t, st, enc, http.Header{"Authorization": {"Bearer " + token1}})
			// Before the rotation the session token signs in elsewhere.
			dial(t, st, enc, nil).call("authenticate", sess)

			d.rotate("loci_tok_second-secret-abcdef")

			// Signed-in connections stay signed in.
			for _, c := range []*client{signedIn, bearer} {
				c.call("let", "x", 1)
				if info := c.call("info").(map[string]any); info["signed_in"] != true {
					t.Fatalf("info %v", info)
				}
			}
			fresh := dial(t, st, enc, nil)
			for _, try := range []struct {
				method string
				param  any
			}{
				{"signin", signin("loci", token1)},
				{"authenticate", token1},
				{"authenticate", sess},
			} {
				if e := fresh.fails("", try.method, try.param); e.lcode != string(fault.DBSignInRefused) {
					t.Fatalf("%s with the old token: %+v", try.method, e)
				}
			}
			if e := fresh.fails("", "info"); e.lcode != string(fault.DBSignInRequired) {
				t.Fatalf("signed in: %+v", e)
			}
			if _, resp, err := tryDial(t, st, enc, http.Header{"Authorization": {"Bearer " + token1}}); err == nil || resp.StatusCode != 401 {
				t.Fatalf("bearer of the old token: %v", err)
			}
			fresh.call("signin", signin("loci", "loci_tok_second-secret-abcdef"))
			fresh.call("info")
		})
	}
}

func TestInvalidateForgetsSessionToken(t *testing.T) {
	a, _ := newAdmin(t, true)
	st := open(t, a, api.DBOpen{})
	c := dial(t, st, encJSON, nil)
	tok := c.call("signin", signin("loci", token1)).(string)
	if r := c.call("invalidate"); r != nil {
		t.Fatalf("invalidate answered %v", r)
	}
	if e := c.fails("", "info"); e.lcode != string(fault.DBSignInRequired) {
		t.Fatalf("still signed in: %+v", e)
	}
	if e := dial(t, st, encJSON, nil).fails("", "authenticate", tok); e.lcode != string(fault.DBSignInRefused) {
		t.Fatalf("the invalidated session's token still signs in: %+v", e)
	}
	// Closing the listener forgets every token.
	tok2 := c.call("signin", signin("loci", token1)).(string)
	if _, err := a.Close(); err != nil {
		t.Fatal(err)
	}
	st = open(t, a, api.DBOpen{})
	if e := dial(t, st, encJSON, nil).fails("", "authenticate", tok2); e.lcode != string(fault.DBSignInRefused) {
		t.Fatalf("a token of the closed listener signs in: %+v", e)
	}
}
