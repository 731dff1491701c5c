package backup_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/backup"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/badgerdb"
)

func open(t testing.TB) *badgerdb.DB {
	t.Helper()
	db, err := badgerdb.Open(t.TempDir(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func file(t testing.TB, db store.DB, wing, room, content string) *store.Drawer {
	t.Helper()
	var d *store.Drawer
	err := db.Update(context.Background(), func(tx store.Tx) error {
		res, err := store.CreateDrawer(tx, store.NewDrawer{Wing: wing, Room: room, Content: content,
			Source: store.Source{Kind: store.KindManual}, Provenance: store.Provenance{RequestedBy: store.ByHTTP}}, store.Dedup{})
		if err == nil {
			d = res.Drawer
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func fill(t testing.TB, db store.DB, n int) {
	t.Helper()
	for i := range n {
		file(t, db, fmt.Sprintf("wing-%d", i%3), fmt.Sprintf("room-%d", i%5), fmt.Sprintf("drawer number %d says something of its own, %d", i, i*7919))
	}
}

// palace is what a palace holds, drawer by drawer.
func palace(t testing.TB, db store.DB) []string {
	t.Helper()
	var out []string
	err := db.View(context.Background(), func(r store.Reader) error {
		return r.EachDrawer(func(d *store.Drawer) bool {
			out = append(out, fmt.Sprint(d.ID, " ", d.WingID, " ", d.RoomID, " ", d.Content, " ", d.Current()))
			return true
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

func codeOf(err error) fault.Code {
	var fe *fault.Error
	if errors.As(err, &fe) {
		return fe.Code
	}
	return ""
}

// A backup written to a file and one written to a stream are the same
// bytes but for the time in the header; each verifies, and its header
// describes the palace.
func TestWriteAndWriteFileAgree(t *testing.T) {
	db := open(t)
	fill(t, db, 200)
	path := filepath.Join(t.TempDir(), "full.lbk")
	h, err := backup.WriteFile(t.Context(), db, path, backup.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if h.Format != backup.Format || h.Version != backup.FormatVersion || h.Backend != "badger" || h.PalaceID == "" ||
		h.Since != 0 || h.StoreVersion == 0 || h.Counts != (backup.Counts{Wings: 3, Rooms: 15, Drawers: 200}) || h.Records == 0 {
		t.Fatalf("header %+v", h)
	}
	if id, _ := store.PalaceID(t.Context(), db); id != h.PalaceID {
		t.Fatalf("palace id %s, the store's %s", h.PalaceID, id)
	}
	v, err := backup.VerifyFile(t.Context(), path)
	if err != nil || v != h {
		t.Fatalf("VerifyFile = %+v, %v; want %+v", v, err, h)
	}
	if r, err := backup.ReadHeader(path); err != nil || r != h {
		t.Fatalf("ReadHeader = %+v, %v", r, err)
	}
	var buf bytes.Buffer
	var seen backup.Header
	hs, err := backup.Write(t.Context(), db, &buf, backup.Options{OnHeader: func(h backup.Header) {
		seen = h
		if buf.Len() != 0 {
			t.Error("OnHeader came after the first byte")
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if seen != hs || hs.BodyDigest != h.BodyDigest || hs.Records != h.Records || int64(buf.Len()) != hs.Size() {
		t.Fatalf("stream header %+v (size %d), file header %+v", hs, buf.Len(), h)
	}
	onDisk, _ := os.ReadFile(path)
	if !bytes.Equal(onDisk[backup.HeaderSize:], buf.Bytes()[backup.HeaderSize:]) {
		t.Fatal("the stream's body differs from the file's")
	}
	if _, err := backup.Verify(t.Context(), bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	if m, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*")); len(m) != 0 {
		t.Fatalf("temporary files left: %v", m)
	}
}

// rewriteHeader gives a file a changed header (its block re-encoded).
func rewriteHeader(t *testing.T, b []byte, resign bool, change func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(bytes.TrimRight(b[:backup.HeaderSize], " \n"), &m); err != nil {
		t.Fatal(err)
	}
	change(m)
	if _, ok := m["header_digest"]; ok && resign {
		// A consistent header that lies (a writer's bug): the deeper
		// checks must catch it.
		var h backup.Header
		j, _ := json.Marshal(m)
		if err := json.Unmarshal(j, &h); err == nil {
			h.HeaderDigest = ""
			j, _ = json.Marshal(h)
			sum := sha256.Sum256(j)
			m["header_digest"] = fmt.Sprintf("sha256:%x", sum)
		}
	}
	j, _ := json.Marshal(m)
	out := bytes.Clone(b)
	copy(out, bytes.Repeat([]byte{' '}, backup.HeaderSize-1))
	copy(out, j)
	return out
}

// Verify refuses every broken file with its code and, where it makes
// sense, the byte offset; a file it refuses is refused by restore too,
// before anything is written.
func TestVerifyRefusesBrokenFiles(t *testing.T) {
	db := open(t)
	fill(t, db, 300)
	dir := t.TempDir()
	path := filepath.Join(dir, "full.lbk")
	h, err := backup.WriteFile(t.Context(), db, path, backup.Options{})
	if err != nil {
		t.Fatal(err)
	}
	good, _ := os.ReadFile(path)
	flip := func(at int64) []byte { b := bytes.Clone(good); b[at] ^= 0x55; return b }
	for _, c := range []struct {
		name string
		body []byte
		code fault.Code
		msg  string
	}{
		{"empty", nil, fault.BackupInvalid, "byte 0"},
		{"not a backup", []byte("PK\x03\x04 a zip file, say, with more bytes than that"), fault.BackupInvalid, "byte 0"},
		{"a JSON file", []byte(`{"format":"something-else"}`), fault.BackupInvalid, "byte 0"},
		{"cut in the header", good[:100], fault.BackupTruncated, "byte 100"},
		{"cut after the header", good[:backup.HeaderSize], fault.BackupTruncated, fmt.Sprintf("byte %d", backup.HeaderSize)},
		{"cut in the body", good[:len(good)-1000], fault.BackupTruncated, fmt.Sprintf("byte %d", len(good)-1000)},
		{"bytes after the body", append(bytes.Clone(good), 0), fault.BackupCorrupt, fmt.Sprintf("byte %d", len(good))},
		{"a flipped byte in a value", flip(int64(len(good) - 50)), fault.BackupCorrupt, "digest"},
		{"a flipped frame length", flip(backup.HeaderSize + 3), fault.BackupCorrupt, fmt.Sprintf("byte %d", backup.HeaderSize)},
		{"a future format version", rewriteHeader(t, good, false, func(m map[string]any) { m["version"] = 2; m["new_field"] = true }), fault.BackupFutureVersion, "version 2"},
		{"a wrong record count", rewriteHeader(t, good, true, func(m map[string]any) { m["records"] = h.Records + 1 }), fault.BackupCorrupt, "records"},
		{"a wrong digest", rewriteHeader(t, good, true, func(m map[string]any) { m["body_digest"] = "sha256:" + strings.Repeat("0", 64) }), fault.BackupCorrupt, "digest"},
		{"a damaged header", flip(30), fault.BackupCorrupt, "byte 0"},
		{"a changed header", rewriteHeader(t, good, false, func(m map[string]any) { m["store_version"] = h.StoreVersion + 1 }), fault.BackupCorrupt, "its own digest"},
		{"another backend's body", rewriteHeader(t, good, true, func(m map[string]any) { m["backend"] = "postgres" }), fault.BackupUnsupported, "postgres"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_"))
			if err := os.WriteFile(p, c.body, 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := backup.VerifyFile(t.Context(), p)
			if codeOf(err) != c.code || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("VerifyFile = %v (%s); want %s naming %q", err, codeOf(err), c.code, c.msg)
			}
			target := open(t)
			before := palace(t, target)
			if _, err := backup.Restore(t.Context(), target, []string{p}, backup.RestoreOptions{}); codeOf(err) != c.code {
				t.Fatalf("Restore = %v; want %s", err, c.code)
			}
			if h, _ := target.Holds(t.Context()); h || !slices.Equal(before, palace(t, target)) {
				t.Fatal("a refused restore changed the target")
			}
		})
	}
}

// A full backup and two incrementals, each taken after more writes,
// deletions and supersessions, restore to the palace as it was at the
// last one; a gap, a wrong order, another palace's incremental and a
// non-empty target are refused and change nothing.
func TestIncrementalChainRestores(t *testing.T) {
	ctx := t.Context()
	db := open(t)
	fill(t, db, 100)
	dir := t.TempDir()
	full := filepath.Join(dir, "full.lbk")
	h0, err := backup.WriteFile(ctx, db, full, backup.Options{})
	if err != nil {
		t.Fatal(err)
	}
	doomed := file(t, db, "wing-0", "room-0", "a drawer deleted before the first incremental")
	fill(t, db, 50)
	if err := db.Update(ctx, func(tx store.Tx) error { return store.DeleteDrawer(tx, doomed) }); err != nil {
		t.Fatal(err)
	}
	inc1 := filepath.Join(dir, "inc1.lbk")
	h1, err := backup.WriteFile(ctx, db, inc1, backup.Options{Since: h0.StoreVersion, PalaceID: h0.PalaceID})
	if err != nil {
		t.Fatal(err)
	}
	if h1.Since != h0.StoreVersion || h1.StoreVersion <= h0.StoreVersion || h1.Records >= h0.Records+50*20 {
		t.Fatalf("incremental header %+v after %+v", h1, h0)
	}
	file(t, db, "wing-9", "room-9", "a new wing after the first incremental")
	inc2 := filepath.Join(dir, "inc2.lbk")
	h2, err := backup.WriteFile(ctx, db, inc2, backup.Options{Since: h1.StoreVersion, PalaceID: h1.PalaceID})
	if err != nil {
		t.Fatal(err)
	}
	want := palace(t, db)
	file(t, db, "wing-9", "room-9", "after the last backup: not restored")

	target := open(t)
	hs, err := backup.Restore(ctx, target, []string{full, inc1, inc2}, backup.RestoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(hs) != 3 || hs[2] != h2 {
		t.Fatalf("headers %+v", hs)
	}
	if got := palace(t, target); !slices.Equal(got, want) {
		t.Fatalf("restored %d drawers, want %d", len(got), len(want))
	}
	var c store.Counts
	_ = target.View(ctx, func(r store.Reader) (err error) { c, err = r.Counts(); return err })
	if c.Drawers != h2.Counts.Drawers || c.Wings != 4 {
		t.Fatalf("restored counts %+v, header %+v", c, h2.Counts)
	}

	other := open(t)
	fill(t, other, 3)
	otherFull := filepath.Join(dir, "other.lbk")
	if _, err := backup.WriteFile(ctx, other, otherFull, backup.Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := backup.WriteFile(ctx, other, filepath.Join(dir, "x.lbk"), backup.Options{Since: 1, PalaceID: h0.PalaceID}); codeOf(err) != fault.BackupPalaceMismatch {
		t.Fatalf("an incremental on another palace's base: %v", err)
	}
	for _, c := range []struct {
		name  string
		files []string
		code  fault.Code
	}{
		{"a gap", []string{full, inc2}, fault.BackupGap},
		{"an incremental first", []string{inc1, inc2}, fault.BackupGap},
		{"the wrong order", []string{full, inc2, inc1}, fault.BackupGap},
		{"two fulls", []string{full, otherFull}, fault.BackupPalaceMismatch},
		{"nothing", nil, fault.BackupInvalid},
	} {
		t.Run(c.name, func(t *testing.T) {
			target := open(t)
			if _, err := backup.Restore(ctx, target, c.files, backup.RestoreOptions{}); codeOf(err) != c.code {
				t.Fatalf("Restore = %v; want %s", err, c.code)
			}
			if h, _ := target.Holds(ctx); h {
				t.Fatal("a refused restore wrote")
			}
		})
	}
	if _, err := backup.Restore(ctx, target, []string{full}, backup.RestoreOptions{}); codeOf(err) != fault.BackupNotEmpty {
		t.Fatalf("a restore into a palace holding data: %v", err)
	}
	if got := palace(t, target); !slices.Equal(got, want) {
		t.Fatal("the refused restore changed the palace")
	}
}

// A store without the dump capability is refused, and a backup that
// fails leaves no file at its path.
func TestUnsupportedAndFailedBackups(t *testing.T) {
	db := open(t)
	fill(t, db, 20)
	path := filepath.Join(t.TempDir(), "b.lbk")
	type plain struct{ store.DB }
	if _, err := backup.WriteFile(t.Context(), plain{db}, path, backup.Options{}); codeOf(err) != fault.BackupUnsupported {
		t.Fatalf("a store without Dumper: %v", err)
	}
	if _, err := backup.Write(t.Context(), plain{db}, &bytes.Buffer{}, backup.Options{}); codeOf(err) != fault.BackupUnsupported {
		t.Fatalf("a store without Dumper: %v", err)
	}
	if _, err := backup.WriteFile(t.Context(), db, path, backup.Options{Since: 1 << 40}); codeOf(err) != fault.BackupInvalid {
		t.Fatalf("since beyond the store: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := backup.WriteFile(ctx, db, path, backup.Options{}); err == nil {
		t.Fatal("a cancelled backup succeeded")
	}
	if m, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "*")); len(m) != 0 {
		t.Fatalf("files left by failed backups: %v", m)
	}
	if m, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*")); len(m) != 0 {
		t.Fatalf("files left by failed backups: %v", m)
	}
}

// The CLI prints api.BackupHeader: it is the header, field for field.
func TestAPIHeaderIsTheHeader(t *testing.T) {
	db := open(t)
	fill(t, db, 5)
	var buf bytes.Buffer
	h, err := backup.Write(t.Context(), db, &buf, backup.Options{})
	if err != nil {
		t.Fatal(err)
	}
	j, _ := json.Marshal(h)
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	var a api.BackupHeader
	if err := dec.Decode(&a); err != nil {
		t.Fatal(err)
	}
	back, _ := json.Marshal(a)
	if !bytes.Equal(j, back) || api.BackupHeaderSize != backup.HeaderSize {
		t.Fatalf("backup.Header %s, api.BackupHeader %s", j, back)
	}
}

// Verify never panics and refuses with a code whatever the bytes. (The
// seeds are built by hand: a store opened in every fuzz worker stalls the
// fuzzer.)
func FuzzVerify(f *testing.F) {
	empty := sha256.Sum256(nil)
	hd := backup.Header{Format: backup.Format, Version: 1, PalaceID: "p", Backend: "badger", SchemaHash: "s", DataVersion: 4, StoreVersion: 9,
		CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), BodyDigest: fmt.Sprintf("sha256:%x", empty)}
	j, _ := json.Marshal(hd)
	sum := sha256.Sum256(j)
	hd.HeaderDigest = fmt.Sprintf("sha256:%x", sum)
	j, _ = json.Marshal(hd)
	h := string(j)
	block := append([]byte(h), bytes.Repeat([]byte{' '}, backup.HeaderSize-len(h)-1)...)
	block = append(block, '\n')
	if _, err := backup.Verify(context.Background(), bytes.NewReader(block)); err != nil {
		f.Fatal(err)
	}
	f.Add(block)
	f.Add(append(bytes.Clone(block), 8, 0, 0, 0, 0, 0, 0, 0, 10, 3, 'k', 'e', 'y', 32, 5, 50, 1, 0))
	f.Add([]byte(`{"format":"loci-backup"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, err := backup.Verify(context.Background(), bytes.NewReader(b))
		if err != nil && codeOf(err) == "" {
			t.Fatalf("a refusal without a code: %v", err)
		}
	})
}

// Target reads what a restore would replace: nothing in a new store;
// data and the palace's identity in one that holds a palace (what
// restore --force of another palace's backup reports as the change of
// palace id).
func TestTargetNamesThePalaceARestoreReplaces(t *testing.T) {
	ctx := t.Context()
	empty := open(t)
	if holds, id, err := backup.Target(ctx, empty); err != nil || holds || id != "" {
		t.Fatalf("an empty store: %v %q %v", holds, id, err)
	}
	db := open(t)
	fill(t, db, 2)
	want, err := store.PalaceID(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if holds, id, err := backup.Target(ctx, db); err != nil || !holds || id != want {
		t.Fatalf("a palace: %v %q %v, want true %q", holds, id, err, want)
	}
}
