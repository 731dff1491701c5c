package export_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"filippo.io/age"
	"github.com/google/uuid"

	"github.com/loci-dev/loci/export"
	"github.com/loci-dev/loci/fault"
)

// reseal replaces the last line (the end record) by a correct one, so
// that a test's alteration is what the Reader refuses, not the digest.
func reseal(ls []string) []byte {
	body := ls[:len(ls)-1]
	var buf bytes.Buffer
	for _, l := range body {
		buf.WriteString(l)
		buf.WriteByte('\n')
	}
	sum := sha256.Sum256(buf.Bytes())
	end, _ := json.Marshal(export.End{Type: export.TypeEnd, Records: int64(len(body)), Digest: "sha256:" + hex.EncodeToString(sum[:]), Counts: map[string]int{}})
	buf.Write(end)
	buf.WriteByte('\n')
	return buf.Bytes()
}

// build writes records as a sealed file.
func build(t *testing.T, recs ...any) []byte {
	t.Helper()
	var ls []string
	for _, r := range recs {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, string(b))
	}
	return reseal(append(ls, ""))
}

// offsetOf is the byte offset of line n (from 1) of file.
func offsetOf(file []byte, n int) int {
	off := 0
	for i := 1; i < n; i++ {
		j := bytes.IndexByte(file[off:], '\n')
		if j < 0 {
			return len(file)
		}
		off += j + 1
	}
	return off
}

// find is the index of the first line holding every part.
func find(t *testing.T, ls []string, parts ...string) int {
	t.Helper()
	for i, l := range ls {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(l, p)
		}
		if ok {
			return i
		}
	}
	t.Fatalf("no line holds %q", parts)
	return -1
}

// replaceField sets a field of line i's record.
func replaceField(t *testing.T, ls []string, i int, field string, v any) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(ls[i]), &m); err != nil {
		t.Fatal(err)
	}
	if v == nil {
		delete(m, field)
	} else {
		m[field] = v
	}
	b, _ := json.Marshal(m)
	ls[i] = string(b)
}

func smallHeader() export.Header {
	return export.Header{Type: export.TypeHeader, Format: export.Format, Version: export.Version, CreatedAt: time.Now().UTC(),
		PalaceID: uuid.NewString(), Selection: export.Selection{Wings: []string{}}}
}

