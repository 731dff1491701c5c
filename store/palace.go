package store

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store/dedup"
)

// MaxContentBytes bounds one drawer's content.
const MaxContentBytes = 1 << 20

// MaxTags bounds the tags of one drawer.
const MaxTags = 64

// MaxLinksPerDrawer bounds the similar_to links of one drawer, both sides
// counted (links.go).
const MaxLinksPerDrawer = 10

// maxLinks bounds the similar_to links recorded for one write.
const maxLinks = MaxLinksPerDrawer

// maxVerified bounds the candidates one write verifies with the exact rule.
// In a scope of many near-identical drawers (templated lines, logs) every
// candidate passes the filters; only the ones with the highest estimated
// overlap are verified, which is enough to find the maxLinks strongest.
const maxVerified = 4 * maxLinks

// ExactPolicy is what a writer does with an exact copy of a current drawer
// of the same scope (spec "Behaviour per writer").
type ExactPolicy int

const (
	// ExactReturnsExisting: the copy is not stored and the existing drawer
	// is returned (unnamed drawer, note and diary writes).
	ExactReturnsExisting ExactPolicy = iota
	// ExactStoredLinked: the copy is stored and linked (named drawers,
	// mining).
	ExactStoredLinked
	// ExactNotStored: the copy is not stored, named or not, and the
	// existing drawer is returned (checkpoint items).
	ExactNotStored
)

// Dedup configures duplicate detection for a write.
type Dedup struct {
	Enabled   bool
	Threshold float64
	// EntityFuzzy is dedup.entity_fuzzy: entity resolution's typo and
	// resemblance rules.
	EntityFuzzy bool
}

// NewDrawer is a drawer to write.
type NewDrawer struct {
	// ID presets the drawer id (replay-safe writers); empty makes one.
	ID         string
	Wing, Room string
	Name       string
	Content    string
	Tags       []string
	Source     Source
	Provenance Provenance
	// ValidFrom is the start of validity; zero means now.
	ValidFrom time.Time
	Diary     bool
	Policy    ExactPolicy
	// Prepared is optional work done outside the writer (see Prepare).
	Prepared *Prepared
}

// Prepared is the CPU-heavy part of a drawer write's dedup check, done in
// the caller's goroutine against a read snapshot before the write is sent
// to the one writer: the signature of the content and the verdicts on the
// near candidates found then. Drawer content is immutable, so a verdict
// stays true; the writer only judges candidates that appeared since, and
// checks that the judged ones are still current (their postings remain).
type Prepared struct {
	Hash, Fingerprint string
	NormLen           int
	Norm              string
	Sketch            dedup.Sketch
	Judged            map[string]Judgement
}

// Judgement is a verdict on one candidate.
type Judgement struct {
	Verdict dedup.Verdict
	Signals dedup.Signals
}

// idSet is the drawer ids of a set, as bytes (ids that are not UUIDs left
// out: no candidate carries one).
func idSet(ids map[string]bool) map[uuid.UUID]bool {
	out := make(map[uuid.UUID]bool, len(ids))
	for id, ok := range ids {
		if u, err := uuid.Parse(id); ok && err == nil {
			out[u] = true
		}
	}
	return out
}

// Prepare computes a write's dedup signature and judges the near
// candidates visible in r. It never fails the write: on a read error it
// returns what it has, and the writer does the rest.
func Prepare(r Reader, in NewDrawer, dd Dedup) *Prepared {
	if !dd.Enabled {
		return nil
	}
	norm := dedup.Normalize(in.Content)
	p := &Prepared{Hash: dedup.Hash(in.Content), Fingerprint: dedup.Fingerprint(norm),
		NormLen: utf8.RuneCountInString(norm), Norm: norm, Sketch: dedup.MakeSketch(norm), Judged: map[string]Judgement{}}
	w, err := FindWing(r, in.Wing)
	if err != nil {
		return p
	}
	rm, err := FindRoom(r, w, in.Room)
	if err != nil {
		return p
	}
	d := &Drawer{ID: in.ID, RoomID: rm.ID, Content: in.Content, Diary: in.Diary, Source: in.Source}
	_, _ = judgeBands(r, d, p.record(d), dd.Threshold, map[string]bool{d.ID: true}, p.Judged)
	return p
}

