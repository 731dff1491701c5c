package client

import (
	"context"
	"encoding/json"
	"io"
	"net/http"

	"github.com/loci-dev/loci/fault"
)

// Upload sends body (a file of any size, streamed) with contentType to
// path and decodes a JSON answer into out (when non-nil). No overall
// timeout applies (a big file takes its time): ctx ends it. It returns
// the HTTP status of a success.
func (c *Client) Upload(ctx context.Context, path, contentType string, body io.Reader, out any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.Base+path, body)
	if err != nil {
		return 0, fault.Wrap(fault.ClientRequestFailed, err, "cannot build the request: "+err.Error(), "check the daemon address")
	}
	req.Header.Set("Content-Type", contentType)
	c.identify(req)
	resp, err := (&http.Client{Transport: c.HTTP.Transport}).Do(req)
	if err != nil {
		return 0, transportError(c.Base, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return 0, fault.Wrap(fault.ClientRequestFailed, err, "the daemon's answer was cut off", "run the command again")
	}
	if resp.StatusCode >= 300 {
		return 0, rejection(resp.StatusCode, raw)
	}
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			return 0, fault.Wrap(fault.ClientRequestFailed, err, "the daemon's answer is not the expected JSON", "check that client and daemon versions match")
		}
	}
	return resp.StatusCode, nil
}
