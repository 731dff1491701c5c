package extract

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/loci-dev/loci/graph"
)

type labelled struct {
	Text   string      `json:"text"`
	People []string    `json:"people"`
	Places []string    `json:"places"`
	Facts  [][3]string `json:"facts"`
}

// TestHeuristicOnTheLabelledSample scores the heuristic extractor on a
// hand-labelled sample of conversation and project notes
// (testdata/labelled.jsonl): it must find at least 80 % of the people and
// of the places and a third of the facts; precision is reported.
func TestHeuristicOnTheLabelledSample(t *testing.T) {
	scoreSample(t, "testdata/labelled.jsonl", 60)
}

// TestHeuristicOnTheHeldOutSample scores it on a second sample written
// after its rules were last changed (testdata/heldout.jsonl), against the
// same targets.
func TestHeuristicOnTheHeldOutSample(t *testing.T) {
	scoreSample(t, "testdata/heldout.jsonl", 30)
}

func scoreSample(t *testing.T, path string, least int) {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var sample []labelled
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l labelled
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		sample = append(sample, l)
	}
	if len(sample) < least {
		t.Fatalf("only %d labelled sentences", len(sample))
	}
	texts := make([]string, len(sample))
	for i, l := range sample {
		texts[i] = l.Text
	}
	res, err := Heuristic{}.Extract(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	type score struct{ want, found, said, right int }
	var people, places, facts score
	for i, l := range sample {
		got := map[string]map[string]bool{graph.KindPerson: {}, graph.KindPlace: {}}
		for _, e := range res[i].Entities {
			if got[e.Kind] != nil {
				got[e.Kind][graph.Key(e.Name)] = true
			}
		}
		count := func(s *score, kind string, want []string) {
			wanted := map[string]bool{}
			for _, w := range want {
				wanted[graph.Key(w)] = true
				s.want++
				if got[kind][graph.Key(w)] {
					s.found++
				} else {
					t.Logf("missed %s %q in %q", kind, w, l.Text)
				}
			}
			for k := range got[kind] {
				s.said++
				if wanted[k] {
					s.right++
				} else {
					t.Logf("wrong %s %q in %q", kind, k, l.Text)
				}
			}
		}
		count(&people, graph.KindPerson, l.People)
		count(&places, graph.KindPlace, l.Places)
		gotFacts := map[[3]string]bool{}
		for _, fa := range res[i].Facts {
			gotFacts[[3]string{graph.Key(fa.Subject), fa.Predicate, graph.Key(fa.Object)}] = true
		}
		wantFacts := map[[3]string]bool{}
		for _, fa := range l.Facts {
			k := [3]string{graph.Key(fa[0]), fa[1], graph.Key(fa[2])}
			wantFacts[k] = true
			facts.want++
			if gotFacts[k] {
				facts.found++
			} else {
				t.Logf("missed fact %v in %q", fa, l.Text)
			}
		}
		for k := range gotFacts {
			facts.said++
			if wantFacts[k] {
				facts.right++
			} else {
				t.Logf("unlabelled fact %v in %q", k, l.Text)
			}
		}
	}
	ratio := func(a, b int) float64 {
		if b == 0 {
			return 0
		}
		return float64(a) / float64(b)
	}
	t.Logf("people: recall %.2f (%d/%d), precision %.2f; places: recall %.2f (%d/%d), precision %.2f; facts: recall %.2f (%d/%d), precision %.2f",
		ratio(people.found, people.want), people.found, people.want, ratio(people.right, people.said),
		ratio(places.found, places.want), places.found, places.want, ratio(places.right, places.said),
		ratio(facts.found, facts.want), facts.found, facts.want, ratio(facts.right, facts.said))
	if ratio(people.found, people.want) < 0.8 || ratio(places.found, places.want) < 0.8 || ratio(facts.found, facts.want) < 1.0/3 {
		t.Fatal("below the targets: 80 % of people and of places, a third of the facts")
	}
}

// Chat text capitalises whatever opens a sentence: pronouns and their
// contractions, greetings, imperatives and -ing words are not names, and
// the names after a greeting still are.
func TestHeuristicKeepsChatterOut(t *testing.T) {
	for text, want := range map[string]string{
		"I'm so glad you came!":                         "",
		"You're right, I'll call you tomorrow.":         "",
		"Keep it up, you're doing great.":               "",
		"Appreciate it, Jon.":                           "Jon/person",
		"Bye Caroline, see you soon.":                   "Caroline/person",
		"Congrats Melanie! Definitely a big step.":      "Melanie/person",
		"Seeing my family at the lake made my day.":     "",
		"Yep, can’t wait. Cool idea, Nate said so too.": "Nate/person",
		"Simone grew up in Naples.":                     "Simone/other Naples/place",
	} {
		res, err := Heuristic{}.Extract(context.Background(), []string{text})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range res[0].Entities {
			got = append(got, e.Name+"/"+e.Kind)
		}
		if strings.Join(got, " ") != want {
			t.Errorf("%q: entities %q, want %q", text, strings.Join(got, " "), want)
		}
	}
}
