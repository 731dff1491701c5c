package sources

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
)

// named is an adapter that only has a name and a version, to tell two
// adapters of one name apart.
type named struct {
	name    string
	version int
}

func (n named) Info() Info { return Info{Name: n.name} }
func (n named) Resolve(loc string, _ map[string]string) (store.SourceIdentity, error) {
	return store.SourceIdentity{Adapter: n.name, Locator: loc}, nil
}
func (named) ParseCursor(json.RawMessage) error { return nil }
func (named) Discover(context.Context, Run, json.RawMessage) ([]Ref, error) {
	return nil, nil
}
func (named) Read(context.Context, Run, Ref) (*Document, error) { return nil, nil }

// The registry's changes while the daemon runs, each from a registry of
// the built-in directory source and an installed "notes" source: what
// the change answers, and what Adapter then gives.
func TestRegistryChanges(t *testing.T) {
	type want struct {
		err     fault.Code // of the change ("": none)
		lookup  fault.Code // of Adapter("notes") after it ("": found)
		version int        // of the adapter found
		state   string     // of the notes entry ("": none)
	}
	notes := func(v int, state, origin string) Entry {
		return Entry{Adapter: named{"notes", v}, State: state, Origin: origin}
	}
	cases := []struct {
		name   string
		change func(r *Registry) error
		want   want
	}{
		{"nothing: an enabled installed source runs", func(*Registry) error { return nil },
			want{version: 1, state: StateEnabled}},
		{"replace with a new version", func(r *Registry) error {
			replaced, err := r.Put(notes(2, StateEnabled, OriginLocal))
			if err == nil && !replaced {
				return fmt.Errorf("replaced is false")
			}
			return err
		}, want{version: 2, state: StateEnabled}},
		{"add another", func(r *Registry) error {
			replaced, err := r.Put(Entry{Adapter: named{"mail", 1}, State: StateInstalled, Origin: OriginRegistry})
			if err == nil && replaced {
				return fmt.Errorf("replaced is true")
			}
			return err
		}, want{version: 1, state: StateEnabled}},
		{"remove", func(r *Registry) error { return r.Remove("notes") },
			want{lookup: fault.SourceNotFound}},
		{"remove what is not there", func(r *Registry) error { return r.Remove("mail") },
			want{err: fault.SourceNotFound, version: 1, state: StateEnabled}},
		{"disable", func(r *Registry) error { return r.SetState("notes", StateDisabled, "") },
			want{lookup: fault.SourceNotEnabled, state: StateDisabled}},
		{"installed, not yet enabled", func(r *Registry) error { return r.SetState("notes", StateInstalled, "") },
			want{lookup: fault.SourceNotEnabled, state: StateInstalled}},
		{"disable then enable", func(r *Registry) error {
			if err := r.SetState("notes", StateDisabled, ""); err != nil {
				return err
			}
			return r.SetState("notes", StateEnabled, "")
		}, want{version: 1, state: StateEnabled}},
		{"unavailable", func(r *Registry) error { return r.SetState("notes", StateUnavailable, "its module changed on disk") },
			want{lookup: fault.SourceUnavailable, state: StateUnavailable}},
		{"incompatible", func(r *Registry) error { return r.SetState("notes", StateIncompatible, "built for contract 9") },
			want{lookup: fault.SourceIncompatible, state: StateIncompatible}},
		{"a state not in the spec", func(r *Registry) error { return r.SetState("notes", "paused", "") },
			want{err: fault.InputInvalid, version: 1, state: StateEnabled}},
		{"an origin not in the spec", func(r *Registry) error { _, err := r.Put(notes(2, StateEnabled, "somewhere")); return err },
			want{err: fault.InputInvalid, version: 1, state: StateEnabled}},
		{"no adapter", func(r *Registry) error { _, err := r.Put(Entry{State: StateEnabled, Origin: OriginLocal}); return err },
			want{err: fault.InputInvalid, version: 1, state: StateEnabled}},
		{"replace a built-in", func(r *Registry) error {
			_, err := r.Put(Entry{Adapter: named{DirectoryName, 1}, State: StateEnabled, Origin: OriginLocal})
			return err
		}, want{err: fault.SourceBuiltin, version: 1, state: StateEnabled}},
		{"remove a built-in", func(r *Registry) error { return r.Remove(DirectoryName) },
			want{err: fault.SourceBuiltin, version: 1, state: StateEnabled}},
		{"disable a built-in", func(r *Registry) error { return r.SetState(DirectoryName, StateDisabled, "") },
			want{err: fault.SourceBuiltin, version: 1, state: StateEnabled}},
		{"remove a bundled one", func(r *Registry) error {
			if _, err := r.Put(notes(3, StateEnabled, OriginBundled)); err != nil {
				return err
			}
			return r.Remove("notes")
		}, want{err: fault.SourceBundled, version: 3, state: StateEnabled}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRegistry(Directory{MaxFileBytes: 1 << 20})
			if _, err := r.Put(notes(1, StateEnabled, OriginLocal)); err != nil {
				t.Fatal(err)
			}
			err := tc.change(r)
			if tc.want.err == "" && err != nil || tc.want.err != "" && !fault.Is(err, tc.want.err) {
				t.Fatalf("change: %v, want %q", err, tc.want.err)
			}
			a, err := r.Adapter("notes")
			if tc.want.lookup == "" && (err != nil || a.(named).version != tc.want.version) ||
				tc.want.lookup != "" && !fault.Is(err, tc.want.lookup) {
				t.Fatalf("Adapter(notes): %v %v, want version %d or %q", a, err, tc.want.version, tc.want.lookup)
			}
			e, ok := r.Entry("notes")
			if ok != (tc.want.state != "") || ok && e.State != tc.want.state {
				t.Fatalf("entry: %+v %v, want state %q", e, ok, tc.want.state)
			}
			if ok && (e.State == StateUnavailable || e.State == StateIncompatible) != (e.Reason != "") {
				t.Fatalf("reason %q for state %s", e.Reason, e.State)
			}
			// The built-in source is always there, built-in and enabled.
			if d, ok := r.Entry(DirectoryName); !ok || d.State != StateEnabled || d.Origin != OriginBuiltIn {
				t.Fatalf("directory: %+v", d)
			}
		})
	}
}

