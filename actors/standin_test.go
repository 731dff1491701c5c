package actors

import (
	"context"

	"github.com/loci-dev/loci/store"
)

// Palace writes and reads the palace in these tests as the palace service
// (services.Palace) does, through the writer: what the runtime's tests
// need of it, and no more (package actors may not import the services,
// which stand above it).
type Palace struct {
	DB    store.DB
	Sys   *System
	Dedup store.Dedup
}

// CreateDrawer files one drawer, its near candidates judged ahead of the
// writer as the service judges them.
func (p *Palace) CreateDrawer(ctx context.Context, in store.NewDrawer) (*store.WriteResult, error) {
	if p.Dedup.Enabled {
		_ = p.DB.View(ctx, func(r store.Reader) error {
			in.Prepared = store.Prepare(r, in, p.Dedup)
			return nil
		})
	}
	v, err := p.Sys.Write(ctx, func(tx store.Tx) (any, error) { return store.CreateDrawer(tx, in, p.Dedup) })
	if err != nil {
		return nil, err
	}
	return v.(*store.WriteResult), nil
}

// CreateWing makes a wing; created is false when it existed.
func (p *Palace) CreateWing(ctx context.Context, name, description string) (*store.Wing, bool, error) {
	type out struct {
		w       *store.Wing
		created bool
	}
	v, err := p.Sys.Write(ctx, func(tx store.Tx) (any, error) {
		w, created, err := store.EnsureWing(tx, name, description)
		return out{w, created}, err
	})
	if err != nil {
		return nil, false, err
	}
	return v.(out).w, v.(out).created, nil
}

// Wings is every wing.
func (p *Palace) Wings(ctx context.Context) (wings []store.Wing, err error) {
	err = p.DB.View(ctx, func(r store.Reader) error {
		wings, err = r.Wings()
		return err
	})
	return wings, err
}

// Counts are the palace totals.
func (p *Palace) Counts(ctx context.Context) (c store.Counts, err error) {
	err = p.DB.View(ctx, func(r store.Reader) error {
		c, err = r.Counts()
		return err
	})
	return c, err
}
