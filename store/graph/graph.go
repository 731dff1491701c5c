// Package graph holds the pure rules of the knowledge graph: the closed
// vocabularies of entity kinds, predicates and link kinds, the normalised
// key of a name, the one-edit rule and the order in which a name resolves
// to an entity (spec "Entity and graph records"). It does no I/O: the store
// answers its Lookup.
package graph

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/loci-dev/loci/store/dedup"
)

// Entity kinds: a closed vocabulary; other when unclassified.
const (
	KindPerson       = "person"
	KindOrganization = "organization"
	KindProject      = "project"
	KindTool         = "tool"
	KindPlace        = "place"
	KindEvent        = "event"
	KindDate         = "date"
	KindConcept      = "concept"
	KindOther        = "other"
)

// Kinds lists the entity kinds.
var Kinds = []string{KindPerson, KindOrganization, KindProject, KindTool, KindPlace, KindEvent, KindDate, KindConcept, KindOther}

// Predicates is the closed vocabulary of relates_to predicates.
var Predicates = []string{
	"works_on", "works_at", "works_with", "member_of", "leads", "reports_to",
	"uses", "depends_on", "replaced_by", "part_of", "owns", "created",
	"located_in", "lives_in", "born_in", "visited", "moved_to",
	"knows", "married_to", "parent_of", "sibling_of", "friend_of",
	"likes", "dislikes", "prefers", "decided", "scheduled_for", "happened_on",
	"related_to",
}

// Link kinds between relationships.
const (
	LinkConfirms    = "confirms"
	LinkContradicts = "contradicts"
	LinkRefines     = "refines"
	// PossiblySameAs links an entity to one it resembles without being
	// equatable.
	PossiblySameAs = "possibly_same_as"
)

// LinkKinds lists the lifecycle link kinds of relationships.
var LinkKinds = []string{LinkConfirms, LinkContradicts, LinkRefines}

// Resolution rules, in order.
const (
	RuleExact      = "exact"
	RuleNormalized = "normalized"
	RuleAlias      = "alias"
	RuleTypo       = "typo"
)

// MinTypoRunes is the shortest name the typo rule applies to.
const MinTypoRunes = 6