// Built-in adapters are built-in and enabled, listed by name.
func TestRegistryBuiltIns(t *testing.T) {
	r := NewRegistry(Directory{}, ClaudeCode(), Codex())
	var names []string
	for _, e := range r.Entries() {
		names = append(names, e.Name())
		if e.State != StateEnabled || e.Origin != OriginBuiltIn || e.Reason != "" {
			t.Fatalf("%s: %+v", e.Name(), e)
		}
	}
	if fmt.Sprint(names) != "[claude-code codex directory]" || fmt.Sprint(r.Names()) != fmt.Sprint(names) {
		t.Fatalf("entries %v, names %v", names, r.Names())
	}
}

// Lookups while an adapter is replaced, states change and others come and
// go: each lookup finds a whole adapter, one of the versions put (under
// -race, no data race).
func TestRegistryConcurrentLookupsDuringReplace(t *testing.T) {
	r := NewRegistry(Directory{})
	if _, err := r.Put(Entry{Adapter: named{"notes", 0}, State: StateEnabled, Origin: OriginLocal}); err != nil {
		t.Fatal(err)
	}
	const versions = 500
	var wg sync.WaitGroup
	wg.Go(func() {
		for v := 1; v <= versions; v++ {
			if _, err := r.Put(Entry{Adapter: named{"notes", v}, State: StateEnabled, Origin: OriginLocal}); err != nil {
				t.Error(err)
				return
			}
			if _, err := r.Put(Entry{Adapter: named{"other", v}, State: StateInstalled, Origin: OriginLocal}); err != nil {
				t.Error(err)
				return
			}
			if err := r.Remove("other"); err != nil {
				t.Error(err)
				return
			}
		}
	})
	for range 4 {
		wg.Go(func() {
			last := 0
			for last < versions {
				a, err := r.Adapter("notes")
				if err != nil {
					t.Error(err)
					return
				}
				v := a.(named).version
				if v < last || v > versions {
					t.Errorf("version %d after %d", v, last)
					return
				}
				last = v
				_ = r.Entries()
				_ = r.Names()
			}
		})
	}
	wg.Wait()
}
