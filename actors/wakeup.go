package actors

import (
	"context"
	"sort"

	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/fault"
)

// WakeUp is session-start context for an agent.
type WakeUp struct {
	AgentIdentity string
	Wing          string
	Diary         *store.Drawer
	Items         []WakeUpItem
	Bytes         int
	Skipped       int
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
// still tried. Another agent's checkpoints are never returned.
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
