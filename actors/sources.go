package actors

import (
	"context"
	"sort"
	"time"

	"github.com/loci-dev/loci/sources"
	"github.com/loci-dev/loci/store"
)

// Sources is the service of what mining reads: the adapters the daemon
// offers and the sources mined so far.
type Sources struct {
	DB       store.DB
	Registry *sources.Registry
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

// List is every adapter (by name) and every source mined into a wing (by
// adapter, locator, then wing).
func (s *Sources) List(ctx context.Context) ([]sources.Info, []MinedSource, error) {
	var infos []sources.Info
	for _, name := range s.Registry.Names() {
		a, _ := s.Registry.Adapter(name)
		infos = append(infos, a.Info())
	}
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
	return infos, mined, err
}
