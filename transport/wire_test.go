package transport

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/config"
	"github.com/loci-dev/loci/search"
	"github.com/loci-dev/loci/services"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/dedup"
)

// The client reads every golden answer into its api type without an
// unknown field and writes it back unchanged: the CLI sees all a client sees.
func TestClientTypesReadEveryAnswer(t *testing.T) {
	types := map[string]func() any{
		"wing list": func() any { return new(api.WingList) }, "empty wing list": func() any { return new(api.WingList) },
		"one wing": func() any { return new(api.Wing) }, "wing created": func() any { return new(api.WingCreated) },
		"room list": func() any { return new(api.RoomList) }, "one room": func() any { return new(api.Room) },
		"room created": func() any { return new(api.RoomCreated) }, "removed": func() any { return new(api.RemovedAnswer) },
		"job j": func() any { return new(api.Job) }, "job k": func() any { return new(api.Job) },
		"drawer list": func() any { return new(api.DrawerList) }, "empty drawer list": func() any { return new(api.DrawerList) },
		"write": func() any { return new(api.WriteResult) }, "write without links": func() any { return new(api.WriteResult) },
		"history": func() any { return new(api.History) }, "duplicates": func() any { return new(api.Duplicates) },
		"diary": func() any { return new(api.DiaryEntries) }, "supersede": func() any { return new(api.Supersede) },
		"supersede without replacement": func() any { return new(api.Supersede) }, "link removed": func() any { return new(api.LinkRemoved) },
		"search": func() any { return new(api.SearchResult) }, "no hits": func() any { return new(api.SearchResult) },
		"wake-up": func() any { return new(api.WakeUp) }, "wake-up without a diary": func() any { return new(api.WakeUp) },
		"embedding": func() any { return new(api.Embedding) }, "token": func() any { return new(api.GeneratedToken) },
		"revoked": func() any { return new(api.TokenRevoked) }, "health": func() any { return new(api.DaemonState) },
		"mode set": func() any { return new(api.ModeSet) },
		"entity":   func() any { return new(api.Entity) }, "entity list": func() any { return new(api.EntityList) },
		"mention linked": func() any { return new(api.MentionLinked) }, "fact list": func() any { return new(api.FactList) },
		"fact history": func() any { return new(api.FactHistory) }, "graph": func() any { return new(api.Graph) },
		"trigger": func() any { return new(api.Trigger) }, "trigger fired": func() any { return new(api.TriggerFired) },
		"filed":          func() any { return new(api.Filed) },
		"search clipped": func() any { return new(api.SearchResult) }, "search brief": func() any { return new(api.BriefResult) },
		"transcript hit": func() any { return new(api.SearchResult) }, "wake-up with the last session": func() any { return new(api.WakeUp) },
		"source list": func() any { return new(api.SourceList) }, "source package installed": func() any { return new(api.SourcePackageInstalled) },
		"built-in source": func() any { return new(api.SourcePackage) },
		"backup list":     func() any { return new(api.BackupList) }, "backup list with a download": func() any { return new(api.BackupList) }, "status backup": func() any { return new(api.Status) },
		"db state open": func() any { return new(api.DBState) }, "db state closed": func() any { return new(api.DBState) },
	}
	b, err := os.ReadFile(goldenFile)
	if err != nil {
		t.Fatal(err)
	}
	var answers map[string]json.RawMessage
	if err := json.Unmarshal(b, &answers); err != nil {
		t.Fatal(err)
	}
	for name, raw := range answers {
		mk, ok := types[name]
		if !ok {
			t.Errorf("golden answer %q has no client type here", name)
			continue
		}
		v := mk()
		roundTrip(t, json.RawMessage(raw), v)
		sameAnswer(t, name, v)
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
		t.Run(path, func(t *testing.T) {
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
		})
	}
}

// The wing and room answers render as clients have always read them.
func TestWingAndRoomAnswersRenderAsBefore(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	room := services.RoomInfo{Room: store.Room{ID: "r", WingID: "w", Name: "rn", Description: "d", CreatedAt: now}, WingName: "wn", DrawerCount: 2, Stored: 3}
	bare := services.RoomInfo{Room: store.Room{ID: "r2", WingID: "w", Name: "empty", CreatedAt: now}, WingName: "wn"}
	wing := services.WingInfo{Wing: store.Wing{ID: "w", Name: "wn", Description: "d", CreatedAt: now}, RoomCount: 2, DrawerCount: 2,
		Rooms: []services.RoomInfo{room, bare}}
	plain := services.WingInfo{Wing: store.Wing{ID: "v", Name: "vn", CreatedAt: now}}
	for name, answer := range map[string]any{
		"wing list":       apiWings([]services.WingInfo{wing, plain}),
		"empty wing list": apiWings([]services.WingInfo{}),
		"one wing":        apiWing(wing),
		"wing created":    api.WingCreated{Created: true, Wing: apiWing(plain)},
		"room list":       api.RoomList{Rooms: apiRooms([]services.RoomInfo{room, bare})},
		"one room":        apiRoom(room),
		"room created":    api.RoomCreated{Room: apiRoom(bare)},
		"removed":         apiRemoved(store.Removed{Wings: 1, Rooms: 2, Drawers: 3}),
	} {
		sameAnswer(t, name, answer)
	}
}

