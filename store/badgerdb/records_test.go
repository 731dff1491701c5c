package badgerdb

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"reflect"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/dedup"
)

// recordSamples is one value of every record the backend stores as JSON,
// every field set, and the bytes each was stored as by the release before
// the backend had record types of its own (schema v6). The records must
// keep these bytes: a palace written by that release is read without a
// data step. Changing a record's encoding means a new version byte or a
// numbered data step, and new golden bytes here.
func recordSamples() (w store.Wing, r store.Room, d store.Drawer, l store.Link, j store.Job, a store.AuthState, dr store.DedupRecord, e store.Embedding) {
	t0 := time.Date(2026, 3, 4, 5, 6, 7, 890000000, time.UTC)
	t1 := t0.Add(time.Hour)
	total := int64(9)
	w = store.Wing{ID: "w0000000-0000-4000-8000-000000000000", Name: "proj", Description: "the project", CreatedAt: t0}
	r = store.Room{ID: "r0000000-0000-4000-8000-000000000000", WingID: w.ID, Name: "notes", Description: "d", CreatedAt: t0}
	d = store.Drawer{ID: "d0000000-0000-4000-8000-000000000000", WingID: w.ID, RoomID: r.ID, Name: "n", Content: "text",
		Tags: []string{"a", "b"}, Source: store.Source{Kind: "file", URI: "file:///x", Agent: "claude", Origin: json.RawMessage(`{"line":3}`)},
		Provenance: store.Provenance{RequestedBy: "mcp", JobID: "j0000000-0000-4000-8000-000000000000"},
		ValidFrom:  t0, ValidTo: &t1, CreatedAt: t0, SupersededBy: "d1000000-0000-4000-8000-000000000000",
		Supersedes: "d2000000-0000-4000-8000-000000000000", Diary: true}
	l = store.Link{ID: "l0000000-0000-4000-8000-000000000000", Older: d.Supersedes, Newer: d.ID, Kind: dedup.Near,
		Signals: dedup.Signals{SameHash: false, SameFingerprint: true, Similarity: 0.93, Threshold: 0.9}, CreatedAt: t0}
	j = store.Job{ID: "j0000000-0000-4000-8000-000000000000", Kind: "checkpoint", Status: store.JobRunning,
		Priority: store.PriorityHigh, RequestedBy: "cli", CreatedAt: t0, UpdatedAt: t1, StartedAt: &t0, FinishedAt: &t1,
		Progress: store.Progress{Current: 3, Total: &total, Message: "m"}, Attempt: 2, RecoveryAttempts: 1,
		Checkpoint: json.RawMessage(`{"next":4}`), Result: json.RawMessage(`{"ok":true}`), Error: "e",
		LeaseOwner: "o", LeaseExpiresAt: &t1, PauseRequested: true, CancelRequested: true}
	a = store.AuthState{Digest: "abc", Algorithm: "sha256", Version: 1, CreatedAt: t0}
	dr = store.DedupRecord{DrawerID: d.ID, Scope: r.ID, Hash: "h", Fingerprint: "f", NormLen: 4, Distinct: 2}
	e = store.Embedding{DrawerID: d.ID, Profile: "default", Provider: "static", Model: "glove", Dimension: 2,
		Pipeline: "p1", CreatedAt: t0, Vector: []float32{0.5, -1}}
	return
}

