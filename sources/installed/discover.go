package installed

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/loci-dev/loci/sources"
	"github.com/loci-dev/loci/sources/contract"
)

// Discover lists the documents past cursor: discover calls of at most
// PageItems items, each after the last item of the one before, while the
// package says more follow. What a package answers must move past its
// cursor, as far as the host can check cheaply: a page with more than
// asked, an empty page with more to come, an item listed twice in the
// discovery, an item at the very cursor it was asked to list past, or
// more than MaxRefs items fail the discovery (loci::source::failed
// naming the source). An item carrying its document becomes a ref with
// Doc, never read.
func (a *adapter) Discover(ctx context.Context, run sources.Run, cursor json.RawMessage) ([]sources.Ref, error) {
	if err := a.ParseCursor(cursor); err != nil {
		return nil, err
	}
	dir, err := a.dirOf(run.ID)
	if err != nil {
		return nil, err
	}
	g := a.grants(dir)
	g.token = string(run.Credential.Secret())
	cur := cursor
	if none(cur) {
		cur = nil
	}
	var refs []sources.Ref
	seen := map[string]struct{}{}
	var held int64 // bytes the refs hold: ids, cursors, carried documents
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		ans, err := a.do(ctx, g, &contract.Request{Call: contract.CallDiscover, Locator: run.ID.Locator, Account: run.ID.Account,
			Options: run.Options, Cursor: cur, Limit: a.page})
		if err != nil {
			return nil, err
		}
		switch {
		case len(ans.Items) > a.page:
			return nil, a.failed(fmt.Sprintf("listed %d items to a discover call asking for at most %d", len(ans.Items), a.page))
		case len(ans.Items) == 0 && ans.More:
			return nil, a.failed("listed no items and said more follow: it would be asked again forever")
		case len(refs)+len(ans.Items) > a.maxRefs:
			return nil, a.failed(fmt.Sprintf("listed more than %d items in one discovery", a.maxRefs))
		}
		for _, it := range ans.Items {
			ref, err := a.ref(it, cur, g)
			if err != nil {
				return nil, err
			}
			if _, dup := seen[ref.ID]; dup {
				return nil, a.failed(fmt.Sprintf("listed the item %s twice in one discovery (each item is listed once, past the cursor)", a.quote(ref.ID, g)))
			}
			seen[ref.ID] = struct{}{}
			refs = append(refs, ref)
			held += int64(2*len(ref.ID) + len(ref.Cursor))
			if ref.Doc != nil {
				held += ref.Doc.Bytes
			}
		}
		if held > a.maxBytes {
			return nil, a.failed(fmt.Sprintf("listed more than %d MiB in one discovery (ids, cursors and the documents it carried), which the daemon holds in memory until they are filed",
				a.maxBytes>>20))
		}
		if !ans.More {
			return refs, nil
		}
		cur = refs[len(refs)-1].Cursor
	}
}

// ref is a listed item as a ref, checked: an id of usable text, a cursor
// (a JSON object, not the one it was listed past), a document when it
// carries one (not when it is filtered).
func (a *adapter) ref(it contract.Item, past json.RawMessage, g grants) (sources.Ref, error) {
	if it.ID == "" || len(it.ID) > MaxLocatorBytes || !utf8.ValidString(it.ID) {
		return sources.Ref{}, a.failed(fmt.Sprintf("listed an item whose id %s is empty, longer than %d bytes or not UTF-8",
			a.quote(it.ID, g), MaxLocatorBytes))
	}
	if !object(it.Cursor) || len(it.Cursor) > MaxCursorBytes {
		return sources.Ref{}, a.failed(fmt.Sprintf("listed the item %s without a cursor (a JSON object of at most %d bytes)", a.quote(it.ID, g), MaxCursorBytes))
	}
	if past != nil && sameJSON(it.Cursor, past) {
		return sources.Ref{}, a.failed(fmt.Sprintf("listed the item %s at the cursor it was asked to list past", a.quote(it.ID, g)))
	}
	ref := sources.Ref{ID: it.ID, Cursor: it.Cursor, Size: max(it.Size, 0)}
	if it.Filtered != "" {
		ref.Filtered = reason(it.Filtered)
		return ref, nil
	}
	if it.Document != nil {
		// A carried document that fails its checks fails alone: the ref
		// goes without it, so the mine job asks for it with a read, whose
		// answer fails that document, not the discovery.
		if doc, err := a.document(it.ID, it.Document, g); err == nil {
			ref.Doc = doc
			if ref.Size == 0 {
				ref.Size = doc.Bytes
			}
		}
	}
	return ref, nil
}

// reason is a source's reason for filtering an item, as it is counted:
// a short word of printable text.
func reason(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
	if len(s) > 64 {
		s = strings.ToValidUTF8(s[:64], "")
	}
	return s
}
