package transport

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/services"
	"github.com/loci-dev/loci/sources"
	"github.com/loci-dev/loci/store"
)

// GET /api/sources shows each adapter's state and origin: the built-in
// ones built-in and enabled, an installed one as the registry holds it
// (with the reason it is unavailable). Pinned in the golden answers as
// "source list" (an addition: state and origin were always "enabled" and
// "built-in"; reason is new and shown only when there is one).
func TestSourceListShowsStateAndOrigin(t *testing.T) {
	reg := sources.NewRegistry(fixedAdapter{sources.Info{Name: "directory", Options: []string{"dir"},
		Capabilities: sources.Capabilities{Incremental: true, Triggers: []string{"watch"}}}},
		fixedAdapter{sources.Info{Name: "claude-code", Format: "jsonl-2", DefaultLocator: "~/.claude/projects"}})
	if _, err := reg.Put(sources.Entry{Adapter: fixedAdapter{sources.Info{Name: "chatgpt-export", Capabilities: sources.Capabilities{NeedsCredentials: true}}},
		State: sources.StateUnavailable, Origin: sources.OriginLocal,
		Reason: "its module changed on disk"}); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	mined := []services.MinedSource{{Key: "k", Identity: store.SourceIdentity{Adapter: "directory", Locator: "/r"}, WingID: "w", Wing: "wn",
		Documents: 4, LastJob: "j", LastRun: now}}
	out := apiSources(reg.Entries(), mined)
	want := map[string][2]string{"directory": {"enabled", "built-in"}, "claude-code": {"enabled", "built-in"}, "chatgpt-export": {"unavailable", "local"}}
	if len(out.Adapters) != len(want) {
		t.Fatalf("adapters: %+v", out.Adapters)
	}
	for _, a := range out.Adapters {
		if w := want[a.Name]; a.State != w[0] || a.Origin != w[1] || (a.State == "unavailable") != (a.Reason != "") {
			t.Fatalf("%s: %+v, want state %s origin %s", a.Name, a, w[0], w[1])
		}
	}
	out.Warnings = []api.SourceWarning{}
	sameAnswer(t, "source list", out)
}

// fixedAdapter is an adapter of a fixed Info that reads nothing: the
// answer pinned does not follow the real adapters' options.
type fixedAdapter struct{ info sources.Info }

func (f fixedAdapter) Info() sources.Info { return f.info }
func (f fixedAdapter) Resolve(loc string, _ map[string]string) (store.SourceIdentity, error) {
	return store.SourceIdentity{Adapter: f.info.Name, Locator: loc}, nil
}
func (fixedAdapter) ParseCursor(json.RawMessage) error { return nil }
func (fixedAdapter) Discover(context.Context, sources.Run, json.RawMessage) ([]sources.Ref, error) {
	return nil, nil
}
func (fixedAdapter) Read(context.Context, sources.Run, sources.Ref) (*sources.Document, error) {
	return nil, nil
}
