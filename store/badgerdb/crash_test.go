package badgerdb

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
)

// A kill -9 right after Badger created its next memtable file leaves that
// file empty; Badger then refuses to open ("Create a new file") although a
// second open succeeds (dgraph-io/badger#2207). Open tries that second
// open itself, and nothing committed is lost.
func TestOpenAfterAKillLeftAnEmptyMemtable(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := db.PutMeta(ctx, "kept", "yes"); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// What the killed process left: the next memtable file, created, never sized.
	if err := os.WriteFile(filepath.Join(dir, "00099.mem"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	db, err = Open(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("open after the kill: %v", err)
	}
	defer db.Close()
	if v, ok, err := db.GetMeta(ctx, "kept"); err != nil || !ok || v != "yes" {
		t.Fatalf("the committed value: %q %v %v", v, ok, err)
	}
}
