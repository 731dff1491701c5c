package dedup

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/loci-dev/loci/internal/markov"
)

func TestNormalize(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Hello, World!", "hello world"},
		{"  many   spaces\tand\nlines ", "many spaces and lines"},
		{"Café au lait", "café au lait"},
		{"C++ and C#", "c++ and c"},
		{"don't", "dont"},
		{"", ""},
		{"!!!", ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := Normalize(tt.in); got != tt.want {
				t.Errorf("Normalize(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestCompare(t *testing.T) {
	long := strings.Repeat("the quick brown fox jumps over the lazy dog ", 60) // > 2000
	tests := []struct {
		name string
		a, b string
		want Verdict
	}{
		{"same bytes", "Deploy on Friday.", "Deploy on Friday.", Exact},
		{"case and punctuation", "Deploy on Friday.", "deploy ON friday", Normalized},
		{"whitespace", "deploy  on\nfriday", "deploy on friday", Normalized},
		{"accent not folded", "we met at the café today", "we met at the cafe today", Near},
		{"accent short is distinct", "café", "cafe", Distinct},
		{"short typo is distinct", "deploy fri", "deploy fry", Distinct},
		{"one typo in a sentence", "the release goes out on friday morning", "the release goes out on fridya morning", Near},
		{"swap is one edit", "abcdefghijklmnopqrst", "abcdefghijklmnopqrts", Near},
		{"different", "the release goes out on friday morning", "we adopted postgres for the queue", Distinct},
		{"long same trigrams", long + "x", long + "y", Near},
		{"long different", long, strings.Repeat("lorem ipsum dolor sit amet consectetur ", 60), Distinct},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, sig := Compare(tt.a, tt.b, DefaultThreshold)
			if got != tt.want {
				t.Fatalf("Compare = %s (%+v), want %s", got, sig, tt.want)
			}
		})
	}
}

func TestThresholdBoundary(t *testing.T) {
	a := "abcdefghijklmnopqrst" // 20 runes
	b := "abcdefghijklmnopqrXY" // 2 substitutions: similarity 0.9
	if v, s := Compare(a, b, 0.9); v != Near || s.Similarity != 0.9 {
		t.Fatalf("at threshold: %s %+v", v, s)
	}
	if v, _ := Compare(a, b, 0.91); v != Distinct {
		t.Fatalf("above threshold: %s", v)
	}
}

// refOSA is the plain, unbanded optimal string alignment distance.
func refOSA(a, b []rune) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

func TestOSAMatchesReference(t *testing.T) {
	pairs := [][2]string{{"", ""}, {"a", ""}, {"ab", "ba"}, {"kitten", "sitting"}, {"ca", "abc"}, {"abcdef", "badcfe"}, {"flaw", "lawn"}}
	for _, p := range pairs {
		a, b := []rune(p[0]), []rune(p[1])
		want := refOSA(a, b)
		if got := OSA(a, b, 1<<20); got != want {
			t.Errorf("OSA(%q,%q) = %d, want %d", p[0], p[1], got, want)
		}
	}
}

func FuzzOSA(f *testing.F) {
	f.Add("kitten", "sitting", 2)
	f.Add("abcdef", "badcfe", 3)
	f.Fuzz(func(t *testing.T, sa, sb string, bound int) {
		if len(sa) > 64 || len(sb) > 64 || bound < 0 || bound > 80 {
			t.Skip()
		}
		a, b := []rune(sa), []rune(sb)
		want := refOSA(a, b)
		got := OSA(a, b, bound)
		if want <= bound && got != want {
			t.Fatalf("OSA(%q,%q,%d) = %d, want %d", sa, sb, bound, got, want)
		}
		if want > bound && got <= bound {
			t.Fatalf("OSA(%q,%q,%d) = %d under bound, true %d", sa, sb, bound, got, want)
		}
	})
}

// FuzzBagBound checks that half the bag distance never exceeds the edit
// distance.
func FuzzBagBound(f *testing.F) {
	f.Add("kitten", "sitting")
	f.Add("the queue moved", "teh queue mvoed!")
	f.Fuzz(func(t *testing.T, sa, sb string) {
		if len(sa) > 64 || len(sb) > 64 {
			t.Skip()
		}
		a, b := MakeBag(sa), MakeBag(sb)
		if d := refOSA([]rune(sa), []rune(sb)); (BagDistance(a[:], b[:])+1)/2 > d {
			t.Fatalf("bag distance %d over twice the edit distance %d", BagDistance(a[:], b[:]), d)
		}
	})
}

func FuzzNormalizeCompare(f *testing.F) {
	f.Add("Hello, World!", "hello world")
	f.Add("café", "cafe")
	f.Fuzz(func(t *testing.T, a, b string) {
		n := Normalize(a)
		if Normalize(n) != n {
			t.Fatalf("Normalize not idempotent on %q", a)
		}
		v1, s1 := Compare(a, b, DefaultThreshold)
		v2, s2 := Compare(b, a, DefaultThreshold)
		if v1 != v2 || (v1 != Distinct && s1.Similarity != s2.Similarity) {
			t.Fatalf("Compare not symmetric: %s/%v vs %s/%v", v1, s1, v2, s2)
		}
		if s1.Similarity < 0 || s1.Similarity > 1 {
			t.Fatalf("similarity out of range: %v", s1.Similarity)
		}
	})
}

func TestBandKeysFindSmallEdits(t *testing.T) {
	a := Normalize("We decided to move the job queue from Redis to PostgreSQL because of durability.")
	b := Normalize("We decided to move the job queue from Redis to PostgreSQL because of durabilty!")
	ka, kb := BandKeys(a), BandKeys(b)
	shared := 0
	for i := range ka {
		if ka[i] == kb[i] {
			shared++
		}
	}
	if shared == 0 {
		t.Fatal("a one-letter edit shares no band key")
	}
	if BandKeys(Normalize("short")) != nil {
		t.Fatal("short text has band keys")
	}
	c := BandKeys(Normalize("An entirely different sentence about lunch plans on Tuesday."))
	same := 0
	for i := range ka {
		if ka[i] == c[i] {
			same++
		}
	}
	if same > 2 {
		t.Fatalf("unrelated texts share %d band keys", same)
	}
}

func TestLengthWindow(t *testing.T) {
	lo, hi := LengthWindow(100, 0.9)
	if lo > 90 || hi < 111 {
		t.Fatalf("window (%d,%d) too narrow for 0.9", lo, hi)
	}
	// Both ends must be reachable: a 90-rune text vs 100 needs d >= 10 = 0.1*100.
	if lo < 80 || hi > 120 {
		t.Fatalf("window (%d,%d) too wide", lo, hi)
	}
}

// TestMinOverlapNeverSkipsANearPair checks the skip rule on pairs at the
// edge of the threshold: substitutions, insertions, deletions and swaps
// spread over the text.
func TestMinOverlapNeverSkipsANearPair(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	words := strings.Fields("the release queue writer moved to monday because postgres durability matters for every agent memory")
	checked := 0
	for range 4000 {
		var b strings.Builder
		for range 3 + r.IntN(40) {
			b.WriteString(words[r.IntN(len(words))])
			b.WriteByte(' ')
		}
		a := []rune(Normalize(b.String()))
		e := editText(r, a, 1+len(a)/12)
		na, ne := string(a), string(e)
		if v, _ := Compare(na, ne, 0.9); v != Near {
			continue
		}
		checked++
		sa, se := MakeSketch(na), MakeSketch(ne)
		_, hi := LengthWindow(len(e), 0.9)
		if est := Estimate(sa.Mins, se.Mins); est < MinOverlap(se.Distinct, len(e), hi, 0.9) {
			t.Fatalf("near pair skipped: estimate %.3f below %.3f\n%q\n%q", est, MinOverlap(se.Distinct, len(e), hi, 0.9), na, ne)
		}
		low := make([]byte, len(sa.Mins))
		for i, m := range sa.Mins {
			low[i] = byte(m)
		}
		if EstimateLow(se.Mins, low) < Estimate(sa.Mins, se.Mins) {
			t.Fatalf("low-byte estimate below the full one")
		}
		if BagCannotReach(sa.Bag[:], se.Bag[:], len(a), len(e), 0.9) {
			t.Fatalf("near pair skipped by the bag bound (distance %d)\n%q\n%q", BagDistance(sa.Bag[:], se.Bag[:]), na, ne)
		}
	}
	if checked < 200 {
		t.Fatalf("only %d near pairs generated", checked)
	}
}

// editText applies n random edits (substitution, deletion, insertion,
// adjacent swap) to a.
func editText(r *rand.Rand, a []rune, n int) []rune {
	e := append([]rune{}, a...)
	for range n {
		p := r.IntN(len(e) - 1)
		switch r.IntN(4) {
		case 0:
			e[p] = rune('a' + r.IntN(26))
		case 1:
			e = append(e[:p], e[p+1:]...)
		case 2:
			e = append(e[:p], append([]rune{rune('a' + r.IntN(26))}, e[p:]...)...)
		default:
			e[p], e[p+1] = e[p+1], e[p]
		}
	}
	return e
}

// proseWords is a vocabulary for generated text.
var proseWords = strings.Fields(`the a of to and in is that for it on with as was be by this are
	from at or an have not but they which one you all were her she there would their we him been has
	when who will more no if out so said what up its about into than them can only other new some could
	time these two may then do first any my now such like our over man me even most made after also did
	many before must through back years where much your way well down should because each just those
	people how too little state good very make world still own see men work long get here between both
	life being under never day same another know while last might us great old year off come since
	against go came right used take three queue writer release durability agent memory palace drawer`)

func prose(r *rand.Rand, chars int) string {
	var b strings.Builder
	for b.Len() < chars {
		b.WriteString(proseWords[r.IntN(len(proseWords))])
		b.WriteByte(' ')
	}
	return Normalize(b.String())
}

func shareBand(a, b Sketch) bool {
	for i := range a.Bands {
		if a.Bands[i] == b.Bands[i] {
			return true
		}
	}
	return false
}

// TestBandKeysRecall checks how often near pairs become candidates, at the
// edge of the threshold (an edit every 12 characters) and with fewer edits,
// and that unrelated texts of the same vocabulary rarely do.
func TestBandKeysRecall(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, c := range []struct {
		every int
		want  float64
	}{{100, 1}, {30, 0.999}, {12, 0.95}} {
		t.Run(fmt.Sprint("one edit in ", c.every), func(t *testing.T) {
			found, pairs := 0, 0
			for range 3000 / raceScale {
				a := []rune(prose(r, 20+r.IntN(1500)))
				e := editText(r, a, 1+len(a)/c.every)
				if v, _ := Compare(string(a), string(e), 0.9); v != Near {
					continue
				}
				pairs++
				if shareBand(MakeSketch(string(a)), MakeSketch(string(e))) {
					found++
				}
			}
			if pairs < 1000/raceScale || float64(found) < c.want*float64(pairs) {
				t.Errorf("an edit every %d characters: %d of %d near pairs found, want %.3f", c.every, found, pairs, c.want)
			}
		})
	}
	short, pairs := 0, 0
	for i := range 3000 {
		a := []rune(prose(r, 60))[:MinNearRunes+i%30]
		e := editText(r, a, 1)
		if v, _ := Compare(string(a), string(e), 0.9); v != Near {
			continue
		}
		pairs++
		if shareBand(MakeSketch(string(a)), MakeSketch(string(e))) {
			short++
		}
	}
	if float64(short) < 0.95*float64(pairs) {
		t.Errorf("short texts with one edit: %d of %d found", short, pairs)
	}
	// Unrelated texts: words of a larger vocabulary, the frequent ones
	// far more often (as in prose).
	syll := strings.Fields("ka re mo ti su na lo pe vi da ro me ni tu sa le po gi ba ze")
	vocab := make([]string, 3000)
	for i := range vocab {
		for range 1 + r.IntN(3) {
			vocab[i] += syll[r.IntN(len(syll))]
		}
	}
	var sk []Sketch
	for range 400 {
		var b strings.Builder
		for b.Len() < 300+r.IntN(700) {
			b.WriteString(vocab[r.IntN(r.IntN(len(vocab))+1)])
			b.WriteByte(' ')
		}
		sk = append(sk, MakeSketch(Normalize(b.String())))
	}
	cands := 0
	for i := range sk {
		for j := i + 1; j < len(sk); j++ {
			if shareBand(sk[i], sk[j]) {
				cands++
			}
		}
	}
	if share := float64(cands) / float64(len(sk)*(len(sk)-1)/2); share > 0.08 { // 0.047 measured
		t.Errorf("unrelated texts of one vocabulary share a band key in %.3f of pairs", share)
	}
}

// TestMinOverlapNeverSkipsALongNearPair checks the skip rule above
// LongText, where similarity is the overlap of three-character runs and the
// sketch estimates the overlap of four-character runs.
func TestMinOverlapNeverSkipsALongNearPair(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	checked := 0
	for range 600 {
		a := []rune(prose(r, LongText+100+r.IntN(4000)))
		e := editText(r, a, 1+r.IntN(len(a)/40))
		sim := TrigramOverlap(a, e)
		if sim < 0.9 {
			continue
		}
		checked++
		sa, se := MakeSketch(string(a)), MakeSketch(string(e))
		_, hi := LengthWindow(len(e), 0.9)
		if est, floor := Estimate(sa.Mins, se.Mins), MinOverlap(se.Distinct, len(e), hi, 0.9); est < floor {
			t.Fatalf("long near pair (overlap %.3f) skipped: estimate %.3f below %.3f", sim, est, floor)
		}
		if !shareBand(sa, se) {
			t.Fatalf("long near pair (overlap %.3f) shares no band key", sim)
		}
	}
	if checked < 100 {
		t.Fatalf("only %d long near pairs generated", checked)
	}
}

// EstimateBytes counts exactly the equal bytes, whatever their values and
// the length.
func TestEstimateBytes(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for range 2000 {
		n := 1 + r.IntN(170)
		a, b := make([]byte, n), make([]byte, n)
		eq := 0
		for i := range a {
			a[i] = byte(r.IntN(256))
			b[i] = byte(r.IntN(256))
			if r.IntN(2) == 0 {
				b[i] = a[i]
			}
			if a[i] == b[i] {
				eq++
			}
		}
		if got := EstimateBytes(a, b); got != float64(eq)/float64(n) {
			t.Fatalf("EstimateBytes = %v, want %d/%d", got, eq, n)
		}
	}
}

// TestGramSetNeverRulesOutANearPair checks the q-gram bound on near pairs
// at the edge of the threshold (swaps, the costliest edit for runs, among
// them) and that it rules out most unrelated texts.
func TestGramSetNeverRulesOutANearPair(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	checked := 0
	for i := range 6000 / raceScale {
		a := []rune(prose(r, MinNearRunes+r.IntN(LongText)))
		if len(a) > LongText {
			a = a[:LongText]
		}
		var e []rune
		if i%2 == 0 {
			e = editText(r, a, 1+len(a)/(9+r.IntN(8)))
		} else {
			// Swaps only, spread out.
			e = append([]rune{}, a...)
			for p := r.IntN(5); p+1 < len(e) && float64(p) < float64(len(e))*0.98; p += 10 + r.IntN(3) {
				e[p], e[p+1] = e[p+1], e[p]
			}
		}
		if v, _ := Compare(string(a), string(e), 0.9); v != Near {
			continue
		}
		checked++
		if MakeGramSet(string(a)).CannotReach(string(e), 0.9) || MakeGramSet(string(e)).CannotReach(string(a), 0.9) {
			t.Fatalf("near pair ruled out (similarity %.3f)\n%q\n%q", Similarity(string(a), string(e), 0), string(a), string(e))
		}
	}
	if checked < 1000/raceScale {
		t.Fatalf("only %d near pairs generated", checked)
	}
	// Unrelated texts of natural word and letter statistics.
	mt := markov.NewText()
	para := func() string {
		var b strings.Builder
		for range 1 + r.IntN(8) {
			b.WriteString(mt.Sentence(r))
			b.WriteByte('\n')
		}
		return Normalize(b.String())
	}
	ruled, pairs := 0, 0
	for range 2000 / raceScale {
		a, b := para(), para()
		if lo, hi := LengthWindow(len(a), 0.9); len(b) < lo || len(b) > hi {
			continue
		}
		pairs++
		if MakeGramSet(a).CannotReach(b, 0.9) {
			ruled++
		}
	}
	if pairs < 100/raceScale || ruled < pairs*9/10 {
		t.Fatalf("only %d of %d unrelated pairs ruled out", ruled, pairs)
	}
}

// TestSketchDistinctCountsDistinctRuns pins Sketch.Distinct to the number
// of distinct run hashes of a text up to LongText runes, 0 above (what the
// near index's overlap floor divides by), however they are counted.
func TestSketchDistinctCountsDistinctRuns(t *testing.T) {
	texts := []string{"abcd", "abcdabcd", strings.Repeat("ab", 100), strings.Repeat("the cat sat ", 30),
		"the release goes out on friday morning", strings.Repeat("ééé ", 50), strings.Repeat("x", LongText)}
	for i := range 200 {
		var b strings.Builder
		for j := range 20 + i*7 {
			b.WriteString([]string{"alpha ", "beta ", "gamma ", "delta ", "ö ", "a "}[(i*31+j*j)%6])
		}
		texts = append(texts, b.String())
	}
	for _, text := range texts {
		norm := Normalize(text)
		if len([]rune(norm)) < MinNearRunes {
			continue
		}
		want := map[uint64]bool{}
		if len([]rune(norm)) <= LongText {
			eachRun(norm, func(h uint64) { want[h] = true })
		}
		if got := MakeSketch(norm).Distinct; got != len(want) {
			t.Fatalf("Distinct %d, want %d distinct runs of %q", got, len(want), norm)
		}
	}
}

// BenchmarkSketch is the signature of a drawer of two sentences (the
// import computes one per drawer, off the writer).
func BenchmarkSketch(b *testing.B) {
	norm := Normalize("The deploy pipeline now waits for the canary to report healthy before it promotes the release. " +
		"We agreed to keep the old queue running for a week while the consumers move over to the new topic.")
	for b.Loop() {
		_ = MakeSketch(norm)
	}
}
