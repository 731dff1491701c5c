package search

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

// turnAt is the index of the turn holding byte offset off (-1: none).
func turnAt(turns []sources.TurnSpan, off int) int {
	for i, t := range turns {
		if off >= t.Start && off < t.End {
			return i
		}
	}
	return -1
}

// apiTurn is the wire form of a turn (nil for the text before the first
// header, whose speaker this drawer does not say).
func apiTurn(t sources.TurnSpan) *api.HitTurn {
	if t.Role == "" {
		return nil
	}
	out := &api.HitTurn{Role: t.Role, SubAgent: t.Sub}
	if !t.At.IsZero() {
		out.At = t.At.UTC().Format(time.RFC3339)
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
			if m.start < t.Start || m.start >= t.End {
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
			if m.start >= t.Start && m.start < t.End {
				inner.matches = append(inner.matches, m)
			}
		}
		s, e = inner.span(limit)
	} else if ps.sentEnd > ps.sentStart {
		s, e = ps.sentStart, ps.sentEnd
	} else {
		s, e = t.Start, t.Start
	}
	if s-t.Start <= limit/4 && e-t.Start <= limit {
		s = t.Start
	}
	end := t.End
	if i+1 < len(ps.turns) {
		end = ps.turns[i+1].End
	}
	e = max(e, min(end, s+limit))
	return s, e
}
