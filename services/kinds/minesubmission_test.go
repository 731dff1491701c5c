package kinds

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/loci-dev/loci/actors"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
)

// A mine submission built as a typed value is checked and planned as the
// same JSON would be; a typed value of another type is checked as its
// JSON (an embed's wing alone is no mine).
func TestMineSubmissionIsTyped(t *testing.T) {
	j := newRuntime(t)
	ctx := context.Background()
	root := t.TempDir()
	write(t, root, "a.md", "a note about the lamp\n", 1)
	limit := 3
	job, err := j.Submit(ctx, MineSubmission(MineParams{Path: root, Wing: "w", Full: true, MaxDocuments: &limit}, "", store.ByCLI))
	if err != nil {
		t.Fatal(err)
	}
	var typed MineInput
	if err := json.Unmarshal(job.Input, &typed); err != nil {
		t.Fatal(err)
	}
	same, err := j.Submit(ctx, actors.Submission{Type: KindMine, Channel: store.ByCLI,
		Params: json.RawMessage(`{"path":` + string(mustJSON(t, root)) + `,"wing":"w","full":true,"max_documents":3}`)})
	if err != nil {
		t.Fatal(err)
	}
	if string(job.Input) != string(same.Input) || job.RequestedBy != store.ByCLI || typed.Limit != 3 || !typed.Full {
		t.Fatalf("typed %s (%s), JSON %s", job.Input, job.RequestedBy, same.Input)
	}
	if waitDone(t, j, job.ID).Status != store.JobCompleted {
		t.Fatal("the typed mine job did not complete")
	}
	_, err = j.Submit(ctx, actors.Submission{Type: KindMine, Channel: store.ByCLI, Typed: embedParams{Wing: "w"}})
	if !fault.Is(err, fault.InputInvalid) {
		t.Fatalf("a mine submission typed as an embed's: %v", err)
	}
	_, err = j.Submit(ctx, MineSubmission(MineParams{Path: root, Source: "codex"}, "", store.ByCLI))
	if !fault.Is(err, fault.InputInvalid) {
		t.Fatalf("both path and source: %v", err)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