// TestReaderRefusesBadInput feeds the Reader each hostile or broken file
// of the "Bad input and limits": every one is refused with its
// code, naming the line and its byte offset.
func TestReaderRefusesBadInput(t *testing.T) {
	f := newFixture(t)
	base, _ := writeExport(t, f.db, export.Options{Vectors: true, Profiles: []string{"default"}})
	baseLines := lines(base)
	now := time.Now().UTC()
	wingA, wingB, roomA, roomB, d1, d2 := uuid.NewString(), uuid.NewString(), uuid.NewString(), uuid.NewString(), uuid.NewString(), uuid.NewString()
	drawer := func(id, wing, room string) *export.Drawer {
		return &export.Drawer{Type: export.TypeDrawer, ID: id, WingID: wing, RoomID: room, Content: "text", Tags: []string{},
			Source: export.Source{Kind: "manual"}, ValidFrom: now, CreatedAt: now}
	}
	crossWing := func() []byte {
		a, b := drawer(d1, wingA, roomA), drawer(d2, wingB, roomB)
		a.ValidTo, a.SupersededBy, b.Supersedes = &now, d2, d1
		return build(t, smallHeader(),
			export.Wing{Type: export.TypeWing, ID: wingA, Name: "a", CreatedAt: now}, export.Room{Type: export.TypeRoom, ID: roomA, WingID: wingA, Name: "r", CreatedAt: now},
			export.Wing{Type: export.TypeWing, ID: wingB, Name: "b", CreatedAt: now}, export.Room{Type: export.TypeRoom, ID: roomB, WingID: wingB, Name: "r", CreatedAt: now},
			a, b)
	}
	// A chain whose links disagree: a names c as its successor, b claims
	// to supersede a; or a names a successor the file never holds.
	badChain := func(withB bool) []byte {
		a, b := drawer(d1, wingA, roomA), drawer(d2, wingA, roomA)
		a.ValidTo, a.SupersededBy, b.Supersedes = &now, uuid.NewString(), d1
		recs := []any{smallHeader(), export.Wing{Type: export.TypeWing, ID: wingA, Name: "a", CreatedAt: now},
			export.Room{Type: export.TypeRoom, ID: roomA, WingID: wingA, Name: "r", CreatedAt: now}, a}
		if withB {
			recs = append(recs, b)
		}
		return build(t, recs...)
	}
	encrypted := func() []byte {
		var buf bytes.Buffer
		id, _ := age.GenerateX25519Identity()
		w, err := export.Encrypt(&buf, export.Encryption{Recipients: []string{id.Recipient().String()}})
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write(base)
		_ = w.Close()
		return buf.Bytes()
	}
	edit := func(fn func(ls []string) []string) []byte {
		ls := fn(append([]string{}, baseLines...))
		return reseal(ls)
	}
	firstDrawer := find(t, baseLines, `"type":"drawer"`)
	firstMention := find(t, baseLines, `"type":"mention"`)
	firstWing := find(t, baseLines, `"type":"wing"`)
	firstRoom := find(t, baseLines, `"type":"room"`)
	longLine := 0
	for i, l := range baseLines {
		if len(l) > 300 {
			longLine = i
			break
		}
	}
	for _, c := range []struct {
		name string
		file []byte
		opts export.ReaderOptions
		code fault.Code
		line int // from 1
		msg  string
	}{
		{"empty file", nil, export.ReaderOptions{}, fault.ExportTruncated, 1, "empty"},
		{"cut before the end record", []byte(strings.Join(baseLines[:len(baseLines)-1], "\n") + "\n"), export.ReaderOptions{}, fault.ExportTruncated, len(baseLines), "without its end record"},
		{"cut inside a line", base[:offsetOf(base, firstDrawer+1)+40], export.ReaderOptions{}, fault.ExportTruncated, firstDrawer + 1, "ends inside a line"},
		{"a record removed, the end kept", []byte(strings.Join(append(append([]string{}, baseLines[:firstMention]...), baseLines[firstMention+1:]...), "\n") + "\n"),
			export.ReaderOptions{}, fault.ExportTruncated, len(baseLines) - 1, "counts"},
		{"a record altered, the end kept", bytes.Replace(base, []byte("the readme's first chunk"), []byte("the readme's FIRST chunk"), 1), export.ReaderOptions{}, fault.ExportTruncated, len(baseLines), "digest"},
		{"a future version", edit(func(ls []string) []string { replaceField(t, ls, 0, "version", 2); return ls }), export.ReaderOptions{}, fault.ExportVersion, 1, "newer than"},
		{"another format", edit(func(ls []string) []string { replaceField(t, ls, 0, "format", "mempalace"); return ls }), export.ReaderOptions{}, fault.ExportVersion, 1, "the format is"},
		{"no header first", edit(func(ls []string) []string { return ls[1:] }), export.ReaderOptions{}, fault.ExportInvalid, 1, "not the header"},
		{"an unknown record type", edit(func(ls []string) []string {
			return append([]string{ls[0], `{"type":"hologram","shape":"cube"}`}, ls[1:]...)
		}), export.ReaderOptions{}, fault.ExportUnknownRecord, 2, "unknown record type"},
		{"a line over the limit", base, export.ReaderOptions{Limits: export.Limits{MaxLineBytes: 300}}, fault.ExportTooLarge, longLine + 1, "longer than 300"},
		{"a line over the default limit", edit(func(ls []string) []string {
			replaceField(t, ls, firstDrawer, "content", strings.Repeat("\u2028", export.DefaultLimits().MaxLineBytes/6+1))
			return ls
		}), export.ReaderOptions{}, fault.ExportTooLarge, firstDrawer + 1, "longer than"},
		{"content over the drawer limit", edit(func(ls []string) []string {
			replaceField(t, ls, firstDrawer, "content", strings.Repeat("x", 1<<20+1))
			return ls
		}), export.ReaderOptions{}, fault.ExportInvalid, firstDrawer + 1, "at most 1048576"},
		{"a wing name with a slash", edit(func(ls []string) []string { replaceField(t, ls, firstWing, "name", "a/b"); return ls }), export.ReaderOptions{}, fault.ExportInvalid, firstWing + 1, "contains '/'"},
		{"a wing name that looks like an id", edit(func(ls []string) []string { replaceField(t, ls, firstWing, "name", uuid.NewString()); return ls }), export.ReaderOptions{}, fault.ExportInvalid, firstWing + 1, "looks like a UUID"},
		{"a room name with a zero-width space", edit(func(ls []string) []string { replaceField(t, ls, firstRoom, "name", "no\u200btes"); return ls }), export.ReaderOptions{}, fault.ExportInvalid, firstRoom + 1, "invisible"},
		{"a drawer name with a .. segment", edit(func(ls []string) []string { replaceField(t, ls, firstDrawer, "name", "a/../b"); return ls }), export.ReaderOptions{}, fault.ExportInvalid, firstDrawer + 1, "path segment"},
		{"a room of a wing not written before", edit(func(ls []string) []string { replaceField(t, ls, firstRoom, "wing_id", uuid.NewString()); return ls }), export.ReaderOptions{}, fault.ExportInvalid, firstRoom + 1, "no record before it holds"},
		{"a mention of an entity not written before", edit(func(ls []string) []string {
			replaceField(t, ls, firstMention, "entity_id", uuid.NewString())
			return ls
		}), export.ReaderOptions{}, fault.ExportInvalid, firstMention + 1, "is not held by a record before"},
		{"a drawer superseding one in another wing", crossWing(), export.ReaderOptions{}, fault.ExportInvalid, 7, "of another wing"},
		{"a field the record does not have", edit(func(ls []string) []string { replaceField(t, ls, firstWing, "owner", "root"); return ls }), export.ReaderOptions{}, fault.ExportInvalid, firstWing + 1, "unknown field"},
		{"a line that is not JSON", edit(func(ls []string) []string { ls[firstWing] = `{"type":"wing",`; return ls }), export.ReaderOptions{}, fault.ExportInvalid, firstWing + 1, "unexpected end"},
		{"a second header", edit(func(ls []string) []string {
			return append(append(append([]string{}, ls[:firstWing+1]...), ls[0]), ls[firstWing+1:]...)
		}), export.ReaderOptions{}, fault.ExportInvalid, firstWing + 2, "second header"},
		{"a drawer naming a room of another wing", edit(func(ls []string) []string {
			other := find(t, ls, `"type":"wing"`, `"name":"beta"`)
			var w struct{ ID string }
			_ = json.Unmarshal([]byte(ls[other]), &w)
			i := find(t, ls, `"type":"drawer"`, `"content":"the first plan`)
			replaceField(t, ls, i, "wing_id", w.ID)
			return ls
		}), export.ReaderOptions{}, fault.ExportInvalid, find(t, baseLines, `"type":"drawer"`, `"content":"the first plan`) + 1, "is not in wing"},
		{"a vector whose length is not its dimension", edit(func(ls []string) []string {
			replaceField(t, ls, find(t, ls, `"type":"vector"`), "dimension", 5)
			return ls
		}), export.ReaderOptions{}, fault.ExportInvalid, find(t, baseLines, `"type":"vector"`) + 1, "its dimension says 5"},
		{"a fact of an unknown predicate", edit(func(ls []string) []string {
			replaceField(t, ls, find(t, ls, `"type":"fact"`), "predicate", "hates")
			return ls
		}), export.ReaderOptions{}, fault.ExportInvalid, find(t, baseLines, `"type":"fact"`) + 1, "predicate"},
		{"an entity of an unknown kind", edit(func(ls []string) []string {
			replaceField(t, ls, find(t, ls, `"type":"entity"`), "kind", "spaceship")
			return ls
		}), export.ReaderOptions{}, fault.ExportInvalid, find(t, baseLines, `"type":"entity"`) + 1, "kind"},
		{"a decision between facts not written before", edit(func(ls []string) []string {
			replaceField(t, ls, find(t, ls, `"type":"decision"`), "to", uuid.NewString())
			return ls
		}), export.ReaderOptions{}, fault.ExportInvalid, find(t, baseLines, `"type":"decision"`) + 1, "is not held by a record before"},
		{"a drawer superseding one written after it", edit(func(ls []string) []string {
			i := find(t, ls, `"type":"drawer"`, `"content":"the first plan`)
			j := find(t, ls, `"type":"drawer"`, `"content":"the second plan`)
			ls[i], ls[j] = ls[j], ls[i]
			return ls
		}), export.ReaderOptions{}, fault.ExportInvalid, find(t, baseLines, `"type":"drawer"`, `"content":"the first plan`) + 1, "no record before it holds"},
		{"a drawer superseding one that names another successor", badChain(true), export.ReaderOptions{}, fault.ExportInvalid, 5, "does not name it"},
		{"a successor the file never holds", badChain(false), export.ReaderOptions{}, fault.ExportInvalid, 5, "which the file does not hold"},
		{"a drawer written twice", edit(func(ls []string) []string {
			return append(append(append([]string{}, ls[:firstDrawer+1]...), ls[firstDrawer]), ls[firstDrawer+1:]...)
		}), export.ReaderOptions{}, fault.ExportInvalid, firstDrawer + 2, "written twice"},
		{"data after the end record", append(append([]byte{}, base...), []byte(`{"type":"wing"}`+"\n")...), export.ReaderOptions{}, fault.ExportInvalid, len(baseLines) + 1, "after the end record"},
		{"an encrypted file not decrypted", encrypted(), export.ReaderOptions{}, fault.ExportEncrypted, 1, "age-encrypted"},
		{"more wings than the limit", base, export.ReaderOptions{Limits: export.Limits{MaxWings: 1}}, fault.ExportLimit, find(t, baseLines[firstWing+1:], `"type":"wing"`) + firstWing + 2, "more than 1 wings"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := readUntilError(c.file, c.opts)
			fe := fault.As(err)
			if fe == nil || fe.Code != c.code {
				t.Fatalf("got %v, want code %s", err, c.code)
			}
			at := fmt.Sprintf("line %d (byte %d)", c.line, offsetOf(c.file, c.line))
			if !strings.HasPrefix(fe.Msg, at) {
				t.Fatalf("message %q does not start with %q", fe.Msg, at)
			}
			if !strings.Contains(fe.Msg, c.msg) {
				t.Fatalf("message %q does not say %q", fe.Msg, c.msg)
			}
			if fe.Help == "" {
				t.Fatal("no help")
			}
		})
	}
	t.Run("an unknown record type skipped on request", func(t *testing.T) {
		file := edit(func(ls []string) []string {
			return append([]string{ls[0], `{"type":"hologram","shape":"cube"}`}, ls[1:]...)
		})
		recs := readAll(t, file, export.ReaderOptions{SkipUnknown: true})
		if len(recs) != len(baseLines)+1 {
			t.Fatalf("%d records, want %d (the skipped one returned, marked)", len(recs), len(baseLines)+1)
		}
		if s := recs[1]; !s.Unknown || s.Type != "hologram" || s.Line != 2 || s.Offset != int64(offsetOf(file, 2)) {
			t.Fatalf("the skipped record: %+v", s)
		}
		if recs[2].Type != export.TypeWing || recs[2].Line != 3 || recs[2].Unknown {
			t.Fatalf("after the skipped line: %+v", recs[2])
		}
	})
}

