package services

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/sources"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/badgerdb"
)

// guardFormat is a session format whose agent keeps sessions 30 days.
var guardFormat = sources.SessionFormat{Name: "test-agent", Version: "1", DefaultDir: ".agent", Room: "test-agent",
	Match: func(rel string) bool { return strings.HasSuffix(rel, ".jsonl") },
	Parse: func(context.Context, io.Reader) (*sources.Session, error) { return &sources.Session{}, nil },
	Retention: func(string) (time.Duration, string) {
		return 30 * 24 * time.Hour, "keepDays"
	}}

func TestRetentionGuardWarns(t *testing.T) {
	home := t.TempDir()
	root := filepath.Join(home, ".agent")
	now := time.Now()
	for name, age := range map[string]time.Duration{"p/fresh.jsonl": time.Hour, "p/mined-old.jsonl": 40 * 24 * time.Hour,
		"p/old.jsonl": 40 * 24 * time.Hour, "p/nearly.jsonl": 25 * 24 * time.Hour, "p/notes.txt": 40 * 24 * time.Hour} {
		p := filepath.Join(root, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte("{}\n"), 0o600)
		os.Chtimes(p, now.Add(-age), now.Add(-age))
	}
	db, err := badgerdb.Open(t.TempDir(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	src := sources.SessionFiles{Format: guardFormat, Home: home}
	id, err := src.Resolve("", map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Mined into wing "w": one session still held, one the agent deleted.
	err = db.Update(ctx, func(tx store.Tx) error {
		w, _, err := store.EnsureWing(tx, "w", "")
		if err != nil {
			return err
		}
		key := store.TargetKey(id.Key(), w.ID)
		if err := tx.PutSource(&store.SourceState{Key: key, Identity: id, WingID: w.ID, Documents: 2}); err != nil {
			return err
		}
		for _, doc := range []string{"p/mined-old.jsonl", "p/deleted.jsonl"} {
			if err := tx.PutSourceDocument(&store.DocumentState{Source: key, ID: doc, WingID: w.ID}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s := &Sources{DB: db, Registry: sources.NewRegistry(sources.Directory{MaxFileBytes: 1 << 20}, src)}
	_, mined, err := s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := s.Warnings(ctx, mined, now)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, w := range ws {
		got[w.Kind] = w.Sessions
		if w.Locator != root || w.Adapter != "test-agent" || w.Message == "" {
			t.Fatalf("warning %+v", w)
		}
		// The command loci mine takes (its LOCATOR is an argument).
		if w.Kind == WarnExpiringUnmined && w.Help != "mine them now: loci mine --source test-agent "+root+" --wing test-agent" {
			t.Fatalf("help %q", w.Help)
		}
		if w.Kind == WarnDeletedByAgent && w.Wing != "w" {
			t.Fatalf("the deleted sessions' wing: %+v", w)
		}
	}
	// old.jsonl (past the period) and nearly.jsonl (within its last week)
	// are unmined; mined-old.jsonl is held by a wing; notes.txt is no
	// session; deleted.jsonl was mined and is gone.
	if got[WarnExpiringUnmined] != 2 || got[WarnDeletedByAgent] != 1 || len(ws) != 2 {
		t.Fatalf("warnings %+v", ws)
	}
}

// A warning's command names the session directory as one shell word.
func TestShellArg(t *testing.T) {
	for in, want := range map[string]string{
		"/home/ann/.claude/projects": "/home/ann/.claude/projects",
		"/home/Ann Lee/.codex":       `'/home/Ann Lee/.codex'`,
		"/tmp/it's":                  `'/tmp/it'\''s'`,
		"/tmp/$HOME":                 `'/tmp/$HOME'`,
	} {
		if got := shellArg(in); got != want {
			t.Errorf("shellArg(%q) = %s, want %s", in, got, want)
		}
	}
}
