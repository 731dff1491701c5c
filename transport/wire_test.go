package transport

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/loci-dev/loci/actors"
	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/config"
	"github.com/loci-dev/loci/store/dedup"
)

// TestWireDecodesWhatTheDaemonSends keeps transport/wire, the client's view,
// in step with the types the handlers render.
func TestWireDecodesWhatTheDaemonSends(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	d := store.Drawer{ID: "i", WingID: "w", RoomID: "r", Name: "n", Content: "c", Tags: []string{"t"},
		Source: store.Source{Kind: "note", URI: "u", Agent: "a"}, Provenance: store.Provenance{RequestedBy: "cli", JobID: "j"},
		ValidFrom: now, ValidTo: &now, CreatedAt: now, SupersededBy: "s", Supersedes: "p", Diary: true}
	want := api.Drawer{ID: "i", WingID: "w", RoomID: "r", Name: "n", Content: "c", Tags: []string{"t"},
		Source: api.Source{Kind: "note", URI: "u", Agent: "a"}, Provenance: api.Provenance{RequestedBy: "cli", JobID: "j"},
		ValidFrom: now, ValidTo: &now, CreatedAt: now, SupersededBy: "s", Supersedes: "p", Diary: true}
	var got api.Drawer
	roundTrip(t, d, &got)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("drawer\n got %+v\nwant %+v", got, want)
	}

	room := actors.RoomInfo{Room: store.Room{ID: "r", WingID: "w", Name: "rn", Description: "d", CreatedAt: now}, WingName: "wn", DrawerCount: 2, Stored: 3}
	wing := actors.WingInfo{Wing: store.Wing{ID: "w", Name: "wn", Description: "d", CreatedAt: now}, RoomCount: 1, DrawerCount: 2, Rooms: []actors.RoomInfo{room}}
	var gw api.Wing
	roundTrip(t, wing, &gw)
	ww := api.Wing{ID: "w", Name: "wn", Description: "d", CreatedAt: now, RoomCount: 1, Drawers: 2,
		Rooms: []api.Room{{ID: "r", WingID: "w", Wing: "wn", Name: "rn", Description: "d", CreatedAt: now, Drawers: 2, Stored: 3}}}
	if !reflect.DeepEqual(gw, ww) {
		t.Fatalf("wing\n got %+v\nwant %+v", gw, ww)
	}

	var rm api.Removed
	roundTrip(t, store.Removed{Wings: 1, Rooms: 2, Drawers: 3}, &rm)
	if rm != (api.Removed{Wings: 1, Rooms: 2, Drawers: 3}) {
		t.Fatalf("removed %+v", rm)
	}
}

func roundTrip(t *testing.T, in, out any) {
	t.Helper()
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
}

// A job's answers, one job or the list, never carry its input (a
// checkpoint's payload is memory content), and decode as api.Job.
func TestJobAnswersCarryNoInput(t *testing.T) {
	ts := newTestServer(t, false, "")
	status, job := ts.call(t, "POST", "/api/jobs", `{"type":"checkpoint","payload":{"items":[{"destination":"general","content":"the secret plan","tags":[],"source":{"kind":"manual"}}]}}`)
	if status != 202 {
		t.Fatalf("submit: %d %v", status, job)
	}
	id, _ := job["id"].(string)
	for _, path := range []string{"/api/jobs/" + id, "/api/jobs", "/api/jobs?kind=checkpoint"} {
		status, body := ts.call(t, "GET", path, "")
		raw, _ := json.Marshal(body)
		if status != 200 || bytes.Contains(raw, []byte("secret plan")) || bytes.Contains(raw, []byte(`"input"`)) {
			t.Fatalf("GET %s: %d %s", path, status, raw)
		}
		var one api.Job
		var list api.JobList
		if path == "/api/jobs/"+id {
			roundTrip(t, body, &one)
		} else {
			roundTrip(t, body, &list)
		}
	}
}