// judgeBands finds the near candidates of rec among its scope's band
// postings (within the length window, not in skip), judges each one not
// judged yet with the exact rule, and returns the candidates present now.
// A posting exists only for a current drawer, so a candidate found here is
// current.
func judgeBands(r Reader, d *Drawer, rec *DedupRecord, threshold float64, skip map[string]bool, judged map[string]Judgement) ([]string, error) {
	if len(rec.Bands) == 0 {
		return nil, nil
	}
	lo, hi := dedup.LengthWindow(rec.NormLen, threshold)
	floor := dedup.MinOverlap(rec.Distinct, rec.NormLen, hi, threshold)
	var cands []string
	type pending struct {
		id  string
		est float64
	}
	var verify []pending
	// Candidates are compared by their ids' bytes: most of a big room's
	// are dropped by the cheap estimates below, and are then neither
	// named nor recorded (a write recomputes them, which costs less than
	// keeping them did).
	skipIDs, judgedIDs := idSet(skip), map[uuid.UUID]bool{}
	low := dedup.Low(rec.Mins)
	for id := range judged {
		if u, err := uuid.Parse(id); err == nil {
			judgedIDs[u] = true
		}
	}
	err := r.DedupNear(rec.Scope, rec.Bands, lo, hi, func(c NearCandidate) {
		if skipIDs[c.ID] {
			return
		}
		if judgedIDs[c.ID] || len(rec.Mins) == 0 {
			cands = append(cands, c.DrawerID())
			return
		}
		est := dedup.EstimateBytes(low, c.Mins)
		if floor > 0 && est < floor {
			return // too little run overlap to be near: distinct unread
		}
		if dedup.BagCannotReach(rec.Bag[:], c.Bag, rec.NormLen, c.NormLen, threshold) {
			return // too many characters differ: distinct unread
		}
		id := c.DrawerID()
		cands = append(cands, id)
		verify = append(verify, pending{id, est})
	})
	if err != nil {
		return nil, err
	}
	if len(verify) > maxVerified {
		sort.SliceStable(verify, func(i, j int) bool { return verify[i].est > verify[j].est })
		for _, v := range verify[maxVerified:] {
			judged[v.id] = Judgement{Verdict: dedup.Distinct, Signals: dedup.Signals{Similarity: v.est, Threshold: threshold}}
		}
	}
	var grams *dedup.GramSet
	for _, id := range cands {
		if _, ok := judged[id]; ok {
			continue
		}
		if len(rec.Mins) > 0 {
			mins, norm, err := r.DedupSketch(id)
			if err != nil {
				return nil, err
			}
			if mins != nil {
				if grams == nil {
					grams = dedup.MakeGramSet(rec.Norm)
				}
				if grams.CannotReach(norm, threshold) {
					judged[id] = Judgement{Verdict: dedup.Distinct, Signals: dedup.Signals{Threshold: threshold}}
					continue
				}
				v, sig := dedup.CompareNormalized(norm, rec.Norm, threshold)
				judged[id] = Judgement{Verdict: v, Signals: sig}
				continue
			}
		}
		// Data without a sketch: read the drawer.
		other, err := r.Drawer(id)
		if err != nil {
			return nil, err
		}
		if other == nil || !other.Current() {
			continue
		}
		v, sig := dedup.Compare(other.Content, d.Content, threshold)
		judged[id] = Judgement{Verdict: v, Signals: sig}
	}
	return cands, nil
}

func (p *Prepared) record(d *Drawer) *DedupRecord {
	return &DedupRecord{DrawerID: d.ID, Scope: d.DedupScope(), Hash: p.Hash, Fingerprint: p.Fingerprint, NormLen: p.NormLen,
		Bands: p.Sketch.Bands, Mins: p.Sketch.Mins, Distinct: p.Sketch.Distinct, Bag: p.Sketch.Bag, Norm: p.Norm}
}

// WriteResult is the outcome of a drawer write.
type WriteResult struct {
	Drawer      *Drawer
	Created     bool
	Similar     []Link
	WingCreated bool
	RoomCreated bool
}

// CheckContent validates drawer content.
func CheckContent(field, content string) error {
	switch {
	case strings.TrimSpace(content) == "":
		return fault.Invalid(field, "is required and must not be blank")
	case !utf8.ValidString(content):
		return fault.Invalid(field, "is not valid UTF-8")
	case len(content) > MaxContentBytes:
		return fault.Invalid(field, fmt.Sprintf("is %d bytes; at most %d are accepted in one drawer", len(content), MaxContentBytes))
	}
	return nil
}

