package sources

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/loci-dev/loci/fault"
)

// The states of an adapter in the registry: the spec's installed-source
// states. Only an enabled adapter runs; unavailable (a component missing
// or not matching) and incompatible (built for another contract) carry a
// reason.
const (
	StateInstalled    = "installed"
	StateEnabled      = "enabled"
	StateDisabled     = "disabled"
	StateUnavailable  = "unavailable"
	StateIncompatible = "incompatible"
)

// States lists the adapter states.
var States = []string{StateInstalled, StateEnabled, StateDisabled, StateUnavailable, StateIncompatible}

// The origins of an adapter: compiled into loci (built-in), shipped with
// it as a package (bundled), installed from a registry, from a local
// file, or by a plugin.
const (
	OriginBuiltIn  = "built-in"
	OriginBundled  = "bundled"
	OriginRegistry = "registry"
	OriginLocal    = "local"
	OriginPlugin   = "plugin"
)

// Origins lists the adapter origins.
var Origins = []string{OriginBuiltIn, OriginBundled, OriginRegistry, OriginLocal, OriginPlugin}

// Entry is an adapter the registry holds, with its state, its origin and,
// for an unavailable or incompatible one, why.
type Entry struct {
	Adapter Adapter
	State   string
	Origin  string
	Reason  string
}

// Name is the entry's adapter's name.
func (e Entry) Name() string { return e.Adapter.Info().Name }

// Registry is the adapters a daemon offers, by name, each with its state
// and origin. Adapters are added, replaced and removed while the daemon
// runs (installed sources): it is safe for concurrent use, and what it
// hands out is the adapter of that moment, so a running mine keeps the
// adapter it started with whatever happens to the entry since.
type Registry struct {
	mu      sync.RWMutex
	entries map[string]Entry
}

// NewRegistry makes a registry of the given adapters, built-in and
// enabled.
func NewRegistry(adapters ...Adapter) *Registry {
	r := &Registry{entries: map[string]Entry{}}
	for _, a := range adapters {
		r.entries[a.Info().Name] = Entry{Adapter: a, State: StateEnabled, Origin: OriginBuiltIn}
	}
	return r
}

// Adapter is the named adapter when it is enabled; else
// loci::source::not_found, or loci::source::not_enabled (installed or
// disabled), loci::source::unavailable or loci::source::incompatible with
// the reason.
func (r *Registry) Adapter(name string) (Adapter, error) {
	e, ok := r.Entry(name)
	if !ok {
		return nil, fault.Newf(fault.SourceNotFound, "the sources here: "+strings.Join(r.Names(), ", "),
			"no source is named %q", name)
	}
	switch e.State {
	case StateEnabled:
		return e.Adapter, nil
	case StateUnavailable:
		return nil, fault.Newf(fault.SourceUnavailable, "reinstall the source, or remove it", "the %s source is unavailable: %s", name, e.Reason)
	case StateIncompatible:
		return nil, fault.Newf(fault.SourceIncompatible, "install a version of the source built for this loci",
			"the %s source is incompatible: %s", name, e.Reason)
	}
	help := "enable it: loci source enable " + name + " (POST /api/source-packages/" + name + "/enable)"
	if e.State == StateInstalled {
		return nil, fault.Newf(fault.SourceNotEnabled, help, "the %s source is installed but not enabled", name)
	}
	return nil, fault.Newf(fault.SourceNotEnabled, help, "the %s source is %s", name, e.State)
}

// Entry is the named entry, and whether there is one.
func (r *Registry) Entry(name string) (Entry, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.entries[name]
	return e, ok
}

// Entries is every entry, by name.
func (r *Registry) Entries() []Entry {
	r.mu.RLock()
	out := make([]Entry, 0, len(r.entries))
	for _, e := range r.entries {
		out = append(out, e)
	}
	r.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// Names lists every adapter's name, whatever its state, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.entries))
	for n := range r.entries {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Put adds an entry, or replaces the one of the same name (replaced
// true). A built-in adapter is never replaced (loci::source::builtin); a
// state or origin not in the spec's lists, or no adapter, is
// loci::input::invalid. Runs already started keep the adapter they have.
func (r *Registry) Put(e Entry) (replaced bool, err error) {
	if err := checkEntry(e); err != nil {
		return false, err
	}
	name := e.Name()
	r.mu.Lock()
	defer r.mu.Unlock()
	was, ok := r.entries[name]
	if ok && was.Origin == OriginBuiltIn {
		return false, builtIn(name, "replaced")
	}
	if e.State != StateUnavailable && e.State != StateIncompatible {
		e.Reason = ""
	}
	r.entries[name] = e
	return ok, nil
}

// Remove removes the named adapter: loci::source::not_found when there is
// none; a built-in adapter (loci::source::builtin) and a bundled one
// (loci::source::bundled) stay. Runs already started keep the adapter
// they have.
func (r *Registry) Remove(name string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.entries[name]
	switch {
	case !ok:
		return fault.Newf(fault.SourceNotFound, "list the sources (GET /api/sources)", "no source is named %q", name)
	case e.Origin == OriginBuiltIn:
		return builtIn(name, "removed")
	case e.Origin == OriginBundled:
		return fault.Newf(fault.SourceBundled, "disable it instead", "the %s source is bundled with loci: it cannot be removed", name)
	}
	delete(r.entries, name)
	return nil
}

// SetState changes the named adapter's state (reason: why, for
// unavailable and incompatible). A built-in adapter stays enabled
// (loci::source::builtin); setting the state it has changes nothing.
func (r *Registry) SetState(name, state, reason string) error {
	if !slices.Contains(States, state) {
		return fault.Invalid("state", fmt.Sprintf("%q is not one of %s", state, strings.Join(States, ", ")))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.entries[name]
	switch {
	case !ok:
		return fault.Newf(fault.SourceNotFound, "list the sources (GET /api/sources)", "no source is named %q", name)
	case e.Origin == OriginBuiltIn && state != StateEnabled:
		return builtIn(name, "made "+state)
	}
	e.State, e.Reason = state, ""
	if state == StateUnavailable || state == StateIncompatible {
		e.Reason = reason
	}
	r.entries[name] = e
	return nil
}

func checkEntry(e Entry) error {
	switch {
	case e.Adapter == nil:
		return fault.Invalid("adapter", "is required")
	case e.Name() == "":
		return fault.Invalid("adapter", "names no source")
	case !slices.Contains(States, e.State):
		return fault.Invalid("state", fmt.Sprintf("%q is not one of %s", e.State, strings.Join(States, ", ")))
	case !slices.Contains(Origins, e.Origin):
		return fault.Invalid("origin", fmt.Sprintf("%q is not one of %s", e.Origin, strings.Join(Origins, ", ")))
	}
	return nil
}

func builtIn(name, what string) error {
	return fault.Newf(fault.SourceBuiltin, "built-in sources are part of loci; install a source under another name",
		"the %s source is built in: it cannot be %s", name, what)
}
