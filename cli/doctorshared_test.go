package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/config"
)

// Issue 31 (trial): on a shared store doctor's backup finding says to back
// the database up with pg_dump (naming host:port/database, never the
// password), not loci backups run or loci backup --out, which answer 501
// there; the daemon's backup warning is not asked for.
func TestDoctorBackupOnASharedStoreNamesPgDump(t *testing.T) {
	asked := false
	a := &app{local: Local{Backups: func(context.Context, config.Config) (api.BackupStatus, error) {
		asked = true
		return api.BackupStatus{Warning: "no backup yet"}, nil
	}}}
	var cfg config.Config
	cfg.Datastore.URL = "postgres://loci:s3cret@db.example:5433/palace?sslmode=disable"
	f, ok := a.backupFinding(context.Background(), cfg, false)
	if !ok || f.Status != "ok" || asked {
		t.Fatalf("finding %+v (asked the backups: %v)", f, asked)
	}
	text := f.Detail + f.Remedy
	if !strings.Contains(text, "pg_dump") || !strings.Contains(text, "db.example:5433/palace") || strings.Contains(text, "s3cret") {
		t.Fatalf("finding %q", text)
	}
	if strings.Contains(text, "run loci backups run") || strings.Contains(text, "`loci backup") {
		t.Fatalf("finding advises loci's backups on a shared store: %q", text)
	}
}
