package installed

import (
	"context"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/names"
	"github.com/loci-dev/loci/sources"
	"github.com/loci-dev/loci/sources/contract"
)

// Read reads one document: ReadBatch of one.
func (a *adapter) Read(ctx context.Context, run sources.Run, ref sources.Ref) (*sources.Document, error) {
	r := a.ReadBatch(ctx, run, []sources.Ref{ref})[0]
	return r.Doc, r.Err
}

// ReadBatch reads refs in read calls of at most BatchItems items and
// BatchBytes (chunks), one result per ref in order: a document; a
// *sources.Filtered the source's rules exclude; an error wrapping
// fs.ErrNotExist for an item gone since discovery; or
// loci::source::failed naming the source and the item. A call that
// fails as a whole (the module trapped, answered past the output cap or
// nothing readable) within a quarter of its time limit is tried again in
// halves, down to single items, so that one document the module cannot
// read fails alone. A call answering the wrong count, or items out of
// order, fails its items.
func (a *adapter) ReadBatch(ctx context.Context, run sources.Run, refs []sources.Ref) []sources.ReadResult {
	out := make([]sources.ReadResult, len(refs))
	dir, err := a.dirOf(run.ID)
	if err != nil {
		for i := range out {
			out[i].Err = err
		}
		return out
	}
	g := a.grants(dir)
	g.token = string(run.Credential.Secret())
	for lo := 0; lo < len(refs); {
		hi := chunkEnd(refs, lo)
		a.readChunk(ctx, run, g, refs[lo:hi], out[lo:hi])
		lo = hi
	}
	return out
}

// chunkEnd is where the read call starting at refs[lo] ends: at most
// BatchItems items, and BatchBytes of their sizes and request bytes
// (at least one item).
func chunkEnd(refs []sources.Ref, lo int) int {
	var bytes int64
	hi := lo
	for hi < len(refs) && hi-lo < BatchItems {
		bytes += max(refs[hi].Size, 0) + int64(len(refs[hi].ID)+len(refs[hi].Cursor)) + 64
		if hi > lo && bytes > BatchBytes {
			break
		}
		hi++
	}
	return hi
}

// readChunk makes the read call of refs, its results into out.
func (a *adapter) readChunk(ctx context.Context, run sources.Run, g grants, refs []sources.Ref, out []sources.ReadResult) {
	items := make([]contract.Item, len(refs))
	for i, r := range refs {
		items[i] = contract.Item{ID: r.ID, Cursor: r.Cursor, Size: r.Size}
	}
	all := func(err error) {
		for i := range out {
			out[i] = sources.ReadResult{Err: err}
		}
	}
	start := time.Now()
	ans, err := a.do(ctx, g, &contract.Request{Call: contract.CallRead, Locator: run.ID.Locator, Account: run.ID.Account,
		Options: run.Options, Items: items})
	if err != nil {
		// Halves, when the call failed fast: a module that fails slowly
		// would make a chunk's 2n-1 calls cost that long each.
		fast := a.o.Timeout == 0 || time.Since(start) < a.o.Timeout/4
		if len(refs) > 1 && fast && ctx.Err() == nil && fault.Is(err, fault.SourceFailed) {
			half := len(refs) / 2
			a.readChunk(ctx, run, g, refs[:half], out[:half])
			a.readChunk(ctx, run, g, refs[half:], out[half:])
			return
		}
		all(err)
		return
	}
	if len(ans.Documents) != len(refs) {
		all(a.failed(fmt.Sprintf("answered %d results to a read of %d items (one each, in order)", len(ans.Documents), len(refs))))
		return
	}
	for i, r := range ans.Documents {
		if r.ID != refs[i].ID {
			all(a.failed(fmt.Sprintf("answered the item %s where %s was asked (one result each, in the order asked)",
				a.quote(r.ID, g), a.quote(refs[i].ID, g))))
			return
		}
	}
	for i, r := range ans.Documents {
		out[i] = a.result(r, g)
	}
}

// result is one item's read result as the mine job takes it.
func (a *adapter) result(r contract.ReadResult, g grants) sources.ReadResult {
	id := r.ID
	switch {
	case r.Error != nil && r.Document != nil:
		return sources.ReadResult{Err: a.failed(fmt.Sprintf("answered both a document and an error for %s", a.quote(id, g)))}
	case r.Error == nil && r.Document == nil:
		return sources.ReadResult{Err: a.failed(fmt.Sprintf("answered neither a document nor an error for %s", a.quote(id, g)))}
	case r.Error != nil:
		switch r.Error.Kind {
		case contract.ErrFiltered:
			why := reason(r.Error.Message)
			if why == "" {
				why = "filtered by the source"
			}
			return sources.ReadResult{Err: &sources.Filtered{Reason: why}}
		case contract.ErrNotFound:
			return sources.ReadResult{Err: fmt.Errorf("the source %s: %s is gone: %s: %w", a.m.Name, a.quote(id, g), a.quote(r.Error.Message, g), fs.ErrNotExist)}
		}
		return sources.ReadResult{Err: a.failed(fmt.Sprintf("could not read %s: %s", a.quote(id, g), a.quote(r.Error.Message, g)))}
	}
	doc, err := a.document(id, r.Document, g)
	return sources.ReadResult{Doc: doc, Err: err}
}

// document is a package's document as the mine job files it, checked:
// its name (the item's id when it gives none) a drawer name, its room
// (the source's name when it gives none) a room name, its origin absent
// or a JSON object; its units made valid UTF-8; its size the units'
// when it gives none.
func (a *adapter) document(id string, d *contract.Document, g grants) (*sources.Document, error) {
	// Spaces at either end are trimmed (a name cut to length may end in
	// one); what is left must be a name.
	name, room := strings.TrimSpace(d.Name), strings.TrimSpace(d.Room)
	if name == "" {
		name = id
	}
	if room == "" {
		room = a.m.Name
	}
	if p := names.Drawer(name); p != "" {
		return nil, a.failed(fmt.Sprintf("answered for %s the name %s, which %s", a.quote(id, g), a.quote(name, g), p))
	}
	if p := names.Place(room); p != "" {
		return nil, a.failed(fmt.Sprintf("answered for %s the room %s, which %s", a.quote(id, g), a.quote(room, g), p))
	}
	if len(d.Origin) > 0 && !object(d.Origin) {
		return nil, a.failed(fmt.Sprintf("answered for %s an origin that is not a JSON object", a.quote(id, g)))
	}
	units := make([]string, len(d.Units))
	var size int64
	for i, u := range d.Units {
		units[i] = strings.ToValidUTF8(u, "\uFFFD")
		size += int64(len(units[i]))
	}
	if d.Bytes > 0 {
		size = d.Bytes
	}
	return &sources.Document{ID: id, Name: name, Room: room, Kind: d.Kind, URI: d.URI, Origin: d.Origin, Meta: d.Meta,
		Units: units, Bytes: size}, nil
}
