package store

import (
	"slices"

	"github.com/google/uuid"
	"github.com/loci-dev/loci/fault"
)

// Supersession is a correction of a drawer.
type Supersession struct {
	DrawerID string
	// Content, when set, opens a replacement; without it the drawer is
	// invalidated.
	Content *string
	// Tags, when set, replace the tags carried over to the replacement.
	Tags        *[]string
	RequestedBy string
	// ReplacementID presets the replacement's id (replay-safe writers);
	// empty makes one.
	ReplacementID string
	// Source, when set, replaces the source carried over to the
	// replacement (a mined chunk's new origin).
	Source *Source
	// JobID is the job writing the replacement, for its provenance.
	JobID string
}

// SupersedeResult is {superseded, replacement}.
type SupersedeResult struct {
	Superseded  *Drawer
	Replacement *Drawer
	Similar     []Link
}

// Supersede closes a current drawer's validity now and, with content, opens
// its replacement at the same instant, taking over its name and tags.
func Supersede(tx Tx, in Supersession, dd Dedup) (*SupersedeResult, error) {
	old, err := FindDrawer(tx, in.DrawerID)
	if err != nil {
		return nil, err
	}
	if !old.Current() {
		return nil, fault.Newf(fault.PalaceDrawerSuperseded,
			"supersede the current version instead; the drawer's history ("+old.ID+") shows the chain",
			"drawer %s is already superseded or invalidated", old.ID)
	}
	tags := old.Tags
	if in.Tags != nil {
		if tags, err = CheckTags(*in.Tags); err != nil {
			return nil, err
		}
	}
	var repl *Drawer
	var links []Link
	var rec *DedupRecord
	now := tx.Now()
	if in.Content != nil {
		if err := CheckContent("content", *in.Content); err != nil {
			return nil, err
		}
		repl = &Drawer{
			ID: in.ReplacementID, WingID: old.WingID, RoomID: old.RoomID, Name: old.Name,
			Content: *in.Content, Tags: slices.Clone(tags), Source: old.Source,
			Provenance: Provenance{RequestedBy: in.RequestedBy, JobID: in.JobID},
			ValidFrom:  now, CreatedAt: now, Supersedes: old.ID, Diary: old.Diary,
		}
		if repl.ID == "" {
			repl.ID = NewID()
		}
		if in.Source != nil {
			repl.Source = *in.Source
		}
		if dd.Enabled {
			rec = newDedupRecord(repl)
			// The drawer being replaced is no longer current once this
			// commits, so it never counts as a duplicate of its replacement.
			if _, links, err = findDuplicates(skipDrawer{tx, old.ID}, repl, rec, dd.Threshold, nil); err != nil {
				return nil, err
			}
		}
	}
	prev := *old
	old.ValidTo = &now
	if repl != nil {
		old.SupersededBy = repl.ID
	}
	if err := tx.PutDrawer(old, &prev); err != nil {
		return nil, err
	}
	if err := tx.Log(ChangeDrawer, ActionUpdated, old.ID); err != nil {
		return nil, err
	}
	if oldRec, err := tx.DedupRecord(old.ID); err != nil {
		return nil, err
	} else if oldRec != nil {
		if err := tx.DeleteDedup(oldRec); err != nil {
			return nil, err
		}
	}
	if repl != nil {
		if err := tx.PutDrawer(repl, nil); err != nil {
			return nil, err
		}
		if err := tx.Log(ChangeDrawer, ActionCreated, repl.ID); err != nil {
			return nil, err
		}
		if rec != nil {
			if err := tx.PutDedup(rec); err != nil {
				return nil, err
			}
		}
		if links, err = admitLinks(tx, links, maxLinks, olderEnd); err != nil {
			return nil, err
		}
		for i := range links {
			links[i].Newer, links[i].CreatedAt = repl.ID, now
			if err := tx.PutLink(&links[i]); err != nil {
				return nil, err
			}
			if err := tx.Log(ChangeLink, ActionCreated, links[i].ID); err != nil {
				return nil, err
			}
		}
	}
	return &SupersedeResult{Superseded: old, Replacement: repl, Similar: links}, nil
}

// skipDrawer hides one drawer's dedup entries from a Reader.
type skipDrawer struct {
	Reader
	id string
}

func (s skipDrawer) DedupByHash(scope, hash string) ([]string, error) {
	ids, err := s.Reader.DedupByHash(scope, hash)
	return slices.DeleteFunc(ids, func(id string) bool { return id == s.id }), err
}

func (s skipDrawer) DedupByFingerprint(scope, fp string) ([]string, error) {
	ids, err := s.Reader.DedupByFingerprint(scope, fp)
	return slices.DeleteFunc(ids, func(id string) bool { return id == s.id }), err
}

func (s skipDrawer) DedupNear(scope string, bands [][8]byte, lo, hi int, fn func(NearCandidate)) error {
	self, _ := uuid.Parse(s.id)
	return s.Reader.DedupNear(scope, bands, lo, hi, func(c NearCandidate) {
		if c.ID != self {
			fn(c)
		}
	})
}

// History is every version of a drawer's supersession chain, oldest first,
// following the links from any version.
func History(r Reader, id string) (*Drawer, []Drawer, error) {
	d, err := FindDrawer(r, id)
	if err != nil {
		return nil, nil, err
	}
	seen := map[string]bool{d.ID: true}
	first := d
	for first.Supersedes != "" {
		p, err := r.Drawer(first.Supersedes)
		if err != nil {
			return nil, nil, err
		}
		if p == nil || seen[p.ID] {
			break
		}
		seen[p.ID] = true
		first = p
	}
	versions := []Drawer{*first}
	cur := first
	for cur.SupersededBy != "" {
		n, err := r.Drawer(cur.SupersededBy)
		if err != nil {
			return nil, nil, err
		}
		// A broken or cyclic chain ends the walk rather than looping.
		if n == nil || slices.ContainsFunc(versions, func(v Drawer) bool { return v.ID == n.ID }) {
			break
		}
		versions = append(versions, *n)
		cur = n
	}
	return d, versions, nil
}
