package sqlview

import (
	"iter"
	"time"

	"github.com/loci-dev/loci/store"
)

// pageSize is how many records a table reads from the store at a time.
const pageSize = 512

// pager yields a table's records a page at a time, reading the store only
// when asked; done says no page follows this one. stop (nil when there is
// nothing to release) ends the reads the pager holds open: the row
// iterator that owns the pager calls it when it is closed, fails or is
// cut, and the statement calls it for every pager still open when it
// ends (run.stopPulls). A pager is used by one goroutine at a time.
type pager[T any] struct {
	next func() (items []T, done bool, err error)
	stop func()
}

// close releases what p holds open; calling it again does nothing.
func (p pager[T]) close() {
	if p.stop != nil {
		p.stop()
	}
}

// once is a pager of one fetch (a point read, a small family).
func once[T any](fetch func() ([]T, error)) pager[T] {
	return pager[T]{next: func() ([]T, bool, error) {
		items, err := fetch()
		return items, true, err
	}}
}

// chunk is what a pulled visitor hands over: a page of records, and
// whether the visitor has returned (last; err is then its error).
type chunk[T any] struct {
	items []T
	last  bool
}

// visitPages pages through a visitor that offers no resume point
// (Entities, Jobs, Sources, TriggerStates, Mentions, ...) in one pass:
// the visitor runs as a coroutine (iter.Pull) that hands over a page of
// pageSize records and waits for the next call. The coroutine and its
// caller strictly alternate (iter.Pull's contract: never at the same
// time, with a happens-before edge at each switch), so the store's view
// is still never used concurrently; reads of other families made between
// two pages run while the visitor waits in its callback, which the
// store's visitors allow. Memory stays at a page, time at one pass.
//
// The coroutine holds the visitor (and what it holds: an iterator over
// the view) open until the visitor returns or the pager is stopped. The
// pager stops it itself once the last page is taken; stop ends it early
// (the visitor's callback returns false), and q.stopPulls ends any left
// open when the statement ends, before the view does.
func visitPages[T any](q *run, visit func(fn func(T) bool) error) pager[T] {
	var (
		next     func() (chunk[T], bool)
		stopC    func()
		id       uint64
		ended    bool
		visitErr error
	)
	seq := func(yield func(chunk[T]) bool) {
		// A page grows as records come (most families of an entity or
		// a source are far smaller than a page) and is handed over whole:
		// the next starts afresh.
		var buf []T
		err := visit(func(t T) bool {
			buf = append(buf, t)
			if len(buf) < pageSize {
				return true
			}
			page := buf
			buf = nil
			return yield(chunk[T]{items: page})
		})
		visitErr = err
		// After a stop this yield returns false at once.
		yield(chunk[T]{items: buf, last: true})
	}
	stop := func() {
		if ended {
			return
		}
		ended = true
		if stopC != nil {
			stopC()
			q.unregister(id)
		}
	}
	return pager[T]{
		next: func() ([]T, bool, error) {
			if ended {
				return nil, true, nil
			}
			if next == nil {
				next, stopC = iter.Pull(seq)
				id = q.register(stop)
			}
			c, ok := next()
			if !ok || c.last {
				stop()
				return c.items, true, visitErr
			}
			return c.items, false, nil
		},
		stop: stop,
	}
}

// flat pages through inner(p) for each record p of outer, counting each
// outer record as a row read. Stopping it stops the inner pager being
// read and the outer.
func flat[P, T any](q *run, outer pager[P], inner func(P) pager[T]) pager[T] {
	var parents []P
	outerDone := false
	var cur *pager[T]
	return pager[T]{
		next: func() ([]T, bool, error) {
			for {
				if cur != nil {
					items, done, err := cur.next()
					if err != nil {
						return nil, false, err
					}
					if done {
						cur.close()
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
					ps, done, err := outer.next()
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
				in := inner(p)
				cur = &in
			}
		},
		stop: func() {
			if cur != nil {
				cur.close()
				cur = nil
			}
			outer.close()
			parents, outerDone = nil, true
		},
	}
}

// keep filters a pager.
func keep[T any](p pager[T], ok func(T) bool) pager[T] {
	return pager[T]{
		next: func() ([]T, bool, error) {
			items, done, err := p.next()
			out := items[:0:0]
			for _, it := range items {
				if ok(it) {
					out = append(out, it)
				}
			}
			return out, done, err
		},
		stop: p.stop,
	}
}

// roomDrawers pages through a room's stored drawers, newest first, with
// DrawersBefore from the last drawer of the page before: the store's own
// resume point, so a room of a million drawers is read pageSize at a time.
// With since set, only drawers created at or after it (the scan stops at
// the first older one); with until set, only drawers created before it.
// Each page's visitor returns before the page is handed over: nothing is
// held open between pages.
func roomDrawers(q *run, roomID string, since, until *time.Time) pager[*store.Drawer] {
	var last *store.Drawer
	return pager[*store.Drawer]{next: func() ([]*store.Drawer, bool, error) {
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
	}}
}
