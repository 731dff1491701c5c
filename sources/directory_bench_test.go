package sources

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkDirectoryUnchanged100k is the cost of discovery on 100,000
// unchanged files (100 directories of 1,000): the walk as it was (List,
// the same walk and sort), an incremental discovery past a cursor with
// nothing changed, and one after a directory of 1,000 changed (a file
// added: its 1,000 files become suspects the mine looks up).
func BenchmarkDirectoryUnchanged100k(b *testing.B) {
	root := b.TempDir()
	at := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 100 {
		dir := filepath.Join(root, fmt.Sprintf("d%03d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for j := range 1000 {
			p := filepath.Join(dir, fmt.Sprintf("f%04d.md", j))
			if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
				b.Fatal(err)
			}
			if err := os.Chtimes(p, at, at); err != nil {
				b.Fatal(err)
			}
		}
	}
	d := Directory{MaxFileBytes: 1 << 20}
	ctx := context.Background()
	id, _ := d.Resolve(root, nil)
	all, _, err := d.List(ctx, Run{ID: id})
	if err != nil || len(all) != 100000 {
		b.Fatalf("%d files, %v", len(all), err)
	}
	time.Sleep(20 * time.Millisecond)
	last := filepath.Join(root, "d099", "f0999.md")
	if err := os.Chtimes(last, at, at); err != nil {
		b.Fatal(err)
	}
	refs, _ := d.Discover(ctx, Run{ID: id}, nil)
	cursor := refs[len(refs)-1].Cursor
	b.Run("walk as before", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := d.List(ctx, Run{ID: id}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("incremental nothing changed", func(b *testing.B) {
		for b.Loop() {
			refs, sus, err := d.DiscoverSuspects(ctx, Run{ID: id}, cursor)
			if err != nil || len(refs) != 0 || len(sus) != 0 {
				b.Fatalf("%d refs, %d suspects, %v", len(refs), len(sus), err)
			}
		}
	})
	time.Sleep(20 * time.Millisecond)
	if err := os.WriteFile(filepath.Join(root, "d050", "new.md"), []byte("new"), 0o644); err != nil {
		b.Fatal(err)
	}
	b.Run("incremental one directory changed", func(b *testing.B) {
		for b.Loop() {
			refs, sus, err := d.DiscoverSuspects(ctx, Run{ID: id}, cursor)
			if err != nil || len(refs) != 1 || len(sus) != 1000 {
				b.Fatalf("%d refs, %d suspects, %v", len(refs), len(sus), err)
			}
		}
	})
}
