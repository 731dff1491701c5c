package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/config"
)

// Doctor's fix for a missing backup offers the schedule only when none
// is set, as the status warning does, and loci backup --out always.
func TestDoctorBackupFixFitsTheSchedule(t *testing.T) {
	for _, c := range []struct {
		name, schedule string
		offersSchedule bool
	}{
		{"no schedule", "", true},
		{"a schedule", "every 1d", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := &app{local: Local{Backups: func(context.Context, config.Config) (api.BackupStatus, error) {
				return api.BackupStatus{Warning: "no backup yet", Schedule: c.schedule}, nil
			}}}
			f, ok := a.backupFinding(context.Background(), config.Config{}, false)
			if !ok || f.Status != "warn" {
				t.Fatalf("finding %+v", f)
			}
			if got := strings.Contains(f.Remedy, "set backup.schedule"); got != c.offersSchedule {
				t.Fatalf("fix %q: offers the schedule %v, want %v", f.Remedy, got, c.offersSchedule)
			}
			if !strings.Contains(f.Remedy, "loci backup --out FILE") {
				t.Fatalf("fix %q does not offer loci backup --out", f.Remedy)
			}
		})
	}
}

// An import's notes (what a wing map onto an existing wing does) reach
// the person who ran it.
func TestImportReportPrintsItsNotes(t *testing.T) {
	var out bytes.Buffer
	a := &app{stdout: &out}
	a.printImportReport(&api.ImportReport{Records: 3, Notes: []string{"wing work is merged into the palace's wing work"}})
	if !strings.Contains(out.String(), "note: wing work is merged into the palace's wing work") {
		t.Fatalf("report printed without its note:\n%s", out.String())
	}
}
