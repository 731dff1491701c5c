// Package client is the daemon's typed HTTP client, used by the CLI. Every
// failure comes back as a *fault.Error: loci::client::not_running when
// nothing answers, loci::client::request_failed when the transport fails,
// and loci::client::remote_rejected carrying the daemon's own status and
// code when it refuses.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"syscall"
	"time"

	"github.com/loci-dev/loci/fault"
)

// ModeHeader carries the memory mode.
const ModeHeader = "X-Loci-Mode"

// PalaceHeader names the palace a request means, percent-encoded; a daemon
// serving another palace refuses the request (loci::palace::mismatch)
// before acting on it.
const PalaceHeader = "X-Loci-Palace"

// Client talks to one daemon.
type Client struct {
	Base  string // e.g. http://127.0.0.1:8420
	Token string // bearer token, or ""
	Mode  string // memory mode, or "" for the daemon's default
	// Palace is the palace this client means, or "" to take whichever the
	// daemon serves (an address given explicitly).
	Palace string
	HTTP   *http.Client
}

// New makes a client for a daemon at addr (host:port).
func New(addr, token, mode string) *Client {
	return &Client{
		Base:  "http://" + addr,
		Token: token,
		Mode:  mode,
		HTTP:  &http.Client{Timeout: 60 * time.Second},
	}
}

// Do sends a request with an optional JSON body and decodes a JSON answer
// into out (when non-nil). It returns the HTTP status of a success.
func (c *Client) Do(ctx context.Context, method, path string, body, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, fault.Wrap(fault.SerializationFailed, err, "cannot encode the request", "report this as a bug")
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, rd)
	if err != nil {
		return 0, fault.Wrap(fault.ClientRequestFailed, err, "cannot build the request: "+err.Error(), "check the daemon address")
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	c.identify(req)
	return c.send(c.HTTP, req, out)
}

// send sends req with hc and decodes a JSON answer into out (when
// non-nil); a status of 300 or more is the daemon's error.
func (c *Client) send(hc *http.Client, req *http.Request, out any) (int, error) {
	resp, err := hc.Do(req)
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

// Stream opens a long-lived GET (server-sent events) and returns the
// answer's body; the caller closes it. No timeout applies: ctx ends it.
func (c *Client) Stream(ctx context.Context, path string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Base+path, nil)
	if err != nil {
		return nil, fault.Wrap(fault.ClientRequestFailed, err, "cannot build the request: "+err.Error(), "check the daemon address")
	}
	req.Header.Set("Accept", "text/event-stream")
	c.identify(req)
	resp, err := (&http.Client{Transport: c.HTTP.Transport}).Do(req)
	if err != nil {
		return nil, transportError(c.Base, err)
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return nil, rejection(resp.StatusCode, raw)
	}
	return resp.Body, nil
}

// identify sets the bearer token and the memory mode of a request.
func (c *Client) identify(req *http.Request) {
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	if c.Mode != "" {
		req.Header.Set(ModeHeader, c.Mode)
	}
	if c.Palace != "" {
		req.Header.Set(PalaceHeader, url.PathEscape(c.Palace))
	}
}

// rejection is the error of a refused request: the daemon's own code, or
// request_failed when the answer carries no error body.
func rejection(status int, raw []byte) error {
	var b fault.Body
	if json.Unmarshal(raw, &b) != nil || b.Code == "" {
		return &fault.Error{Code: fault.ClientRequestFailed, Status: status,
			Msg:  fmt.Sprintf("the daemon answered %d without an error body", status),
			Help: "check that the address belongs to a loci daemon"}
	}
	return &fault.Error{Code: fault.ClientRemoteRejected, Status: status, Remote: fault.Code(b.Code), Msg: b.Error, Help: b.Help}
}

func transportError(base string, err error) error {
	if errors.Is(err, syscall.ECONNREFUSED) {
		return fault.Wrap(fault.ClientNotRunning, err, "no loci daemon answers at "+base,
			"start one with `loci daemon start` (or `loci serve` in the foreground)")
	}
	return fault.Wrap(fault.ClientRequestFailed, err, "the request to "+base+" failed: "+err.Error(),
		"check the daemon is healthy (loci status) and try again")
}

// Esc escapes one path segment.
func Esc(s string) string { return url.PathEscape(s) }

// EscPath escapes a drawer name that may hold '/', segment by segment.
func EscPath(s string) string {
	out := make([]byte, 0, len(s))
	seg := []byte{}
	flush := func() { out = append(out, url.PathEscape(string(seg))...); seg = seg[:0] }
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			flush()
			out = append(out, '/')
			continue
		}
		seg = append(seg, s[i])
	}
	flush()
	return string(out)
}
