package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/sources/contract"
)

// call runs one request through contract.Handle, as the module's main
// does on its standard streams.
func call(t *testing.T, req contract.Request) *contract.Answer {
	t.Helper()
	req.Contract = contract.Version
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	a := contract.Handle(source{}, strings.NewReader(string(b)))
	// The answer goes through JSON as it does on standard output.
	out, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	var back contract.Answer
	if err := json.Unmarshal(out, &back); err != nil {
		t.Fatal(err)
	}
	return &back
}

func write(t *testing.T, root, rel, body string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// discoverAll pages through discovery with limit, checking each page's
// promise, and returns every item.
func discoverAll(t *testing.T, root string, limit int, opts map[string]string, cur json.RawMessage) []contract.Item {
	t.Helper()
	var all []contract.Item
	for range 10000 {
		a := call(t, contract.Request{Call: contract.CallDiscover, Locator: root, Options: opts, Cursor: cur, Limit: limit})
		if a.Error != nil {
			t.Fatalf("discover: %v", a.Error)
		}
		if limit > 0 && len(a.Items) > limit {
			t.Fatalf("%d items for a limit of %d", len(a.Items), limit)
		}
		all = append(all, a.Items...)
		if !a.More {
			return all
		}
		if len(a.Items) == 0 {
			t.Fatal("More with no items")
		}
		cur = a.Items[len(a.Items)-1].Cursor
	}
	t.Fatal("discovery never ended")
	return nil
}

func ids(items []contract.Item) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.ID)
	}
	return out
}

func TestResolve(t *testing.T) {
	root := t.TempDir()
	write(t, root, "sub/a.txt", "a")
	for _, c := range []struct {
		locator, want, kind string
	}{
		{root + "/sub/../sub//", root + "/sub", ""},
		{root, root, ""},
		{"", "", contract.ErrInvalid},
		{"relative/path", "", contract.ErrInvalid},
		{root + "/missing", "", contract.ErrInvalid},
		{root + "/sub/a.txt", "", contract.ErrInvalid},
	} {
		a := call(t, contract.Request{Call: contract.CallResolve, Locator: c.locator})
		if c.kind != "" {
			if a.Error == nil || a.Error.Kind != c.kind {
				t.Errorf("resolve %q: %+v, want error %s", c.locator, a, c.kind)
			}
			continue
		}
		if a.Error != nil || a.Identity == nil || a.Identity.Locator != c.want {
			t.Errorf("resolve %q: %+v %v, want %q", c.locator, a.Identity, a.Error, c.want)
		}
	}
	for _, opts := range []map[string]string{{"max_file_bytes": "0"}, {"max_file_bytes": "x"}, {"since": "2020-01-01"}} {
		if a := call(t, contract.Request{Call: contract.CallResolve, Locator: root, Options: opts}); a.Error == nil || a.Error.Kind != contract.ErrInvalid {
			t.Errorf("options %v: %+v", opts, a)
		}
	}
}

