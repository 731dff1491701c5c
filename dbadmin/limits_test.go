package dbadmin

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/dbadmin/sqlview"
	"github.com/loci-dev/loci/fault"
)

// TestIdleTimeout: a signed-in connection with no request for the idle
// timeout is closed (1001, saying it was idle) and its slot is free
// again; one that pings, or whose query runs past the timeout, stays.
func TestIdleTimeout(t *testing.T) {
	a, d := newAdmin(t, false)
	a.idle = 400 * time.Millisecond
	a.maxConns = 3
	a.query = func(ctx context.Context, _ string, _ map[string]any) ([]sqlview.Result, error) {
		if !sleep(ctx, 1500*time.Millisecond) {
			return nil, ctx.Err()
		}
		return []sqlview.Result{{Statement: "SELECT SLEEP(1.5)", Columns: []sqlview.Column{{Name: "x", Type: "INT"}}, Rows: [][]any{{int64(1)}}}}, nil
	}
	st := open(t, a, api.DBOpen{})
	bearer := http.Header{"Authorization": {"Bearer loci"}}
	idle := dial(t, st, encJSON, bearer)
	pinger := dial(t, st, encJSON, nil)
	pinger.call("signin", signin("loci", "loci"))
	querier := dial(t, st, encJSON, bearer)

	// The idle one is closed while the others keep busy.
	closed := make(chan string, 1)
	go func() {
		_, _, err := idle.ws.Read(context.Background())
		var ce websocket.CloseError
		if errors.As(err, &ce) {
			closed <- strconv.Itoa(int(ce.Code)) + " " + ce.Reason
			return
		}
		closed <- "no close status: " + err.Error()
	}()
	b, typ := querier.encode(map[string]any{"id": 1, "method": "query", "params": []any{"SELECT SLEEP(1.5)"}})
	querier.send(typ, b)
	for range 15 {
		pinger.call("ping")
		time.Sleep(100 * time.Millisecond)
	}
	select {
	case got := <-closed:
		if !strings.HasPrefix(got, "1001 ") || !strings.Contains(got, "idle") {
			t.Fatalf("the idle connection closed with %q, want 1001 saying it was idle", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the idle connection was not closed")
	}
	m := querier.read()
	res, ok := m["result"].([]any)
	if !ok || len(res) != 1 || res[0].(map[string]any)["status"] != "OK" {
		t.Fatalf("the query running past the idle timeout: %v", m)
	}
	// Both busy connections still answer, and the idle one's slot is
	// free again: a third signed-in connection fits under the cap of 3.
	pinger.call("ping")
	querier.call("ping")
	eventually(t, "the idle connection's slot frees", func() bool { return a.State().Connections == 2 })
	again := dial(t, st, encJSON, bearer)
	again.call("ping")
	_, _, err := tryDial(t, st, encJSON, bearer)
	if err == nil {
		t.Fatal("a fourth signed-in connection passed the cap of 3")
	}
	if !strings.Contains(d.log.String(), "closed: idle") {
		t.Fatalf("the idle close is not logged:\n%s", d.log)
	}
}

// TestStatePortBound: opened on port 0, the state's port is the one the
// system chose, and opening again with port 0 (or that port) is the same
// settings; another port is already_running.
func TestStatePortBound(t *testing.T) {
	a, _ := newAdmin(t, false)
	st := open(t, a, api.DBOpen{Port: ptr(0)})
	_, p, _ := net.SplitHostPort(st.Address)
	if st.Port == 0 || strconv.Itoa(st.Port) != p {
		t.Fatalf("port %d, address %s: want the port bound", st.Port, st.Address)
	}
	if got := a.State().Port; got != st.Port {
		t.Fatalf("State's port %d, want %d", got, st.Port)
	}
	for _, port := range []int{0, st.Port} {
		again, err := a.Open(api.DBOpen{Port: ptr(port)})
		if err != nil || again.Port != st.Port || again.Address != st.Address {
			t.Fatalf("open again with port %d: %v %+v", port, err, again)
		}
	}
	other := st.Port + 1
	if other > 65535 {
		other = st.Port - 1
	}
	_, err := a.Open(api.DBOpen{Port: ptr(other)})
	if fe, ok := errors.AsType[*fault.Error](err); !ok || fe.Code != fault.DBAlreadyRunning {
		t.Fatalf("open with another port: %v", err)
	}
}

// TestRefusalLogLimited: connections closed after refused sign-ins from
// one address warn once per interval; the next line carries the refusals
// and connections since. Wrong bearers on the upgrade likewise.
func TestRefusalLogLimited(t *testing.T) {
	a, d := newAdmin(t, true)
	st := open(t, a, api.DBOpen{})
	wrong := func() {
		c := dial(t, st, encJSON, nil)
		c.fails("", "signin", signin("loci", "wrong"))
		_ = c.ws.Close(websocket.StatusNormalClosure, "")
		eventually(t, "the connection closes", func() bool { return a.State().Connections == 0 })
	}
	warns := func() []string {
		var out []string
		for _, l := range strings.Split(d.log.String(), "\n") {
			if strings.Contains(l, "level=WARN") && strings.Contains(l, "refused sign-ins") {
				out = append(out, l)
			}
		}
		return out
	}
	for range 20 {
		wrong()
	}
	w := warns()
	if len(w) != 1 || !strings.Contains(w[0], "refused=1 connections=1") || !strings.Contains(w[0], "remote=127.0.0.1 ") {
		t.Fatalf("20 refused connections in one interval: want one warning for the first, got %d:\n%s", len(w), strings.Join(w, "\n"))
	}
	// The interval ends: the next one warns, carrying the 19 held back.
	a.refusals.mu.Lock()
	a.refusals.addrs[refusedConn+"\x00127.0.0.1"].last = time.Now().Add(-2 * a.refusalLogEvery)
	a.refusals.mu.Unlock()
	wrong()
	w = warns()
	if len(w) != 2 || !strings.Contains(w[1], "refused=20 connections=20") {
		t.Fatalf("after the interval: want a second warning with refused=20 connections=20, got:\n%s", strings.Join(w, "\n"))
	}
	// Wrong bearers on the upgrade: one warning for the first, the
	// others held for the next line.
	for range 10 {
		if _, resp, err := tryDial(t, st, encJSON, http.Header{"Authorization": {"Bearer wrong"}}); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("a wrong bearer: %v %v", err, resp)
		}
	}
	if n := strings.Count(d.log.String(), "bearer on the upgrade"); n != 1 || !strings.Contains(d.log.String(), refusedBearer+"\" component=dbadmin remote=127.0.0.1 refused=1 connections=1") {
		t.Fatalf("10 wrong bearers: want one warning, got %d:\n%s", n, d.log)
	}
}