var goldenRecords = map[string]string{
	"w/w0000000-0000-4000-8000-000000000000":  `{"id":"w0000000-0000-4000-8000-000000000000","name":"proj","description":"the project","created_at":"2026-03-04T05:06:07.89Z"}`,
	"r/r0000000-0000-4000-8000-000000000000":  `{"id":"r0000000-0000-4000-8000-000000000000","wing_id":"w0000000-0000-4000-8000-000000000000","name":"notes","description":"d","created_at":"2026-03-04T05:06:07.89Z"}`,
	"d/d0000000-0000-4000-8000-000000000000":  `{"id":"d0000000-0000-4000-8000-000000000000","wing_id":"w0000000-0000-4000-8000-000000000000","room_id":"r0000000-0000-4000-8000-000000000000","name":"n","content":"text","tags":["a","b"],"source":{"kind":"file","uri":"file:///x","agent":"claude","origin":{"line":3}},"provenance":{"requested_by":"mcp","job_id":"j0000000-0000-4000-8000-000000000000"},"valid_from":"2026-03-04T05:06:07.89Z","valid_to":"2026-03-04T06:06:07.89Z","created_at":"2026-03-04T05:06:07.89Z","superseded_by":"d1000000-0000-4000-8000-000000000000","supersedes":"d2000000-0000-4000-8000-000000000000","diary":true}`,
	"l/l0000000-0000-4000-8000-000000000000":  `{"id":"l0000000-0000-4000-8000-000000000000","older":"d2000000-0000-4000-8000-000000000000","newer":"d0000000-0000-4000-8000-000000000000","kind":"near","signals":{"same_hash":false,"same_fingerprint":true,"similarity":0.93,"threshold":0.9},"created_at":"2026-03-04T05:06:07.89Z"}`,
	"j/j0000000-0000-4000-8000-000000000000":  `{"id":"j0000000-0000-4000-8000-000000000000","kind":"checkpoint","status":"running","requested_by":"cli","created_at":"2026-03-04T05:06:07.89Z","updated_at":"2026-03-04T06:06:07.89Z","started_at":"2026-03-04T05:06:07.89Z","finished_at":"2026-03-04T06:06:07.89Z","progress":{"current":3,"total":9,"message":"m"},"attempt":2,"recovery_attempts":1,"checkpoint":{"next":4},"result":{"ok":true},"error":"e","lease_owner":"o","lease_expires_at":"2026-03-04T06:06:07.89Z","pause_requested":true,"cancel_requested":true,"priority":75}`,
	"auth_state":                              `{"digest":"abc","algorithm":"sha256","version":1,"created_at":"2026-03-04T05:06:07.89Z"}`,
	"dd/d0000000-0000-4000-8000-000000000000": `{"drawer_id":"d0000000-0000-4000-8000-000000000000","scope":"r0000000-0000-4000-8000-000000000000","hash":"h","fingerprint":"f","norm_len":4,"distinct":2}`,
	// An embedding: 4-byte length, the identity as JSON, the vector.
	"e/default\x00d0000000-0000-4000-8000-000000000000": "\xb1\x00\x00\x00" + `{"drawer_id":"d0000000-0000-4000-8000-000000000000","profile":"default","provider":"static","model":"glove","dimension":2,"pipeline":"p1","created_at":"2026-03-04T05:06:07.89Z"}` + "\x00\x00\x00\x3f\x00\x00\x80\xbf",
}

// Every record is stored with the bytes of the release before, and reads
// back as the value written; a store holding those bytes reads the same.
func TestRecordsKeepTheirEncoding(t *testing.T) {
	w, r, d, l, j, a, dr, e := recordSamples()
	db, err := Open(t.TempDir(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	err = db.Update(ctx, func(tx store.Tx) error {
		for _, f := range []func() error{
			func() error { return tx.PutWing(&w) }, func() error { return tx.PutRoom(&r) },
			func() error { return tx.PutDrawer(&d, nil) }, func() error { return tx.PutLink(&l) },
			func() error { return tx.PutJob(&j, nil) }, func() error { return tx.PutAuthState(&a) },
			func() error { return tx.PutDedup(&dr) }, func() error { return tx.PutEmbedding(&e) },
		} {
			if err := f(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	raw := func(key string) []byte {
		t.Helper()
		var v []byte
		if err := db.bdb.View(func(txn *badger.Txn) error {
			item, err := txn.Get([]byte(key))
			if err != nil {
				return err
			}
			v, err = item.ValueCopy(nil)
			return err
		}); err != nil {
			t.Fatalf("%q: %v", key, err)
		}
		return v
	}
	for key, want := range goldenRecords {
		got := raw(key)
		if key[0] != 'e' {
			if len(got) == 0 || got[0] != 1 {
				t.Errorf("%q: version byte %v, want 1", key, got[:min(1, len(got))])
				continue
			}
			got = got[1:]
		}
		if !bytes.Equal(got, []byte(want)) {
			t.Errorf("%q stored as\n%q\nwant\n%q", key, got, want)
		}
	}

	// The old bytes read back as the values written.
	err = db.View(ctx, func(rd store.Reader) error {
		check := func(name string, got, want any, err error) {
			t.Helper()
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s read as %+v\nwant %+v", name, got, want)
			}
		}
		gw, err := rd.Wing(w.ID)
		check("wing", gw, &w, err)
		gr, err := rd.Room(r.ID)
		check("room", gr, &r, err)
		gd, err := rd.Drawer(d.ID)
		check("drawer", gd, &d, err)
		gl, err := rd.Link(l.ID)
		check("link", gl, &l, err)
		gj, err := rd.Job(j.ID)
		check("job", gj, &j, err)
		ga, err := rd.AuthState()
		check("auth state", ga, &a, err)
		gdr, err := rd.DedupRecord(d.ID)
		check("dedup record", gdr, &dr, err)
		ge, err := rd.Embedding(d.ID, "default")
		check("embedding", ge, &e, err)
		var changes []store.Change
		if err := rd.Changes(0, func(c store.Change) bool { changes = append(changes, c); return true }); err != nil {
			t.Fatal(err)
		}
		for _, c := range changes {
			v := raw(string(seqKey(c.Seq)))
			var m map[string]any
			if err := json.Unmarshal(v[1:], &m); err != nil || len(m) != 5 || m["seq"] == nil || m["at"] == nil ||
				m["kind"] == nil || m["action"] == nil || m["id"] == nil {
				t.Errorf("change %d stored as %q, want {seq, at, kind, action, id}", c.Seq, v)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
