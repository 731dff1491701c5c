// Package conformance is the language-neutral cases every source passes,
// built-in or installed: resolve is stable across spellings of one
// locator, discovery lists documents with unique ids and cursors, paging
// is strictly after a cursor, nothing comes after the last cursor, a
// foreign cursor is refused, discovering twice lists the same refs and
// reading twice gives the same normalised documents. Tests run them
// against the built-in directory source and the WebAssembly one; loci
// source test runs them against a built module.
//
// The cases drive the source only through sources.Adapter (and
// sources.BatchReader when it is one), each call guarded: a source that
// panics fails a case, never its caller.
package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/sources"
	"github.com/loci-dev/loci/store"
)

// The cases, in the order Run runs them.
const (
	// CaseResolve: the locator resolves, to an identity of the source's
	// name, and equivalent spellings of it (a trailing slash, a "./"
	// segment, for a path) resolve to the same identity.
	CaseResolve = "resolve is stable"
	// CaseDiscover: discovery from the start lists at least MinDocuments
	// documents, with unique non-empty ids and cursors the source's
	// ParseCursor accepts.
	CaseDiscover = "discover lists the documents"
	// CasePaging: discovery past item k's cursor lists exactly the items
	// after k.
	CasePaging = "paging strictly after a cursor"
	// CaseLast: discovery past the last item's cursor lists nothing.
	CaseLast = "nothing after the last cursor"
	// CaseForeign: a cursor the source never wrote (a JSON object of
	// another shape, a string) is loci::source::cursor_invalid, from
	// ParseCursor or Discover.
	CaseForeign = "a foreign cursor refused"
	// CaseStableRefs: discovering twice lists the same refs (ids,
	// cursors, sizes, filtering).
	CaseStableRefs = "stable revisions"
	// CaseStableDocs: reading every document twice gives the same
	// document (name, room, kind, uri, meta, units), normalised: a name,
	// units not empty, valid UTF-8.
	CaseStableDocs = "stable normalisation"
)

// Cases are the cases' names in the order Run reports them.
var Cases = []string{CaseResolve, CaseDiscover, CasePaging, CaseLast, CaseForeign, CaseStableRefs, CaseStableDocs}

// MinDocuments is how many readable documents the source at the locator
// must hold.
const MinDocuments = 3

// ForeignCursor is the cursor no source writes.
var ForeignCursor = json.RawMessage(`{"conformance_foreign_cursor":1}`)

// Result is one case's outcome: Err nil when the source passed it.
type Result struct {
	Case string
	Err  error
}

// Failed is the results that failed.
func Failed(rs []Result) []Result {
	var out []Result
	for _, r := range rs {
		if r.Err != nil {
			out = append(out, r)
		}
	}
	return out
}

// suite is one run of the cases.
type suite struct {
	ctx  context.Context
	a    sources.Adapter
	name string
	run  sources.Run
}

// guard runs fn, the source's code, a panic in it an error.
func (s *suite) guard(fn func() error) error { return sources.Guard(s.name, fn) }

func (s *suite) discover(cursor json.RawMessage) (refs []sources.Ref, err error) {
	err = s.guard(func() (err error) { refs, err = s.a.Discover(s.ctx, s.run, cursor); return err })
	return refs, err
}

func (s *suite) read(ref sources.Ref) (doc *sources.Document, err error) {
	err = s.guard(func() (err error) { doc, err = s.a.Read(s.ctx, s.run, ref); return err })
	return doc, err
}

