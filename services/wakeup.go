package services

import (
	"context"
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/sources"
	"github.com/loci-dev/loci/store"
)

// WakeUp is session-start context for an agent.
type WakeUp struct {
	AgentIdentity string
	Wing          string
	Diary         *store.Drawer
	Items         []WakeUpItem
	// LastSession is the closing turns of the wing's latest mined
	// session, when no checkpoint is newer (nil otherwise).
	LastSession *api.WakeUpSession
	Bytes       int
	Skipped     int
}

// WakeUpItem is a checkpoint drawer of a wake-up: the agent's own, or one
// no agent signed (Unattributed), offered after the agent's own.
type WakeUpItem struct {
	store.Drawer
	Unattributed bool
}

// WakeUp defaults (spec svc_wake_up).
const (
	WakeUpMaxItems = 10
	WakeUpMaxBytes = 8192
)

// wakeUpScan bounds the drawers read from one checkpoint or diary room
// when looking for one agent's: a room written mostly by other agents
// is not read to its end at every session start.
const wakeUpScan = 5000

// WakeUp returns the agent's own latest diary entry (in wing when given,
// else its newest in any wing) and up to maxItems recent checkpoint
// drawers the agent signed (source.agent), then unattributed ones, marked,
// from wing when given, else every wing; within maxBytes of content by
// whole drawers: an item too large is skipped and later, smaller ones are
// still tried. Another agent's checkpoints are never returned. With a
// wing, the closing turns of its latest mined session come after the
// diary, as one item, when none of those checkpoints is newer than the
// session's end (lastSession).
func (p *Palace) WakeUp(ctx context.Context, agent, wing string, maxItems, maxBytes int) (*WakeUp, error) {
	if err := CheckAgent(agent); err != nil {
		return nil, err
	}
	if maxItems < 0 {
		return nil, fault.Invalid("max_items", "must not be negative")
	}
	if maxBytes < 0 {
		return nil, fault.Invalid("max_bytes", "must not be negative")
	}
	if maxItems == 0 {
		maxItems = WakeUpMaxItems
	}
	if maxBytes == 0 {
		maxBytes = WakeUpMaxBytes
	}
	out := &WakeUp{AgentIdentity: agent, Wing: wing, Items: []WakeUpItem{}}
	var own, unsigned []store.Drawer
	var session []sessionDrawer
	err := p.view(ctx, func(r store.Reader) error {
		var wings []store.Wing
		if wing != "" {
			w, err := store.FindWing(r, wing)
			if err != nil {
				return err
			}
			wings = []store.Wing{*w}
		} else {
			var err error
			if wings, err = r.Wings(); err != nil {
				return err
			}
		}
		if wing != "" {
			var err error
			if session, err = latestSession(r, wings[0].ID); err != nil {
				return err
			}
		}
		for _, w := range wings {
			d, err := latestDiary(r, w.ID, agent)
			if err != nil {
				return err
			}
			if d != nil && (out.Diary == nil || newer(d, out.Diary)) {
				out.Diary = d
			}
			rm, err := r.RoomByName(w.ID, store.CheckpointRoom)
			if err != nil {
				return err
			}
			if rm == nil {
				continue
			}
			// Only as many per room as could be returned (with room for
			// skipped large ones).
			mine, others, seen := 0, 0, 0
			err = r.Drawers(rm.ID, true, func(d *store.Drawer) bool {
				seen++
				switch d.Source.Agent {
				case agent:
					own = append(own, *d)
					mine++
				case "":
					if others < 4*maxItems {
						unsigned = append(unsigned, *d)
						others++
					}
				}
				return mine < 4*maxItems && seen < wakeUpScan
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if out.Diary != nil {
		if len(out.Diary.Content) <= maxBytes {
			out.Bytes += len(out.Diary.Content)
		} else {
			out.Diary = nil
		}
	}
	if len(session) > 0 && !checkpointAfter(own, unsigned, session[0].last) && maxItems > 0 {
		budget := min(maxBytes-out.Bytes, max(maxBytes/2, closingMinBytes))
		if ls := closingTurns(session, budget); ls != nil {
			out.LastSession = ls
			out.Bytes += len(ls.Content)
			maxItems--
		}
	}
	for _, group := range []struct {
		drawers      []store.Drawer
		unattributed bool
	}{{own, false}, {unsigned, true}} {
		sort.SliceStable(group.drawers, func(i, j int) bool { return newer(&group.drawers[i], &group.drawers[j]) })
		for _, d := range group.drawers {
			if len(out.Items) >= maxItems {
				break
			}
			if out.Bytes+len(d.Content) > maxBytes {
				out.Skipped++
				continue
			}
			out.Items = append(out.Items, WakeUpItem{Drawer: d, Unattributed: group.unattributed})
			out.Bytes += len(d.Content)
		}
	}
	return out, nil
}

// latestDiary is the agent's newest current diary entry in a wing (nil:
// none among the newest wakeUpScan entries of its diary room).
func latestDiary(r store.Reader, wingID, agent string) (*store.Drawer, error) {
	rm, err := r.RoomByName(wingID, DiaryRoom)
	if err != nil || rm == nil {
		return nil, err
	}
	var found *store.Drawer
	seen := 0
	err = r.Drawers(rm.ID, true, func(d *store.Drawer) bool {
		seen++
		if d.Diary && d.Source.Agent == agent {
			c := *d
			found = &c
			return false
		}
		return seen < wakeUpScan
	})
	return found, err
}

// newer orders drawers newest first, ties by id.
func newer(a, b *store.Drawer) bool {
	if !a.CreatedAt.Equal(b.CreatedAt) {
		return a.CreatedAt.After(b.CreatedAt)
	}
	return a.ID < b.ID
}

// The closing turns of the last session (wake-up with a wing).
const (
	// closingTurnsMax is how many turns at most.
	closingTurnsMax = 6
	// closingMinBytes is their least budget (when max_bytes leaves it):
	// half of max_bytes, but not under this.
	closingMinBytes = 1024
	// sessionScan bounds the drawers read from each room of the wing
	// (newest first) when looking for transcripts: the latest session's
	// chunks are among a room's newest, filed by the latest mine.
	sessionScan = 64
	// sessionProbe is how many of a room's newest drawers are read
	// before a room with no transcript among them is left.
	sessionProbe = 8
)

// sessionDrawer is a transcript drawer with what its origin says.
type sessionDrawer struct {
	d     store.Drawer
	last  time.Time
	chunk int
	o     transcriptOrigin
	// sub: every turn in it is a sub-agent's (a session a sub-agent ran
	// for the main one, which is the one to wake up to).
	sub bool
}

// transcriptOrigin is what wake-up reads of a transcript drawer's origin
// (sources.TranscriptDocument writes it, the miner adds the chunk).
type transcriptOrigin struct {
	SessionID string `json:"session_id"`
	Agent     string `json:"agent"`
	Project   string `json:"project"`
	Title     string `json:"title"`
	Last      string `json:"last"`
	Chunk     int    `json:"chunk"`
}

// latestSession reads the drawers of the wing's latest session among the
// newest sessionScan current drawers of each of its rooms (its
// checkpoints and diary left out): the session whose last turn is latest
// (a drawer's filing time where the origin has none), its drawers last
// chunk first. Nil when the wing holds no transcript there.
func latestSession(r store.Reader, wingID string) ([]sessionDrawer, error) {
	rooms, err := r.Rooms(wingID)
	if err != nil {
		return nil, err
	}
	var all []sessionDrawer
	for _, rm := range rooms {
		if rm.Name == store.CheckpointRoom || rm.Name == DiaryRoom {
			continue
		}
		seen, found := 0, 0
		err := r.Drawers(rm.ID, true, func(d *store.Drawer) bool {
			seen++
			if d.Source.Kind == store.KindTranscript {
				all = append(all, readSessionDrawer(d))
				found++
			}
			// A room whose newest drawers are no transcripts (files,
			// notes) is not read further: sessions are filed in rooms of
			// their own (one per agent).
			return seen < sessionScan && (found > 0 || seen < sessionProbe)
		})
		if err != nil {
			return nil, err
		}
	}
	if len(all) == 0 {
		return nil, nil
	}
	// A sub-agent's session is the main session's errand: the latest main
	// session is the one, while there is one.
	if main := slices.DeleteFunc(slices.Clone(all), func(sd sessionDrawer) bool { return sd.sub }); len(main) > 0 {
		all = main
	}
	latest := slices.MaxFunc(all, func(a, b sessionDrawer) int {
		if c := a.last.Compare(b.last); c != 0 {
			return c
		}
		return a.d.CreatedAt.Compare(b.d.CreatedAt)
	})
	var out []sessionDrawer
	for _, sd := range all {
		if sd.d.Source.URI == latest.d.Source.URI && sd.o.SessionID == latest.o.SessionID {
			sd.last = latest.last
			out = append(out, sd)
		}
	}
	slices.SortFunc(out, func(a, b sessionDrawer) int {
		if a.chunk != b.chunk {
			return b.chunk - a.chunk
		}
		return b.d.CreatedAt.Compare(a.d.CreatedAt)
	})
	return out, nil
}

// readSessionDrawer reads what a transcript drawer's origin says; a
// drawer filed without one (over REST) ends at its last turn's header
// time, else when it was filed, and its agent is source.agent.
func readSessionDrawer(d *store.Drawer) sessionDrawer {
	sd := sessionDrawer{d: *d, last: d.CreatedAt}
	if len(d.Source.Origin) > 0 && json.Unmarshal(d.Source.Origin, &sd.o) == nil {
		sd.chunk = sd.o.Chunk
	}
	turns := sources.SplitTurns(d.Content)
	if t, err := time.Parse(time.RFC3339, sd.o.Last); err == nil {
		sd.last = t
	} else if len(turns) > 0 && !turns[len(turns)-1].At.IsZero() {
		sd.last = turns[len(turns)-1].At
	}
	sd.sub = len(turns) > 0 && !slices.ContainsFunc(turns, func(t sources.TurnSpan) bool { return !t.Sub })
	if sd.o.Agent == "" {
		sd.o.Agent = d.Source.Agent
	}
	return sd
}

// checkpointAfter reports a checkpoint among the agent's own and the
// unattributed ones filed after t.
func checkpointAfter(own, unsigned []store.Drawer, t time.Time) bool {
	for _, g := range [][]store.Drawer{own, unsigned} {
		for _, d := range g {
			if d.CreatedAt.After(t) {
				return true
			}
		}
	}
	return false
}

// closingTurns takes the session's last turns, verbatim and whole, newest
// backwards from its last chunks, at most closingTurnsMax within budget
// bytes; when even its last turn does not fit, that turn's end (its header
// kept, "…" where its start was). Nil when nothing fits.
func closingTurns(session []sessionDrawer, budget int) *api.WakeUpSession {
	top := session[0]
	out := &api.WakeUpSession{Agent: top.o.Agent, SessionID: top.o.SessionID, Title: top.o.Title, Project: top.o.Project,
		Ended: top.last.UTC(), Drawers: []string{}}
	var parts []string // newest first
	size := 0
	full := false
	for _, sd := range session {
		turns := sources.SplitTurns(sd.d.Content)
		used := false
		for i := len(turns) - 1; i >= 0 && !full; i-- {
			t := turns[i]
			if t.Role == "" { // begun in the chunk before: read whole there
				continue
			}
			text := strings.TrimRight(sd.d.Content[t.Start:t.End], "\n") + "\n"
			if size+len(text) > budget {
				if len(parts) == 0 {
					text = clipTurnStart(text, budget)
					out.Clipped = text != ""
				} else {
					text = ""
				}
				full = true
				if text == "" {
					break
				}
			}
			parts = append(parts, text)
			size += len(text)
			used = true
			full = full || len(parts) == closingTurnsMax
		}
		if used {
			out.Drawers = append(out.Drawers, sd.d.ID)
		}
		if full {
			break
		}
	}
	if len(parts) == 0 {
		return nil
	}
	slices.Reverse(parts)
	out.Turns = len(parts)
	out.Content = strings.Join(parts, "\n")
	return out
}

// clipTurnStart fits a turn's text to budget bytes by leaving out the
// start of its body: its header line, "…", then its end from a line or
// word start ("" when not even the header fits).
func clipTurnStart(text string, budget int) string {
	header, body, _ := strings.Cut(text, "\n")
	const ell = "…"
	room := budget - len(header) - 1 - len(ell)
	if room <= 0 {
		return ""
	}
	from := len(body) - room
	for from < len(body) && !utf8.RuneStart(body[from]) {
		from++
	}
	if i := strings.IndexAny(body[from:], "\n "); i >= 0 && i < len(body)-from-1 {
		from += i + 1
	}
	return header + "\n" + ell + body[from:]
}
