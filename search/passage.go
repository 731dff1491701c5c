package search

import (
	"context"
	"math"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/loci-dev/loci/index/embed"
	"github.com/loci-dev/loci/index/lexical"
	"github.com/loci-dev/loci/sources"
)

// A hit clipped to a budget keeps a verbatim window of its content around
// the passage that matched: the densest run of the query's words (as the
// lexical index analyses them, each weighed by its rarity in the palace,
// words in the query's order side by side weighing more), or, when the
// drawer holds none of them (a semantic hit), its sentence closest to
// the query by the search's own built-in embedding. Without either, the
// window is the content's start.

// maxMatches bounds the query-word occurrences a passage is chosen among
// (the first ones of a drawer).
const maxMatches = 4096

// maxSentences bounds the sentences of a drawer scored semantically (the
// first ones).
const maxSentences = 512

// passages finds passages for one search: its query's terms and weights,
// and the means to score sentences when no term matches.
type passages struct {
	query string
	// terms are the query's terms in query order, weights their IDF
	// (read once, on the first passage needed).
	terms   []string
	once    sync.Once
	weights map[string]float64
	order   map[string]int
	df      func(words []string) (uint64, []uint64)
	// embed and qvec score sentences (nil: no semantic scoring).
	embed func(ctx context.Context, texts []string) ([][]float32, error)
	qvec  []float32
	mu    sync.Mutex
	byHit map[string]*Passage
}

// Passage is where a hit matched its search: a byte span of its content
// that every window is built around.
type Passage struct {
	content string
	// matches are the query-word occurrences, in text order.
	matches []match
	// sentence is the best sentence when no word matched ([0, 0): none).
	sentStart, sentEnd int
	// turns are a transcript drawer's turns (nil for other drawers).
	turns []sources.TurnSpan
}

type match struct {
	start, end, pos int
	weight          float64
	order           int
}

// newPassages prepares the passages of a search for query; df gives the
// palace's document frequencies (nil: every word alike), embed and qvec
// the semantic fallback (nil: none).
func newPassages(query string, df func([]string) (uint64, []uint64),
	embed func(context.Context, []string) ([][]float32, error), qvec []float32) *passages {
	p := &passages{query: query, df: df, embed: embed, qvec: qvec, byHit: map[string]*Passage{}}
	seen := map[string]bool{}
	for _, t := range lexical.Tokens(query) {
		if !seen[t.Term] {
			seen[t.Term] = true
			p.terms = append(p.terms, t.Term)
		}
	}
	return p
}

// weigh reads each query term's weight: its IDF, as BM25 has it.
func (p *passages) weigh() {
	p.weights, p.order = map[string]float64{}, map[string]int{}
	toks := lexical.Tokens(p.query)
	var words []string
	var terms []string
	for _, t := range toks {
		if _, ok := p.order[t.Term]; !ok {
			p.order[t.Term] = len(p.order)
			words = append(words, p.query[t.Start:t.End])
			terms = append(terms, t.Term)
		}
	}
	var n uint64
	var df []uint64
	if p.df != nil {
		n, df = p.df(words)
	}
	for i, t := range terms {
		w := 1.0
		if i < len(df) && n > 0 {
			d := float64(min(df[i], n))
			w = math.Log(1 + (float64(n)-d+0.5)/(d+0.5))
		}
		p.weights[t] = max(w, 0.01)
	}
}

// of is the passage of a hit's content (id names it; prepared once);
// transcript says the content is a transcript drawer's turns.
func (p *passages) of(ctx context.Context, id, content string, transcript bool) *Passage {
	p.mu.Lock()
	if ps, ok := p.byHit[id]; ok {
		p.mu.Unlock()
		return ps
	}
	p.mu.Unlock()
	p.once.Do(p.weigh)
	ps := &Passage{content: content}
	if transcript {
		ps.turns = sources.SplitTurns(content)
	}
	for _, t := range lexical.Matching(content, p.terms) {
		ps.matches = append(ps.matches, match{start: t.Start, end: t.End, pos: t.Position, weight: p.weights[t.Term], order: p.order[t.Term]})
		if len(ps.matches) == maxMatches {
			break
		}
	}
	if len(ps.matches) == 0 {
		ps.sentStart, ps.sentEnd = p.bestSentence(ctx, content)
	}
	p.mu.Lock()
	p.byHit[id] = ps
	p.mu.Unlock()
	return ps
}

