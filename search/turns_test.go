package search

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/actors"
	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/config"
	"github.com/loci-dev/loci/index/embed"
	"github.com/loci-dev/loci/sources"
	"github.com/loci-dev/loci/store"
)

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

// A hit from a transcript names the turn that matched (role, sub-agent,
// time); a hit of another kind with the same text names none; and a
// window clipped around a question keeps its reply in view.
func TestTranscriptHitsNameTheirTurn(t *testing.T) {
	st := newSearchStack(t)
	p := &Palace{DB: st.db, Sys: st.sys, Dedup: store.Dedup{Enabled: true, Threshold: 0.9}}
	ctx := context.Background()
	t0 := time.Date(2026, 11, 25, 10, 3, 12, 0, time.UTC)
	turns := turnsAt(t0,
		"Morning. Let us look at the lighthouse pictures first.",
		"Sure, the lighthouse pictures are in the assets folder.",
		"Good. Now the other thing, since the proxy and the metrics exporter both run on this box and we keep tripping over them: "+
			strings.Repeat("we moved things around twice already and nobody wrote it down anywhere sensible. ", 3)+
			"Which port should the dashboard listen on?",
		"Let me check what else runs on this machine first; the proxy and the metrics exporter both bind numbers below eight "+
			"thousand, and the kernel hands out ephemeral ones from a range above. Use 7411 then.",
		"Thanks, noted.")
	turns = append(turns, sources.Turn{Role: "assistant", Sidechain: true, Time: t0.Add(9 * time.Minute), Text: "The sub-agent grepped the harbour logs."})
	content := strings.Join(sources.TurnUnits(&sources.Session{Turns: turns}), "")
	file := func(kind string) *store.Drawer {
		res, err := p.CreateDrawer(ctx, store.NewDrawer{Wing: "w-" + kind, Room: "sessions", Content: content + kind,
			Source: store.Source{Kind: kind, URI: "/home/a/.claude/projects/x/" + kind + ".jsonl"}, Provenance: store.Provenance{RequestedBy: store.ByCLI}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Drawer
	}
	tr := file(store.KindTranscript)
	s := &Search{DB: st.db, Indexer: st.ix, Log: st.log}
	search := func(text string) *SearchResult {
		t.Helper()
		res, err := s.Search(ctx, SearchQuery{Text: text, Ranking: RankLexical, SourceKind: store.KindTranscript}, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Hits) != 1 || res.Hits[0].ID != tr.ID {
			t.Fatalf("%q: %+v", text, res.Hits)
		}
		return res
	}
	for _, c := range []struct {
		q    string
		want api.HitTurn
	}{
		{"which port should the dashboard listen on", api.HitTurn{Role: "user", At: "2026-11-25T10:05:12Z"}},
		{"lighthouse pictures assets folder", api.HitTurn{Role: "assistant", At: "2026-11-25T10:04:12Z"}},
		{"harbour logs grepped", api.HitTurn{Role: "assistant", SubAgent: true, At: "2026-11-25T10:12:12Z"}},
	} {
		t.Run(c.q, func(t *testing.T) {
			res := search(c.q)
			if got := res.Hits[0].Turn; got == nil || *got != c.want {
				t.Errorf("%q: turn %+v, want %+v", c.q, got, c.want)
			}
		})
	}
	// The window around the question (its own turn's header near enough)
	// goes on into the reply, where the answer is.
	res := search("which port should the dashboard listen on")
	h := &res.Hits[0]
	s0, e0 := res.Passage(ctx, h).Window(360)
	win := h.Content[s0:e0]
	if !strings.Contains(win, "Which port should the dashboard listen on?") || !strings.Contains(win, "Use 7411 then.") || e0-s0 > 360 {
		t.Errorf("the window should hold the question and its answer: %q", win)
	}
	// Words near their turn's start: the window starts at its header.
	res = search("lighthouse pictures assets folder")
	h = &res.Hits[0]
	s0, e0 = res.Passage(ctx, h).Window(240)
	if win := h.Content[s0:e0]; !strings.HasPrefix(win, "[assistant · 2026-11-25 10:04:12 UTC]\nSure, the lighthouse") || e0-s0 > 240 {
		t.Errorf("the window should start at the turn's header: %q", win)
	}
	// Another kind: the same text names no turn.
	other := file(store.KindManual)
	res, err := s.Search(ctx, SearchQuery{Text: "harbour logs grepped", Ranking: RankLexical, SourceKind: store.KindManual}, false)
	if err != nil || len(res.Hits) != 1 || res.Hits[0].ID != other.ID || res.Hits[0].Turn != nil {
		t.Fatalf("a manual drawer: %+v %v", res.Hits, err)
	}
}

// sources.SplitTurns reads headers only at the start or after a blank line,
// and the text before the first header (a turn begun in the previous
// chunk) as a turn of no speaker.
func TestTranscriptTurnsSplitAtHeaders(t *testing.T) {
	content := "the end of a long turn\n\n[assistant · 2026-11-25 10:03:12 UTC]\nA reply quoting\n[user]\non its own line.\n\n[user]\nok\n"
	turns := sources.SplitTurns(content)
	if len(turns) != 3 || turns[0].Role != "" || turns[1].Role != "assistant" || turns[2].Role != "user" ||
		!strings.HasSuffix(content[turns[1].Start:turns[1].End], "on its own line.\n\n") || turns[2].End != len(content) {
		t.Fatalf("%+v", turns)
	}
	if got := apiTurn(turns[0]); got != nil {
		t.Fatalf("the text before the first header has no speaker: %+v", got)
	}
}

// The auto ranking's context works across the chunks of a session that
// grew: its first turns were filed by one mine, its new turns by a later
// one after other sessions' chunks, so the drawers filed around a chunk
// are not its turns' neighbours. The question's chunk lifts the chunk
// holding the answer all the same (the turn after the question's), with
// a context signal naming it.
func TestAutoContextAcrossTheChunksOfAGrownSession(t *testing.T) {
	st := newSearchStack(t)
	db, sys, ix, log := st.db, st.sys, st.ix, st.log
	cfg := config.Default(func(string) (string, bool) { return "", false })
	profiles, err := embed.Open(actors.EmbedSettings(cfg.Embedding))
	if err != nil {
		t.Fatal(err)
	}
	embed.SetDocFreqs(profiles, ix)
	vec := actors.NewVectors(db, sys, profiles, config.StaticProfile, log, actors.VectorOptions{})
	st.kicks = append(st.kicks, vec.Kick)
	vec.Start(nil)
	t.Cleanup(func() { vec.Stop(context.Background()) })
	ctx := context.Background()
	src := store.SourceIdentity{Adapter: "claude-code", Locator: "/home/a/.claude/projects"}.Key()
	// mine files sessions' chunks as the mine job does, in one commit,
	// then embeds the room's current drawers.
	mine := func(docs map[string][]string) {
		t.Helper()
		_, err := sys.Write(ctx, func(tx store.Tx) (any, error) {
			for _, id := range []string{"a.jsonl", "b.jsonl", "c.jsonl", "d.jsonl"} {
				chunks, ok := docs[id]
				if !ok {
					continue
				}
				origin, _ := json.Marshal(map[string]any{"path": id, "session_id": id, "agent": "claude-code"})
				_, err := store.FileDocument(tx, store.MinedDocument{SourceKey: src, ID: id, Name: id,
					Source:   store.Source{Kind: store.KindTranscript, URI: "/home/a/.claude/projects/" + id, Origin: origin},
					Revision: store.ContentHash(strings.Join(chunks, "")), Chunks: chunks, Wing: "w", Room: "sessions",
					JobID: store.NewID(), Requested: store.ByCLI}, store.Dedup{Enabled: true, Threshold: 0.9})
				if err != nil {
					return nil, err
				}
			}
			return nil, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range current(t, db, "w", "sessions") {
			vs, _ := profiles[config.StaticProfile].Provider.Embed(ctx, []string{d.Content})
			if _, err := vec.PutEmbedding(ctx, d.ID, config.StaticProfile, vs[0]); err != nil {
				t.Fatal(err)
			}
		}
	}
	t0 := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	unit := func(i int, role, text string) string {
		return sources.TurnUnits(&sources.Session{Turns: []sources.Turn{{Role: role, Time: t0.Add(time.Duration(i) * time.Minute), Text: text}}})[0]
	}
	first := unit(0, "user", "Let us set up the reverse proxy for the staging box.") +
		unit(1, "assistant", "Done: the proxy forwards to the app and strips the prefix.") +
		unit(2, "user", "Which port should the dashboard listen on?")
	mine(map[string][]string{"a.jsonl": {first}})
	// Other sessions are mined before the session grows.
	for i, id := range []string{"b.jsonl", "c.jsonl", "d.jsonl"} {
		mine(map[string][]string{id: {unit(i, "user", fmt.Sprintf("Session %d talks about the weather and the trains, number %d.", i, i*37))}})
	}
	mine(map[string][]string{"a.jsonl": {first,
		unit(3, "assistant", "Use 7411: the exporter already binds eight thousand and the proxy sits on eighty.")}})
	var asked, answer *store.Drawer
	for _, d := range current(t, db, "w", "sessions") {
		switch {
		case d.Source.URI != "/home/a/.claude/projects/a.jsonl":
		case strings.Contains(d.Content, "7411"):
			answer = &d
		default:
			asked = &d
		}
	}
	if asked == nil || answer == nil || !strings.Contains(asked.Content, "Which port") {
		t.Fatalf("chunks: %+v %+v", asked, answer)
	}
	s := &Search{DB: db, Indexer: ix, Vectors: vec, Log: log, Auto: cfg.Search}
	res, err := s.Search(ctx, SearchQuery{Text: "which port should the dashboard listen on", Ranking: RankAuto, Limit: 5}, false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Ranking != RankHybrid || len(res.Hits) < 2 || res.Hits[0].ID != asked.ID {
		t.Fatalf("auto: %+v", res.Hits)
	}
	var lifted *Hit
	for i := range res.Hits {
		if res.Hits[i].ID == answer.ID {
			lifted = &res.Hits[i]
		}
	}
	if lifted == nil || lifted.Signals == nil || lifted.Signals.Context == nil || lifted.Signals.Context.Neighbour != asked.ID {
		t.Fatalf("the answer's chunk should be lifted by the question's: %+v", lifted)
	}
	if lifted.Turn == nil || lifted.Turn.Role != "assistant" || lifted.Turn.At != "2026-11-25T10:03:00Z" {
		t.Fatalf("the answer's turn: %+v", lifted.Turn)
	}
}

// current lists a room's current drawers, newest first.
func current(t *testing.T, db store.DB, wing, room string) []store.Drawer {
	t.Helper()
	var out []store.Drawer
	err := db.View(context.Background(), func(r store.Reader) error {
		w, err := r.WingByName(wing)
		if err != nil || w == nil {
			return err
		}
		rm, err := r.RoomByName(w.ID, room)
		if err != nil || rm == nil {
			return err
		}
		return r.Drawers(rm.ID, true, func(d *store.Drawer) bool { out = append(out, *d); return true })
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
