package conformance_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/loci-dev/loci/sources"
	"github.com/loci-dev/loci/sources/conformance"
	"github.com/loci-dev/loci/sources/contract"
	"github.com/loci-dev/loci/sources/installed"
	"github.com/loci-dev/loci/sources/pack"
	"github.com/loci-dev/loci/store"
)

// tree is a directory of n text files (and an empty one, filtered).
func tree(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	for i := range n {
		name := filepath.Join(dir, "note-"+strconv.Itoa(i)+".md")
		if i%2 == 1 {
			name = filepath.Join(dir, "sub", "note-"+strconv.Itoa(i)+".txt")
		}
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte("the text of note "+strconv.Itoa(i)+"\r\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "empty.md"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// failing is the names of the cases that failed.
func failing(rs []conformance.Result) []string {
	var out []string
	for _, r := range conformance.Failed(rs) {
		out = append(out, r.Case)
	}
	return out
}

func check(t *testing.T, rs []conformance.Result, want ...string) {
	t.Helper()
	var cases []string
	for _, r := range rs {
		cases = append(cases, r.Case)
	}
	if !slices.Equal(cases, conformance.Cases) {
		t.Fatalf("cases %q, want %q", cases, conformance.Cases)
	}
	if got := failing(rs); !slices.Equal(got, want) {
		for _, r := range rs {
			t.Logf("%s: %v", r.Case, r.Err)
		}
		t.Fatalf("failed %q, want %q", got, want)
	}
}

func TestTheDirectorySourcePasses(t *testing.T) {
	check(t, conformance.Run(t.Context(), sources.Directory{MaxFileBytes: 1 << 20}, tree(t, 6), nil))
}

// dirSource is a tiny directory source written against the contract: the
// regular files directly under the locator, by name, past an
// {"after": name} cursor. Its flaws are the broken variants'.
type dirSource struct {
	ignoreCursor bool // lists from the start whatever the cursor
	anyCursor    bool // reads any object as a cursor (a foreign one: from the start)
	metaPerRead  bool // its metadata changes at each read
	reads        *atomic.Int64
}

type dirCursor struct {
	After string `json:"after"`
}

func (d dirSource) Resolve(req *contract.Request) (*contract.Answer, error) {
	if _, err := os.ReadDir(req.Locator); err != nil {
		return nil, contract.Errorf(contract.ErrInvalid, "cannot read %s", req.Locator)
	}
	return &contract.Answer{Identity: &contract.Identity{Locator: req.Locator}}, nil
}

func (d dirSource) cursor(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || d.ignoreCursor {
		return "", nil
	}
	var c dirCursor
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	if !d.anyCursor {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(&c); err != nil || (c.After == "" && !d.anyCursor) {
		return "", contract.Errorf(contract.ErrCursor, "not a cursor of this source")
	}
	return c.After, nil
}

func (d dirSource) Discover(req *contract.Request) (*contract.Answer, error) {
	after, err := d.cursor(req.Cursor)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(req.Locator)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	a := &contract.Answer{}
	for _, n := range names {
		if n <= after {
			continue
		}
		if len(a.Items) == req.Limit {
			a.More = true
			break
		}
		c, _ := json.Marshal(dirCursor{After: n})
		a.Items = append(a.Items, contract.Item{ID: n, Cursor: c})
	}
	return a, nil
}

func (d dirSource) Read(req *contract.Request) (*contract.Answer, error) {
	a := &contract.Answer{}
	for _, it := range req.Items {
		b, err := os.ReadFile(filepath.Join(req.Locator, it.ID))
		r := contract.ReadResult{ID: it.ID}
		switch {
		case err != nil:
			r.Error = contract.Errorf(contract.ErrNotFound, "%v", err)
		case strings.TrimSpace(string(b)) == "":
			r.Error = contract.Errorf(contract.ErrFiltered, "blank")
		default:
			meta := "v1"
			if d.metaPerRead {
				meta = "read " + strconv.FormatInt(d.reads.Add(1), 10)
			}
			r.Document = &contract.Document{Name: it.ID, Room: "files", Kind: "file", URI: filepath.Join(req.Locator, it.ID), Meta: meta,
				Units: []string{strings.ReplaceAll(string(b), "\r\n", "\n")}, Bytes: int64(len(b))}
		}
		a.Documents = append(a.Documents, r)
	}
	return a, nil
}

func installedAdapter(t *testing.T, h contract.Handler) sources.Adapter {
	t.Helper()
	m, err := pack.ParseManifest([]byte("contract = 1\nname = \"wasm-dir\"\nversion = \"1.0.0\"\nmodule = \"dir.wasm\"\n[permissions]\nread = [\"locator\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := installed.New(&pack.Package{Manifest: m}, installed.Native(h), installed.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestAnInstalledDirectorySourcePasses(t *testing.T) {
	check(t, conformance.Run(t.Context(), installedAdapter(t, dirSource{}), tree(t, 6), nil))
}

// A broken source fails the case its flaw breaks, and only those.
func TestBrokenSourcesFailTheirCase(t *testing.T) {
	cases := []struct {
		name string
		h    dirSource
		want []string
	}{
		// Ignoring the cursor, it lists from the start past any cursor:
		// paging, the last cursor and a foreign one all break.
		{"ignores the cursor", dirSource{ignoreCursor: true}, []string{conformance.CasePaging, conformance.CaseLast, conformance.CaseForeign}},
		{"accepts any cursor", dirSource{anyCursor: true}, []string{conformance.CaseForeign}},
		{"meta changes per read", dirSource{metaPerRead: true, reads: &atomic.Int64{}}, []string{conformance.CaseStableDocs}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rs := conformance.Run(t.Context(), installedAdapter(t, tc.h), tree(t, 6), nil)
			check(t, rs, tc.want...)
			if tc.h.metaPerRead {
				if err := conformance.Failed(rs)[0].Err; !strings.Contains(err.Error(), "its meta was") {
					t.Fatalf("the error: %v", err)
				}
			}
		})
	}
}

// wobbly is the built-in directory source with a flaw (no installed
// adapter's checks in between): its identity or its listing changes
// between calls, it ignores its cursor, skips an item past one, or
// panics.
type wobbly struct {
	sources.Directory
	calls *atomic.Int64
	flaw  string
}

func (w wobbly) Resolve(loc string, opts map[string]string) (store.SourceIdentity, error) {
	id, err := w.Directory.Resolve(loc, opts)
	if w.flaw == "identity" && w.calls.Add(1) > 1 {
		id.Account = "another"
	}
	return id, err
}

func (w wobbly) Discover(ctx context.Context, run sources.Run, c json.RawMessage) ([]sources.Ref, error) {
	refs, err := w.Directory.Discover(ctx, run, c)
	if w.flaw == "sizes" && c == nil && w.calls.Add(1) > 1 {
		refs[0].Size++
	}
	if w.flaw == "panic" && c != nil {
		panic("past a cursor")
	}
	if w.flaw == "ignores the cursor" {
		return w.Directory.Discover(ctx, run, nil)
	}
	if w.flaw == "skips one" && c != nil && len(refs) > 0 {
		refs = refs[1:]
	}
	return refs, err
}

func TestFlawedAdaptersFailTheirCase(t *testing.T) {
	cases := []struct {
		flaw string
		want []string
		msg  string
	}{
		{"identity", []string{conformance.CaseResolve, conformance.CaseDiscover, conformance.CasePaging, conformance.CaseLast,
			conformance.CaseForeign, conformance.CaseStableRefs, conformance.CaseStableDocs}, "an equivalent spelling"},
		{"sizes", []string{conformance.CaseStableRefs}, "the size of"},
		{"ignores the cursor", []string{conformance.CasePaging, conformance.CaseLast}, "want exactly the items after it"},
		{"skips one", []string{conformance.CasePaging}, "want exactly the items after it"},
		// (The foreign cursor never reaches Discover: ParseCursor refuses it.)
		{"panic", []string{conformance.CasePaging, conformance.CaseLast}, "the directory source panicked: past a cursor"},
	}
	for _, tc := range cases {
		t.Run(tc.flaw, func(t *testing.T) {
			a := wobbly{Directory: sources.Directory{MaxFileBytes: 1 << 20}, calls: &atomic.Int64{}, flaw: tc.flaw}
			rs := conformance.Run(t.Context(), a, tree(t, 4), nil)
			check(t, rs, tc.want...)
			if err := conformance.Failed(rs)[0].Err; !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("the error: %v", err)
			}
		})
	}
}

// A source holding too few documents fails discovery, and the cases that
// need it say they did not run.
func TestTooFewDocuments(t *testing.T) {
	rs := conformance.Run(t.Context(), sources.Directory{MaxFileBytes: 1 << 20}, tree(t, 2), nil)
	check(t, rs, conformance.CaseDiscover, conformance.CasePaging, conformance.CaseLast, conformance.CaseStableRefs, conformance.CaseStableDocs)
	if err := conformance.Failed(rs)[0].Err; !strings.Contains(err.Error(), "listed 2 documents to read (of 3 items)") {
		t.Fatalf("the error: %v", err)
	}
	if err := conformance.Failed(rs)[1].Err; !strings.Contains(err.Error(), "not run") {
		t.Fatalf("the paging case: %v", err)
	}
}