// The wing and room answers made as api types render exactly as the
// service's values did before them: nothing a client reads changed.
func TestWingAndRoomAnswersRenderAsBefore(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	room := actors.RoomInfo{Room: store.Room{ID: "r", WingID: "w", Name: "rn", Description: "d", CreatedAt: now}, WingName: "wn", DrawerCount: 2, Stored: 3}
	bare := actors.RoomInfo{Room: store.Room{ID: "r2", WingID: "w", Name: "empty", CreatedAt: now}, WingName: "wn"}
	wing := actors.WingInfo{Wing: store.Wing{ID: "w", Name: "wn", Description: "d", CreatedAt: now}, RoomCount: 2, DrawerCount: 2,
		Rooms: []actors.RoomInfo{room, bare}}
	plain := actors.WingInfo{Wing: store.Wing{ID: "v", Name: "vn", CreatedAt: now}}
	n := store.Removed{Wings: 1, Rooms: 2, Drawers: 3}
	for _, c := range []struct {
		name     string
		old, now any
	}{
		{"wing list", map[string]any{"wings": []actors.WingInfo{wing, plain}}, apiWings([]actors.WingInfo{wing, plain})},
		{"empty wing list", map[string]any{"wings": []actors.WingInfo{}}, apiWings([]actors.WingInfo{})},
		{"one wing", wing, apiWing(wing)},
		{"wing created", map[string]any{"created": true, "wing": plain}, api.WingCreated{Created: true, Wing: apiWing(plain)}},
		{"room list", map[string]any{"rooms": []actors.RoomInfo{room, bare}}, api.RoomList{Rooms: apiRooms([]actors.RoomInfo{room, bare})}},
		{"one room", room, apiRoom(room)},
		{"room created", map[string]any{"created": false, "room": bare}, api.RoomCreated{Room: apiRoom(bare)}},
		{"removed", map[string]any{"removed": n}, apiRemoved(n)},
	} {
		sameJSON(t, c.name, c.old, c.now)
	}
}

// Job answers made as api types render as the stored job without its
// input did before them.
func TestJobAnswersRenderAsBefore(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	total := int64(10)
	full := store.Job{ID: "j", Kind: "checkpoint", Status: "running", Priority: store.PriorityHigh, RequestedBy: "mcp",
		CreatedAt: now, UpdatedAt: now, StartedAt: &now, FinishedAt: &now,
		Progress: store.Progress{Current: 3, Total: &total, Message: "items written"}, Attempt: 1, RecoveryAttempts: 2,
		Checkpoint: json.RawMessage(`{"next_index":3}`), Result: json.RawMessage(`{"items":3}`), Error: "e",
		LeaseOwner: "o", LeaseExpiresAt: &now, PauseRequested: true, CancelRequested: true}
	bare := store.Job{ID: "k", Kind: "demo", Status: "queued", Priority: store.PriorityNormal, RequestedBy: "cli", CreatedAt: now, UpdatedAt: now}
	for _, j := range []store.Job{full, bare} {
		sameJSON(t, "job "+j.ID, j, apiJob(&j)) // the stored job without input: the old answer
	}
}

