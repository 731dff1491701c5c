// Package contract is the source package contract, version 1, both sides:
// the JSON a loci daemon writes to a source package's standard input, one
// request per run of the module (a WASI command, a fresh instance per
// call), the JSON the module answers on its standard output, and Serve,
// which runs a guest written in Go on it.
//
// It uses the standard library only, so that a source written in Go
// copies this file into its own module (loci source init does) and
// builds with GOOS=wasip1 GOARCH=wasm and nothing else. Any language
// that compiles to WASI preview 1 and reads and writes JSON can speak it.
//
// A call is one of:
//
//   - resolve: check a locator and options; answer the source's identity
//     (account and locator, equivalent spellings made identical);
//   - discover: list the documents past a cursor (none: from the start),
//     in cursor order, at most Limit of them, saying whether More follow;
//     an item may carry its document whole (a source whose listing
//     already read everything, like a commit log), and then it is never
//     read;
//   - read: read and normalise the listed items, one document or one
//     per-item error each, in the order asked.
//
// A guest that needs the host (to run a program, to fetch over the
// network: both only when its manifest asks and the user consented)
// answers Needs instead, with State to carry over; the host does them and
// calls it again with the same request, the Results in the order of the
// Needs and the State back. A guest is stateless between calls.
package contract

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// Version is this contract's version: a package's manifest names the one
// it was built for, and a daemon runs only packages of a version it
// speaks.
const Version = 1

// The calls.
const (
	CallResolve  = "resolve"
	CallDiscover = "discover"
	CallRead     = "read"
)

// The kinds of error a guest answers. A kind the host does not know is
// Failed.
const (
	// ErrInvalid: the locator or an option is wrong (the user's input).
	ErrInvalid = "invalid"
	// ErrCursor: the cursor is not one this source wrote.
	ErrCursor = "cursor_invalid"
	// ErrNotFound: an item is gone (a file deleted since discovery).
	ErrNotFound = "not_found"
	// ErrFiltered: the source's own rules exclude the item once read
	// (binary, blank); counted, not filed.
	ErrFiltered = "filtered"
	// ErrFailed: anything else.
	ErrFailed = "failed"
)

// Request is one call.
type Request struct {
	// Contract is the contract version the host speaks (Version).
	Contract int    `json:"contract"`
	Call     string `json:"call"`
	// Locator and Options are the source's, as the user gave them
	// (resolve) or as resolve made them (the other calls).
	Locator string            `json:"locator"`
	Options map[string]string `json:"options,omitempty"`
	// Account is the resolved identity's account ("" for most sources).
	Account string `json:"account,omitempty"`
	// Cursor (discover) is where to start: absent from the start; else
	// what an earlier discover answered for an item.
	Cursor json.RawMessage `json:"cursor,omitempty"`
	// Limit (discover) is the most items to answer; More says if others
	// follow (the host calls again past the last item's cursor).
	Limit int `json:"limit,omitempty"`
	// Items (read) are the items to read, as discover listed them.
	Items []Item `json:"items,omitempty"`
	// Results are the host's answers to the Needs of the previous round
	// of this same call, in their order; State is what that round carried.
	Results []Result        `json:"results,omitempty"`
	State   json.RawMessage `json:"state,omitempty"`
	// Now is the host's time (RFC 3339), for sources that resolve
	// relative times; a guest has no clock of its own it should trust.
	Now string `json:"now,omitempty"`
	// Token (discover, read) is the credential the source's miner reads
	// with, when it names one: an OAuth sign-in's access token, fresh
	// (the host keeps the refresh token and refreshes it), or the secret
	// of an env or file credential. A guest uses it (an Authorization
	// header of a fetch it needs) and never repeats it: the host removes
	// it from whatever the guest answers in an error.
	Token string `json:"token,omitempty"`
}

// Answer is a call's answer: exactly one of Error, Needs, or the call's
// own fields.
type Answer struct {
	Error *Error `json:"error,omitempty"`
	// Needs asks the host to do things and call again (State carried).
	Needs []Need          `json:"needs,omitempty"`
	State json.RawMessage `json:"state,omitempty"`

	// resolve
	Identity *Identity `json:"identity,omitempty"`
	// discover
	Items []Item `json:"items,omitempty"`
	More  bool   `json:"more,omitempty"`
	// read: one per requested item, in order.
	Documents []ReadResult `json:"documents,omitempty"`
}

// Error is a guest's error: its kind and a message for the user.
type Error struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return e.Kind + ": " + e.Message }