// wingFlood serves a header then n tiny wings, made as they are read: a
// million of them are never in memory at once.
type wingFlood struct {
	n, made int
	pending []byte
	served  int64
}

func (w *wingFlood) Read(p []byte) (int, error) {
	for len(w.pending) < len(p) && w.made <= w.n {
		if w.made == 0 {
			h, _ := json.Marshal(smallHeader())
			w.pending = append(append(w.pending, h...), '\n')
		} else {
			w.pending = fmt.Appendf(w.pending, `{"type":"wing","id":"%s","name":"w%d","created_at":"2026-01-01T00:00:00Z"}`+"\n", uuid.NewString(), w.made)
		}
		w.made++
	}
	if len(w.pending) == 0 {
		return 0, io.EOF
	}
	n := copy(p, w.pending)
	w.pending = w.pending[n:]
	w.served += int64(n)
	return n, nil
}

// TestMillionTinyWings: a file of a million wings is refused at the
// limit's line, having read little more than that many lines.
func TestMillionTinyWings(t *testing.T) {
	flood := &wingFlood{n: 1_000_000}
	_, err := readUntilError(nil, export.ReaderOptions{})
	if err == nil {
		t.Fatal("empty file accepted")
	}
	rd := export.NewReader(flood, export.ReaderOptions{})
	for {
		_, err = rd.Next()
		if err != nil {
			break
		}
	}
	fe := fault.As(err)
	max := export.DefaultLimits().MaxWings
	if fe == nil || fe.Code != fault.ExportLimit || !strings.HasPrefix(fe.Msg, fmt.Sprintf("line %d ", max+2)) {
		t.Fatalf("got %v, want %s at line %d", err, fault.ExportLimit, max+2)
	}
	if line, _ := rd.Position(); line != int64(max+2) {
		t.Fatalf("position %d", line)
	}
	if flood.made > max+2+2000 || flood.served > int64(max+2)*120+1<<20 {
		t.Fatalf("read %d wings (%d bytes) before refusing", flood.made, flood.served)
	}
}