// CheckTags validates and returns tags (never nil).
func CheckTags(tags []string) ([]string, error) {
	if len(tags) > MaxTags {
		return nil, fault.Invalid("tags", fmt.Sprintf("has %d tags; at most %d are accepted", len(tags), MaxTags))
	}
	out := make([]string, 0, len(tags))
	for _, t := range tags {
		switch {
		case strings.TrimSpace(t) == "" || strings.TrimSpace(t) != t:
			return nil, fault.Invalid("tags", fmt.Sprintf("tag %q is blank or has surrounding spaces", t))
		case strings.ContainsRune(t, ',') || strings.IndexFunc(t, unicode.IsControl) >= 0 || !utf8.ValidString(t) || len(t) > 128:
			return nil, fault.Invalid("tags", fmt.Sprintf("tag %q has a comma or control character or is longer than 128 bytes", t))
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out, nil
}

// CheckRequestedBy validates a channel; empty becomes def.
func CheckRequestedBy(v, def string) (string, error) {
	switch v {
	case "":
		return def, nil
	case ByCLI, ByHTTP, ByMCP, ByUnknown:
		return v, nil
	}
	return "", fault.Invalid("requested_by", fmt.Sprintf("%q is not one of cli, http, mcp, unknown", v))
}

// CheckSourceKind validates a source kind.
func CheckSourceKind(v string) error {
	if !slices.Contains(SourceKinds, v) {
		return fault.Invalid("source.kind", fmt.Sprintf("%q is not one of %s", v, strings.Join(SourceKinds, ", ")))
	}
	return nil
}

// CreateDrawer files a drawer, applying the name rules and deduplication.
// Every check happens before the first write.
func CreateDrawer(tx Tx, in NewDrawer, dd Dedup) (*WriteResult, error) {
	if err := CheckContent("content", in.Content); err != nil {
		return nil, err
	}
	tags, err := CheckTags(in.Tags)
	if err != nil {
		return nil, err
	}
	if in.Name != "" {
		if err := CheckDrawerName(in.Name); err != nil {
			return nil, err
		}
	}
	if err := CheckSourceKind(in.Source.Kind); err != nil {
		return nil, err
	}
	if in.ID != "" {
		if d, err := tx.Drawer(in.ID); err != nil || d != nil {
			return &WriteResult{Drawer: d}, err
		}
	}
	// Look up without creating, so that a refusal writes nothing.
	w, err := FindWing(tx, in.Wing)
	if err != nil && !fault.Is(err, fault.PalaceWingNotFound) {
		return nil, err
	}
	var rm *Room
	if w != nil {
		rm, err = FindRoom(tx, w, in.Room)
		if err != nil && !fault.Is(err, fault.PalaceRoomNotFound) {
			return nil, err
		}
	} else if _, isID := CanonicalUUID(in.Wing); isID {
		return nil, err
	} else if err := CheckPlace("room", in.Room); err != nil {
		return nil, err
	}
	if rm == nil {
		if _, isID := CanonicalUUID(in.Room); isID {
			return nil, roomNotFound(in.Wing, in.Room)
		}
	}
	now := tx.Now()
	d := &Drawer{
		ID: in.ID, Name: in.Name, Content: in.Content, Tags: tags,
		Source: in.Source, Provenance: in.Provenance,
		ValidFrom: in.ValidFrom, CreatedAt: now, Diary: in.Diary,
	}
	if d.ID == "" {
		d.ID = NewID()
	}
	if d.ValidFrom.IsZero() {
		d.ValidFrom = now
	}
	if rm != nil {
		d.RoomID, d.WingID = rm.ID, w.ID
		if in.Name != "" {
			holder, err := tx.DrawerByName(rm.ID, in.Name)
			if err != nil {
				return nil, err
			}
			if holder != nil {
				if holder.Content == in.Content {
					return &WriteResult{Drawer: holder}, nil
				}
				return nil, fault.Newf(fault.PalaceDrawerNameTaken,
					"choose another name, or supersede drawer "+holder.ID+" to correct it",
					"drawer name %q is held by drawer %s with other content", in.Name, holder.ID)
			}
		}
	}
	var links []Link
	var rec *DedupRecord
	if dd.Enabled {
		d.RoomID = roomIDOrPlaceholder(rm)
		if in.Prepared != nil {
			rec = in.Prepared.record(d)
		} else {
			rec = newDedupRecord(d)
		}
		if rm != nil {
			var judged map[string]Judgement
			if in.Prepared != nil {
				judged = in.Prepared.Judged
			}
			existing, found, err := findDuplicates(tx, d, rec, dd.Threshold, judged)
			if err != nil {
				return nil, err
			}
			if existing != nil && ((in.Name == "" && in.Policy == ExactReturnsExisting) || in.Policy == ExactNotStored) {
				return &WriteResult{Drawer: existing}, nil
			}
			links = found
		}
	}
	// All checks passed: write.
	res := &WriteResult{Created: true}
	if w == nil {
		if w, res.WingCreated, err = EnsureWing(tx, in.Wing, ""); err != nil {
			return nil, err
		}
	}
	if rm == nil {
		if rm, res.RoomCreated, err = EnsureRoom(tx, w, in.Room, ""); err != nil {
			return nil, err
		}
	}
	d.RoomID, d.WingID = rm.ID, w.ID
	if err := tx.PutDrawer(d, nil); err != nil {
		return nil, err
	}
	if err := tx.Log(ChangeDrawer, ActionCreated, d.ID); err != nil {
		return nil, err
	}
	if rec != nil {
		rec.Scope = d.DedupScope()
		if err := tx.PutDedup(rec); err != nil {
			return nil, err
		}
	}
	if links, err = admitLinks(tx, links, maxLinks, olderEnd); err != nil {
		return nil, err
	}
	for i := range links {
		links[i].Newer = d.ID
		links[i].CreatedAt = now
		if err := tx.PutLink(&links[i]); err != nil {
			return nil, err
		}
		if err := tx.Log(ChangeLink, ActionCreated, links[i].ID); err != nil {
			return nil, err
		}
	}
	res.Drawer, res.Similar = d, links
	return res, nil
}

func roomIDOrPlaceholder(rm *Room) string {
	if rm == nil {
		return ""
	}
	return rm.ID
}

func newDedupRecord(d *Drawer) *DedupRecord {
	norm := dedup.Normalize(d.Content)
	sk := dedup.MakeSketch(norm)
	return &DedupRecord{
		DrawerID:    d.ID,
		Scope:       d.DedupScope(),
		Hash:        dedup.Hash(d.Content),
		Fingerprint: dedup.Fingerprint(norm),
		NormLen:     utf8.RuneCountInString(norm),
		Bands:       sk.Bands,
		Mins:        sk.Mins,
		Distinct:    sk.Distinct,
		Bag:         sk.Bag,
		Norm:        norm,
	}
}

// firstExact is the first drawer of ids (the hash's posting list) that is
// not d and is in the palace.
func firstExact(r Reader, d *Drawer, ids []string) (*Drawer, error) {
	for _, id := range ids {
		if id == d.ID {
			continue
		}
		if x, err := r.Drawer(id); err != nil || x != nil {
			return x, err
		}
	}
	return nil, nil
}

// findDuplicates compares a new drawer with the current drawers of its
// scope. It returns the oldest exact copy (if any) and the links to record:
// exact, normalized and near matches, strongest first; the caller admits
// at most maxLinks of them (admitLinks).
func findDuplicates(r Reader, d *Drawer, rec *DedupRecord, threshold float64, judged map[string]Judgement) (*Drawer, []Link, error) {
	ids, err := r.DedupByHash(rec.Scope, rec.Hash)
	if err != nil {
		return nil, nil, err
	}
	return duplicatesOf(r, d, rec, threshold, judged, ids)
}

// duplicatesOf is findDuplicates with the hash's posting list (ids) read.
func duplicatesOf(r Reader, d *Drawer, rec *DedupRecord, threshold float64, judged map[string]Judgement, ids []string) (*Drawer, []Link, error) {
	type match struct {
		id   string
		kind dedup.Verdict
		sig  dedup.Signals
	}
	var matches []match
	seen := map[string]bool{d.ID: true}
	exact, err := firstExact(r, d, ids)
	if err != nil {
		return nil, nil, err
	}
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		matches = append(matches, match{id, dedup.Exact, dedup.Signals{SameHash: true, SameFingerprint: true, Similarity: 1, Threshold: threshold}})
	}
	ids, err = r.DedupByFingerprint(rec.Scope, rec.Fingerprint)
	if err != nil {
		return nil, nil, err
	}
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		matches = append(matches, match{id, dedup.Normalized, dedup.Signals{SameFingerprint: true, Similarity: 1, Threshold: threshold}})
	}
	if judged == nil {
		judged = map[string]Judgement{}
	}
	cands, err := judgeBands(r, d, rec, threshold, seen, judged)
	if err != nil {
		return nil, nil, err
	}
	for _, id := range cands {
		if j, ok := judged[id]; ok && j.Verdict == dedup.Near {
			matches = append(matches, match{id, j.Verdict, j.Signals})
		}
	}
	rank := map[dedup.Verdict]int{dedup.Exact: 0, dedup.Normalized: 1, dedup.Near: 2}
	sort.SliceStable(matches, func(i, j int) bool {
		if rank[matches[i].kind] != rank[matches[j].kind] {
			return rank[matches[i].kind] < rank[matches[j].kind]
		}
		if matches[i].sig.Similarity != matches[j].sig.Similarity {
			return matches[i].sig.Similarity > matches[j].sig.Similarity
		}
		return matches[i].id < matches[j].id
	})
	if len(matches) > maxVerified {
		matches = matches[:maxVerified]
	}
	links := make([]Link, len(matches))
	for i, m := range matches {
		links[i] = Link{ID: NewID(), Older: m.id, Kind: m.kind, Signals: m.sig}
	}
	return exact, links, nil
}