// bestSentence is the span of content's sentence closest to the query by
// the search's embedding ([0, 0) when it cannot be scored).
func (p *passages) bestSentence(ctx context.Context, content string) (int, int) {
	if p.embed == nil || len(p.qvec) == 0 {
		return 0, 0
	}
	spans := sentences(content)
	if len(spans) < 2 {
		return 0, 0
	}
	if len(spans) > maxSentences {
		spans = spans[:maxSentences]
	}
	texts := make([]string, len(spans))
	for i, s := range spans {
		texts[i] = content[s[0]:s[1]]
	}
	vs, err := p.embed(ctx, texts)
	if err != nil || len(vs) != len(spans) {
		return 0, 0
	}
	best, bestScore := -1, math.Inf(-1)
	for i, v := range vs {
		if embed.NoInformation(v) {
			continue
		}
		if s := cosine(p.qvec, v); s > bestScore {
			best, bestScore = i, s
		}
	}
	if best < 0 {
		return 0, 0
	}
	return spans[best][0], spans[best][1]
}

func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range min(len(a), len(b)) {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}

// sentences splits text at line breaks and after sentence ends ('.', '?'
// or '!' before a space), trimmed, blank ones left out.
func sentences(text string) [][2]int {
	var out [][2]int
	add := func(s, e int) {
		for s < e && isSpace(text[s]) {
			s++
		}
		for e > s && isSpace(text[e-1]) {
			e--
		}
		if e > s {
			out = append(out, [2]int{s, e})
		}
	}
	start := 0
	for i := 0; i < len(text); i++ {
		switch c := text[i]; {
		case c == '\n':
			add(start, i)
			start = i + 1
		case (c == '.' || c == '?' || c == '!') && i+1 < len(text) && (text[i+1] == ' ' || text[i+1] == '\t'):
			add(start, i+1)
			start = i + 1
		}
	}
	add(start, len(text))
	return out
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// Window is the byte window [start, end) of at most limit bytes of the
// content, around the passage: the best-weighed run of query words that
// fits (each distinct word counts its weight once, a repeat a quarter,
// two query words side by side in the query's order half their weights
// more), else the best sentence, else the start. Its ends fall on line
// starts and ends where they can, else between words, always between
// runes. The whole content when it fits.
func (ps *Passage) Window(limit int) (start, end int) {
	c := ps.content
	if limit >= len(c) {
		return 0, len(c)
	}
	if limit <= 0 {
		return 0, 0
	}
	var s, e int
	if len(ps.turns) > 0 {
		s, e = ps.turnSpanFor(limit)
	} else {
		s, e = ps.span(limit)
	}
	return frame(c, s, min(e, len(c)), limit)
}

// span is the passage's span for a window of limit bytes.
func (ps *Passage) span(limit int) (int, int) {
	m := ps.matches
	if len(m) == 0 {
		s, e := ps.sentStart, ps.sentEnd
		if e-s > limit {
			e = s + limit
		}
		return s, e
	}
	bestI, bestJ, best := 0, 0, -1.0
	terms := 0
	for _, x := range m {
		terms = max(terms, x.order+1)
	}
	seen := make([]int, terms) // occurrences by query term
	for i := range m {
		clear(seen)
		score := 0.0
		for j := i; j < len(m) && m[j].end-m[i].start <= limit; j++ {
			if seen[m[j].order] == 0 {
				score += m[j].weight
			} else if seen[m[j].order] < 4 {
				score += m[j].weight / 4
			}
			seen[m[j].order]++
			if j > i && m[j].pos == m[j-1].pos+1 && m[j].order == m[j-1].order+1 {
				score += (m[j].weight + m[j-1].weight) / 2
			}
			if score > best {
				bestI, bestJ, best = i, j, score
			}
		}
	}
	if best < 0 { // a single word longer than the window
		return m[0].start, m[0].start + limit
	}
	return m[bestI].start, m[bestJ].end
}

// frame widens the span [s, e) to a window of at most limit bytes of c:
// the room left split before and after, then the start moved forward to
// a line start (else a word start) and the end back to a line end (else
// a word end) where that keeps the span, and both onto rune boundaries.
func frame(c string, s, e, limit int) (int, int) {
	if e-s > limit {
		e = s + limit
	}
	room := limit - (e - s)
	start := max(0, s-room/2)
	end := min(len(c), start+limit)
	if end-start < limit { // the end reached the content's end
		start = max(0, end-limit)
	}
	if start > 0 {
		if i := strings.IndexByte(c[start:s], '\n'); i >= 0 {
			start += i + 1
		} else if i := strings.IndexAny(c[start:s], " \t"); i >= 0 {
			start += i + 1
		}
		end = min(len(c), start+limit)
	}
	if end < len(c) {
		if i := strings.LastIndexByte(c[e:end], '\n'); i >= 0 {
			end = e + i
		} else if i := strings.LastIndexAny(c[e:end], " \t"); i >= 0 {
			end = e + i
		}
	}
	for start < end && !utf8.RuneStart(c[start]) {
		start++
	}
	for end > start && end < len(c) && !utf8.RuneStart(c[end]) {
		end--
	}
	return start, end
}
