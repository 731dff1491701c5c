package services

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/sources"
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

// turnsAt is a session's turns, one a minute from t0, alternating user
// and assistant from the first.
func turnsAt(t0 time.Time, texts ...string) []sources.Turn {
	out := make([]sources.Turn, len(texts))
	for i, s := range texts {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		out[i] = sources.Turn{Role: role, Time: t0.Add(time.Duration(i) * time.Minute), Text: s}
	}
	return out
}

// Wake-up with a wing offers the closing turns of its latest session (by
// the time of its last turn, not the filing order): the last few turns,
// whole, oldest first, as one item within max_bytes; not when a
// checkpoint is newer than the session's end, and back once the session
// goes on after it; an over-long last turn keeps its end; without a wing,
// none.
func TestWakeUpOffersTheLastSessionsClosingTurns(t *testing.T) {
	sys, db := newSystem(t)
	p := &Palace{DB: db, Sys: sys, Dedup: store.Dedup{Enabled: true, Threshold: 0.9}}
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	file := func(id, room string, turns []sources.Turn, chunk int) *store.Drawer {
		t.Helper()
		s := &sources.Session{ID: id, Agent: "claude-code", Project: "/work/app", Title: "title " + id, Turns: turns}
		doc, err := sources.TranscriptDocument(id+".jsonl", room, "/home/a/.claude/projects/app/"+id+".jsonl", "claude-code/1", id+".jsonl", s)
		if err != nil {
			t.Fatal(err)
		}
		o := map[string]any{}
		_ = json.Unmarshal(doc.Origin, &o)
		o["chunk"] = chunk
		origin, _ := json.Marshal(o)
		res, err := p.CreateDrawer(ctx, store.NewDrawer{Wing: "app", Room: room, Content: strings.Join(doc.Units, ""),
			Source: store.Source{Kind: store.KindTranscript, URI: doc.URI, Origin: origin}, Provenance: store.Provenance{RequestedBy: store.ByCLI}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Drawer
	}
	checkpoint := func(content string) {
		t.Helper()
		if _, err := p.CreateDrawer(ctx, store.NewDrawer{Wing: "app", Room: store.CheckpointRoom, Content: content,
			Source: store.Source{Kind: store.KindManual, Agent: "claude-code"}, Provenance: store.Provenance{RequestedBy: store.ByCLI}}); err != nil {
			t.Fatal(err)
		}
	}
	var texts []string
	for i := range 8 {
		texts = append(texts, fmt.Sprintf("Turn %d of the newer session.", i))
	}
	began := now.Add(-20 * time.Minute)
	newer := file("newer", "sessions", turnsAt(began, texts...), 0)
	// The older session is filed after the newer one (a backfill).
	file("older", "sessions", turnsAt(now.Add(-2*time.Hour), "An older session.", "Long ago."), 0)
	w, err := p.WakeUp(ctx, "claude-code", "app", 10, 8192)
	if err != nil {
		t.Fatal(err)
	}
	ls := w.LastSession
	if ls == nil || ls.SessionID != "newer" || ls.Agent != "claude-code" || ls.Project != "/work/app" || ls.Turns != closingTurnsMax ||
		!ls.Ended.Equal(began.Add(7*time.Minute)) || len(ls.Drawers) != 1 || ls.Drawers[0] != newer.ID || ls.Clipped {
		t.Fatalf("last session: %+v", ls)
	}
	want := strings.Join(sources.TurnUnits(&sources.Session{Turns: turnsAt(began, texts...)[2:]}), "")
	if ls.Content != strings.TrimSuffix(want, "\n") {
		t.Fatalf("closing turns:\n%q\nwant\n%q", ls.Content, want)
	}
	if len(w.Items) != 0 || w.Bytes != len(ls.Content) {
		t.Fatalf("items and bytes: %+v", w)
	}
	// A small budget: fewer whole turns, the last ones.
	if w, err := p.WakeUp(ctx, "claude-code", "app", 10, 300); err != nil || w.LastSession == nil ||
		w.LastSession.Turns >= closingTurnsMax || w.Bytes > 300 || !strings.HasSuffix(w.LastSession.Content, "Turn 7 of the newer session.\n") {
		t.Fatalf("max_bytes 300: %+v %v", w.LastSession, err)
	}
	// Every wing: no session.
	if w, err := p.WakeUp(ctx, "claude-code", "", 10, 8192); err != nil || w.LastSession != nil {
		t.Fatalf("no wing: %+v %v", w, err)
	}
	// A checkpoint filed after the session's end: no closing turns.
	checkpoint("where we left the proxy")
	if w, err := p.WakeUp(ctx, "claude-code", "app", 10, 8192); err != nil || w.LastSession != nil || len(w.Items) != 1 {
		t.Fatalf("after a checkpoint: %+v %v", w, err)
	}
	// The session goes on after the checkpoint (its next chunk): its
	// closing turns are back, across its last two chunks.
	next := file("newer", "sessions", turnsAt(now.Add(time.Minute), "One more thing.", "Done."), 1)
	w, err = p.WakeUp(ctx, "claude-code", "app", 10, 8192)
	if err != nil || w.LastSession == nil || w.LastSession.Turns != closingTurnsMax || len(w.LastSession.Drawers) != 2 ||
		w.LastSession.Drawers[0] != next.ID || w.LastSession.Drawers[1] != newer.ID ||
		!strings.HasPrefix(w.LastSession.Content, "[user · ") || !strings.Contains(w.LastSession.Content, "Turn 4 of the newer session.") ||
		!strings.HasSuffix(w.LastSession.Content, "Done.\n") || len(w.Items) != 1 || w.Bytes != len(w.LastSession.Content)+len(w.Items[0].Content) {
		t.Fatalf("the session went on: %+v %v", w.LastSession, err)
	}
	// One item: the closing turns take it.
	if w, err := p.WakeUp(ctx, "claude-code", "app", 1, 8192); err != nil || w.LastSession == nil || len(w.Items) != 0 {
		t.Fatalf("max_items 1: %+v %v", w, err)
	}
	// An over-long last turn keeps its end within the budget.
	long := strings.Repeat("words of a long answer ", 200) + "The end of it."
	file("long", "big", turnsAt(now.Add(time.Hour), "Explain.", long), 0)
	w, err = p.WakeUp(ctx, "claude-code", "app", 10, 1024)
	if err != nil || w.LastSession == nil || w.LastSession.SessionID != "long" || !w.LastSession.Clipped || w.LastSession.Turns != 1 ||
		len(w.LastSession.Content) > 1024 || !strings.HasSuffix(w.LastSession.Content, "The end of it.\n") ||
		!strings.HasPrefix(w.LastSession.Content, "[assistant · ") || !strings.Contains(w.LastSession.Content, "UTC]\n…words") {
		t.Fatalf("an over-long last turn: %+v %v", w.LastSession, err)
	}
}

// A sub-agent's session, even the newest, is not the last session to wake
// up to: the main session it ran for is.
func TestWakeUpSkipsASubAgentsSession(t *testing.T) {
	sys, db := newSystem(t)
	p := &Palace{DB: db, Sys: sys, Dedup: store.Dedup{Enabled: true, Threshold: 0.9}}
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	file := func(id string, turns []sources.Turn) {
		t.Helper()
		s := &sources.Session{ID: id, Agent: "opencode", Project: "/work/app", Title: "title " + id, Turns: turns}
		doc, err := sources.TranscriptDocument(id, "opencode", "/data/opencode.db#"+id, "opencode/1", "", s)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.CreateDrawer(ctx, store.NewDrawer{Wing: "app", Room: "opencode", Content: strings.Join(doc.Units, ""),
			Source: store.Source{Kind: store.KindTranscript, URI: doc.URI, Origin: doc.Origin}, Provenance: store.Provenance{RequestedBy: store.ByCLI}}); err != nil {
			t.Fatal(err)
		}
	}
	file("main", turnsAt(now.Add(-10*time.Minute), "Deploy the checklist.", "Asked a sub-agent to find it."))
	sub := turnsAt(now.Add(-5*time.Minute), "Find the deploy checklist.", "Found it in docs/deploy.md.")
	for i := range sub {
		sub[i].Sidechain = true
	}
	file("errand", sub)
	w, err := p.WakeUp(ctx, "opencode", "app", 10, 8192)
	if err != nil {
		t.Fatal(err)
	}
	if w.LastSession == nil || w.LastSession.SessionID != "main" {
		t.Fatalf("the last session should be the main one, not its sub-agent's: %+v", w.LastSession)
	}
}
