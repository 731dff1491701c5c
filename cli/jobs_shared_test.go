package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/loci-dev/loci/api"
)

// On a shared store a job's text says which daemon runs it (where to
// force-cancel it) and, for a job pinned to a machine, where it runs; on
// the embedded store neither line is printed for a queued job.
func TestJobTextSaysWhereItRuns(t *testing.T) {
	var out bytes.Buffer
	a := &app{stdout: &out}
	a.printJob(&api.Job{ID: "j1", Kind: "mine", Status: "running", LeaseOwner: "build-1/4242/ab12cd34", Node: "build-1"})
	for _, want := range []string{"run by:    build-1/4242/ab12cd34", "runs on:   build-1 (it reads that machine's files"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("missing %q in:\n%s", want, out.String())
		}
	}
	out.Reset()
	a.printJob(&api.Job{ID: "j2", Kind: "embed", Status: "queued"})
	if strings.Contains(out.String(), "run by") || strings.Contains(out.String(), "runs on") {
		t.Fatalf("a queued job anywhere says where it runs:\n%s", out.String())
	}
}
