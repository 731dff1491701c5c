package transport

import (
	"net/http"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
)

// backupsOff answers the backup routes of a server built without the
// backups service (tests).
func backupsOff() error {
	return fault.New(fault.ServerRouteNotFound, "this daemon does not manage backups", "start the daemon with its configuration (loci serve)")
}

// listBackups is GET /api/backups: the palace's backups in backup.dir,
// newest first, the last successful one and the warning.
func (s *Server) listBackups(w http.ResponseWriter, r *http.Request) error {
	if s.Backups == nil {
		return backupsOff()
	}
	list, err := s.Backups.List(r.Context())
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, list)
}

// runBackup is POST /api/backups: queue a backup job into backup.dir now
// (202 with the job). Its body, when given, is an empty object: nothing
// a client sends chooses where a backup goes.
func (s *Server) runBackup(w http.ResponseWriter, r *http.Request) error {
	if s.Backups == nil {
		return backupsOff()
	}
	var body struct{}
	if err := decodeBody(r, &body, true); err != nil {
		return err
	}
	job, err := s.Backups.Run(r.Context(), store.ByHTTP)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusAccepted, apiJob(job))
}
