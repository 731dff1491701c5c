package graph

import (
	"fmt"
	"slices"
	"testing"
)

// memLookup is a Lookup over a slice, with aliases by entity id.
type memLookup struct {
	ents    []Candidate
	aliases map[string][]string
}

func (m memLookup) filter(f func(Candidate) bool) ([]Candidate, error) {
	var out []Candidate
	for _, c := range m.ents {
		if f(c) {
			out = append(out, c)
		}
	}
	return out, nil
}
func (m memLookup) ByName(n string) ([]Candidate, error) {
	return m.filter(func(c Candidate) bool { return c.Name == n })
}
func (m memLookup) ByKey(k string) ([]Candidate, error) {
	return m.filter(func(c Candidate) bool { return c.Key == k })
}
func (m memLookup) ByAlias(k string) ([]Candidate, error) {
	return m.filter(func(c Candidate) bool { return slices.Contains(m.aliases[c.ID], k) })
}
func (m memLookup) ByDeletion(v string) ([]Candidate, error) {
	return m.filter(func(c Candidate) bool { return c.Key == v || slices.Contains(Deletions(c.Key), v) })
}

func ent(id, name, kind string) Candidate {
	return Candidate{ID: id, Name: name, Kind: kind, Key: Key(name)}
}

func TestKey(t *testing.T) {
	for in, want := range map[string]string{
		"C++": "c++", "C#": "c#", "C": "c", "PostgreSQL": "postgresql", "Postgre SQL": "postgresql",
		"post-gre_sql!": "postgresql", "  New   York ": "newyork", "Zoë": "zoë", "F#.NET": "f#net", "": "",
	} {
		if got := Key(in); got != want {
			t.Errorf("Key(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestResolve(t *testing.T) {
	l := memLookup{ents: []Candidate{
		ent("e01", "C", KindTool), ent("e02", "C++", KindTool), ent("e03", "C#", KindTool),
		ent("e04", "PostgreSQL", KindTool), ent("e05", "Caroline", KindPerson), ent("e06", "Paris", KindPlace),
		ent("e07", "Melanie", KindPerson), ent("e08", "Melania", KindPerson), ent("e09", "Jon", KindPerson),
		ent("e10", "Kubernetes", KindTool), ent("e11", "Mystery", KindOther), ent("e12", "2026-11-25", KindDate),
	}, aliases: map[string][]string{"e10": {"k8s"}, "e05": {"caro"}}}
	cases := []struct {
		name, kind string
		fuzzy      bool
		id, rule   string
		resembles  []string
	}{
		{"C++", KindTool, true, "e02", RuleExact, nil},
		{"c++", KindTool, true, "e02", RuleNormalized, nil},
		{"C#", KindTool, true, "e03", RuleExact, nil},
		{"c", KindTool, true, "e01", RuleNormalized, nil},
		{"C + +", KindTool, true, "e02", RuleNormalized, nil},
		{"postgre-sql", KindTool, true, "e04", RuleNormalized, nil},
		{"K8s", KindTool, true, "e10", RuleAlias, nil},
		{"Caro", KindPerson, true, "e05", RuleAlias, nil},
		{"Caro", KindOther, true, "e05", RuleAlias, nil},
		{"PostgreSLQ", KindTool, true, "e04", RuleTypo, nil}, // a swap
		{"Kubernetis", KindTool, true, "e10", RuleTypo, nil}, // a substitution
		{"Carolline", KindPerson, true, "e05", RuleTypo, nil},
		{"Carolin", KindPerson, true, "e05", RuleTypo, nil},
		{"Kubernetis", KindTool, false, "", "", nil}, // fuzzy off: new, nothing linked
		// An edit of a digit is another date, never a typo of one.
		{"2026-11-22", KindDate, true, "", "", []string{"e12"}},
		// One edit from two entities: new, linked to both.
		{"Melanio", KindPerson, true, "", "", []string{"e07", "e08"}},
		// Too short for the typo rule: new, resembling.
		{"Joni", KindPerson, true, "", "", []string{"e09"}},
		// The same name as another kind: not equatable.
		{"Paris", KindPerson, true, "", "", []string{"e06"}},
		{"Paris", KindOther, true, "e06", RuleExact, nil},
		{"Mystery", KindPerson, true, "e11", RuleExact, nil},
		{"Carolina", KindPlace, true, "", "", []string{"e05"}},
		{"Brand New", KindProject, true, "", "", nil},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%s/%v", c.name, c.kind, c.fuzzy), func(t *testing.T) {
			r, err := Resolve(l, c.name, c.kind, c.fuzzy)
			if err != nil {
				t.Fatal(err)
			}
			if c.id != "" && (r.New || r.ID != c.id || r.Rule != c.rule) {
				t.Fatalf("got %+v, want %s by %s", r, c.id, c.rule)
			}
			if c.id == "" && (!r.New || !slices.Equal(r.PossiblySame, c.resembles)) {
				t.Fatalf("got %+v, want new resembling %v", r, c.resembles)
			}
		})
	}
}

func TestOneEditAndDeletions(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{{"postgres", "postgre", true}, {"postgres", "postgrez", true}, {"postgres", "psotgres", true}, {"postgres", "postgres", false},
		{"postgres", "postgresql", false}, {"c++", "c#", false}, {"c", "c#", true}} {
		if got := OneEdit(c.a, c.b); got != c.want {
			t.Errorf("OneEdit(%q, %q) = %v", c.a, c.b, got)
		}
	}
	if d := Deletions("aab"); !slices.Equal(d, []string{"ab", "aa"}) {
		t.Fatalf("Deletions(aab) = %v", d)
	}
}
