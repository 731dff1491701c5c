package actors

import (
	"time"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/sources"
)

// A transcript drawer (source.kind transcript) holds whole turns of a
// conversation, each starting with the header line sources.TurnHeader
// wrote ("[user · 2026-11-25 10:03:12 UTC]") at the content's start or
// after a blank line. A search hit from one names the turn that matched
// (who said it and when), and its clipped window keeps the turn after the
// matching one in view: the question's words match one turn, its answer
// is the next.

// turnSpan is one turn of a transcript drawer's content: [start, end),
// its header line included; role is "" for the text before the first
// header (a turn begun in the previous chunk).
type turnSpan struct {
	start, end int
	role       string
	sub        bool
	at         time.Time
}

// transcriptTurns splits a transcript drawer's content into its turns (nil
// when no header line is found): sources.Turns.
func transcriptTurns(content string) []turnSpan {
	ts := sources.Turns(content)
	if ts == nil {
		return nil
	}
	out := make([]turnSpan, len(ts))
	for i, t := range ts {
		out[i] = turnSpan{start: t.Start, end: t.End, role: t.Role, sub: t.Sub, at: t.At}
	}
	return out
}

// turnAt is the index of the turn holding byte offset off (-1: none).
func turnAt(turns []turnSpan, off int) int {
	for i, t := range turns {
		if off >= t.start && off < t.end {
			return i
		}
	}
	return -1
}

// apiTurn is the wire form of a turn (nil for the text before the first
// header, whose speaker this drawer does not say).
func apiTurn(t turnSpan) *api.HitTurn {
	if t.role == "" {
		return nil
	}
	out := &api.HitTurn{Role: t.role, SubAgent: t.sub}
	if !t.at.IsZero() {
		out.At = t.at.UTC().Format(time.RFC3339)
	}
	return out
}

// bestTurn is the index of the turn whose text holds the best-weighed
// query words (each distinct word its weight once, a repeat a quarter, as
// a passage weighs them); without a matching word, the turn of the
// sentence closest to the query, else the first turn (-1: no turns).
func (ps *Passage) bestTurn() int {
	if len(ps.turns) == 0 {
		return -1
	}
	if len(ps.matches) == 0 {
		if ps.sentEnd > ps.sentStart {
			return max(0, turnAt(ps.turns, ps.sentStart))
		}
		return 0
	}
	best, bestScore := -1, -1.0
	seen := map[int]int{}
	for i, t := range ps.turns {
		clear(seen)
		score := 0.0
		for _, m := range ps.matches {
			if m.start < t.start || m.start >= t.end {
				continue
			}
			switch n := seen[m.order]; {
			case n == 0:
				score += m.weight
			case n < 4:
				score += m.weight / 4
			}
			seen[m.order]++
		}
		if score > bestScore {
			best, bestScore = i, score
		}
	}
	return best
}

// Turn is the turn of a transcript hit that matched its query: who said
// it and when (nil for a drawer of another kind, or a match in text
// whose turn began in the previous chunk).
func (ps *Passage) Turn() *api.HitTurn {
	if i := ps.bestTurn(); i >= 0 {
		return apiTurn(ps.turns[i])
	}
	return nil
}

// turnSpanFor narrows and widens a transcript passage's span for a window
// of limit bytes: the best run of query words within the best turn, from
// that turn's header when it is near (within a quarter of the window),
// through the turn after it (the reply) as far as the window reaches.
func (ps *Passage) turnSpanFor(limit int) (int, int) {
	i := ps.bestTurn()
	t := ps.turns[i]
	var s, e int
	if len(ps.matches) > 0 {
		inner := &Passage{content: ps.content}
		for _, m := range ps.matches {
			if m.start >= t.start && m.start < t.end {
				inner.matches = append(inner.matches, m)
			}
		}
		s, e = inner.span(limit)
	} else if ps.sentEnd > ps.sentStart {
		s, e = ps.sentStart, ps.sentEnd
	} else {
		s, e = t.start, t.start
	}
	if s-t.start <= limit/4 && e-t.start <= limit {
		s = t.start
	}
	end := t.end
	if i+1 < len(ps.turns) {
		end = ps.turns[i+1].end
	}
	e = max(e, min(end, s+limit))
	return s, e
}
