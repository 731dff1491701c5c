package main

import (
	"context"
	"log/slog"
	"net"
	"strconv"
	"testing"

	"github.com/loci-dev/loci/actors"
	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/config"
	"github.com/loci-dev/loci/services"
	"github.com/loci-dev/loci/store/badgerdb"
	"github.com/loci-dev/loci/transport"
)

// The admin listener the daemon builds reports, through adminPort, the
// port it listens on while open (what the source sandbox refuses to
// packages), and none while closed or when there is no listener.
func TestDBAdminPort(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	db, err := badgerdb.Open(t.TempDir(), log)
	if err != nil {
		t.Fatal(err)
	}
	sys := actors.Start(db, log, slog.LevelInfo)
	t.Cleanup(func() { sys.Stop(context.Background()); db.Close() })
	auth, err := services.NewAuth(context.Background(), db, sys, "")
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default(func(string) (string, bool) { return "", false })
	cfg.DB.Port = 0
	a := newAdmin(cfg, db, auth, 1, &transport.Server{}, log)
	if adminPort(nil) != 0 || adminPort(a) != 0 {
		t.Fatalf("a port with no listener open: %d %d", adminPort(nil), adminPort(a))
	}
	st, err := a.Open(api.DBOpen{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = a.Close() })
	_, p, _ := net.SplitHostPort(st.Address)
	if want, _ := strconv.Atoi(p); want == 0 || adminPort(a) != want {
		t.Fatalf("adminPort %d, the listener's address %s", adminPort(a), st.Address)
	}
	if _, err := a.Close(); err != nil || adminPort(a) != 0 {
		t.Fatalf("after close: %v %d", err, adminPort(a))
	}
}
