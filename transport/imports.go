package transport

import (
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/services"
	"github.com/loci-dev/loci/store"
)

// upload reports the routes whose body is a file of any size, spooled as
// it arrives (POST /api/imports): neither the 4 MiB cap of JSON bodies nor
// the whole-body deadline applies; the handler bounds each read instead
// (stallReader), and import.max_bytes (checked against Content-Length
// first, then as the body arrives) and the free-space guard bound the
// size. A source package (POST /api/source-packages) and a plugin (POST
// /api/plugins, /api/plugins/preview) are too, bounded at 64 MiB by
// their handlers.
func upload(r *http.Request) bool {
	return r.Method == http.MethodPost && routedPath(r) == "/api/imports" || packageUpload(r) || pluginUpload(r)
}

// submitImport is POST /api/imports[?wing_map=A=B&wing_map=C=D&dry_run=true&skip_unknown=true]
// with an export file (JSON Lines) as the body: a dry run answers 200 with
// what would change; else 202 with the queued import job.
func (s *Server) submitImport(w http.ResponseWriter, r *http.Request) error {
	if s.Imports == nil {
		return fault.New(fault.ServerFailed, "imports are not available on this daemon", "see the log")
	}
	dry, err := queryBool(r, "dry_run")
	if err != nil {
		return err
	}
	skip, err := queryBool(r, "skip_unknown")
	if err != nil {
		return err
	}
	wm, err := services.ParseWingMap(r.URL.Query()["wing_map"])
	if err != nil {
		return err
	}
	rc := http.NewResponseController(w)
	body := &stallReader{r: r.Body, rc: rc, wait: s.Limits.body()}
	defer func() { _ = rc.SetReadDeadline(time.Time{}) }()
	rep, job, err := s.Imports.ImportSized(r.Context(), body, r.ContentLength, services.ImportOptions{WingMap: wm, DryRun: dry, SkipUnknown: skip,
		RequestedBy: store.ByHTTP, Channel: store.ByHTTP})
	if err != nil {
		return err
	}
	if rep != nil {
		return writeJSON(w, http.StatusOK, rep)
	}
	return writeJSON(w, http.StatusAccepted, apiJob(job))
}

// archiveBody is the request's body as an uploaded archive (a source
// package or a plugin, what names it): refused at once when it declares
// more than max bytes or is empty, each read with its own deadline; done
// clears the deadline.
func (s *Server) archiveBody(w http.ResponseWriter, r *http.Request, max int64, what, archive string) (io.Reader, func(), error) {
	if r.ContentLength > max {
		return nil, nil, fault.Newf(fault.InputTooLarge, fmt.Sprintf("a %s is at most %d MiB", what, max>>20),
			"the request body declares %d bytes; a %s is at most %d", r.ContentLength, what, max)
	}
	if !hasBody(r) {
		return nil, nil, fault.Invalid("body", "is empty; send the "+archive+" (.tar.gz)")
	}
	rc := http.NewResponseController(w)
	return &stallReader{r: r.Body, rc: rc, wait: s.Limits.body()}, func() { _ = rc.SetReadDeadline(time.Time{}) }, nil
}

// stallReader gives each read of an upload its own deadline: a body of
// gigabytes may take long, one that stops arriving fails.
type stallReader struct {
	r    io.Reader
	rc   *http.ResponseController
	wait time.Duration
}

func (s *stallReader) Read(p []byte) (int, error) {
	_ = s.rc.SetReadDeadline(time.Now().Add(s.wait))
	return s.r.Read(p)
}
