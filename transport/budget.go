package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/search"
	"github.com/loci-dev/loci/store"
)

// Byte budgets of a search answer (max_bytes, max_hit_bytes).
const (
	// MCPSearchBytes is max_bytes when an MCP search does not give it.
	MCPSearchBytes = 8192
	// MinSearchBytes and MaxSearchBytes bound max_bytes.
	MinSearchBytes = 512
	MaxSearchBytes = 16 << 20
	// MinHitBytes is the least max_hit_bytes.
	MinHitBytes = 64
	// minWindow is the least a hit's content is clipped to before the
	// lowest ranked hits are left out instead.
	minWindow = 96
)

// budget is what a search answer may spend: answer bytes for the whole
// answer as sent, hit bytes for one hit's content (0: no bound).
type budget struct{ answer, hit int }

// searchBudget checks max_bytes and max_hit_bytes; zero means what
// zeroMeans says (for the refusal's text).
func searchBudget(maxBytes, maxHitBytes int, zeroMeans string) (budget, error) {
	if maxBytes != 0 && (maxBytes < MinSearchBytes || maxBytes > MaxSearchBytes) {
		return budget{}, fault.Invalid("max_bytes", fmt.Sprintf("%d is outside %d to %d (0: %s)", maxBytes, MinSearchBytes, MaxSearchBytes, zeroMeans))
	}
	if maxHitBytes != 0 && (maxHitBytes < MinHitBytes || maxHitBytes > MaxSearchBytes) {
		return budget{}, fault.Invalid("max_hit_bytes", fmt.Sprintf("%d is outside %d to %d (0: no bound)", maxHitBytes, MinHitBytes, MaxSearchBytes))
	}
	return budget{answer: maxBytes, hit: maxHitBytes}, nil
}

// window is the part of a hit's content an answer sends: [start, end),
// cut when that is not all of it.
type window struct {
	start, end int
	cut        bool
}

// fitAnswer renders a search answer within b. render makes the bytes sent
// for the first len(wins) hits of res, each with its window. Each hit is
// first clipped to b.hit; then, while the answer is over b.answer, the
// longest windows are shortened to one level (water-filling: the short
// hits stay whole, the long ones share what is left alike), and when
// that level would fall under minWindow the lowest ranked hit is left
// out and the others are fitted again.
func fitAnswer(ctx context.Context, res *search.SearchResult, b budget, escapeHTML bool, render func(wins []window) ([]byte, error)) ([]byte, error) {
	hits := res.Hits
	passages := make([]*search.Passage, len(hits))
	clip := func(i, limit int) window {
		c := hits[i].Content
		if limit >= len(c) {
			return window{0, len(c), false}
		}
		if passages[i] == nil {
			passages[i] = res.Passage(ctx, &hits[i])
		}
		s, e := passages[i].Window(limit)
		return window{s, e, true}
	}
	first := func(n int) []window {
		wins := make([]window, n)
		for i := range wins {
			limit := len(hits[i].Content)
			if b.hit > 0 {
				limit = min(limit, b.hit)
			}
			if b.answer > 0 {
				limit = min(limit, b.answer)
			}
			wins[i] = clip(i, limit)
		}
		return wins
	}
	wins := first(len(hits))
	out, err := render(wins)
	if err != nil || b.answer == 0 || len(out) <= b.answer {
		return out, err
	}
	for n := len(hits); n > 0; {
		for range 16 {
			enc := make([]int, len(wins))
			total := 0
			for i, w := range wins {
				enc[i] = jsonStringLen(hits[i].Content[w.start:w.end], escapeHTML)
				total += enc[i]
			}
			level := waterLevel(enc, total-(len(out)-b.answer))
			if level < minWindow {
				break
			}
			changed := false
			for i, w := range wins {
				if enc[i] <= level {
					continue
				}
				raw := w.end - w.start
				wins[i] = clip(i, min(raw-1, level*raw/enc[i]))
				changed = true
			}
			if out, err = render(wins); err != nil || len(out) <= b.answer {
				return out, err
			}
			if !changed {
				break
			}
		}
		n--
		wins = first(n)
		if out, err = render(wins); err != nil || len(out) <= b.answer {
			return out, err
		}
	}
	return out, nil
}