// TestTypeGivenTwice: a line whose "type" key is repeated is refused (the
// reader reads the first to choose the record, the decoder keeps the
// last).
func TestTypeGivenTwice(t *testing.T) {
	now := time.Now().UTC()
	file := build(t, smallHeader())
	ls := lines(file)
	ls = append([]string{ls[0], `{"type":"wing","type":"room","id":"` + uuid.NewString() + `","name":"w","created_at":"` + now.Format(time.RFC3339) + `"}`}, ls[1:]...)
	_, err := readUntilError(reseal(ls), export.ReaderOptions{})
	if fe := fault.As(err); fe == nil || fe.Code != fault.ExportInvalid || !strings.Contains(fe.Msg, "given twice") {
		t.Fatalf("got %v", err)
	}
}

// TestSkippedTypesBounded: with SkipUnknown, every skipped record is
// returned marked Unknown with its type; past MaxUnknownTypes distinct
// types (or a type that is not a plain name) the type is UnknownType, so
// a file of invented types cannot grow a report without bound.
func TestSkippedTypesBounded(t *testing.T) {
	file := build(t, smallHeader())
	ls := lines(file)
	var extra []string
	for i := range export.MaxUnknownTypes + 10 {
		extra = append(extra, fmt.Sprintf(`{"type":"kind_%s"}`, strings.Repeat("x", i+1)))
	}
	extra = append(extra, `{"type":"kind_x"}`, `{"type":"`+strings.Repeat("y", export.MaxUnknownTypeBytes+1)+`"}`, `{ "type": "a/b" }`)
	file = reseal(append(append([]string{ls[0]}, extra...), ls[1:]...))
	recs := readAll(t, file, export.ReaderOptions{SkipUnknown: true})
	named := map[string]bool{}
	skipped := 0
	for _, r := range recs {
		if r.Unknown {
			skipped++
			named[r.Type] = true
		}
	}
	if skipped != len(extra) {
		t.Fatalf("%d skipped records returned, want %d", skipped, len(extra))
	}
	if len(named) != export.MaxUnknownTypes+1 || !named[export.UnknownType] || !named["kind_x"] {
		t.Fatalf("types named: %v", named)
	}
	if last := recs[len(recs)-2]; !last.Unknown || last.Type != export.UnknownType {
		t.Fatalf("a type with '/': %+v", last)
	}
}

