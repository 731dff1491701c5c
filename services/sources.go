package services

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/sources"
	"github.com/loci-dev/loci/store"
)

// Sources is the service of what mining reads: the adapters the daemon
// offers and the sources mined so far.
type Sources struct {
	DB       store.DB
	Registry *sources.Registry
	// Packages loads the source packages again at each listing (a module
	// changed on disk shows as unavailable); nil: none.
	Packages *Packages
}

// MinedSource is a source mined at least once into a wing: its identity,
// the wing, how many documents were filed from it there, and the last job
// and time that advanced its cursor.
type MinedSource struct {
	Key       string
	Identity  store.SourceIdentity
	WingID    string
	Wing      string
	Documents int
	LastJob   string
	LastRun   time.Time
}

// List is every adapter with its state and origin (by name) and every
// source mined into a wing (by adapter, locator, then wing).
func (s *Sources) List(ctx context.Context) ([]sources.Entry, []MinedSource, error) {
	if s.Packages != nil {
		if err := s.Packages.Refresh(ctx); err != nil {
			return nil, nil, err
		}
	}
	entries := s.Registry.Entries()
	var mined []MinedSource
	err := s.DB.View(ctx, func(r store.Reader) error {
		var states []*store.SourceState
		if err := r.Sources(func(st *store.SourceState) bool { states = append(states, st); return true }); err != nil {
			return err
		}
		for _, st := range states {
			n, err := r.CountSourceDocuments(st.Key)
			if err != nil {
				return err
			}
			ms := MinedSource{Key: st.Key, Identity: st.Identity, WingID: st.WingID, Documents: n, LastJob: st.LastJob, LastRun: st.LastRun}
			if w, err := r.Wing(st.WingID); err != nil {
				return err
			} else if w != nil {
				ms.Wing = w.Name
			}
			mined = append(mined, ms)
		}
		return nil
	})
	sort.Slice(mined, func(i, j int) bool {
		a, b := mined[i].Identity, mined[j].Identity
		if a.Adapter != b.Adapter {
			return a.Adapter < b.Adapter
		}
		if a.Locator != b.Locator {
			return a.Locator < b.Locator
		}
		return mined[i].Wing < mined[j].Wing
	})
	return entries, mined, err
}

// Warning kinds of the retention guard (api.SourceWarning.Kind).
const (
	WarnExpiringUnmined = "expiring_unmined"
	WarnDeletedByAgent  = "deleted_by_agent"
)

// expiryMargin is how long before an agent's cleanup period ends that an
// unmined session is warned of: a quarter of the period, at most a week.
func expiryMargin(period time.Duration) time.Duration {
	return min(period/4, 7*24*time.Hour)
}

// Warnings is the retention guard: for each transcript source whose agent
// deletes old sessions (sources.Guarded), at its standard location and
// wherever it was mined from, the sessions near or past the cleanup period
// that no wing holds, and per wing the mined sessions the agent has
// deleted since. mined is List's.
func (s *Sources) Warnings(ctx context.Context, mined []MinedSource, now time.Time) ([]api.SourceWarning, error) {
	type place struct{ adapter, root string }
	var out []api.SourceWarning
	for _, e := range s.Registry.Entries() {
		name, a := e.Name(), e.Adapter
		g, ok := a.(sources.Guarded)
		if !ok || e.State != sources.StateEnabled {
			continue
		}
		// The locations to look at: the agent's own, and each mined one
		// (by root: a dir or project option narrows the same files). The
		// source's code runs guarded: a panic is a source left out.
		roots := map[string]store.SourceIdentity{}
		var id store.SourceIdentity
		if err := sources.Guard(name, func() (err error) { id, err = a.Resolve("", map[string]string{}); return err }); err == nil {
			roots[rootLocator(id.Locator)] = id
		}
		var ofAdapter []MinedSource
		for _, m := range mined {
			if m.Identity.Adapter == name {
				ofAdapter = append(ofAdapter, m)
				if _, ok := roots[rootLocator(m.Identity.Locator)]; !ok {
					roots[rootLocator(m.Identity.Locator)] = store.SourceIdentity{Adapter: name, Account: m.Identity.Account, Locator: rootLocator(m.Identity.Locator)}
				}
			}
		}
		period, setting := g.Retention()
		for _, root := range slices.Sorted(maps.Keys(roots)) {
			var held []sources.SessionAge
			var complete bool
			err := sources.Guard(name, func() (err error) { held, complete, err = g.Sessions(ctx, roots[root]); return err })
			if err != nil || len(held) == 0 && len(ofAdapter) == 0 {
				continue
			}
			heldIDs := make(map[string]bool, len(held))
			for _, h := range held {
				heldIDs[h.ID] = true
			}
			// What each wing holds of this root, and what any wing does.
			anyWing := map[string]bool{}
			for _, m := range ofAdapter {
				if rootLocator(m.Identity.Locator) != root {
					continue
				}
				var gone int
				var example string
				err := s.DB.View(ctx, func(r store.Reader) error {
					return r.SourceDocuments(m.Key, func(d *store.DocumentState) bool {
						anyWing[d.ID] = true
						if complete && !heldIDs[d.ID] {
							if gone++; example == "" {
								example = d.ID
							}
						}
						return true
					})
				})
				if err != nil {
					return nil, err
				}
				if gone > 0 {
					out = append(out, api.SourceWarning{Kind: WarnDeletedByAgent, Adapter: name, Locator: root, Wing: m.Wing, Sessions: gone,
						Message: fmt.Sprintf("%s mined into wing %q deleted by the agent since (%s); loci keeps them", sessionsCount(gone, name), m.Wing, gonePart(gone, example)),
						Help:    fmt.Sprintf("nothing to do; to close their drawers as well: loci mine --source %s %s --wing %s --prune", name, shellArg(root), shellArg(m.Wing))})
				}
			}
			if period <= 0 {
				continue
			}
			var expiring int
			for _, h := range held {
				if now.Sub(h.Changed) > period-expiryMargin(period) && !anyWing[h.ID] {
					expiring++
				}
			}
			if expiring > 0 {
				days := int(period / (24 * time.Hour))
				out = append(out, api.SourceWarning{Kind: WarnExpiringUnmined, Adapter: name, Locator: root, Sessions: expiring,
					Message: fmt.Sprintf("%s under %s older than %d days never mined; the agent deletes sessions after %d days (%s)",
						sessionsCount(expiring, name), root, days-int(expiryMargin(period)/(24*time.Hour)), days, setting),
					Help: fmt.Sprintf("mine them now: loci mine --source %s %s --wing %s", name, shellArg(root), name)})
			}
		}
	}
	return out, nil
}

// sessionsCount is "1 claude-code session" or "3 claude-code sessions".
func sessionsCount(n int, source string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s session", source)
	}
	return fmt.Sprintf("%d %s sessions", n, source)
}

// gonePart names the one session gone, or one of several.
func gonePart(n int, example string) string {
	if n == 1 {
		return example
	}
	return example + " and " + fmt.Sprint(n-1) + " more"
}

// shellArg is s as one shell word: single-quoted when it holds anything
// but letters, digits and /._-+:@,=.
func shellArg(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+:@,=") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// rootLocator is a locator without its narrowing options (#dir=, #project=).
func rootLocator(loc string) string {
	if i := strings.Index(loc, "#dir="); i >= 0 {
		loc = loc[:i]
	}
	if i := strings.Index(loc, "#project="); i >= 0 {
		loc = loc[:i]
	}
	return loc
}