// Errorf is an *Error of kind with a formatted message.
func Errorf(kind, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// Identity is a resolved source's identity.
type Identity struct {
	Account string `json:"account,omitempty"`
	Locator string `json:"locator"`
}

// Item is a discovered document.
type Item struct {
	// ID is the document's id within the source, stable across runs.
	ID string `json:"id"`
	// Cursor is the cursor just past this item (a JSON object the source
	// alone reads).
	Cursor json.RawMessage `json:"cursor"`
	// Size is its size in bytes, when known.
	Size int64 `json:"size,omitempty"`
	// Filtered, when not empty, is why the source's rules exclude it
	// without reading it.
	Filtered string `json:"filtered,omitempty"`
	// Document is the document itself when discovery already read it.
	Document *Document `json:"document,omitempty"`
}

// Document is a read, normalised document.
type Document struct {
	// Name is its name (its first drawer's); Room the room its drawers
	// go to in the job's wing.
	Name string `json:"name"`
	Room string `json:"room,omitempty"`
	// Kind and URI become its drawers' source.kind and source.uri.
	Kind string `json:"kind,omitempty"`
	URI  string `json:"uri,omitempty"`
	// Origin is a JSON object kept as the drawers' source.origin.
	Origin json.RawMessage `json:"origin,omitempty"`
	// Meta is the metadata whose change files the document again even
	// when its text is the same (a revision, a modification time).
	Meta string `json:"meta,omitempty"`
	// Units are the document's text in units packed whole into drawers
	// where they fit (a whole file: one unit; a thread: one per message).
	Units []string `json:"units"`
	// Bytes is the size read.
	Bytes int64 `json:"bytes,omitempty"`
}

// ReadResult is one item's read: its document or its error.
type ReadResult struct {
	ID       string    `json:"id"`
	Document *Document `json:"document,omitempty"`
	Error    *Error    `json:"error,omitempty"`
}

// The kinds of Need.
const (
	NeedRun   = "run"
	NeedFetch = "fetch"
)

// Need is something a guest asks the host to do.
type Need struct {
	Kind string `json:"kind"`
	// run: Program by its exact name as the manifest lists it, Args as
	// they are (no shell), Dir a directory the guest may read ("" the
	// locator).
	Program string   `json:"program,omitempty"`
	Args    []string `json:"args,omitempty"`
	Dir     string   `json:"dir,omitempty"`
	// fetch: an HTTP request.
	Method  string            `json:"method,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    []byte            `json:"body,omitempty"`
}

// Result is the host's answer to one Need.
type Result struct {
	// Error is why the host did not do it (permission_denied, a program
	// not found, output over the cap): the guest decides what follows.
	Error *Error `json:"error,omitempty"`
	// run: the exit code and the captured output.
	Exit   int    `json:"exit,omitempty"`
	Stdout []byte `json:"stdout,omitempty"`
	Stderr []byte `json:"stderr,omitempty"`
	// fetch: the status, headers and body.
	Status  int               `json:"status,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    []byte            `json:"body,omitempty"`
}

// Handler is a Go guest's implementation of the calls: each returns the
// answer (or an *Error; any other error is ErrFailed).
type Handler interface {
	Resolve(req *Request) (*Answer, error)
	Discover(req *Request) (*Answer, error)
	Read(req *Request) (*Answer, error)
}

// Serve runs one call of a Go guest: it reads the request from standard
// input, calls h and writes the answer to standard output. A guest's
// main is `func main() { contract.Serve(mySource{}) }`.
func Serve(h Handler) {
	a := Handle(h, os.Stdin)
	w := bufio.NewWriter(os.Stdout)
	if err := json.NewEncoder(w).Encode(a); err != nil {
		fmt.Fprintln(os.Stderr, "writing the answer:", err)
		os.Exit(1)
	}
	if err := w.Flush(); err != nil {
		os.Exit(1)
	}
}

// Handle is Serve's work on any reader: the answer to the request r
// holds (an error answer for a request it cannot read).
func Handle(h Handler, r io.Reader) *Answer {
	var req Request
	if err := json.NewDecoder(r).Decode(&req); err != nil {
		return &Answer{Error: Errorf(ErrFailed, "reading the request: %v", err)}
	}
	if req.Contract != Version {
		return &Answer{Error: Errorf(ErrFailed, "this source speaks contract %d, the host %d", Version, req.Contract)}
	}
	var a *Answer
	var err error
	switch req.Call {
	case CallResolve:
		a, err = h.Resolve(&req)
	case CallDiscover:
		a, err = h.Discover(&req)
	case CallRead:
		a, err = h.Read(&req)
	default:
		return &Answer{Error: Errorf(ErrFailed, "unknown call %q", req.Call)}
	}
	if err != nil {
		e, ok := err.(*Error)
		if !ok {
			e = &Error{Kind: ErrFailed, Message: err.Error()}
		}
		return &Answer{Error: e}
	}
	if a == nil {
		a = &Answer{}
	}
	return a
}