// TestBackupRefusedAsBackup: a loci backup given as an export is named as
// a backup, with the command that reads it (not "a record has no type").
func TestBackupRefusedAsBackup(t *testing.T) {
	head := `{"format":"loci-backup","version":1,"palace_id":"` + uuid.NewString() + `","backend":"badger","records":3}` + "\n" + strings.Repeat(" ", 200) + "\n\x00\x01binary body"
	_, err := readUntilError([]byte(head), export.ReaderOptions{})
	fe := fault.As(err)
	if fe == nil || fe.Code != fault.ExportInvalid || !strings.HasPrefix(fe.Msg, "line 1 (byte 0): the file is a loci backup") ||
		!strings.Contains(fe.Help, "loci restore") {
		t.Fatalf("got %v (help %q)", err, fe.Help)
	}
}

// TestLimitHelpFollowable: a limit's advice names the limit and a way
// that exists (one wing a file), not a setting that does not.
func TestLimitHelpFollowable(t *testing.T) {
	_, err := readUntilError(nil, export.ReaderOptions{})
	if err == nil {
		t.Fatal("empty file accepted")
	}
	rd := export.NewReader(&wingFlood{n: 5}, export.ReaderOptions{Limits: export.Limits{MaxWings: 2}})
	for err = nil; err == nil; _, err = rd.Next() {
	}
	fe := fault.As(err)
	if fe == nil || fe.Code != fault.ExportLimit {
		t.Fatalf("got %v", err)
	}
	for _, want := range []string{"at most 2 wings", "loci export --wing", "no setting"} {
		if !strings.Contains(fe.Help, want) {
			t.Fatalf("help %q does not say %q", fe.Help, want)
		}
	}
	if strings.Contains(fe.Help, "raise the limit") {
		t.Fatalf("help %q advises a limit no one can raise", fe.Help)
	}
}