// Job answers render as the stored job without its input always did.
func TestJobAnswersRenderAsBefore(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	total := int64(10)
	full := store.Job{ID: "j", Kind: "checkpoint", Status: "running", Priority: store.PriorityHigh, RequestedBy: "mcp",
		CreatedAt: now, UpdatedAt: now, StartedAt: &now, FinishedAt: &now,
		Progress: store.Progress{Current: 3, Total: &total, Message: "items written"}, Attempt: 1, RecoveryAttempts: 2,
		Checkpoint: json.RawMessage(`{"next_index":3}`), Result: json.RawMessage(`{"items":3}`), Error: "e",
		LeaseOwner: "o", LeaseExpiresAt: &now, PauseRequested: true, CancelRequested: true,
		Input: json.RawMessage(`{"items":[]}`)}
	bare := store.Job{ID: "k", Kind: "demo", Status: "queued", Priority: store.PriorityNormal, RequestedBy: "cli", CreatedAt: now, UpdatedAt: now}
	for _, j := range []store.Job{full, bare} {
		sameAnswer(t, "job "+j.ID, apiJob(&j))
	}
}

// Drawer answers render as clients have always read them.
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
	previews := []services.Preview{{ID: "i", Name: "n", Preview: "c", Bytes: 1, Tags: []string{"t"}, Source: full.Source,
		ValidFrom: now, ValidTo: &now, CreatedAt: now, SupersededBy: "s"}, {ID: "b", Preview: "c", Bytes: 1, Tags: []string{}, ValidFrom: now, CreatedAt: now}}
	res := &store.WriteResult{Drawer: &bare, Created: true, Similar: []store.Link{link}}
	sup := &store.SupersedeResult{Superseded: &full, Replacement: &bare}
	for name, answer := range map[string]any{
		"drawer list":                   apiPreviews(previews),
		"empty drawer list":             apiPreviews(nil),
		"write":                         apiWrite(res),
		"write without links":           apiWrite(&store.WriteResult{Drawer: &full}),
		"history":                       apiHistory(&full, []store.Drawer{bare, full}),
		"duplicates":                    api.Duplicates{Drawer: apiDrawer(&bare), Similar: apiSimilarList(views)},
		"diary":                         api.DiaryEntries{Entries: apiDrawerList([]store.Drawer{full})},
		"supersede":                     api.Supersede{Superseded: apiDrawer(sup.Superseded), Replacement: apiDrawerPtr(sup.Replacement)},
		"supersede without replacement": api.Supersede{Superseded: apiDrawer(&full)},
		"link removed":                  api.LinkRemoved{Removed: "l"},
	} {
		sameAnswer(t, name, answer)
	}
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
		"mining":      map[string]any{"chunk_chars": c.Mining.ChunkChars, "max_file_bytes": c.Mining.MaxFileBytes, "max_documents": c.Mining.MaxDocuments, "source_timeout_secs": c.Mining.SourceTimeoutSecs, "secrets": c.Mining.Secrets},
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

