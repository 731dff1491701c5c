package sources

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
)

// Capabilities are what an adapter can do, as GET /api/sources shows them.
type Capabilities struct {
	// Incremental: discovery past a cursor reads only what changed.
	Incremental bool
	// KeepsRaw: the adapter keeps raw documents beside the drawers.
	KeepsRaw bool
	// NeedsCredentials: reading needs a credential.
	NeedsCredentials bool
	// Triggers are the trigger types it supports beyond schedule and poll
	// ("watch", "webhook").
	Triggers []string
}

// Info is an adapter's name, declared option keys and capabilities.
type Info struct {
	Name         string
	Options      []string
	Capabilities Capabilities
	// Format is the stated version of the format the adapter reads
	// ("claude-code/jsonl-2"), shown by GET /api/sources; "" when the
	// adapter reads no agent's format.
	Format string
	// DefaultLocator is the locator an empty one stands for ("~/.claude/
	// projects"); "" when a locator is required.
	DefaultLocator string
}

// Ref is a discovered document: its id within the source, the cursor
// just past it, and, when the adapter's rules exclude it without reading
// it, why (Filtered).
type Ref struct {
	ID       string
	Cursor   json.RawMessage
	Size     int64
	Filtered string
	// Offset is where the document starts inside a file holding several
	// (an export's conversation, Size bytes from there), for Read to seek
	// to; 0 for adapters with one document a file. Unlike Cursor it stays
	// on refs the mine job files out of cursor order.
	Offset int64
	// Doc is the document itself when discovery already read it (an
	// installed source whose listing holds everything, like a commit
	// log): the mine job files it without calling Read.
	Doc *Document
}

// Document is a read and normalised document.
type Document struct {
	ID string
	// Name is the document's name (its first drawer's).
	Name string
	// Room is the room its drawers are filed in (the wing is the job's).
	Room string
	// Kind and URI are its drawers' source.kind and source.uri; Origin
	// their source.origin (the chunk index is added per drawer).
	Kind   string
	URI    string
	Origin json.RawMessage
	// Meta is the metadata whose change files the document again even
	// when its text is the same.
	Meta string
	// Units are the adapter's units (a whole file, a conversation's
	// turns), packed whole into drawers where they fit.
	Units []string
	// Bytes is the size read.
	Bytes int64
	// Skipped counts the records the adapter left out because it does not
	// know their type (a transcript's unknown line types): counted, never
	// an error.
	Skipped int
}

// Text is the document's normalised text: its units joined.
func (d *Document) Text() string { return strings.Join(d.Units, "") }

// Filtered is the error Read returns for a document the adapter's rules
// exclude once read (not UTF-8, blank): it is counted, not filed.
type Filtered struct{ Reason string }

func (f *Filtered) Error() string { return "filtered: " + f.Reason }

// IsFiltered reports a Filtered error and its reason.
func IsFiltered(err error) (string, bool) {
	var f *Filtered
	if errors.As(err, &f) {
		return f.Reason, true
	}
	return "", false
}

// Run is what an adapter reads in one run of a source: its identity, the
// run's options (keys already checked against Info) and the run's
// credential (zero when it names none), read at run time from its
// reference and never stored. A future field reaches every adapter
// without changing its methods.
type Run struct {
	ID         store.SourceIdentity
	Options    map[string]string
	Credential Credential
}

// Adapter is a source of documents: it does the first three stages of the
// mining pipeline (discover, read, normalise); the service chunks and
// files. Its code may be another's (an installed source): the service
// calls it through Guard, so that a panic fails a document or a job, not
// the daemon.
type Adapter interface {
	// Info is the adapter's name, option keys and capabilities.
	Info() Info
	// Resolve checks a locator and options (keys already checked against
	// Info) and returns the source's identity, equivalent spellings of the
	// locator made identical.
	Resolve(locator string, opts map[string]string) (store.SourceIdentity, error)
	// ParseCursor checks a stored cursor; an error is a bad cursor
	// (loci::source::cursor_invalid).
	ParseCursor(cursor json.RawMessage) error
	// Discover lists the documents of run's source past cursor (nil: from
	// the start), in cursor order.
	Discover(ctx context.Context, run Run, cursor json.RawMessage) ([]Ref, error)
	// Read reads and normalises one discovered document; a *Filtered
	// error excludes it. The mine job reads a batch's documents
	// concurrently: Read must be safe for concurrent use.
	Read(ctx context.Context, run Run, ref Ref) (*Document, error)
}

// BatchReader is an adapter that reads many documents in one go cheaper
// than one by one (an installed source: one sandbox call for a batch):
// the mine job hands it slices of a batch's refs, on every core, and
// files the results in order. results has one entry per ref: a document,
// or the error Read would have returned for it.
type BatchReader interface {
	ReadBatch(ctx context.Context, run Run, refs []Ref) []ReadResult
}

// ReadResult is one ref's read in a batch.
type ReadResult struct {
	Doc *Document
	Err error
}

// Lister is an adapter that can list every document its source holds now,
// whatever the cursor and the options that narrow discovery (since): the
// mine job asks it when it prunes (OptionPrune) and when documents whose
// drawers were deleted are to be filed again. complete is false when part
// of the source could not be listed; nothing is pruned then.
type Lister interface {
	List(ctx context.Context, run Run) (refs []Ref, complete bool, err error)
}

// Suspecter is an adapter whose discovery past a cursor can miss
// documents new to the source that carry times from before it (a
// directory moved into a tree keeps its files' times): DiscoverSuspects is
// Discover, and also lists the documents at or before the cursor that may
// be new. The mine job files those the source's state in the wing does
// not know, out of cursor order (the cursor stays).
type Suspecter interface {
	DiscoverSuspects(ctx context.Context, run Run, cursor json.RawMessage) (refs, suspects []Ref, err error)
}

// OptionPrune is the option (a Lister's) asking a mine job to close the
// drawers of documents gone from the source: "true" or "false" (the
// default: vanished documents stay current).
const OptionPrune = "prune"

// Prune reads the prune option: absent or "false" is false, "true" true,
// anything else loci::input::invalid.
func Prune(opts map[string]string) (bool, error) {
	v, ok := opts[OptionPrune]
	switch {
	case !ok || v == "false":
		return false, nil
	case v == "true":
		return true, nil
	}
	return false, fault.Invalid("options", fmt.Sprintf("prune is \"true\" or \"false\", not %q", v))
}

// CheckOptions refuses option keys the adapter does not declare (listing
// those it does) and values that read like secrets.
func CheckOptions(a Adapter, opts map[string]string) error {
	declared := a.Info().Options
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if LooksSecret(k, opts[k]) {
			return fault.Invalid("options", fmt.Sprintf("%q reads like a secret; options are stored and shown, so secrets never go there (use a credential reference)", k))
		}
		if !slices.Contains(declared, k) {
			accepted := "none"
			if len(declared) > 0 {
				accepted = strings.Join(declared, ", ")
			}
			return fault.Invalid("options", fmt.Sprintf("%q is not an option of the %s source; it accepts: %s", k, a.Info().Name, accepted))
		}
	}
	return nil
}

// secretWords are option key words that name a secret.
var secretWords = []string{"password", "passwd", "secret", "token", "apikey", "api_key", "api-key", "private_key", "credential"}

// LooksSecret reports an option (key and value) that reads like a secret:
// a key naming one, or a value that a secret scanner flags.
func LooksSecret(key, value string) bool {
	k := strings.ToLower(key)
	for _, w := range secretWords {
		if strings.Contains(k, w) {
			return true
		}
	}
	return len(Scan(value)) > 0
}
