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
	Items         []store.Drawer
	Bytes         int
	Skipped       int
}

// WakeUp defaults (spec svc_wake_up).
const (
	WakeUpMaxItems = 10
	WakeUpMaxBytes = 8192
)

// WakeUp returns the agent's latest diary entry in wing (when given) and up
// to maxItems recent checkpoint drawers, within maxBytes of content by
// whole drawers: an item too large is skipped and later, smaller ones are
// still tried.
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
	out := &WakeUp{AgentIdentity: agent, Wing: wing, Items: []store.Drawer{}}
	if wing != "" {
		entries, err := p.DiaryRead(ctx, agent, wing, 1)
		if err != nil {
			return nil, err
		}
		if len(entries) > 0 && len(entries[0].Content) <= maxBytes {
			out.Diary = &entries[0]
			out.Bytes += len(entries[0].Content)
		}
	}
	// Recent checkpoint drawers: the newest of each wing's checkpoint room,
	// merged newest first. Only as many per room as could be returned.
	var cands []store.Drawer
	err := p.view(ctx, func(r store.Reader) error {
		wings, err := r.Wings()
		if err != nil {
			return err
		}
		for _, w := range wings {
			rm, err := r.RoomByName(w.ID, store.CheckpointRoom)
			if err != nil {
				return err
			}
			if rm == nil {
				continue
			}
			n := 0
			err = r.Drawers(rm.ID, true, func(d *store.Drawer) bool {
				cands = append(cands, *d)
				n++
				return n < 4*maxItems // room for skipped large ones
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
	sort.SliceStable(cands, func(i, j int) bool {
		if !cands[i].CreatedAt.Equal(cands[j].CreatedAt) {
			return cands[i].CreatedAt.After(cands[j].CreatedAt)
		}
		return cands[i].ID < cands[j].ID
	})
	for _, d := range cands {
		if len(out.Items) >= maxItems {
			break
		}
		if out.Bytes+len(d.Content) > maxBytes {
			out.Skipped++
			continue
		}
		out.Items = append(out.Items, d)
		out.Bytes += len(d.Content)
	}
	return out, nil
}