// Run runs every case against adapter a over the source at locator (with
// options), which must hold at least MinDocuments readable documents, and
// returns each case's result in the order of Cases. A case that needs
// what an earlier one could not give (an identity, a discovery) fails
// saying so.
func Run(ctx context.Context, a sources.Adapter, locator string, options map[string]string) []Result {
	s := &suite{ctx: ctx, a: a}
	if err := sources.Guard("unnamed", func() error { s.name = a.Info().Name; return nil }); err != nil {
		return notRun(Cases, err)
	}
	var out []Result
	add := func(c string, err error) { out = append(out, Result{Case: c, Err: err}) }

	id, err := s.resolve(locator, options)
	add(CaseResolve, err)
	if err != nil {
		return append(out, notRun(Cases[1:], errors.New("not run: the locator did not resolve"))...)
	}
	s.run = sources.Run{ID: id, Options: options}

	refs, err := s.discoverAll()
	add(CaseDiscover, err)
	if err != nil {
		add(CasePaging, errors.New("not run: discovery from the start failed"))
		add(CaseLast, errors.New("not run: discovery from the start failed"))
	} else {
		add(CasePaging, s.paging(refs))
		add(CaseLast, s.last(refs))
	}
	add(CaseForeign, s.foreign())
	if err != nil {
		add(CaseStableRefs, errors.New("not run: discovery from the start failed"))
		add(CaseStableDocs, errors.New("not run: discovery from the start failed"))
		return out
	}
	again, err := s.stableRefs(refs)
	add(CaseStableRefs, err)
	add(CaseStableDocs, s.stableDocs(refs, again))
	return out
}

func notRun(cases []string, err error) []Result {
	out := make([]Result, len(cases))
	for i, c := range cases {
		out[i] = Result{Case: c, Err: err}
	}
	return out
}

// spellings are equivalent spellings of a path locator: with a trailing
// separator, and with a "./" segment before its last element.
func spellings(locator string) []string {
	if !filepath.IsAbs(locator) {
		return nil
	}
	clean := filepath.Clean(locator)
	dir, base := filepath.Split(clean)
	if base == "" {
		return []string{clean + string(filepath.Separator) + "."}
	}
	return []string{clean + string(filepath.Separator), dir + "." + string(filepath.Separator) + base}
}

func (s *suite) resolve(locator string, options map[string]string) (store.SourceIdentity, error) {
	var id store.SourceIdentity
	if err := s.guard(func() (err error) { id, err = s.a.Resolve(locator, options); return err }); err != nil {
		return id, fmt.Errorf("resolving %q: %w", locator, err)
	}
	if id.Adapter != s.name {
		return id, fmt.Errorf("%q resolved to an identity of the source %q, not %q", locator, id.Adapter, s.name)
	}
	for _, sp := range append([]string{locator}, spellings(locator)...) {
		var other store.SourceIdentity
		if err := s.guard(func() (err error) { other, err = s.a.Resolve(sp, options); return err }); err != nil {
			return id, fmt.Errorf("resolving %q, an equivalent spelling of %q: %w", sp, locator, err)
		}
		if other != id {
			return id, fmt.Errorf("%q resolved to %+v but %q, an equivalent spelling, to %+v: one source has one identity", locator, id, sp, other)
		}
	}
	return id, nil
}

func (s *suite) discoverAll() ([]sources.Ref, error) {
	refs, err := s.discover(nil)
	if err != nil {
		return nil, fmt.Errorf("discovering from the start: %w", err)
	}
	seen := map[string]bool{}
	readable := 0
	for i, r := range refs {
		switch {
		case r.ID == "":
			return nil, fmt.Errorf("item %d has no id", i)
		case seen[r.ID]:
			return nil, fmt.Errorf("the id %q is listed twice", r.ID)
		case len(r.Cursor) == 0 || !json.Valid(r.Cursor):
			return nil, fmt.Errorf("the item %q has no cursor (JSON) to resume after it", r.ID)
		}
		seen[r.ID] = true
		if err := s.guard(func() error { return s.a.ParseCursor(r.Cursor) }); err != nil {
			return nil, fmt.Errorf("the cursor of the item %q, as discovery listed it, is refused by ParseCursor: %w", r.ID, err)
		}
		if r.Filtered == "" {
			readable++
		}
	}
	if readable < MinDocuments {
		return nil, fmt.Errorf("listed %d documents to read (of %d items); the cases need a source holding at least %d", readable, len(refs), MinDocuments)
	}
	return refs, nil
}

// ids are the refs' ids.
func ids(refs []sources.Ref) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.ID
	}
	return out
}

