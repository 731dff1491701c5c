package actors

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/fault"
)

// Checkpoint job: write each item as a drawer, in batches, with the
// checkpoint {next_index, items, duplicates} in the same transaction.

type checkpointState struct {
	NextIndex  int `json:"next_index"`
	Items      int `json:"items"`
	Duplicates int `json:"duplicates"`
}

// CheckpointInput is a checkpoint job's stored input.
type CheckpointInput struct {
	Payload   json.RawMessage `json:"payload"`
	Emergency bool            `json:"emergency,omitempty"`
	MCP       bool            `json:"mcp,omitempty"`
}

// checkpointBatch bounds the items (and bytes) of one transaction.
const (
	checkpointBatch      = 64
	checkpointBatchBytes = 1 << 20
)

func checkpointHandler(ctx context.Context, r *Run) (any, error) {
	var in CheckpointInput
	if err := json.Unmarshal(r.Job.Input, &in); err != nil {
		return nil, fault.Wrap(fault.StoreMalformed, err, "the job's input is unreadable", "submit the checkpoint again")
	}
	p, err := store.ParseCheckpoint(in.Payload, in.MCP)
	if err != nil {
		return nil, err
	}
	var st checkpointState
	_ = json.Unmarshal(r.Job.Checkpoint, &st)
	pal := r.Palace()
	total := int64(len(p.Items))
	for st.NextIndex < len(p.Items) {
		if r.Stopping() {
			return nil, ErrStopped
		}
		end, size := st.NextIndex, 0
		for end < len(p.Items) && end-st.NextIndex < checkpointBatch && (size == 0 || size+len(p.Items[end].Content) <= checkpointBatchBytes) {
			size += len(p.Items[end].Content)
			end++
		}
		ins := make([]store.NewDrawer, 0, end-st.NextIndex)
		for i := st.NextIndex; i < end; i++ {
			it := p.Items[i]
			d := store.NewDrawer{ID: store.CheckpointDrawerID(r.Job.ID, i), Wing: it.Wing, Room: store.CheckpointRoom,
				Name: it.Name, Content: it.Content, Tags: *it.Tags, Source: it.Source,
				Provenance: store.Provenance{RequestedBy: r.Job.RequestedBy, JobID: r.Job.ID},
				Policy:     store.ExactNotStored}
			if it.Fact != nil {
				// A fact-bearing item keeps its own drawer.
				d.Policy = store.ExactStoredLinked
			}
			if pal.Dedup.Enabled {
				_ = pal.view(ctx, func(rd store.Reader) error {
					d.Prepared = store.Prepare(rd, d, pal.Dedup)
					return nil
				})
			}
			ins = append(ins, d)
		}
		next := st
		err := r.Write(ctx, func(tx store.Tx) error {
			next = st
			for k, d := range ins {
				i := st.NextIndex + k
				res, err := store.CreateDrawer(tx, d, pal.Dedup)
				if err != nil {
					e := fault.As(err)
					return fault.Wrap(e.Code, err, fmt.Sprintf("items[%d]: %s", i, e.Msg), e.Help)
				}
				if !res.Created {
					next.Duplicates++
				}
				if f := p.Items[i].Fact; f != nil {
					b, _ := json.Marshal(struct {
						Drawer string        `json:"drawer"`
						Fact   *store.FactOp `json:"fact"`
					}{res.Drawer.ID, f})
					if err := tx.PutJobFact(r.Job.ID, i, b); err != nil {
						return err
					}
				}
				next.Items++
			}
			next.NextIndex = end
			return nil
		}, &next, store.Progress{Current: int64(end), Total: &total, Message: "items written"})
		if err != nil {
			return nil, err
		}
		// The closure may have run more than once (a batch retried): the
		// state is what the committed run computed.
		st = next
	}
	return map[string]int{"items": st.Items, "duplicates": st.Duplicates}, nil
}
