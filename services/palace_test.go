package services

import (
	"context"
	"crypto/sha256"
	"fmt"
	"testing"

	"github.com/loci-dev/loci/store"
)

// A wing and a room too big for one transaction are deleted all the same,
// a batch of drawers at a time, with every drawer counted.
func TestDeleteBigWingAndRoom(t *testing.T) {
	sys, db := newSystem(t)
	// Dedup on: each drawer then has its dedup keys too, as in a daemon.
	p := &Palace{DB: db, Sys: sys, Dedup: store.Dedup{Enabled: true, Threshold: 0.9}}
	text := func(i int, place string) string {
		a := sha256.Sum256([]byte(fmt.Sprint(place, i)))
		b := sha256.Sum256(a[:])
		return fmt.Sprintf("%x %x %x", a, b, sha256.Sum256(b[:]))
	}
	fill := func(wing, room string, n int) {
		t.Helper()
		for b := 0; b < n; b += 500 {
			if _, err := sys.Write(context.Background(), func(tx store.Tx) (any, error) {
				for i := b; i < min(n, b+500); i++ {
					if _, err := store.CreateDrawer(tx, store.NewDrawer{Wing: wing, Room: room,
						Content: text(i, wing+"/"+room),
						Source:  store.Source{Kind: store.KindManual}, Provenance: store.Provenance{RequestedBy: store.ByCLI}}, p.Dedup); err != nil {
						return nil, err
					}
				}
				return nil, nil
			}); err != nil {
				t.Fatal(err)
			}
		}
	}
	fill("big", "a", 3000)
	fill("big", "b", 2600)
	fill("other", "r", 4500)
	ctx := context.Background()
	n, err := p.DeleteWing(ctx, "big")
	if err != nil || n != (store.Removed{Wings: 1, Rooms: 2, Drawers: 5600}) {
		t.Fatalf("delete the wing: %+v %v", n, err)
	}
	n, err = p.DeleteRoom(ctx, "other", "r")
	if err != nil || n != (store.Removed{Rooms: 1, Drawers: 4500}) {
		t.Fatalf("delete the room: %+v %v", n, err)
	}
	c, err := p.Counts(ctx)
	if err != nil || c.Drawers != 0 || c.Wings != 1 || c.Rooms != 0 {
		t.Fatalf("counts after: %+v %v", c, err)
	}
}
