package storetest

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/loci-dev/loci/store"
)

// BenchResolveEntity resolves names among fill entities on db, for each
// backend's benchmark: a quarter exact names, a quarter other spellings
// of a key, a quarter typos (the deletion index), a quarter unknown names
// (resolved to new entities and created), 500 to a transaction (as a
// write batch holds them), commits included. wrap, when not nil, is the
// transaction the resolutions are measured through (a counting one).
func BenchResolveEntity(b *testing.B, db store.DB, fill int, wrap func(store.Tx) store.Tx) {
	r := rand.New(rand.NewPCG(5, 6))
	syl := []string{"ka", "ro", "mi", "te", "lu", "sa", "no", "vi", "da", "re", "po", "li", "ne", "ta", "go", "be"}
	name := func() string {
		n := ""
		for range 3 + r.IntN(3) {
			n += syl[r.IntN(len(syl))]
		}
		return strings.ToUpper(n[:1]) + n[1:]
	}
	var names []string
	for i := 0; i < fill; i += 1000 {
		err := db.Update(context.Background(), func(tx store.Tx) error {
			for range 1000 {
				n := name()
				if _, err := store.ResolveEntity(tx, n, "person", false, ""); err != nil {
					return err
				}
				names = append(names, n)
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for start := 0; start < b.N; start += 500 {
		err := db.Update(context.Background(), func(tx store.Tx) error {
			if wrap != nil {
				tx = wrap(tx)
			}
			for i := start; i < min(start+500, b.N); i++ {
				n := names[r.IntN(len(names))]
				switch i % 4 {
				case 1:
					n = strings.ToLower(n) + "!"
				case 2:
					n = n[:len(n)-1] + "x"
				case 3:
					n = name() + " " + name()
				}
				if _, err := store.ResolveEntity(tx, n, "person", true, ""); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "resolutions/s")
}
