package store

import (
	"context"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/loci-dev/loci/fault"
)

// EmbeddedScheme is the backend a location without a scheme (a directory
// path) opens: the embedded store, registered by its package.
const EmbeddedScheme = "badger"

// OpenOptions is what opening a backend takes.
type OpenOptions struct {
	// Location is where the store lives: a directory (the embedded store)
	// or a URL whose scheme names the backend (scheme://...). It may hold
	// credentials: it is never logged or shown, only its scheme.
	Location string
	// Log receives the backend's own messages.
	Log *slog.Logger
	// Password is the remote store's password when it is not in the URL
	// (datastore.password_file, LOCI_DATASTORE_PASSWORD): a secret, never
	// logged or shown.
	Password string
	// Serving opens the store for the daemon: a backend may then open in
	// a degraded mode instead of failing (the embedded store opens
	// read-only on a full disk; see Embedded).
	Serving bool
	// Bulk opens a new store that one loader fills (a restore into a
	// folder of its own): a backend may then skip syncing every write and
	// make it durable when closed; a crash before that leaves a store the
	// loader discards.
	Bulk bool
	// ApplicationName, when set, is how a shared backend names this
	// handle's sessions to the server (PostgreSQL's application_name;
	// default "loci", a daemon's): `loci migrate --to` opens its handles
	// as "loci migrate", so that it counts the daemons connected without
	// counting itself.
	ApplicationName string
}

// Opener opens a backend at a location of its scheme.
type Opener func(ctx context.Context, o OpenOptions) (DB, error)

var backends = struct {
	sync.RWMutex
	m map[string]Opener
}{m: map[string]Opener{}}

// RegisterBackend makes a backend openable by its scheme (a package's
// init). Registering a scheme twice panics: two packages claim it.
func RegisterBackend(scheme string, open Opener) {
	backends.Lock()
	defer backends.Unlock()
	if _, dup := backends.m[scheme]; dup {
		panic("store: backend " + scheme + " registered twice")
	}
	backends.m[scheme] = open
}

// Backends lists the registered schemes, sorted.
func Backends() []string {
	backends.RLock()
	defer backends.RUnlock()
	out := make([]string, 0, len(backends.m))
	for s := range backends.m {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// Scheme is the backend a location names: its URL scheme, or
// EmbeddedScheme for a path.
func Scheme(location string) string {
	i := strings.Index(location, "://")
	if i <= 0 {
		return EmbeddedScheme
	}
	if u, err := url.Parse(location); err == nil && u.Scheme != "" {
		return strings.ToLower(u.Scheme)
	}
	return strings.ToLower(location[:i])
}

// Open opens the store at o.Location with the backend its scheme names.
// A scheme no backend of this build registered is
// loci::store::backend_failed, naming the scheme only (a URL may hold a
// password).
func Open(ctx context.Context, o OpenOptions) (DB, error) {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	scheme := Scheme(o.Location)
	backends.RLock()
	open, ok := backends.m[scheme]
	backends.RUnlock()
	if !ok {
		return nil, fault.Newf(fault.StoreBackendFailed,
			"use a directory path for the embedded store, or a URL with one of the schemes this build has: "+strings.Join(Backends(), ", "),
			"no store backend for the scheme %q in this build", scheme)
	}
	return open(ctx, o)
}

// Embedded is what a backend whose files live on this machine's disk (the
// embedded store) offers besides DB: a start on a full disk opens it
// read-only (OpenOptions.Serving), and Reopen opens it for writing once
// space is back. A shared backend has none of it.
type Embedded interface {
	// ReadOnly reports whether writes are refused (a full disk).
	ReadOnly() bool
	// CheckWritable is nil when the store takes writes, else the
	// loci::store::disk_full refusal.
	CheckWritable() error
	// Reopen opens a read-only store for writing.
	Reopen() error
}
