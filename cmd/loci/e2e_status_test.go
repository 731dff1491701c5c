package main_test

import (
	"fmt"
	"strings"
	"testing"
)

// TestStatusCountsFollowEveryWrite: the counts of GET /api/status, kept by
// the store rather than recounted, are exact after drawers filed (an
// exact and a near duplicate among them), superseded, deleted, a link
// undone, a room and a wing deleted, and after a kill -9 and a restart.
func TestStatusCountsFollowEveryWrite(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	want := func(step string, wings, rooms, drawers, stored, links int) {
		t.Helper()
		r := d.do("GET", "/api/status", nil)
		got := fmt.Sprint(get[float64](r.body, "counts", "wings"), get[float64](r.body, "counts", "rooms"),
			get[float64](r.body, "counts", "drawers"), get[float64](r.body, "counts", "drawers_stored"),
			get[float64](r.body, "counts", "similar_links"))
		if exp := fmt.Sprint(wings, rooms, drawers, stored, links); r.status != 200 || got != exp {
			t.Fatalf("%s: counts (wings rooms drawers stored links) %s, want %s (%d %s)", step, got, exp, r.status, r.raw)
		}
	}
	file := func(wing, room, content string) string {
		t.Helper()
		r := d.do("POST", "/api/wings/"+wing+"/rooms/"+room+"/drawers", map[string]any{"content": content})
		if r.status != 201 && r.status != 200 {
			t.Fatalf("file %d %s", r.status, r.raw)
		}
		return get[string](r.body, "drawer", "id")
	}
	want("empty", 0, 0, 0, 0, 0)
	text := "The writer batches waiting writes into one synced transaction."
	first := file("work", "notes", text)
	file("work", "notes", text) // the exact copy is the same drawer
	near := file("work", "notes", strings.Replace(text, "synced", "synched", 1))
	file("work", "ideas", "an index of every room, rebuilt at night")
	file("home", "garden", "the tomatoes need water every other day")
	want("filed", 2, 3, 4, 4, 1)
	if r := d.do("POST", "/api/drawers/"+first+"/supersede", map[string]any{"content": "The writer commits each batch in one synced transaction."}); r.status != 200 && r.status != 201 {
		t.Fatalf("supersede %d %s", r.status, r.raw)
	}
	want("superseded", 2, 3, 4, 5, 1)
	dups := d.do("GET", "/api/drawers/"+near+"/duplicates", nil)
	links := get[[]any](dups.body, "similar")
	if len(links) == 0 {
		t.Fatalf("the near copy's duplicates: %s", dups.raw)
	}
	link := get[string](links[0].(map[string]any), "link_id")
	if r := d.do("DELETE", "/api/drawers/"+near+"/duplicates/"+link, nil); r.status != 200 {
		t.Fatalf("undo the link %d %s", r.status, r.raw)
	}
	want("a link undone", 2, 3, 4, 5, 0)
	if r := d.do("DELETE", "/api/wings/work/rooms/notes/drawers/"+near, nil); r.status != 200 {
		t.Fatalf("delete a drawer %d %s", r.status, r.raw)
	}
	want("a drawer deleted", 2, 3, 3, 4, 0)
	if r := d.do("DELETE", "/api/wings/work/rooms/ideas", nil); r.status != 200 {
		t.Fatalf("delete a room %d %s", r.status, r.raw)
	}
	want("a room deleted", 2, 2, 2, 3, 0)
	if r := d.do("DELETE", "/api/wings/home", nil); r.status != 200 {
		t.Fatalf("delete a wing %d %s", r.status, r.raw)
	}
	want("a wing deleted", 1, 1, 1, 2, 0)
	d.cmd.Process.Kill() // SIGKILL
	<-d.exited
	d = start(t, home, palace)
	want("after kill -9", 1, 1, 1, 2, 0)
}
