package sqlview

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// counting is a visitor over 0..n-1 that records how often it ran,
// whether it is running (entered, not returned) and how many records it
// handed over; it fails with fail after the last record when fail is set.
type counting struct {
	n, runs, handed int
	running         bool
	fail            error
}

func (c *counting) visit(fn func(int) bool) error {
	c.runs++
	c.running = true
	defer func() { c.running = false }()
	for i := range c.n {
		c.handed++
		if !fn(i) {
			return nil
		}
	}
	return c.fail
}

// drain reads p to its end.
func drain(t *testing.T, p pager[int]) ([]int, error) {
	t.Helper()
	var out []int
	for range 100 {
		items, done, err := p.next()
		out = append(out, items...)
		if err != nil || done {
			return out, err
		}
	}
	t.Fatal("the pager never ended")
	return nil, nil
}

// visitPages reads a family in one pass of its visitor, a page at a time,
// whatever its size against the page's, and ends the visitor (and
// forgets it) once the last page is taken.
func TestVisitPagesOnePass(t *testing.T) {
	for _, n := range []int{0, 1, pageSize - 1, pageSize, pageSize + 1, 2 * pageSize, 3*pageSize + 17} {
		q := &run{ctx: context.Background()}
		c := &counting{n: n}
		p := visitPages(q, c.visit)
		pages := 0
		var got []int
		for {
			items, done, err := p.next()
			if err != nil {
				t.Fatal(err)
			}
			if len(items) > pageSize {
				t.Fatalf("n=%d: a page of %d", n, len(items))
			}
			pages++
			got = append(got, items...)
			if done {
				break
			}
		}
		if len(got) != n || !slices.IsSorted(got) || (n > 0 && got[n-1] != n-1) {
			t.Fatalf("n=%d: got %d records", n, len(got))
		}
		if c.runs != 1 || c.handed != n || c.running || len(q.pulls) != 0 {
			t.Fatalf("n=%d: %d runs, %d handed, running %v, %d open", n, c.runs, c.handed, c.running, len(q.pulls))
		}
		if pages > n/pageSize+1 {
			t.Fatalf("n=%d: %d pages", n, pages)
		}
		if items, done, err := p.next(); len(items) != 0 || !done || err != nil {
			t.Fatalf("n=%d: after the end: %v %v %v", n, items, done, err)
		}
	}
}

// The visitor's error comes with the last page.
func TestVisitPagesError(t *testing.T) {
	boom := errors.New("boom")
	q := &run{ctx: context.Background()}
	c := &counting{n: pageSize + 3, fail: boom}
	got, err := drain(t, visitPages(q, c.visit))
	if !errors.Is(err, boom) || len(got) < pageSize || c.running || len(q.pulls) != 0 {
		t.Fatalf("%d records, %v, running %v, %d open", len(got), err, c.running, len(q.pulls))
	}
}

// Stopping a pager between pages ends its visitor there (its callback
// returns false); stopping one never started, or twice, does nothing.
func TestVisitPagesStop(t *testing.T) {
	q := &run{ctx: context.Background()}
	c := &counting{n: 10 * pageSize}
	p := visitPages(q, c.visit)
	if items, done, err := p.next(); len(items) != pageSize || done || err != nil {
		t.Fatalf("first page: %d %v %v", len(items), done, err)
	}
	if !c.running || len(q.pulls) != 1 {
		t.Fatalf("between pages: running %v, %d open", c.running, len(q.pulls))
	}
	p.close()
	p.close()
	if c.running || c.handed > 2*pageSize || len(q.pulls) != 0 {
		t.Fatalf("stopped: running %v, %d handed, %d open", c.running, c.handed, len(q.pulls))
	}
	if items, done, err := p.next(); len(items) != 0 || !done || err != nil {
		t.Fatalf("after stop: %v %v %v", items, done, err)
	}
	idle := &counting{n: 3}
	visitPages(q, idle.visit).close()
	if idle.runs != 0 {
		t.Fatal("a pager never read ran its visitor")
	}
}

// A flat pager stopped between pages stops its inner and outer visitors;
// the statement's end (stopPulls) stops any pager left open.
func TestPullsStopped(t *testing.T) {
	q := &run{ctx: context.Background()}
	outer := &counting{n: 2 * pageSize}
	var inners []*counting
	p := flat(q, visitPages(q, outer.visit), func(int) pager[int] {
		c := &counting{n: 2 * pageSize}
		inners = append(inners, c)
		return visitPages(q, c.visit)
	})
	if items, _, err := p.next(); len(items) != pageSize || err != nil {
		t.Fatalf("first page: %d %v", len(items), err)
	}
	if !outer.running || len(inners) != 1 || !inners[0].running || len(q.pulls) != 2 {
		t.Fatalf("between pages: outer %v, %d inner, %d open", outer.running, len(inners), len(q.pulls))
	}
	p.close()
	if outer.running || inners[0].running || len(q.pulls) != 0 {
		t.Fatalf("stopped: outer %v, inner %v, %d open", outer.running, inners[0].running, len(q.pulls))
	}

	a, b := &counting{n: 3 * pageSize}, &counting{n: 3 * pageSize}
	pa, pb := visitPages(q, a.visit), visitPages(q, b.visit)
	_, _, _ = pa.next()
	_, _, _ = pb.next()
	if !a.running || !b.running || len(q.pulls) != 2 {
		t.Fatalf("two open: %v %v %d", a.running, b.running, len(q.pulls))
	}
	q.stopPulls()
	if a.running || b.running || len(q.pulls) != 0 {
		t.Fatalf("after the statement: %v %v %d", a.running, b.running, len(q.pulls))
	}
}
