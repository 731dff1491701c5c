package export_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/loci-dev/loci/export"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/badgerdb"
)

// fixture is a real palace holding every kind of record an export
// carries, and secrets it must never carry.
type fixture struct {
	db store.DB
	// chain is a drawer's versions, oldest first.
	chain          []string
	diary, betaOne string
	facts          []string
	job            string
}

// Secrets the palace holds that no export may carry.
const (
	secretDigest   = "d1g35t-0f-th3-t0k3n"
	secretCursor   = "CURSOR-PAGE-TOKEN-s3cr3t"
	secretPassword = "hunter2-locator-password"
)

func openDB(t *testing.T) store.DB {
	t.Helper()
	db, err := badgerdb.Open(t.TempDir(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

var dd = store.Dedup{Enabled: true, Threshold: 0.9}

func strp(s string) *string { return &s }

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{db: openDB(t), job: uuid.NewString()}
	err := f.db.Update(ctx, func(tx store.Tx) error {
		res, err := store.CreateDrawer(tx, store.NewDrawer{Wing: "alpha", Room: "notes", Name: "plan", Content: "the first plan of the loci release",
			Tags: []string{"plan", "release"}, Source: store.Source{Kind: store.KindFile, URI: "file:///work/plan.md", Origin: json.RawMessage(`{"line":3}`)},
			Provenance: store.Provenance{RequestedBy: store.ByCLI}}, dd)
		if err != nil {
			return err
		}
		f.chain = append(f.chain, res.Drawer.ID)
		for _, text := range []string{"the second plan of the loci release, with dates", "the third plan of the loci release, shipped"} {
			s, err := store.Supersede(tx, store.Supersession{DrawerID: f.chain[len(f.chain)-1], Content: strp(text), RequestedBy: store.ByHTTP}, dd)
			if err != nil {
				return err
			}
			f.chain = append(f.chain, s.Replacement.ID)
		}
		res, err = store.CreateDrawer(tx, store.NewDrawer{Wing: "alpha", Room: "diary", Content: "today I exported the palace to a file",
			Source: store.Source{Kind: store.KindNote, Agent: "claude"}, Provenance: store.Provenance{RequestedBy: store.ByMCP}, Diary: true}, dd)
		if err != nil {
			return err
		}
		f.diary = res.Drawer.ID
		res, err = store.CreateDrawer(tx, store.NewDrawer{Wing: "beta", Room: "misc", Content: "a drawer of another wing entirely",
			Source: store.Source{Kind: store.KindManual}}, dd)
		if err != nil {
			return err
		}
		f.betaOne = res.Drawer.ID
		// Facts: added, superseded, asserted again, invalidated, linked.
		works, uses := "works_on", "uses"
		for i, op := range []store.FactOp{
			{Op: "add", Subject: "Alice", SubjectKind: "person", Predicate: &works, Object: "loci", ObjectKind: "project"},
			{Op: "supersede", RelationshipID: store.RelationshipID(f.job, 0), Object: "locinext", ObjectKind: "project"},
			{Op: "add", Subject: "Bob", SubjectKind: "person", Predicate: &uses, Object: "Go", ObjectKind: "tool"},
			{Op: "invalidate", RelationshipID: store.RelationshipID(f.job, 2), Reason: strp("Bob moved to Rust")},
			{Op: "link", RelationshipID: store.RelationshipID(f.job, 1), OtherID: store.RelationshipID(f.job, 2), Kind: "contradicts", Reason: strp("both cannot hold")},
			{Op: "add", Subject: "Alice", SubjectKind: "person", Predicate: &works, Object: "locinext", ObjectKind: "project"},
		} {
			if err := store.ApplyFact(tx, &op, f.chain[2], f.job, i, false); err != nil {
				return err
			}
		}
		f.facts = []string{store.RelationshipID(f.job, 0), store.RelationshipID(f.job, 1), store.RelationshipID(f.job, 2)}
		m, ent, _, err := store.LinkMention(tx, f.diary, "Carol", "person", false, "manual", "mcp", 0.8)
		if err != nil || m == nil {
			return err
		}
		if _, err := store.AddAlias(tx, ent.ID, "Caro"); err != nil {
			return err
		}
		// A mined document, its source state with a cursor and a locator
		// carrying a password.
		ident := store.SourceIdentity{Adapter: "git", Account: "alice", Locator: "https://alice:" + secretPassword + "@example.com/repo.git"}
		if _, err := store.FileDocument(tx, store.MinedDocument{SourceKey: ident.Key(), ID: "README.md", Name: "README.md",
			Source: store.Source{Kind: store.KindFile, URI: "https://example.com/repo/README.md"}, Meta: "m1", Revision: "r1",
			Chunks: []string{"the readme's first chunk, about installing", "the readme's second chunk, about running"},
			Wing:   "alpha", Room: "docs", JobID: f.job, Requested: store.ByDaemon}, dd); err != nil {
			return err
		}
		w, err := tx.WingByName("alpha")
		if err != nil {
			return err
		}
		if err := tx.PutSource(&store.SourceState{Key: store.TargetKey(ident.Key(), w.ID), Identity: ident, WingID: w.ID,
			Cursor: json.RawMessage(`{"page":"` + secretCursor + `"}`), Documents: 1, LastJob: f.job, LastRun: tx.Now()}); err != nil {
			return err
		}
		if err := tx.PutEmbedding(&store.Embedding{DrawerID: f.chain[2], Profile: "default", Provider: "hash", Model: "m1", Dimension: 4,
			Pipeline: "text-v1", CreatedAt: tx.Now(), Vector: []float32{0.5, -0.25, 1, 0}}); err != nil {
			return err
		}
		// A possibly_same_as link between two entities.
		carol, alice := ent.ID, ""
		if ids, err := tx.EntityIDs(store.EntityByName, "Alice"); err != nil || len(ids) != 1 {
			return fmt.Errorf("Alice: %v %v", ids, err)
		} else {
			alice = ids[0]
		}
		if err := tx.PutEntityLink(&store.EntityLink{ID: uuid.NewString(), From: carol, To: alice, Kind: "possibly_same_as", CreatedAt: tx.Now()}); err != nil {
			return err
		}
		return tx.PutAuthState(&store.AuthState{Digest: secretDigest, Algorithm: "sha256", Version: 1, CreatedAt: tx.Now()})
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// writeExport exports db with o and answers the file.
func writeExport(t *testing.T, db store.DB, o export.Options) ([]byte, export.Summary) {
	t.Helper()
	var buf bytes.Buffer
	sum, err := export.Write(t.Context(), db, &buf, o)
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), sum
}

// readAll reads a file with the Reader, failing the test on an error.
func readAll(t *testing.T, file []byte, o export.ReaderOptions) []export.Record {
	t.Helper()
	recs, err := readUntilError(file, o)
	if err != nil {
		t.Fatalf("reader refused the file: %v", err)
	}
	return recs
}

func readUntilError(file []byte, o export.ReaderOptions) ([]export.Record, error) {
	rd := export.NewReader(bytes.NewReader(file), o)
	var out []export.Record
	for {
		rec, err := rd.Next()
		if err != nil {
			if err.Error() == "EOF" {
				return out, nil
			}
			return out, err
		}
		out = append(out, rec)
	}
}

func lines(file []byte) []string {
	return strings.Split(strings.TrimSuffix(string(file), "\n"), "\n")
}

func since(t *testing.T) time.Time {
	t.Helper()
	time.Sleep(5 * time.Millisecond)
	s := time.Now()
	time.Sleep(5 * time.Millisecond)
	return s
}
