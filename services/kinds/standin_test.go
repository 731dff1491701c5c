package kinds

import (
	"context"

	"github.com/loci-dev/loci/actors"
	"github.com/loci-dev/loci/store"
)

// Palace files, deletes and reads drawers in these tests as the palace
// service (services.Palace) does, through the writer with the store's own
// functions, each in one transaction (package kinds may not import the
// services, which import the kinds): what the kinds' tests need of it.
type Palace struct {
	DB    store.DB
	Sys   *actors.System
	Dedup store.Dedup
}

func (p *Palace) write(ctx context.Context, fn func(tx store.Tx) (any, error)) (any, error) {
	return p.Sys.Write(ctx, fn)
}

// CreateDrawer files one drawer.
func (p *Palace) CreateDrawer(ctx context.Context, in store.NewDrawer) (*store.WriteResult, error) {
	v, err := p.write(ctx, func(tx store.Tx) (any, error) { return store.CreateDrawer(tx, in, p.Dedup) })
	if err != nil {
		return nil, err
	}
	return v.(*store.WriteResult), nil
}

// room finds a wing's room by name or id.
func room(r store.Reader, wingRef, roomRef string) (*store.Room, error) {
	w, err := store.FindWing(r, wingRef)
	if err != nil {
		return nil, err
	}
	return store.FindRoom(r, w, roomRef)
}

// DeleteDrawer removes one drawer of a room, by name or id.
func (p *Palace) DeleteDrawer(ctx context.Context, wingRef, roomRef, ref string) (store.Removed, error) {
	_, err := p.write(ctx, func(tx store.Tx) (any, error) {
		rm, err := room(tx, wingRef, roomRef)
		if err != nil {
			return nil, err
		}
		d, err := store.FindDrawerIn(tx, rm, ref)
		if err != nil {
			return nil, err
		}
		return nil, store.DeleteDrawer(tx, d)
	})
	if err != nil {
		return store.Removed{}, err
	}
	return store.Removed{Drawers: 1}, nil
}

// DeleteRoom removes a room with its drawers.
func (p *Palace) DeleteRoom(ctx context.Context, wingRef, roomRef string) (store.Removed, error) {
	v, err := p.write(ctx, func(tx store.Tx) (any, error) {
		rm, err := room(tx, wingRef, roomRef)
		if err != nil {
			return nil, err
		}
		return store.DeleteRoom(tx, rm)
	})
	if err != nil {
		return store.Removed{}, err
	}
	return v.(store.Removed), nil
}

// DeleteWing removes a wing with its rooms and drawers, and what mining
// kept for it.
func (p *Palace) DeleteWing(ctx context.Context, ref string) (store.Removed, error) {
	v, err := p.write(ctx, func(tx store.Tx) (any, error) {
		w, err := store.FindWing(tx, ref)
		if err != nil {
			return nil, err
		}
		return store.DeleteWing(tx, w)
	})
	if err != nil {
		return store.Removed{}, err
	}
	return v.(store.Removed), nil
}

// History is a drawer's supersession chain, oldest first.
func (p *Palace) History(ctx context.Context, id string) (d *store.Drawer, versions []store.Drawer, err error) {
	err = p.DB.View(ctx, func(r store.Reader) error {
		d, versions, err = store.History(r, id)
		return err
	})
	return d, versions, err
}
