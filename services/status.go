package services

import (
	"context"
	"os"
	"time"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
)

// IndexReporter reports the indexes' positions (the search service,
// package search, does).
type IndexReporter interface {
	Indexes(ctx context.Context) (api.Indexes, error)
}

// Reporter builds the daemon's status report, the same for REST, MCP and
// the CLI.
type Reporter struct {
	Palace   *Palace
	Search   IndexReporter // nil: no index positions
	Migrator store.Migrator
	// Version, Started, Address, PalacePath and AuthEnabled describe the
	// running daemon.
	Version     string
	Started     time.Time
	Address     string
	PalacePath  string
	AuthEnabled bool
	// Dashboard is whether the web dashboard is served on /ui/.
	Dashboard bool
	// Disk, when set, reports the palace's free space against the reserve.
	Disk func() api.Disk
	// Backups, when set, reports the last backup and its warning.
	Backups *Backups
}

// Status is the report for a caller whose memory mode is mode. A store
// that does not answer is reported unhealthy, not an error, with the
// counts or migration state it could not read left nil (unknown).
func (rp *Reporter) Status(ctx context.Context, mode string) api.Status {
	st := api.Status{Version: rp.Version, StartedAt: rp.Started.UTC().Format(time.RFC3339),
		UptimeSecs: int64(time.Since(rp.Started).Seconds()), PID: os.Getpid(), Address: rp.Address, Palace: rp.PalacePath,
		Mode: mode, AuthEnabled: rp.AuthEnabled, MCP: "http://" + rp.Address + "/mcp",
		Datastore: api.Datastore{Backend: rp.Palace.DB.Backend(), Location: rp.Palace.DB.Location(), Healthy: true}}
	if rp.Dashboard {
		st.Dashboard = "http://" + rp.Address + "/ui/"
	}
	counts, err := rp.Palace.Counts(ctx)
	if err != nil {
		st.Datastore.Healthy, st.Datastore.Error = false, fault.As(err).Msg
	} else {
		st.Counts = &api.Counts{Wings: counts.Wings, Rooms: counts.Rooms, Drawers: counts.Drawers,
			DrawersStored: counts.DrawersStored, Links: counts.Links}
	}
	if rp.Migrator == nil {
		st.Migrations = &api.Migrations{}
	} else if mig, err := rp.Migrator.State(ctx); err != nil {
		if st.Datastore.Healthy {
			st.Datastore.Healthy, st.Datastore.Error = false, fault.As(err).Msg
		}
	} else {
		st.Migrations = &api.Migrations{SchemaHash: mig.SchemaHash, SchemaSync: mig.SchemaSync, DataVersion: mig.DataVersion,
			Latest: mig.Latest, Pending: mig.Pending, LastRun: mig.LastRun}
	}
	if rp.Disk != nil {
		d := rp.Disk()
		st.Disk = &d
	}
	if rp.Search != nil {
		if ix, err := rp.Search.Indexes(ctx); err == nil {
			st.Indexes = &ix
		}
	}
	if rp.Backups != nil {
		// A folder that cannot be read is a warning, not a silence.
		b, err := rp.Backups.Status(ctx)
		if err != nil {
			b = rp.Backups.state(nil, Held{}, nil)
			b.Warning = fault.As(err).Msg
		}
		st.Backup = &b
	}
	return st
}
