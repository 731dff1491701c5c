package sqlview

import (
	"context"
	"time"

	"github.com/loci-dev/loci/store"
)

// pageSize is how many records a table reads from the store at a time.
const pageSize = 512

// pager yields a table's records a page at a time, reading the store only
// when asked (synchronously, on the calling goroutine); done says no page
// follows this one.
type pager[T any] func() (items []T, done bool, err error)

// once is a pager of one fetch (a point read, a small family).
func once[T any](fetch func() ([]T, error)) pager[T] {
	return func() ([]T, bool, error) {
		items, err := fetch()
		return items, true, err
	}
}

// visitPages pages through a visitor that offers no resume point
// (Entities, Jobs, Sources, TriggerStates, Mentions, ...): each page runs
// the visitor again, skipping the records of the pages before it. The
// view is one snapshot, so the skipped records are the same each time.
// Memory stays at one page; time grows with the square of the family's
// size over pageSize, and the query's timeout bounds it.
func visitPages[T any](ctx context.Context, visit func(fn func(T) bool) error) pager[T] {
	offset := 0
	return func() ([]T, bool, error) {
		var out []T
		seen := 0
		var cerr error
		err := visit(func(t T) bool {
			if seen < offset {
				seen++
				if seen%4096 == 0 {
					if cerr = ctx.Err(); cerr != nil {
						return false
					}
				}
				return true
			}
			out = append(out, t)
			return len(out) < pageSize
		})
		if err == nil {
			err = cerr
		}
		offset += len(out)
		return out, len(out) < pageSize, err
	}
}

// flat pages through inner(p) for each record p of outer, counting each
// outer record as a row read.
func flat[P, T any](q *run, outer pager[P], inner func(P) pager[T]) pager[T] {
	var parents []P
	outerDone := false
	var cur pager[T]
	return func() ([]T, bool, error) {
		for {
			if cur != nil {
				items, done, err := cur()
				if err != nil {
					return nil, false, err
				}
				if done {
					cur = nil
				}
				if len(items) > 0 {
					return items, cur == nil && len(parents) == 0 && outerDone, nil
				}
				continue
			}
			if len(parents) == 0 {
				if outerDone {
					return nil, true, nil
				}
				if err := q.ctx.Err(); err != nil {
					return nil, false, err
				}
				ps, done, err := outer()
				if err != nil {
					return nil, false, err
				}
				if err := q.read(len(ps)); err != nil {
					return nil, false, err
				}
				parents, outerDone = ps, done
				continue
			}
			p := parents[0]
			parents = parents[1:]
			cur = inner(p)
		}
	}
}

// keep filters a pager.
func keep[T any](p pager[T], ok func(T) bool) pager[T] {
	return func() ([]T, bool, error) {
		items, done, err := p()
		out := items[:0:0]
		for _, it := range items {
			if ok(it) {
				out = append(out, it)
			}
		}
		return out, done, err
	}
}

// roomDrawers pages through a room's stored drawers, newest first, with
// DrawersBefore from the last drawer of the page before: the store's own
// resume point, so a room of a million drawers is read pageSize at a time.
// With since set, only drawers created at or after it (the scan stops at
// the first older one); with until set, only drawers created before it.
func roomDrawers(q *run, roomID string, since, until *time.Time) pager[*store.Drawer] {
	var last *store.Drawer
	return func() ([]*store.Drawer, bool, error) {
		var out []*store.Drawer
		stop := false
		fn := func(d *store.Drawer) bool {
			if since != nil && d.CreatedAt.Before(*since) {
				stop = true
				return false
			}
			out = append(out, d)
			return len(out) < pageSize
		}
		var err error
		switch {
		case last != nil:
			err = q.r.DrawersBefore(roomID, false, last.CreatedAt, last.ID, fn)
		case until != nil:
			// DrawersBefore at (until, "") starts with the drawers filed
			// before until (no id is smaller than "").
			err = q.r.DrawersBefore(roomID, false, *until, "", fn)
		default:
			err = q.r.Drawers(roomID, false, fn)
		}
		if len(out) > 0 {
			last = out[len(out)-1]
		}
		return out, stop || len(out) < pageSize, err
	}
}
