package kinds

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/loci-dev/loci/actors"
	"github.com/loci-dev/loci/config"
	"github.com/loci-dev/loci/extract"
	"github.com/loci-dev/loci/extract/provider"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/graph"
)

// extractParams are an extract submission's fields.
type extractParams struct {
	Wing string `json:"wing,omitempty" jsonschema:"only this wing (name or UUID)"`
}

// ExtractInput is an extract job's stored input.
type ExtractInput struct {
	Wing string `json:"wing,omitempty"`
}

// extractState is an extract job's checkpoint: the change-log position
// read up to, and its counts.
type extractState struct {
	Seq      uint64 `json:"seq"`
	Drawers  int    `json:"drawers"`
	Mentions int    `json:"mentions"`
	Facts    int    `json:"facts"`
	// Skipped is the drawers of files not read (lockfiles, generated
	// and minified files).
	Skipped int `json:"skipped,omitempty"`
}

// ExtractCursorKey is the meta key of the palace's extraction cursor: the
// change-log position up to which drawers were read.
const ExtractCursorKey = "extract/cursor"

// extractBatch bounds the drawers read per provider call and transaction.
const extractBatch = 32

// Extractor builds the configured extraction provider; nil when none is
// configured.
func Extractor(c config.Extraction) extract.Extractor {
	timeout := time.Duration(max(c.TimeoutSecs, 0)) * time.Second
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	voc := extract.Request{Kinds: graph.Kinds, Predicates: graph.Predicates}
	switch c.Provider {
	case provider.Heuristic:
		return extract.Heuristic{}
	case provider.Command:
		return extract.Command{Args: c.Command, Timeout: timeout, Vocabulary: voc}
	case provider.HTTP:
		return extract.HTTP{URL: c.URL, Timeout: timeout, Vocabulary: voc}
	}
	return nil
}

// Extract is the extract kind: the drawers filed since the last pass
// (mined, notes and checkpoints; by the change log) read by the
// extraction provider into entities, mentions and facts. It never writes
// a drawer; it is refused while no provider is configured.
func Extract(j *actors.Jobs, x extract.Extractor, fuzzy bool) actors.Kind {
	return actors.Define(KindExtract, actors.Spec[extractParams]{
		Background: true,
		Abortable:  true,
		Decode: func(ctx context.Context, _ actors.Submission, p extractParams) (actors.Plan, error) {
			if x == nil {
				return actors.Plan{}, fault.New(fault.ExtractNotConfigured, "extract jobs need an extraction provider, and none is configured",
					"set extraction.provider (heuristic is built in) in the configuration file and restart")
			}
			if err := checkWing(ctx, j.DB, p.Wing); err != nil {
				return actors.Plan{}, err
			}
			return actors.Plan{Input: ExtractInput{Wing: p.Wing}, Priority: store.PriorityBackground, Lane: "extract"}, nil
		},
		Run: func(ctx context.Context, r *actors.Run) (any, error) { return runExtract(ctx, r, x, fuzzy) },
		// After a mine job completes, the drawers it filed are read.
		Follow: func(ctx context.Context, done actors.Completed) {
			if done.Job.Kind != KindMine || x == nil {
				return
			}
			if _, _, err := j.Join(ctx, actors.Submission{Type: KindExtract, Automatic: true, Params: []byte(`{}`)}); err != nil {
				j.Log.Warn("queuing the extract job after a mine failed", "err", err)
			}
		},
	})
}

// extracted reports the drawers an extraction reads: mined files,
// transcripts and notes, and checkpoint drawers.
func extracted(d *store.Drawer, r store.Reader) bool {
	switch d.Source.Kind {
	case store.KindFile, store.KindNote, store.KindTranscript:
		return true
	}
	rm, err := r.Room(d.RoomID)
	return err == nil && rm != nil && rm.Name == store.CheckpointRoom
}