// waterLevel is the largest level L with the sizes, each capped at L,
// summing to at most target (0 when even nothing is over).
func waterLevel(sizes []int, target int) int {
	if target <= 0 {
		return 0
	}
	s := slices.Clone(sizes)
	slices.Sort(s)
	below := 0 // the sum of the sizes under the level
	for i, v := range s {
		rest := len(s) - i
		if below+v*rest > target {
			return (target - below) / rest
		}
		below += v
	}
	return s[len(s)-1]
}

// jsonStringLen is the length of s as encoding/json writes it, quotes
// included.
func jsonStringLen(s string, escapeHTML bool) int {
	n := 2
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f':
				n += 2
			case c < 0x20 || (escapeHTML && (c == '<' || c == '>' || c == '&')):
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		r, w := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && w == 1 || r == '\u2028' || r == '\u2029' {
			n += 6
		} else {
			n += w
		}
		i += w
	}
	return n
}

// clipOf is the Clip a window reports.
func clipOf(full string, w window) api.Clip {
	if !w.cut {
		return api.Clip{}
	}
	return api.Clip{Truncated: true, FullBytes: len(full), Window: &[2]int{w.start, w.end}}
}

// restSearch renders a REST search answer: verbatim without a budget,
// else fitted to it.
func restSearch(ctx context.Context, res *search.SearchResult, b budget) ([]byte, error) {
	render := func(wins []window) ([]byte, error) {
		out := apiSearch(res)
		out.Omitted = len(out.Hits) - len(wins)
		out.Hits = out.Hits[:len(wins)]
		for i, w := range wins {
			h := &out.Hits[i]
			h.Clip = clipOf(h.Content, w)
			h.Content = h.Content[w.start:w.end]
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		err := enc.Encode(out)
		return buf.Bytes(), err
	}
	return fitAnswer(ctx, res, b, true, render)
}

// briefSearch renders the MCP search answer: brief hits, compact JSON,
// fitted to the budget.
func briefSearch(ctx context.Context, res *search.SearchResult, b budget) ([]byte, error) {
	render := func(wins []window) ([]byte, error) {
		out := api.BriefResult{Ranking: res.Ranking, Hits: make([]api.BriefHit, len(wins)), Omitted: len(res.Hits) - len(wins), Warning: res.Warning}
		for i, w := range wins {
			h := &res.Hits[i]
			bh := api.BriefHit{ID: h.ID, Wing: h.WingName, Room: h.RoomName, Name: h.Name, Document: h.Document, Chunk: h.Chunk,
				ValidFrom: h.ValidFrom.UTC().Format(time.RFC3339), Score: roundScore(h.Score), Tags: h.Tags, Via: h.Via, Turn: h.Turn,
				Content: h.Content[w.start:w.end], Clip: clipOf(h.Content, w)}
			if h.ValidTo != nil {
				bh.ValidTo = h.ValidTo.UTC().Format(time.RFC3339)
			}
			out.Hits[i] = bh
		}
		return compactJSON(out)
	}
	return fitAnswer(ctx, res, b, false, render)
}

// roundScore keeps a score's first four significant digits: scores only
// order the hits of one answer.
func roundScore(x float64) float64 {
	r, err := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 4, 64), 64)
	if err != nil {
		return x
	}
	return r
}

// compactJSON is v as MCP tools answer it: compact, with <, > and &
// written as themselves (they are text for an agent, not HTML).
func compactJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// briefHistory is loci_history's answer: the versions once each, with
// what an agent uses (names over ids, instants to the second); REST's
// GET /api/drawers/{id}/history keeps the whole records.
func (s *Server) briefHistory(ctx context.Context, d *store.Drawer, versions []store.Drawer) (api.BriefHistory, error) {
	out := api.BriefHistory{Versions: make([]api.BriefVersion, len(versions))}
	if s.Search != nil && d != nil {
		w, r, err := s.Search.PlaceNames(ctx, d.WingID, d.RoomID)
		if err != nil {
			return out, err
		}
		out.Wing, out.Room = w, r
	}
	for i, v := range versions {
		bv := api.BriefVersion{ID: v.ID, Name: v.Name, ValidFrom: v.ValidFrom.UTC().Format(time.RFC3339),
			SupersededBy: v.SupersededBy, Tags: v.Tags, Content: v.Content}
		if v.ValidTo != nil {
			bv.ValidTo = v.ValidTo.UTC().Format(time.RFC3339)
		}
		out.Versions[i] = bv
	}
	return out, nil
}