// listing shows ids, the first few.
func listing(ids []string) string {
	if len(ids) > 5 {
		return fmt.Sprintf("%q… (%d)", ids[:5], len(ids))
	}
	return fmt.Sprintf("%q", ids)
}

func (s *suite) paging(refs []sources.Ref) error {
	n := len(refs)
	ks := slices.Compact([]int{0, n / 2, n - 2})
	for _, k := range ks {
		past, err := s.discover(refs[k].Cursor)
		if err != nil {
			return fmt.Errorf("discovering past the cursor of item %d (%q): %w", k, refs[k].ID, err)
		}
		got, want := ids(past), ids(refs[k+1:])
		if !slices.Equal(got, want) {
			return fmt.Errorf("past the cursor of item %d (%q) it listed %s; want exactly the items after it, %s", k, refs[k].ID, listing(got), listing(want))
		}
	}
	return nil
}

func (s *suite) last(refs []sources.Ref) error {
	lastRef := refs[len(refs)-1]
	past, err := s.discover(lastRef.Cursor)
	if err != nil {
		return fmt.Errorf("discovering past the last cursor (%q): %w", lastRef.ID, err)
	}
	if len(past) > 0 {
		return fmt.Errorf("past the last cursor (%q) it listed %s; want nothing", lastRef.ID, listing(ids(past)))
	}
	return nil
}

func (s *suite) foreign() error {
	for _, c := range []json.RawMessage{ForeignCursor, json.RawMessage(`"not a cursor"`)} {
		err := s.guard(func() error { return s.a.ParseCursor(c) })
		if err == nil {
			_, err = s.discover(c)
		}
		switch {
		case err == nil:
			return fmt.Errorf("the cursor %s, which it never wrote, was accepted: a source refuses a cursor it did not write (%s)", c, fault.SourceCursorInvalid)
		case !fault.Is(err, fault.SourceCursorInvalid):
			return fmt.Errorf("the cursor %s, which it never wrote, was refused with %v; want %s", c, err, fault.SourceCursorInvalid)
		}
	}
	return nil
}

// stableRefs discovers again from the start and compares; it returns the
// second listing.
func (s *suite) stableRefs(refs []sources.Ref) ([]sources.Ref, error) {
	again, err := s.discover(nil)
	if err != nil {
		return nil, fmt.Errorf("discovering from the start again: %w", err)
	}
	if got, want := ids(again), ids(refs); !slices.Equal(got, want) {
		return nil, fmt.Errorf("discovering again listed %s; the first time %s", listing(got), listing(want))
	}
	for i, r := range again {
		was := refs[i]
		switch {
		case !sameJSON(r.Cursor, was.Cursor):
			return nil, fmt.Errorf("the cursor of %q was %s, then %s: an unchanged document keeps its cursor", r.ID, was.Cursor, r.Cursor)
		case r.Size != was.Size:
			return nil, fmt.Errorf("the size of %q was %d, then %d", r.ID, was.Size, r.Size)
		case r.Filtered != was.Filtered:
			return nil, fmt.Errorf("%q was filtered %q, then %q", r.ID, was.Filtered, r.Filtered)
		case (r.Doc == nil) != (was.Doc == nil):
			return nil, fmt.Errorf("%q carried its document once, not the other time", r.ID)
		}
	}
	return again, nil
}

