package main_test

import (
	"fmt"
	"math/rand/v2"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// vectorsHold waits until the default profile's vector index holds n
// vectors and follows the store to its end.
func vectorsHold(t *testing.T, d *daemon, n int) {
	t.Helper()
	eventually(t, 90*time.Second, fmt.Sprintf("the vector index holds %d vectors", n), func() bool {
		ix := get[map[string]any](d.do("GET", "/api/status", nil).body, "indexes")
		vs := get[map[string]any](ix, "vectors")
		for _, v := range vs {
			m := v.(map[string]any)
			if get[float64](m, "behind") != 0 || int(get[float64](m, "drawers")) != n {
				return false
			}
		}
		return len(vs) > 0
	})
}

// rankedIDs is the ids of a search's first 10 hits in a ranking, in order.
func rankedIDs(t *testing.T, d *daemon, q, ranking string) []string {
	t.Helper()
	return hitIDs(t, d, "/api/search?limit=10&ranking="+ranking+"&q="+url.QueryEscape(q))
}

// A restored palace answers a search as the original does when both
// hold the same drawers and vectors, however the original got there. The
// static provider caches a word's frequency until the palace grows a
// quarter: the original's, restarted, reads every query word's once (one
// drawer holding them all) and then embeds 15 drawers of five of them
// with those cached frequencies, while the restored daemon's has read
// nothing. Before, a query was weighed with the cache, so the two
// embedded it otherwise and the semantic leg ranked otherwise (the flake
// of TestBackupUnderWritersAndRestore).
func TestRestoredPalaceSearchesAsTheOriginal(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	r := rand.New(rand.NewPCG(16, 37))
	for i := range 240 {
		if _, err := fileDrawer(d.addr, "wing", fmt.Sprintf("room-%d", i%4), backupText(r, 12)); err != nil {
			t.Fatal(err)
		}
	}
	vectorsHold(t, d, 240)
	stopDaemon(t, d)
	d = start(t, home, palace) // the provider has read no frequency
	vectorsHold(t, d, 240)
	if _, err := fileDrawer(d.addr, "wing", "all", strings.Join(backupWords, " ")); err != nil {
		t.Fatal(err)
	}
	vectorsHold(t, d, 241)
	few := backupWords[:5]
	for i := range 15 {
		if _, err := fileDrawer(d.addr, "wing", "few", strings.Join(few, " ")+fmt.Sprint(" ", i)); err != nil {
			t.Fatal(err)
		}
	}
	vectorsHold(t, d, 256)
	caughtUp(t, d, 256)

	full := filepath.Join(t.TempDir(), "full.backup")
	if _, errOut, code := d.cli("", "backup", "--out", full); code != 0 {
		t.Fatalf("backup: %s", errOut)
	}
	home2, palace2 := newPalace(t)
	if _, errOut, code := runCLI(home2, "", []string{"restore", full, "--data-dir", palace2}, nil); code != 0 {
		t.Fatalf("restore: %s", errOut)
	}
	d2 := start(t, home2, palace2)
	vectorsHold(t, d2, 256)
	caughtUp(t, d2, 256)

	qr := rand.New(rand.NewPCG(16, 38))
	for i := range 40 {
		q := few[i%len(few)] + " " + backupText(qr, 1+i%2)
		for _, ranking := range []string{"semantic", "auto"} {
			a, b := rankedIDs(t, d, q, ranking), rankedIDs(t, d2, q, ranking)
			if len(a) == 0 {
				t.Fatalf("search %q (%s) finds nothing in the original", q, ranking)
			}
			if !slices.Equal(a, b) {
				t.Fatalf("search %d %q (%s): the original answers %v, the restored palace %v", i, q, ranking, a, b)
			}
		}
	}
}
