package extract

import "github.com/loci-dev/loci/store/graph"

// phrasing is how a predicate is said between two names, and the kinds
// its subject and object may have (none: any).
type phrasing struct {
	predicate       string
	subject, object []string
}

var (
	person  = []string{graph.KindPerson}
	org     = []string{graph.KindOrganization}
	place   = []string{graph.KindPlace}
	work    = []string{graph.KindOrganization, graph.KindProject}
	thing   = []string{graph.KindTool, graph.KindProject, graph.KindOrganization, graph.KindConcept, graph.KindOther}
	someone = []string{graph.KindPerson, graph.KindOrganization}
)

// phrasings maps the words between two names (fillers removed, lower
// case) to a predicate.
var phrasings = map[string]phrasing{
	"works at": {"works_at", person, org}, "works for": {"works_at", person, org}, "employed at": {"works_at", person, org},
	"employed by": {"works_at", person, org}, "joined": {"works_at", person, org}, "working at": {"works_at", person, org},
	"working for": {"works_at", person, org}, "interns at": {"works_at", person, org}, "hired by": {"works_at", person, org},
	"works on": {"works_on", person, thing}, "working on": {"works_on", person, thing}, "worked on": {"works_on", person, thing},
	"works with": {"works_with", person, person}, "working with": {"works_with", person, person}, "worked with": {"works_with", person, person},
	"lives in": {"lives_in", person, place}, "living in": {"lives_in", person, place}, "resides in": {"lives_in", person, place},
	"lived in": {"lives_in", person, place}, "settled in": {"lives_in", person, place},
	"moved to": {"moved_to", person, place}, "moving to": {"moved_to", person, place}, "relocated to": {"moved_to", person, place},
	"born in": {"born_in", person, place}, "grew up in": {"born_in", person, place},
	"visited": {"visited", person, place}, "went to": {"visited", person, place}, "traveled to": {"visited", person, place},
	"travelled to": {"visited", person, place}, "visiting": {"visited", person, place}, "trip to": {"visited", person, place},
	"uses": {"uses", someone, []string{graph.KindTool}}, "using": {"uses", someone, []string{graph.KindTool}},
	"switched to": {"uses", someone, []string{graph.KindTool}}, "migrated to": {"uses", someone, []string{graph.KindTool}},
	"depends on": {"depends_on", nil, nil}, "relies on": {"depends_on", nil, nil},
	"located in": {"located_in", nil, place}, "based in": {"located_in", org, place}, "headquartered in": {"located_in", org, place},
	"part of": {"part_of", nil, nil}, "belongs to": {"part_of", nil, nil},
	"member of": {"member_of", person, org}, "leads": {"leads", person, nil}, "manages": {"leads", person, nil},
	"runs": {"leads", person, nil}, "reports to": {"reports_to", person, person},
	"knows": {"knows", person, person}, "met": {"knows", person, person},
	"married to": {"married_to", person, person}, "married": {"married_to", person, person},
	"friends with": {"friend_of", person, person}, "friend of": {"friend_of", person, person},
	"likes": {"likes", person, nil}, "loves": {"likes", person, nil}, "enjoys": {"likes", person, nil},
	"hates": {"dislikes", person, nil}, "dislikes": {"dislikes", person, nil}, "prefers": {"prefers", person, nil},
	"created": {"created", someone, nil}, "built": {"created", someone, nil}, "founded": {"created", someone, org},
	"wrote": {"created", person, nil}, "owns": {"owns", someone, nil}, "bought": {"owns", someone, nil},
	"sister of": {"sibling_of", person, person}, "brother of": {"sibling_of", person, person},
	"mother of": {"parent_of", person, person}, "father of": {"parent_of", person, person},
	"replaced by": {"replaced_by", nil, nil},
}