// stableDocs reads every document twice (the first time in one batch
// when the source reads batches; refs that carry their document are
// compared across the two discoveries) and compares.
func (s *suite) stableDocs(refs, again []sources.Ref) error {
	type pair struct {
		ref  sources.Ref
		docs [2]*sources.Document
		errs [2]error
	}
	var ps []*pair
	for i, r := range refs {
		if r.Filtered != "" {
			continue
		}
		p := &pair{ref: r}
		if r.Doc != nil {
			p.docs[0] = r.Doc
			if i < len(again) && again[i].ID == r.ID {
				p.docs[1] = again[i].Doc
			}
		}
		ps = append(ps, p)
	}
	var toRead []*pair
	for _, p := range ps {
		if p.ref.Doc == nil {
			toRead = append(toRead, p)
		}
	}
	if br, ok := s.a.(sources.BatchReader); ok && len(toRead) > 0 {
		chunk := make([]sources.Ref, len(toRead))
		for i, p := range toRead {
			chunk[i] = p.ref
		}
		var res []sources.ReadResult
		if err := s.guard(func() error { res = br.ReadBatch(s.ctx, s.run, chunk); return nil }); err != nil {
			return fmt.Errorf("reading %d documents in a batch: %w", len(chunk), err)
		}
		if len(res) != len(chunk) {
			return fmt.Errorf("reading %d documents in a batch gave %d results", len(chunk), len(res))
		}
		for i, p := range toRead {
			p.docs[0], p.errs[0] = res[i].Doc, res[i].Err
		}
	} else {
		for _, p := range toRead {
			p.docs[0], p.errs[0] = s.read(p.ref)
		}
	}
	for _, p := range toRead {
		p.docs[1], p.errs[1] = s.read(p.ref)
	}
	read := 0
	for _, p := range ps {
		id := p.ref.ID
		for t := range 2 {
			if err := p.errs[t]; err != nil {
				if _, ok := sources.IsFiltered(err); !ok {
					return fmt.Errorf("reading %q (the %s time): %w", id, nth(t), err)
				}
			}
		}
		f0, filtered0 := sources.IsFiltered(p.errs[0])
		f1, filtered1 := sources.IsFiltered(p.errs[1])
		if filtered0 || filtered1 {
			if f0 != f1 || filtered0 != filtered1 {
				return fmt.Errorf("%q was filtered (%q) one time, (%q) the other", id, f0, f1)
			}
			continue
		}
		if p.docs[0] == nil || p.docs[1] == nil {
			return fmt.Errorf("reading %q gave no document and no error", id)
		}
		if err := normalised(p.docs[0]); err != nil {
			return fmt.Errorf("%q: %w", id, err)
		}
		if err := same(p.docs[0], p.docs[1]); err != nil {
			return fmt.Errorf("%q read twice: %w; an unchanged document reads the same every time", id, err)
		}
		read++
	}
	if read < MinDocuments {
		return fmt.Errorf("read %d documents (the others filtered); the cases need at least %d", read, MinDocuments)
	}
	return nil
}

func nth(t int) string { return [2]string{"first", "second"}[t] }

// normalised checks what every document has: a name, units, valid UTF-8.
func normalised(d *sources.Document) error {
	switch {
	case d.Name == "":
		return errors.New("the document has no name")
	case len(d.Units) == 0 || strings.Join(d.Units, "") == "":
		return errors.New("the document has no text (no units, or empty ones); a source filters what it would not file")
	}
	for i, u := range d.Units {
		if !utf8.ValidString(u) {
			return fmt.Errorf("unit %d is not valid UTF-8", i)
		}
	}
	return nil
}

// same compares what two reads of one document must agree on.
func same(a, b *sources.Document) error {
	fields := []struct{ name, x, y string }{
		{"name", a.Name, b.Name}, {"room", a.Room, b.Room}, {"kind", a.Kind, b.Kind}, {"uri", a.URI, b.URI}, {"meta", a.Meta, b.Meta},
	}
	for _, f := range fields {
		if f.x != f.y {
			return fmt.Errorf("its %s was %q, then %q", f.name, clip(f.x), clip(f.y))
		}
	}
	if !slices.Equal(a.Units, b.Units) {
		return fmt.Errorf("its text differs (%d units, then %d)", len(a.Units), len(b.Units))
	}
	return nil
}

func clip(s string) string { return fault.Clip(s, 80) }

// sameJSON reports two JSON texts equal once compacted.
func sameJSON(x, y json.RawMessage) bool {
	var a, b any
	if json.Unmarshal(x, &a) != nil || json.Unmarshal(y, &b) != nil {
		return string(x) == string(y)
	}
	ax, _ := json.Marshal(a)
	bx, _ := json.Marshal(b)
	return string(ax) == string(bx)
}