// TestWingNames: the Reader tells the wings of the file read so far (an
// import checks --wing-map against them).
func TestWingNames(t *testing.T) {
	rd := export.NewReader(&wingFlood{n: 3}, export.ReaderOptions{})
	for {
		if _, err := rd.Next(); err != nil {
			break
		}
	}
	if !rd.HasWing("w1") || !rd.HasWing("w3") || rd.HasWing("w4") {
		t.Fatal("HasWing")
	}
	if got := rd.WingNames(2); len(got) != 2 || got[0] != "w1" || got[1] != "w2" {
		t.Fatalf("WingNames(2) = %v", got)
	}
}

// bigDrawers serves a header, a wing, a room, then n drawers of about
// size bytes of content each, made as they are read; no end record.
type bigDrawers struct {
	n, size, made int
	pending       []byte
	wing, room    string
}

func (b *bigDrawers) Read(p []byte) (int, error) {
	for len(b.pending) < len(p) && b.made < b.n+3 {
		switch b.made {
		case 0:
			h, _ := json.Marshal(smallHeader())
			b.pending = append(append(b.pending, h...), '\n')
			b.wing, b.room = uuid.NewString(), uuid.NewString()
		case 1:
			b.pending = fmt.Appendf(b.pending, `{"type":"wing","id":"%s","name":"w","created_at":"2026-01-01T00:00:00Z"}`+"\n", b.wing)
		case 2:
			b.pending = fmt.Appendf(b.pending, `{"type":"room","id":"%s","wing_id":"%s","name":"r","created_at":"2026-01-01T00:00:00Z"}`+"\n", b.room, b.wing)
		default:
			content := strings.Repeat(fmt.Sprintf("word%d ", b.made), b.size/8)
			b.pending = fmt.Appendf(b.pending, `{"type":"drawer","id":"%s","wing_id":"%s","room_id":"%s","content":%q,"tags":[],"source":{"kind":"manual"},"provenance":{},"created_at":"2026-01-01T00:00:00Z","valid_from":"2026-01-01T00:00:00Z"}`+"\n", uuid.NewString(), b.wing, b.room, content)
		}
		b.made++
	}
	if len(b.pending) == 0 {
		return 0, io.EOF
	}
	n := copy(p, b.pending)
	b.pending = b.pending[n:]
	return n, nil
}

// TestReaderMemoryFlatOnBigDrawers: checking a file of drawers near the
// content limit holds one line at a time (the trial's 1.8 GB upload of
// 900 KB drawers): the heap's peak does not grow with the file, and the
// line buffer is reused (garbage about 7 bytes a byte read, was 10.5).
func TestReaderMemoryFlatOnBigDrawers(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 70 MB")
	}
	peakOf := func(n int) (uint64, uint64) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		src := &bigDrawers{n: n, size: 900 << 10}
		var err error
		peak := peakHeap(func() {
			rd := export.NewReader(src, export.ReaderOptions{})
			for err == nil {
				_, err = rd.Next()
			}
		})
		runtime.ReadMemStats(&after)
		if fault.As(err) == nil || fault.As(err).Code != fault.ExportTruncated {
			t.Fatalf("got %v", err)
		}
		return peak, (after.TotalAlloc - before.TotalAlloc) / uint64(n)
	}
	small, _ := peakOf(10)
	big, perDrawer := peakOf(80)
	if big > 48<<20 || big > small+32<<20 {
		t.Fatalf("peak heap %d MB for 80 drawers of 900 KB, %d MB for 10: it grows with the file", big>>20, small>>20)
	}
	if perDrawer > 9*(900<<10) {
		t.Fatalf("%d bytes allocated a drawer of 900 KB", perDrawer)
	}
	t.Logf("peak heap %d MB (10 drawers: %d MB), %d KB allocated a drawer", big>>20, small>>20, perDrawer>>10)
}
