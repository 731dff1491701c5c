package export_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/loci-dev/loci/export"
	"github.com/loci-dev/loci/fault"
)

// FuzzReader: whatever the bytes, the Reader never panics, and refuses
// with a loci::export::* error naming the line and offset.
func FuzzReader(f *testing.F) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	wing, room, drawer := uuid.NewString(), uuid.NewString(), uuid.NewString()
	t := &testing.T{}
	f.Add(build(t, smallHeader(),
		export.Wing{Type: export.TypeWing, ID: wing, Name: "w", CreatedAt: now},
		export.Room{Type: export.TypeRoom, ID: room, WingID: wing, Name: "r", CreatedAt: now},
		export.Drawer{Type: export.TypeDrawer, ID: drawer, WingID: wing, RoomID: room, Content: "x", Tags: []string{},
			Source: export.Source{Kind: "manual"}, ValidFrom: now, CreatedAt: now}))
	f.Add([]byte(`{"type":"header","format":"loci-export","version":1}` + "\n"))
	f.Add([]byte("age-encryption.org/v1\n-> X25519 abc\n"))
	f.Add([]byte("\n\n{}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rd := export.NewReader(bytes.NewReader(data), export.ReaderOptions{Limits: export.Limits{MaxLineBytes: 1 << 16, MaxWings: 50, MaxRooms: 50}})
		for range 10_000 {
			_, err := rd.Next()
			if err == io.EOF {
				return
			}
			if err != nil {
				var fe *fault.Error
				if !errors.As(err, &fe) || !strings.HasPrefix(string(fe.Code), "loci::export::") || !strings.HasPrefix(fe.Msg, "line ") || fe.Help == "" {
					t.Fatalf("refusal %v (%T)", err, err)
				}
				return
			}
		}
	})
}
