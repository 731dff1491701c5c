package client

import (
	"context"
	"io"
	"net/http"

	"github.com/loci-dev/loci/fault"
)

// Upload sends body (a file of any size, streamed) with contentType to
// path and decodes a JSON answer into out (when non-nil). No overall
// timeout applies (a big file takes its time): ctx ends it. It returns
// the HTTP status of a success.
func (c *Client) Upload(ctx context.Context, path, contentType string, body io.Reader, out any) (int, error) {
	return c.UploadWith(ctx, path, contentType, nil, body, out)
}

// UploadWith is Upload with more request headers (a plugin's consents).
func (c *Client) UploadWith(ctx context.Context, path, contentType string, header http.Header, body io.Reader, out any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.Base+path, body)
	if err != nil {
		return 0, fault.Wrap(fault.ClientRequestFailed, err, "cannot build the request: "+err.Error(), "check the daemon address")
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", contentType)
	c.identify(req)
	return c.send(&http.Client{Transport: c.HTTP.Transport}, req, out)
}