// Drawer answers made as api types render exactly as the service's values
// did before them.
func TestDrawerAnswersRenderAsBefore(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 123000000, time.UTC)
	full := store.Drawer{ID: "i", WingID: "w", RoomID: "r", Name: "n", Content: "c", Tags: []string{"t"},
		Source: store.Source{Kind: "note", URI: "u", Agent: "a"}, Provenance: store.Provenance{RequestedBy: "cli", JobID: "j"},
		ValidFrom: now, ValidTo: &now, CreatedAt: now, SupersededBy: "s", Supersedes: "p", Diary: true}
	bare := store.Drawer{ID: "b", WingID: "w", RoomID: "r", Content: "c", Tags: []string{}, Source: store.Source{Kind: "manual"},
		Provenance: store.Provenance{RequestedBy: "http"}, ValidFrom: now, CreatedAt: now}
	link := store.Link{ID: "l", Older: "o", Newer: "b", Kind: dedup.Near, CreatedAt: now,
		Signals: dedup.Signals{SameFingerprint: true, Similarity: 0.93, Threshold: 0.9}}
	views := []store.SimilarView{{Drawer: "o", Side: "older", Kind: "near", Similarity: 0.93, Signals: link.Signals, CreatedAt: "x", LinkID: "l"}}
	previews := []actors.Preview{{ID: "i", Name: "n", Preview: "c", Bytes: 1, Tags: []string{"t"}, Source: full.Source,
		ValidFrom: now, ValidTo: &now, CreatedAt: now, SupersededBy: "s"}, {ID: "b", Preview: "c", Bytes: 1, Tags: []string{}, ValidFrom: now, CreatedAt: now}}
	res := &store.WriteResult{Drawer: &bare, Created: true, Similar: []store.Link{link}}
	sup := &store.SupersedeResult{Superseded: &full, Replacement: &bare}
	for _, c := range []struct {
		name     string
		old, now any
	}{
		{"drawer list", map[string]any{"drawers": previews}, apiPreviews(previews)},
		{"empty drawer list", map[string]any{"drawers": []actors.Preview{}}, apiPreviews(nil)},
		{"write", oldResultView(res), apiWrite(res)},
		{"write without links", oldResultView(&store.WriteResult{Drawer: &full}), apiWrite(&store.WriteResult{Drawer: &full})},
		{"history", map[string]any{"drawer": &full, "versions": []store.Drawer{bare, full}}, apiHistory(&full, []store.Drawer{bare, full})},
		{"duplicates", map[string]any{"drawer": &bare, "similar": views}, api.Duplicates{Drawer: apiDrawer(&bare), Similar: apiSimilarList(views)}},
		{"diary", map[string]any{"entries": []store.Drawer{full}}, api.DiaryEntries{Entries: apiDrawerList([]store.Drawer{full})}},
		{"supersede", sup, api.Supersede{Superseded: apiDrawer(sup.Superseded), Replacement: apiDrawerPtr(sup.Replacement)}},
		{"supersede without replacement", &store.SupersedeResult{Superseded: &full}, api.Supersede{Superseded: apiDrawer(&full)}},
		{"link removed", map[string]any{"removed": "l"}, api.LinkRemoved{Removed: "l"}},
	} {
		sameJSON(t, c.name, c.old, c.now)
	}
}

// oldResultView is how a write's answer was rendered before package api
// shaped it: the reference TestDrawerAnswersRenderAsBefore compares with.
func oldResultView(res *store.WriteResult) map[string]any {
	similar := make([]store.SimilarView, 0, len(res.Similar))
	for _, l := range res.Similar {
		similar = append(similar, store.SimilarView{Drawer: l.Older, Side: "older", Kind: string(l.Kind),
			Similarity: l.Signals.Similarity, Signals: l.Signals, CreatedAt: l.CreatedAt.UTC().Format(time.RFC3339Nano), LinkID: l.ID})
	}
	return map[string]any{"created": res.Created, "drawer": res.Drawer, "similar": similar}
}

// oldConfigReport is how GET /api/config was rendered before package api
// shaped it.
func (s *Server) oldConfigReport() map[string]any {
	c := s.Config
	return map[string]any{
		"listener":    map[string]any{"bind": c.Server.Bind, "port": c.Server.Port, "address": s.Address},
		"palace":      c.Palace.Path,
		"datastore":   map[string]string{"backend": s.Palace.DB.Backend(), "location": s.Palace.DB.Location()},
		"auth":        map[string]bool{"enabled": c.Auth.Enabled, "token_configured": s.Auth != nil && s.Auth.SecretConfigured()},
		"dashboard":   map[string]bool{"enabled": c.Web.Enable},
		"assets":      map[string]string{"origin": assetsOrigin(c)},
		"db":          map[string]any{"bind": c.DB.Bind, "port": c.DB.Port, "allow_remote": c.DB.AllowRemote},
		"webhook":     map[string]any{"enable": c.Webhook.Enable, "bind": c.Webhook.Bind, "port": c.Webhook.Port, "allow_remote": c.Webhook.AllowRemote},
		"dedup":       c.Dedup,
		"jobs":        c.Jobs,
		"mining":      map[string]any{"chunk_chars": c.Mining.ChunkChars, "max_file_bytes": c.Mining.MaxFileBytes, "max_documents": c.Mining.MaxDocuments, "source_timeout_secs": c.Mining.SourceTimeoutSecs},
		"providers":   map[string]any{"embedding": oldEmbeddingProviders(c.Embedding), "extraction": nil},
		"config_file": c.File,
	}
}