// Discovery lists regular files in change-time then path order, skips
// what the built-in skips (hidden and build directories, symlinks), and a
// file changed later comes last.
func TestDiscoverOrderAndSkips(t *testing.T) {
	root := t.TempDir()
	for _, rel := range []string{"b.txt", "a.txt", "sub/c.md", "über/naïve 文件.txt", ".hidden/x.txt", ".dot", "node_modules/m.js",
		"target/t.rs", "sub/build/out.txt", "sub/.git/config"} {
		write(t, root, rel, "text of "+rel)
	}
	if err := os.Symlink(filepath.Join(root, "a.txt"), filepath.Join(root, "link.txt")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(30 * time.Millisecond) // past the file system's clock tick
	write(t, root, "a.txt", "changed last")

	got := ids(discoverAll(t, root, 0, nil, nil))
	// Hidden files are listed (the built-in enters no hidden directory
	// but lists every regular file in the others).
	want := []string{"b.txt", "sub/c.md", "über/naïve 文件.txt", ".dot"}
	// The files written together may share a change time: then by path.
	type ct struct {
		rel string
		t   int64
	}
	var first []ct
	for _, rel := range want {
		info, err := os.Stat(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		first = append(first, ct{rel, changeTime(info)})
	}
	slices.SortFunc(first, func(a, b ct) int {
		if a.t != b.t {
			return int(min(max(a.t-b.t, -1), 1))
		}
		return strings.Compare(a.rel, b.rel)
	})
	want = nil
	for _, c := range first {
		want = append(want, c.rel)
	}
	want = append(want, "a.txt")
	if !slices.Equal(got, want) {
		t.Fatalf("discovered %q, want %q", got, want)
	}
	// Each cursor reads back as the file's change time and path.
	for _, it := range discoverAll(t, root, 0, nil, nil) {
		c, err := parseCursor(it.Cursor)
		info, serr := os.Stat(filepath.Join(root, it.ID))
		if err != nil || serr != nil || *c.Path != it.ID || *c.CTime != changeTime(info) {
			t.Errorf("%s: cursor %s: %v %v", it.ID, it.Cursor, err, serr)
		}
	}
}

// Paging with a limit lists every file once, strictly after each cursor,
// More until the last page; nothing follows the last cursor.
func TestDiscoverPaging(t *testing.T) {
	root := t.TempDir()
	for i := range 23 {
		write(t, root, fmt.Sprintf("d%d/f%02d.txt", i%3, i), fmt.Sprint("file ", i))
	}
	all := ids(discoverAll(t, root, 0, nil, nil))
	if len(all) != 23 {
		t.Fatalf("%d files", len(all))
	}
	for _, limit := range []int{1, 2, 5, 23, 100} {
		paged := discoverAll(t, root, limit, nil, nil)
		if got := ids(paged); !slices.Equal(got, all) {
			t.Fatalf("limit %d: %q, want %q", limit, got, all)
		}
		// Past any item's cursor come exactly the items after it.
		for i := range paged {
			rest := ids(discoverAll(t, root, limit, nil, paged[i].Cursor))
			if !slices.Equal(rest, all[i+1:]) {
				t.Fatalf("limit %d, past %s: %q, want %q", limit, paged[i].ID, rest, all[i+1:])
			}
		}
	}
	a := call(t, contract.Request{Call: contract.CallDiscover, Locator: root, Limit: 5})
	if !a.More || len(a.Items) != 5 {
		t.Fatalf("first page of 5: %d items, more %v", len(a.Items), a.More)
	}
}

// Empty, oversize and unnameable files are listed as filtered; binary,
// non-UTF-8 and blank ones are filtered when read; the text is
// normalised.
func TestFilters(t *testing.T) {
	root := t.TempDir()
	write(t, root, "empty.txt", "")
	write(t, root, "big.txt", strings.Repeat("x", 2<<20+1))
	write(t, root, "limit.txt", strings.Repeat("y", 2<<20))
	write(t, root, " lead.txt", "a name with a leading space")
	write(t, root, "123e4567-e89b-12d3-a456-426614174000", "a UUID for a name")
	write(t, root, "bin.dat", "abc\x00def")
	write(t, root, "latin1.txt", "caf\xe9")
	write(t, root, "blank.txt", " \n\t\r\n")
	write(t, root, "crlf.txt", "\uFEFFone\r\ntwo\r\n")
	items := discoverAll(t, root, 0, nil, nil)
	filtered := map[string]string{}
	for _, it := range items {
		filtered[it.ID] = it.Filtered
	}
	for id, want := range map[string]string{"empty.txt": "empty", "big.txt": "too_large", "limit.txt": "", " lead.txt": "unnameable",
		"123e4567-e89b-12d3-a456-426614174000": "unnameable", "bin.dat": "", "crlf.txt": ""} {
		if got, ok := filtered[id]; !ok || got != want {
			t.Errorf("%q filtered %q (listed %v), want %q", id, got, ok, want)
		}
	}
	// The option lowers the cap.
	for _, it := range discoverAll(t, root, 0, map[string]string{"max_file_bytes": "5"}, nil) {
		if it.ID == "crlf.txt" && it.Filtered != "too_large" {
			t.Errorf("crlf.txt (13 bytes) over max_file_bytes 5: filtered %q", it.Filtered)
		}
	}
	read := []contract.Item{{ID: "bin.dat"}, {ID: "latin1.txt"}, {ID: "blank.txt"}, {ID: "crlf.txt"}, {ID: "big.txt"}, {ID: "limit.txt"}}
	a := call(t, contract.Request{Call: contract.CallRead, Locator: root, Items: read})
	if a.Error != nil || len(a.Documents) != len(read) {
		t.Fatalf("read: %+v", a)
	}
	for i, want := range []string{"binary", "not_utf8", "blank", "", "too_large", ""} {
		r := a.Documents[i]
		if r.ID != read[i].ID {
			t.Fatalf("result %d is %q, want %q", i, r.ID, read[i].ID)
		}
		if want == "" {
			if r.Error != nil || r.Document == nil {
				t.Errorf("%s: %+v", r.ID, r.Error)
			}
			continue
		}
		if r.Error == nil || r.Error.Kind != contract.ErrFiltered || r.Error.Message != want {
			t.Errorf("%s: %+v, want filtered %s", r.ID, r.Error, want)
		}
	}
	d := a.Documents[3].Document
	if d.Name != "crlf.txt" || d.Room != "files" || d.Kind != "file" || d.URI != filepath.Join(root, "crlf.txt") ||
		!slices.Equal(d.Units, []string{"one\ntwo\n"}) || d.Bytes != 13 || string(d.Origin) != `{"path":"crlf.txt"}` {
		t.Errorf("document %+v", d)
	}
}

// One read call reads hundreds of files, in the order asked; a file gone
// since discovery is not_found, a path outside the root too.
func TestReadMany(t *testing.T) {
	root := t.TempDir()
	var items []contract.Item
	for i := range 400 {
		rel := fmt.Sprintf("n%03d/文件 %d.md", i%7, i)
		write(t, root, rel, fmt.Sprintf("# note %d\nbody", i))
		items = append(items, contract.Item{ID: rel})
	}
	if err := os.Remove(filepath.Join(root, items[17].ID)); err != nil {
		t.Fatal(err)
	}
	items = append(items, contract.Item{ID: "../escape"}, contract.Item{ID: "/etc/passwd"})
	a := call(t, contract.Request{Call: contract.CallRead, Locator: root, Items: items})
	if a.Error != nil || len(a.Documents) != len(items) {
		t.Fatalf("read: %v, %d results", a.Error, len(a.Documents))
	}
	for i, r := range a.Documents {
		if r.ID != items[i].ID {
			t.Fatalf("result %d is %q, want %q", i, r.ID, items[i].ID)
		}
		switch {
		case i == 17 || i >= 400:
			if r.Error == nil || r.Error.Kind != contract.ErrNotFound {
				t.Errorf("%s: %+v, want not_found", r.ID, r.Error)
			}
		case r.Error != nil || r.Document.Units[0] != fmt.Sprintf("# note %d\nbody", i) || r.Document.Name != items[i].ID:
			t.Errorf("%s: %+v %+v", r.ID, r.Error, r.Document)
		}
	}
}

// A cursor of another shape is refused as cursor_invalid, the built-in
// directory source's among them.
func TestForeignCursor(t *testing.T) {
	root := t.TempDir()
	write(t, root, "a.txt", "a")
	for _, c := range []string{`{"mtime_ns":1,"path":"a.txt"}`, `{"ctime_ns":1}`, `{"path":"a"}`, `{"ctime_ns":-1,"path":"a"}`,
		`{"ctime_ns":1,"path":"a","x":1}`, `"a.txt"`, `[1]`, `{"ctime_ns":"1","path":"a"}`} {
		a := call(t, contract.Request{Call: contract.CallDiscover, Locator: root, Cursor: json.RawMessage(c)})
		if a.Error == nil || a.Error.Kind != contract.ErrCursor {
			t.Errorf("cursor %s: %+v, want cursor_invalid", c, a)
		}
	}
}