// Search and wake-up answers render as clients have always read them.
func TestSearchAndWakeUpRenderAsBefore(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 5, time.UTC)
	d := store.Drawer{ID: "i", WingID: "w", RoomID: "r", Name: "n", Content: "c", Tags: []string{"t"},
		Source: store.Source{Kind: "note"}, Provenance: store.Provenance{RequestedBy: "cli"}, ValidFrom: now, CreatedAt: now}
	res := &search.SearchResult{Query: "q", Ranking: "hybrid", Hits: []search.Hit{
		{Drawer: d, WingName: "work", RoomName: "ops", Score: 0.03, Signals: &api.HitSignals{Lexical: &api.LexicalSignal{Rank: 1, Score: 2.5, AllWords: true},
			Semantic: &api.SemanticSignal{Rank: 2, Similarity: 0.8}}},
		{Drawer: d, WingName: "work", RoomName: "ops", Score: 0.01}}}
	for name, answer := range map[string]any{
		"search":                  apiSearch(res),
		"no hits":                 apiSearch(&search.SearchResult{Query: "q", Ranking: "lexical", Hits: []search.Hit{}}),
		"wake-up":                 apiWakeUp(&services.WakeUp{AgentIdentity: "a", Wing: "w", Diary: &d, Items: []services.WakeUpItem{{Drawer: d}}, Bytes: 1, Skipped: 2}),
		"wake-up without a diary": apiWakeUp(&services.WakeUp{AgentIdentity: "a", Items: []services.WakeUpItem{}}),
		"transcript hit": apiSearch(&search.SearchResult{Query: "q", Ranking: "lexical", Hits: []search.Hit{{Drawer: d, WingName: "work", RoomName: "sessions",
			Document: "s.jsonl", Chunk: 2, Score: 1, Turn: &api.HitTurn{Role: "assistant", SubAgent: true, At: "2026-11-22T12:00:00Z"}}}}),
		"wake-up with the last session": apiWakeUp(&services.WakeUp{AgentIdentity: "a", Wing: "w", Items: []services.WakeUpItem{}, Bytes: 30,
			LastSession: &api.WakeUpSession{Agent: "claude-code", SessionID: "s", Title: "t", Project: "/p", Ended: now, Drawers: []string{"i"},
				Turns: 1, Content: "[user · 2026-11-22 12:00:00 UTC]\nok\n"}}),
	} {
		sameAnswer(t, name, answer)
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

// The small answers keep the shapes clients read.
func TestSmallAnswersRenderAsBefore(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	for name, answer := range map[string]any{
		"embedding": api.Embedding{DrawerID: "d", Profile: "p", Provider: "hash", Model: "m", Dimension: 2, Pipeline: "x", CreatedAt: now},
		"token":     api.GeneratedToken{Token: "loci_x", Algorithm: "sha256", Version: 1, CreatedAt: now},
		"revoked":   api.TokenRevoked{Revoked: true},
		"health":    api.DaemonState{Status: "ok"},
		"mode set":  api.ModeSet{Mode: "read_only"},
	} {
		sameAnswer(t, name, answer)
	}
}

// The knowledge graph's and the triggers' answers are pinned as clients
// read them.
func TestGraphAndTriggerAnswersRender(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	later := now.Add(time.Hour)
	e := store.Entity{ID: "e1", Name: "PostgreSQL", Kind: "tool", Key: "postgresql", Aliases: []string{"postgre sql"}, CreatedAt: now}
	o := store.Entity{ID: "e2", Name: "Caroline", Kind: "person", Key: "caroline", CreatedAt: now}
	f := services.Fact{Relationship: store.Relationship{ID: "f1", Subject: "e2", Predicate: "uses", Object: "e1", Confidence: 0.8,
		ValidFrom: now, ValidTo: &later, RecordedAt: now, Drawer: "d1", Job: "j1", Extractor: "checkpoint", SupersededBy: "f2", Reason: "moved", ClosedBy: "d2"},
		Subject: o, Object: e, Current: false, EvidenceCurrent: true,
		Assertions: []services.Assertion{{Drawer: "d1", Job: "j1", Extractor: "checkpoint", RecordedAt: now, DrawerCurrent: true},
			{Drawer: "d3", Job: "j3", Extractor: "heuristic", RecordedAt: later}}}
	m := store.Mention{Drawer: "d1", Entity: "e1", Name: "postgre sql", Rule: "normalized", Confidence: 1, Extractor: "manual", Origin: "http", CreatedAt: now}
	tr := services.TriggerInfo{Name: "hook", Trigger: config.Trigger{Miner: "docs", Type: "webhook", Enabled: true},
		Settings: map[string]string{"delivery_header": "x-github-delivery"}, Status: "active", Running: true,
		Endpoint: "http://127.0.0.1:8787/hooks/hook", CredentialKind: "env", CredentialAvailable: true, Fired: 3, Coalesced: 1, Deliveries: 4,
		NextDue: &later, LastJob: "j9"}
	for name, answer := range map[string]any{
		"entity":         apiEntity(&e),
		"entity list":    api.EntityList{Entities: []api.Entity{apiEntity(&e), apiEntity(&o)}, Truncated: true},
		"mention linked": api.MentionLinked{Mention: apiMention(&m), Entity: apiEntity(&e), Linked: true},
		"fact list":      api.FactList{Entity: apiEntity(&o), Relationships: []api.Fact{apiFact(&f)}},
		"fact history":   api.FactHistory{Relationship: apiFact(&f), Related: []api.RelatedFact{{Relation: "superseded_by", Reason: "moved", Evidence: "d2", Relationship: apiFact(&f)}}},
		"graph":          api.Graph{Nodes: []api.Entity{apiEntity(&e)}, Edges: []api.Fact{apiFact(&f)}},
		"trigger":        apiTrigger(tr),
		"trigger fired":  api.TriggerFired{Outcome: "coalesced", Job: apiJob(&store.Job{ID: "j9", Kind: "mine", Status: "queued", CreatedAt: now, UpdatedAt: now})},
	} {
		sameAnswer(t, name, answer)
	}
}
