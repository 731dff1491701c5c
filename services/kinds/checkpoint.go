package kinds

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/loci-dev/loci/actors"
	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
)

// checkpointParams are a checkpoint submission's fields.
type checkpointParams struct {
	Payload   json.RawMessage `json:"payload" jsonschema:"the checkpoint payload: an object, or a JSON string of it"`
	Emergency bool            `json:"emergency,omitempty" jsonschema:"run at critical priority, before every other job (default false: high priority)"`
}

// CheckpointExample is the example payload the checkpoint tool publishes.
const CheckpointExample = `{"items": [{"destination": "project", "content": "Alice leads the billing project.", "tags": ["billing"], ` +
	`"source": {"kind": "manual", "agent": "claude"}, "fact": {"op": "add", "subject": {"name": "Alice", "kind": "person"}, ` +
	`"predicate": "leads", "object": {"name": "billing project", "kind": "project"}}}]}`

// checkpointDescription is the checkpoint tool's description, its example
// last.
const checkpointDescription = "Submit a checkpoint job: memories (preferences, project notes, diary entries, general notes), " +
	"each filed verbatim as a drawer in the room checkpoints of its wing, optionally with a knowledge-graph fact it is the evidence for " +
	"(add, supersede, invalidate or link; see the payload schema). Returns the job at once (queued): its memories are searchable once loci_job_get says it completed, and the finished job's result.facts gives each fact's relationship_id. " +
	"Example payload: " + CheckpointExample

// payloadSchema is the payload argument's schema: the checkpoint object,
// or a JSON string of it.
func payloadSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Description: "The checkpoint: an object {items: [...]}, or a JSON string of that object.",
		OneOf: []*jsonschema.Schema{store.CheckpointPayloadSchema(),
			{Type: "string", ContentMediaType: "application/json", Description: "The checkpoint object above, as a JSON string."}}}
}

// Checkpoint is the checkpoint kind: an agent's memories, diary entries
// and facts, each item written as a drawer, in batches, with the checkpoint
// {next_index, items, duplicates} in the same transaction.
func Checkpoint(db store.DB, dd store.Dedup) actors.Kind {
	return actors.Define(KindCheckpoint, actors.Spec[checkpointParams]{
		Files:  true,
		Writes: always,
		Tool: &actors.Tool{Name: "loci_checkpoint", Description: checkpointDescription, Destructive: true,
			Schemas: map[string]*jsonschema.Schema{"payload": payloadSchema()}},
		Decode: func(ctx context.Context, s actors.Submission, p checkpointParams) (actors.Plan, error) {
			payload := p.Payload
			if len(payload) == 0 || string(payload) == "null" {
				return actors.Plan{}, fault.Invalid("payload", "is required: the checkpoint object, or a JSON string of it")
			}
			// A payload may be a JSON string of the object (MCP clients
			// often send one).
			var str string
			if json.Unmarshal(payload, &str) == nil {
				if !json.Valid([]byte(str)) {
					return actors.Plan{}, fault.Invalid("payload", "is a string that is not valid JSON; send the checkpoint object, or a JSON string of it")
				}
				payload = json.RawMessage(str)
			}
			cp, err := store.ParseCheckpoint(payload, s.Channel)
			if err != nil {
				return actors.Plan{}, err
			}
			// The facts' relationships and entity ids must exist now (the
			// job checks again when it runs).
			err = db.View(ctx, func(r store.Reader) error {
				for i, it := range cp.Items {
					if it.Fact != nil {
						if err := store.CheckFactRefs(r, it.Fact, fmt.Sprintf("items[%d].fact", i)); err != nil {
							return err
						}
					}
				}
				return nil
			})
			if err != nil {
				return actors.Plan{}, err
			}
			pr := store.PriorityHigh
			if p.Emergency {
				pr = store.PriorityCritical
			}
			return actors.Plan{Input: CheckpointInput{Payload: payload, Emergency: p.Emergency, Channel: s.Channel}, Priority: pr}, nil
		},
		Run: func(ctx context.Context, r *actors.Run) (any, error) { return checkpoint(ctx, r, dd) },
	})
}

type checkpointState struct {
	NextIndex  int                  `json:"next_index"`
	Items      int                  `json:"items"`
	Duplicates int                  `json:"duplicates"`
	Facts      []api.CheckpointFact `json:"facts,omitempty"`
}

// CheckpointInput is a checkpoint job's stored input.
type CheckpointInput struct {
	Payload   json.RawMessage `json:"payload"`
	Emergency bool            `json:"emergency,omitempty"`
	// Channel is the interface the payload came through.
	Channel string `json:"channel,omitempty"`
	// MCP is how a job queued by an earlier version recorded an MCP
	// payload: read, never written.
	MCP bool `json:"mcp,omitempty"`
}

// checkpointBatch bounds the items (and bytes) of one transaction.
const (
	checkpointBatch      = 64
	checkpointBatchBytes = 1 << 20
)

func checkpoint(ctx context.Context, r *actors.Run, dd store.Dedup) (any, error) {
	var in CheckpointInput
	if err := json.Unmarshal(r.Job.Input, &in); err != nil {
		return nil, fault.Wrap(fault.StoreMalformed, err, "the job's input is unreadable", "submit the checkpoint again")
	}
	if in.MCP {
		in.Channel = store.ByMCP
	}
	p, err := store.ParseCheckpoint(in.Payload, in.Channel)
	if err != nil {
		return nil, err
	}
	var st checkpointState
	_ = json.Unmarshal(r.Job.Checkpoint, &st)
	total := int64(len(p.Items))
	for st.NextIndex < len(p.Items) {
		if r.Stopping() {
			return nil, actors.ErrStopped
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
			if dd.Enabled {
				_ = r.DB().View(ctx, func(rd store.Reader) error {
					d.Prepared = store.Prepare(rd, d, dd)
					return nil
				})
			}
			ins = append(ins, d)
		}
		next := st
		err := r.Write(ctx, func(tx store.Tx) error {
			next = st
			next.Facts = slices.Clone(st.Facts)
			for k, d := range ins {
				i := st.NextIndex + k
				res, err := store.CreateDrawer(tx, d, dd)
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
					held, err := store.ApplyFactID(tx, f, res.Drawer.ID, r.Job.ID, i, dd.EntityFuzzy)
					if err != nil {
						return err
					}
					cf := api.CheckpointFact{Item: i, Op: f.Op, RelationshipID: held}
					if f.Op == "link" {
						cf.RelationshipID, cf.LinkID = "", held
					}
					next.Facts = append(next.Facts, cf)
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
	return api.CheckpointResult{Items: st.Items, Duplicates: st.Duplicates, Facts: st.Facts}, nil
}
