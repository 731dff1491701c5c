package main_test

import (
	"os/exec"
	"sync"
	"testing"
)

// Three daemons started at the same instant on a fresh database (machines
// booting together) all serve: the ones that find the migration lock held
// wait for the first's schema sync and data steps instead of refusing.
func TestSharedStoreDaemonsStartTogether(t *testing.T) {
	t.Parallel()
	s, db := newSharedDB(t)
	var cmds []*exec.Cmd
	var homes, palaces []string
	for range 3 {
		home, palace := newPalace(t)
		cmd := exec.Command(bin, "serve", "--port", "0", "--palace", palace)
		cmd.Env = env(home, sharedEnv(s, db)...)
		cmds, homes, palaces = append(cmds, cmd), append(homes, home), append(palaces, palace)
	}
	// startCmd starts the process at once and then waits for it to be
	// ready: start all three first, then wait for each.
	ds := make([]*daemon, 3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	started := make(chan struct{})
	for i := range cmds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-started
			ds[i], errs[i] = startCmdErr(t, cmds[i], homes[i], palaces[i])
		}()
	}
	close(started)
	wg.Wait()
	for i, d := range ds {
		if errs[i] != nil {
			t.Fatalf("daemon %d did not start: %v", i, errs[i])
		}
		r := d.do("GET", "/api/status", nil)
		if b := get[string](r.body, "datastore", "backend"); r.status != 200 || b != "postgres" {
			t.Fatalf("daemon %d: status %d, backend %q: %s", i, r.status, b, r.raw)
		}
	}
}