// oldEmbeddingProviders named each profile's provider and model: never its
// URL, key or command line.
func oldEmbeddingProviders(e config.Embedding) any {
	if len(e.Profiles) == 0 {
		return nil
	}
	profiles := map[string]any{}
	for name := range e.Profiles {
		p, _ := e.ProfileNamed(name)
		profiles[name] = map[string]any{"provider": p.Provider, "model": p.Model, "dimension": p.Dimension, "pipeline": p.Pipeline}
	}
	return map[string]any{"default": e.Default, "profiles": profiles, "save_secs": e.SaveSecs}
}

// The configuration answer made as an api type renders as it did before.
func TestConfigAnswerRendersAsBefore(t *testing.T) {
	ts := newTestServer(t, true, "a-configured-secret-1234")
	s := ts.Server
	for _, profiles := range []map[string]config.Profile{nil, {"test": {Provider: "hash", Dimension: 32}}} {
		s.Config.Embedding.Profiles, s.Config.Embedding.Default = profiles, ""
		if profiles != nil {
			s.Config.Embedding.Default = "test"
		}
		sameJSON(t, "config", s.oldConfigReport(), s.configReport())
	}
}

// Search and wake-up answers made as api types render as before.
func TestSearchAndWakeUpRenderAsBefore(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 5, time.UTC)
	d := store.Drawer{ID: "i", WingID: "w", RoomID: "r", Name: "n", Content: "c", Tags: []string{"t"},
		Source: store.Source{Kind: "note"}, Provenance: store.Provenance{RequestedBy: "cli"}, ValidFrom: now, CreatedAt: now}
	res := &actors.SearchResult{Query: "q", Ranking: "hybrid", Hits: []actors.Hit{
		{Drawer: d, Score: 0.03, Signals: map[string]any{"lexical": map[string]any{"rank": 1, "score": 2.5, "all_words": true},
			"semantic": map[string]any{"rank": 2, "similarity": float32(0.8)}}},
		{Drawer: d, Score: 0.01}}}
	empty := &actors.SearchResult{Query: "q", Ranking: "lexical", Hits: []actors.Hit{}}
	wake := &actors.WakeUp{AgentIdentity: "a", Wing: "w", Diary: &d, Items: []store.Drawer{d}, Bytes: 1, Skipped: 2}
	noDiary := &actors.WakeUp{AgentIdentity: "a", Items: []store.Drawer{}}
	for _, c := range []struct {
		name     string
		old, now any
	}{
		{"search", res, apiSearch(res)},
		{"no hits", empty, apiSearch(empty)},
		{"wake-up", wake, apiWakeUp(wake)},
		{"wake-up without a diary", noDiary, apiWakeUp(noDiary)},
	} {
		sameJSON(t, c.name, c.old, c.now)
	}
}

// sameJSON reports when now renders as other JSON than old did.
func sameJSON(t *testing.T, what string, old, now any) {
	t.Helper()
	a, _ := json.Marshal(old)
	b, _ := json.Marshal(now)
	var x, y any
	_ = json.Unmarshal(a, &x)
	_ = json.Unmarshal(b, &y)
	if !reflect.DeepEqual(x, y) {
		t.Errorf("%s:\n before %s\n now    %s", what, a, b)
	}
}