func runExtract(ctx context.Context, r *actors.Run, x extract.Extractor, fuzzy bool) (any, error) {
	var in ExtractInput
	_ = json.Unmarshal(r.Job.Input, &in)
	var st extractState
	if len(r.Job.Checkpoint) > 2 {
		_ = json.Unmarshal(r.Job.Checkpoint, &st)
	}
	if st.Seq == 0 {
		if v, ok, err := r.DB().GetMeta(ctx, ExtractCursorKey); err == nil && ok {
			st.Seq, _ = strconv.ParseUint(v, 10, 64)
		}
	}
	var wingID string
	if in.Wing != "" {
		_ = r.DB().View(ctx, func(rd store.Reader) error {
			w, err := store.FindWing(rd, in.Wing)
			if err == nil {
				wingID = w.ID
			}
			return err
		})
	}
	// One pass reads up to the change log's end as it starts (its own
	// writes extend the log; what is filed meanwhile is the next pass's).
	var end uint64
	if err := r.DB().View(ctx, func(rd store.Reader) error { var err error; end, err = rd.LastSeq(); return err }); err != nil {
		return nil, err
	}
	for st.Seq < end {
		if r.Stopping() {
			return nil, actors.ErrStopped
		}
		// The next drawers created past the position, current and of the
		// kinds read.
		var drawers []*store.Drawer
		skipped := 0
		next := st.Seq
		err := r.DB().View(ctx, func(rd store.Reader) error {
			var ids []string
			err := rd.Changes(st.Seq, func(c store.Change) bool {
				if len(ids) == extractBatch || c.Seq > end {
					return false
				}
				next = c.Seq
				if c.Kind == store.ChangeDrawer && c.Action == store.ActionCreated {
					ids = append(ids, c.ID)
				}
				return true
			})
			if err != nil || len(ids) == 0 {
				return err
			}
			ds, err := rd.DrawersByID(ids)
			for _, d := range ds {
				if d != nil && d.Current() && (wingID == "" || d.WingID == wingID) && extracted(d, rd) {
					if unread(d, rd) != "" {
						skipped++
						continue
					}
					drawers = append(drawers, d)
				}
			}
			return err
		})
		if err != nil {
			return nil, err
		}
		if next == st.Seq {
			break // nothing past the position
		}
		texts := make([]string, len(drawers))
		for i, d := range drawers {
			texts[i] = d.Content
		}
		var results []extract.Result
		if len(texts) > 0 {
			if results, err = x.Extract(ctx, texts); err != nil {
				return nil, fault.Wrap(fault.ExtractFailed, err, "the extraction provider failed: "+err.Error(), "check the provider, then retry the job")
			}
		}
		after := st
		after.Seq = next
		err = r.Write(ctx, func(tx store.Tx) error {
			n := st
			n.Seq = next
			n.Skipped += skipped
			for i, d := range drawers {
				for _, e := range results[i].Entities {
					kind := e.Kind
					if !graph.CheckKind(kind) {
						kind = graph.KindOther
					}
					if store.CheckEntityName("name", e.Name) != nil {
						continue
					}
					_, _, linked, err := store.LinkMention(tx, d.ID, e.Name, kind, fuzzy, x.Name(), "job:"+r.Job.ID, min(max(e.Confidence, 0), 1))
					if err != nil {
						return err
					}
					if linked {
						n.Mentions++
					}
				}
				for k, f := range results[i].Facts {
					added, err := store.AddExtractedFact(tx, store.ExtractedFact{Subject: f.Subject, SubjectKind: f.SubjectKind,
						Predicate: f.Predicate, Object: f.Object, ObjectKind: f.ObjectKind, Confidence: f.Confidence}, d.ID, k, r.Job.ID, x.Name(), fuzzy)
					if err != nil {
						return err
					}
					if added {
						n.Facts++
					}
				}
				n.Drawers++
			}
			after = n
			return nil
		}, &after, store.Progress{Current: int64(after.Drawers), Message: fmt.Sprintf("%d drawers read, %d mentions, %d facts", after.Drawers, after.Mentions, after.Facts)})
		if err != nil {
			return nil, err
		}
		st = after
		_ = r.DB().PutMeta(ctx, ExtractCursorKey, strconv.FormatUint(st.Seq, 10))
	}
	// One entity notice for the pass.
	_ = r.Write(ctx, func(tx store.Tx) error { return tx.Log(store.ChangeEntity, store.ActionUpdated, "") }, &st, store.Progress{Current: int64(st.Drawers), Message: "done"})
	return map[string]int{"drawers": st.Drawers, "mentions": st.Mentions, "facts": st.Facts, "skipped": st.Skipped}, nil
}

// unread says why a mined file's drawer is not read (extract.Unread: a
// lockfile, a generated or minified file), judged on the document's path
// and its first chunk.
func unread(d *store.Drawer, r store.Reader) string {
	if d.Source.Kind != store.KindFile {
		return ""
	}
	var o struct {
		Path  string `json:"path"`
		Chunk int    `json:"chunk"`
	}
	_ = json.Unmarshal(d.Source.Origin, &o)
	p := o.Path
	if p == "" {
		p = d.Source.URI
	}
	head := d.Content
	if o.Chunk > 0 && o.Path != "" {
		if first, err := r.DrawerByName(d.RoomID, o.Path); err == nil && first != nil {
			head = first.Content
		}
	}
	return extract.Unread(p, head)
}
