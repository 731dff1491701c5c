package transport

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/loci-dev/loci/export"
)

// exportRoute streams an export (GET /api/export): wing (repeatable, one
// name each: names may hold commas), since (RFC 3339 or a date) and
// vectors (true: the configured profiles' vectors). A read: the token
// when authentication is on, every memory mode; no MCP tool reaches it.
// A wing unknown is refused before anything is sent; a failure after the
// first bytes ends the stream without its end record (the Reader calls
// such a file truncated).
func (s *Server) exportRoute(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	o := export.Options{Generator: "loci " + s.Version}
	for _, name := range q["wing"] {
		if name != "" { // an empty value is absent, as on every route
			o.Wings = append(o.Wings, name)
		}
	}
	since, err := queryInstant(r, "since")
	if err != nil {
		return err
	}
	if since != nil {
		o.Since = *since
	}
	if o.Vectors, err = queryBool(r, "vectors"); err != nil {
		return err
	}
	if o.Vectors {
		for name := range s.Config.Embedding.Profiles {
			o.Profiles = append(o.Profiles, name)
		}
		slices.Sort(o.Profiles)
	}
	h := w.Header()
	h.Set("Content-Type", "application/x-ndjson")
	h.Set("Content-Disposition", fmt.Sprintf(`attachment; filename="loci-export-%s.jsonl"`, time.Now().UTC().Format("20060102T150405Z")))
	h.Set("Cache-Control", "no-store")
	cw := &countingWriter{w: w}
	sum, err := export.Write(r.Context(), s.Palace.DB, cw, o)
	if err != nil {
		if cw.n == 0 {
			h.Del("Content-Disposition")
			return err
		}
		s.Log.Warn("export stream ended early", "component", "transport", "bytes", cw.n, "err", err)
		panic(http.ErrAbortHandler)
	}
	s.Log.Info("export streamed", "component", "transport", "records", sum.Records, "bytes", sum.Bytes, "wings", len(o.Wings))
	return nil
}

// countingWriter counts what reached the client.
type countingWriter struct {
	w io.Writer
	n int64
}

// Write writes to the client and counts what it took.
func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
