package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/api"
)

// Issue 31 (trial): a search hit the daemon knows by id and score only
// (answered while the store is unreachable) prints as such, not as
// "/  0001-01-01  score 11.8" with an empty place and a zero date; a hit
// read whole keeps its title.
func TestSearchPrintsAnUnreadHit(t *testing.T) {
	unread := &api.Hit{Score: 11.8}
	unread.ID = "d_0123"
	if !unreadHit(unread) {
		t.Fatal("an id-only hit is not seen as one")
	}
	if got, want := unreadTitle(unread), "drawer d_0123  score 11.8 (not readable while the store is unreachable)"; got != want {
		t.Fatalf("%q, want %q", got, want)
	}
	read := &api.Hit{Wing: "work", Room: "notes", Score: 2.5}
	read.ID, read.Content, read.ValidFrom = "d_1", "the lighthouse", time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	if unreadHit(read) {
		t.Fatal("a hit read whole is seen as id-only")
	}
	if got := hitTitle(read); !strings.HasPrefix(got, "work/notes  2026-11-01  score 2.5") {
		t.Fatalf("a hit read whole: %q", got)
	}
}