// Key is a name's normalised form: letters and digits lower-cased, `+` and
// `#` kept (C++, C# and C stay apart), everything else (punctuation,
// spacing) dropped.
func Key(name string) string {
	var b strings.Builder
	for _, r := range name {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(unicode.ToLower(r))
		case r == '+' || r == '#':
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Deletions are the keys one rune shorter than key, each without one of
// its runes: an entity is indexed under them so that a key one edit away
// (insertion, deletion, substitution or adjacent swap) is found by lookups,
// never by a scan.
func Deletions(key string) []string {
	r := []rune(key)
	out := make([]string, 0, len(r))
	for i := range r {
		d := string(r[:i]) + string(r[i+1:])
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// OneEdit reports keys exactly one edit apart (adjacent swap included).
func OneEdit(a, b string) bool {
	if a == b {
		return false
	}
	return dedup.OSA([]rune(a), []rune(b), 1) <= 1
}

// Candidate is an existing entity as a Lookup returns it.
type Candidate struct {
	ID, Name, Kind, Key string
}

// Lookup answers the resolution's questions about existing entities; the
// store implements it with indexes.
type Lookup interface {
	// ByName is the entities with this exact canonical name.
	ByName(name string) ([]Candidate, error)
	// ByKey is the entities whose key is key.
	ByKey(key string) ([]Candidate, error)
	// ByAlias is the entities with an alias of this key.
	ByAlias(key string) ([]Candidate, error)
	// ByDeletion is the entities whose key is v or has v among its
	// Deletions.
	ByDeletion(v string) ([]Candidate, error)
}

// Resolution is where a name resolved: an existing entity (ID, by Rule),
// or a new one (New) to be linked possibly_same_as to PossiblySame.
type Resolution struct {
	ID           string
	Rule         string
	New          bool
	PossiblySame []string
}

// Compatible reports kinds a name may resolve across: the same, or either
// one other.
func Compatible(a, b string) bool { return a == b || a == KindOther || b == KindOther }

// Resolve resolves a name of a kind in the spec's order: exact name,
// normalised key, recorded alias, then (fuzzy) the typo rule: exactly one
// entity one edit away, for a name of MinTypoRunes or more. Otherwise the
// name is a new entity, linked possibly_same_as to those it resembles
// without being equatable: equal by a rule but of another kind, one edit
// away from two or more, or (fuzzy) one edit away in a name too short for
// the typo rule. Among several matches of one rule the same kind wins,
// then the oldest (smallest id).
func Resolve(l Lookup, name, kind string, fuzzy bool) (Resolution, error) {
	var resemble []string
	key := Key(name)
	for _, step := range []struct {
		rule string
		find func() ([]Candidate, error)
	}{
		{RuleExact, func() ([]Candidate, error) { return l.ByName(name) }},
		{RuleNormalized, func() ([]Candidate, error) { return l.ByKey(key) }},
		{RuleAlias, func() ([]Candidate, error) { return l.ByAlias(key) }},
	} {
		if step.rule != RuleExact && key == "" {
			continue
		}
		cands, err := step.find()
		if err != nil {
			return Resolution{}, err
		}
		if c, ok := pick(cands, kind); ok {
			return Resolution{ID: c.ID, Rule: step.rule}, nil
		}
		for _, c := range cands {
			resemble = appendNew(resemble, c.ID)
		}
	}
	if fuzzy && key != "" {
		near, err := oneEditAway(l, key)
		if err != nil {
			return Resolution{}, err
		}
		var fit []Candidate
		for _, c := range near {
			// An edit of a digit is another number, date or version,
			// never a typo of it (2026-11-22 is not 2026-11-25).
			if Compatible(c.Kind, kind) && digitsOf(c.Key) == digitsOf(key) {
				fit = append(fit, c)
			}
		}
		if len(fit) == 1 && utf8.RuneCountInString(name) >= MinTypoRunes && len(near) == 1 {
			return Resolution{ID: fit[0].ID, Rule: RuleTypo}, nil
		}
		for _, c := range near {
			resemble = appendNew(resemble, c.ID)
		}
	}
	slices.Sort(resemble)
	return Resolution{New: true, PossiblySame: resemble}, nil
}

// pick is the candidate a name of kind resolves to among cands.
func pick(cands []Candidate, kind string) (Candidate, bool) {
	var best Candidate
	found := false
	for _, c := range cands {
		if !Compatible(c.Kind, kind) {
			continue
		}
		better := !found || (c.Kind == kind) && best.Kind != kind || (c.Kind == kind) == (best.Kind == kind) && c.ID < best.ID
		if better {
			best, found = c, true
		}
	}
	return best, found
}

// oneEditAway is every entity whose key is exactly one edit from key,
// found through the deletion index.
func oneEditAway(l Lookup, key string) ([]Candidate, error) {
	seen := map[string]bool{}
	var out []Candidate
	add := func(cands []Candidate) {
		for _, c := range cands {
			if !seen[c.ID] && OneEdit(c.Key, key) {
				seen[c.ID] = true
				out = append(out, c)
			}
		}
	}
	// Keys one longer (key is one of their deletions) and of equal length
	// (a deletion shared: substitution or swap) or one shorter (a deletion
	// of key is theirs).
	cands, err := l.ByDeletion(key)
	if err != nil {
		return nil, err
	}
	add(cands)
	for _, d := range Deletions(key) {
		cands, err := l.ByDeletion(d)
		if err != nil {
			return nil, err
		}
		add(cands)
	}
	slices.SortFunc(out, func(a, b Candidate) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

func appendNew(list []string, id string) []string {
	if slices.Contains(list, id) {
		return list
	}
	return append(list, id)
}

// CheckKind reports a kind outside the vocabulary ("" when fine); blank is
// the caller's empty_label.
func CheckKind(kind string) bool { return slices.Contains(Kinds, kind) }

// CheckPredicate reports a predicate of the vocabulary.
func CheckPredicate(p string) bool { return slices.Contains(Predicates, p) }

// digitsOf is the digits of a key in their order.
func digitsOf(key string) string {
	var b strings.Builder
	for _, r := range key {
		if unicode.IsDigit(r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}
