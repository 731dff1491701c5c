package actors

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
)

// Wake-up trims by whole drawers: a too-large item is skipped and older,
// smaller ones are still taken.
func TestWakeUpSkipsTooLargeItems(t *testing.T) {
	sys, db := newSystem(t)
	pal := &Palace{DB: db, Sys: sys, Dedup: store.Dedup{Enabled: true, Threshold: 0.9}}
	ctx := context.Background()
	write := func(content string) {
		t.Helper()
		if _, err := pal.CreateDrawer(ctx, store.NewDrawer{Wing: "projects", Room: store.CheckpointRoom, Content: content,
			Source: store.Source{Kind: store.KindManual}, Provenance: store.Provenance{RequestedBy: store.ByCLI}}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond)
	}
	write("oldest small checkpoint about the queue")
	write("older small checkpoint about the index")
	write(strings.Repeat("a very large checkpoint ", 40))
	if _, err := pal.DiaryWrite(ctx, "agent", "projects", "my diary entry", store.ByCLI); err != nil {
		t.Fatal(err)
	}
	w, err := pal.WakeUp(ctx, "agent", "projects", 5, 120)
	if err != nil {
		t.Fatal(err)
	}
	if w.Diary == nil || len(w.Items) != 2 || w.Skipped != 1 || w.Bytes > 120 {
		t.Fatalf("wake-up: %+v", w)
	}
	if w.Items[0].Content != "older small checkpoint about the index" {
		t.Fatalf("order: newest first expected, got %q", w.Items[0].Content)
	}
	if _, err := pal.WakeUp(ctx, "", "", 0, 0); !fault.Is(err, fault.InputInvalid) {
		t.Fatalf("no agent: %v", err)
	}
}
