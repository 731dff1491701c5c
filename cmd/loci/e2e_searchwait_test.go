package main_test

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// An agent that files a memory and searches for it at once finds it: 500
// notes filed over REST as fast as four clients can, then a search for the
// last one's own word, lexical and auto, finds it every time, in a few
// rounds (issue 38, point 8: after a burst of writes the lexical index
// was behind and a search missed them or stalled).
func TestSearchFindsABurstsLastWrite(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	n := 0
	for round := range 3 {
		const burst, clients = 500, 4
		var wg sync.WaitGroup
		errs := make(chan string, burst)
		for c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := c; i < burst-1; i += clients {
					r := d.do("POST", "/api/wings/notes/rooms/burst/drawers", map[string]any{
						"content": fmt.Sprintf("Round %d note %d: the lamp by the window flickers, reading %d.", round, i, i*7919)})
					if r.status != 201 {
						errs <- fmt.Sprintf("%d %s", r.status, r.raw)
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Fatalf("filing: %s", e)
		}
		// The last note, acknowledged, then searched for at once.
		n++
		word := fmt.Sprintf("quokka%dzebra", n)
		content := fmt.Sprintf("Round %d: remember the %s password hint.", round, word)
		if r := d.do("POST", "/api/wings/notes/rooms/burst/drawers", map[string]any{"content": content}); r.status != 201 {
			t.Fatalf("filing the last note: %d %s", r.status, r.raw)
		}
		for _, ranking := range []string{"lexical", "auto"} {
			t0 := time.Now()
			r := d.do("POST", "/api/search", map[string]any{"text": word, "ranking": ranking})
			hits := get[[]any](r.body, "hits")
			if r.status != 200 || len(hits) == 0 || hits[0].(map[string]any)["content"] != content {
				t.Fatalf("round %d, %s: the note just filed is not found: %d %s", round, ranking, r.status, r.raw)
			}
			t.Logf("round %d, %s: found in %v", round, ranking, time.Since(t0).Round(time.Millisecond))
		}
	}
}
