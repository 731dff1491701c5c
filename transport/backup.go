package transport

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/loci-dev/loci/backup"
	"github.com/loci-dev/loci/fault"
)

// Response headers of GET /api/backup, read before the body: the file's
// palace and the store version it reaches.
const (
	BackupPalaceHeader  = "Loci-Backup-Palace"
	BackupVersionHeader = "Loci-Backup-Store-Version"
)

// getBackup streams a backup file of the whole palace (package backup's
// format: header, then body), full or, with since, incremental; with
// palace, the palace must be that one (an incremental's base names it).
// It is a read: it needs the token when authentication is on; it is
// never an MCP tool, and the daemon writes no file for it. A backup
// streamed whole is recorded as the palace's last backup (Backups.Downloaded).
func (s *Server) getBackup(w http.ResponseWriter, r *http.Request) error {
	if s.Store == nil {
		return fault.New(fault.BackupUnsupported, "this daemon serves no backups", "run `loci backup` against a daemon of the palace")
	}
	var o backup.Options
	if v := r.URL.Query().Get("since"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return fault.Invalid("since", fmt.Sprintf("%q is not a store version (a whole number from an earlier backup's store_version)", v))
		}
		o.Since = n
	}
	o.PalaceID = r.URL.Query().Get("palace")
	rc := http.NewResponseController(w)
	stall := s.streamStall()
	// A client that takes nothing for the stall bound is dropped: the
	// backup holds a read of the store open while it streams.
	defer func() { _ = rc.SetWriteDeadline(time.Time{}) }()
	started := false
	o.OnHeader = func(h backup.Header) {
		hd := w.Header()
		hd.Set("Content-Type", "application/octet-stream")
		hd.Set("Content-Length", strconv.FormatInt(h.Size(), 10))
		hd.Set("Content-Disposition", fmt.Sprintf(`attachment; filename="loci-%s-%d.backup"`, h.PalaceID, h.StoreVersion))
		hd.Set(BackupPalaceHeader, h.PalaceID)
		hd.Set(BackupVersionHeader, strconv.FormatUint(h.StoreVersion, 10))
		hd.Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusOK)
		started = true
	}
	h, err := backup.Write(r.Context(), s.Store, &deadlineWriter{w: w, rc: rc, stall: stall}, o)
	if err == nil && started {
		// The last bytes are handed to the connection before the backup
		// counts as taken.
		if err = rc.Flush(); errors.Is(err, http.ErrNotSupported) {
			err = nil // a writer that cannot flush sends it at the handler's end
		}
	}
	if err != nil && started {
		// The status is sent: the connection is cut, so the client sees
		// a body shorter than its length, never a whole-looking file.
		s.Log.Warn("a backup stream broke off", "client", r.RemoteAddr, "err", err)
		panic(http.ErrAbortHandler)
	}
	if err == nil && s.Backups != nil {
		// Streamed whole: the palace's operational records count it as
		// its last backup (status, doctor, GET /api/backups), without
		// the client's path, which the daemon never knows.
		if rerr := s.Backups.Downloaded(context.WithoutCancel(r.Context()), h); rerr != nil {
			s.Log.Warn("recording a downloaded backup failed: status will not count it", "err", fault.As(rerr).Msg)
		}
	}
	return err
}

// deadlineWriter gives every write the stall bound.
type deadlineWriter struct {
	w     http.ResponseWriter
	rc    *http.ResponseController
	stall time.Duration
}

func (d *deadlineWriter) Write(p []byte) (int, error) {
	_ = d.rc.SetWriteDeadline(time.Now().Add(d.stall))
	return d.w.Write(p)
}
