package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/sources/contract"
)

// MaxNeeds is the most Needs one round may ask for.
const MaxNeeds = 64

// needs checks every Need of a round against the grants (one refused: the
// whole call fails, before anything is done), then does them in order.
// The output they capture together is bounded by twice the output cap.
func (c *call) needs(needs []contract.Need) ([]contract.Result, error) {
	if len(needs) > MaxNeeds {
		return nil, c.failed("asked for %d needs in one round, more than %d", len(needs), MaxNeeds)
	}
	dirs := make([]string, len(needs))
	for i, n := range needs {
		switch n.Kind {
		case contract.NeedRun:
			d, err := c.allowRun(n)
			if err != nil {
				return nil, err
			}
			dirs[i] = d
		case contract.NeedFetch:
			if !c.g.Network {
				return nil, fault.New(fault.SourcePermissionDenied,
					fmt.Sprintf("the source %s asked to fetch from %s, which its permissions do not grant (no network)", c.source, host(n.URL)), helpPermission)
			}
		default:
			return nil, c.failed("asked for a need of unknown kind %q", fault.Clip(n.Kind, 40))
		}
	}
	budget := new(atomic.Int64)
	budget.Store(2 * c.outCap)
	results := make([]contract.Result, len(needs))
	for i, n := range needs {
		if err := c.expired(); err != nil {
			return nil, err
		}
		if n.Kind == contract.NeedRun {
			results[i] = c.run(n, dirs[i], budget)
		} else {
			results[i] = c.fetch(n, budget)
		}
	}
	return results, nil
}

// allowRun checks a run Need and answers the directory to run it in.
func (c *call) allowRun(n contract.Need) (string, error) {
	p := n.Program
	if p == "" || strings.ContainsAny(p, `/\`) || filepath.IsAbs(p) || !slices.Contains(c.g.Programs, p) {
		return "", fault.New(fault.SourcePermissionDenied,
			fmt.Sprintf("the source %s asked to run %s, which its permissions do not grant", c.source, fault.Clip(p, fault.MaxQuoted)), helpPermission)
	}
	dir := n.Dir
	if dir == "" {
		if len(c.dirs) == 0 {
			return "", nil // an empty directory of its own
		}
		return c.dirs[0], nil
	}
	if filepath.IsAbs(dir) {
		dir = filepath.Clean(dir)
		real, err := filepath.EvalSymlinks(dir)
		if err != nil {
			real = dir
		}
		for _, g := range c.dirs {
			if within(dir, g) && within(real, resolved(g)) {
				return dir, nil
			}
		}
	}
	return "", fault.New(fault.SourcePermissionDenied,
		fmt.Sprintf("the source %s asked to run %s in %s, outside the directories its permissions grant", c.source, p, fault.Clip(n.Dir, fault.MaxQuoted)), helpPermission)
}

// within reports whether path is dir or under it (both clean, absolute).
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

func resolved(dir string) string {
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		return r
	}
	return dir
}

// run runs a granted program, never through a shell: its exact name on
// the daemon's PATH, the arguments as they are, in dir, with PATH, HOME,
// LANG and the granted variables only, standard input empty, each output
// capped (past the cap it is killed and its Result is too_large).
func (c *call) run(n contract.Need, dir string, budget *atomic.Int64) contract.Result {
	path, err := exec.LookPath(n.Program)
	if err != nil {
		return contract.Result{Error: contract.Errorf(contract.ErrNotFound, "%s is not on the daemon's PATH", n.Program)}
	}
	if dir == "" {
		tmp, err := os.MkdirTemp("", "loci-run-")
		if err != nil {
			return contract.Result{Error: contract.Errorf(contract.ErrFailed, "no directory to run %s in: %v", n.Program, err)}
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	ctx, kill := context.WithCancel(c.ctx)
	defer kill()
	stdout := &capped{limit: c.outCap, budget: budget, stop: kill}
	stderr := &capped{limit: c.outCap, budget: budget, stop: kill}
	cmd := exec.CommandContext(ctx, path, n.Args...)
	cmd.Args[0] = n.Program
	cmd.Dir = dir
	cmd.Env = c.programEnv()
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = time.Second // a child left holding the pipes does not hold the call
	err = cmd.Run()
	switch {
	case stdout.overBudget || stderr.overBudget:
		return contract.Result{Error: contract.Errorf(ErrTooLarge, "the needs of this round passed %s of output in all", size(2*c.outCap))}
	case stdout.over || stderr.over:
		return contract.Result{Error: contract.Errorf(ErrTooLarge, "the output of %s passed %s", n.Program, size(c.outCap))}
	case c.ctx.Err() != nil:
		return contract.Result{Error: contract.Errorf(contract.ErrFailed, "%s was stopped: the call ran out of time", n.Program)}
	}
	res := contract.Result{Stdout: stdout.bytes(), Stderr: stderr.bytes()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		res.Exit = exit.ExitCode()
	case err != nil:
		res.Error = contract.Errorf(contract.ErrFailed, "%s did not run: %v", n.Program, err)
	}
	return res
}

// programEnv is a program's whole environment.
func (c *call) programEnv() []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "LANG=C.UTF-8"}
	for _, name := range c.env {
		env = append(env, name+"="+c.g.Env[name])
	}
	return env
}

// fetch does an HTTP request (http or https only) within the call's
// deadline; the body is capped.
func (c *call) fetch(n contract.Need, budget *atomic.Int64) contract.Result {
	method := n.Method
	if method == "" {
		method = http.MethodGet
	}
	u, err := url.Parse(n.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return contract.Result{Error: contract.Errorf(contract.ErrInvalid, "only http and https URLs can be fetched")}
	}
	req, err := http.NewRequestWithContext(c.ctx, method, u.String(), bytes.NewReader(n.Body))
	if err != nil {
		return contract.Result{Error: contract.Errorf(contract.ErrInvalid, "the request cannot be made: %v", err)}
	}
	for k, v := range n.Headers {
		req.Header.Set(k, v)
	}
	resp, err := c.r.http.Do(req)
	if err != nil {
		return contract.Result{Error: contract.Errorf(contract.ErrFailed, "fetching from %s: %v", host(n.URL), err)}
	}
	defer resp.Body.Close()
	body := &capped{limit: c.outCap, budget: budget}
	if _, err := io.Copy(body, resp.Body); err != nil {
		if body.overBudget {
			return contract.Result{Error: contract.Errorf(ErrTooLarge, "the needs of this round passed %s of output in all", size(2*c.outCap))}
		}
		if body.over {
			return contract.Result{Error: contract.Errorf(ErrTooLarge, "the body from %s passed %s", host(n.URL), size(c.outCap))}
		}
		return contract.Result{Error: contract.Errorf(contract.ErrFailed, "reading from %s: %v", host(n.URL), err)}
	}
	res := contract.Result{Status: resp.StatusCode, Body: body.bytes(), Headers: map[string]string{}}
	for k, v := range resp.Header {
		res.Headers[k] = strings.Join(v, ", ")
	}
	return res
}

// newHTTPClient is the client fetches use: redirects only to http and
// https, at most 10.
func newHTTPClient(daemonPorts func() []int) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	if daemonPorts != nil {
		d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second,
			Control: func(_, address string, _ syscall.RawConn) error { return refuseDaemon(address, daemonPorts()) }}
		t.DialContext = d.DialContext
	}
	return &http.Client{
		Transport: t,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 10 {
				return errors.New("stopped after 10 redirects")
			}
			if s := req.URL.Scheme; s != "http" && s != "https" {
				return fmt.Errorf("a redirect to %s is not followed", s)
			}
			return nil
		},
	}
}

// host names where a URL leads, for messages (never its path or query,
// which may carry a token).
func host(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "a malformed URL"
	}
	return fault.Clip(u.Scheme+"://"+u.Host, fault.MaxQuoted)
}

// refuseDaemon refuses a connection to address (the resolved ip:port a
// fetch dials, so no name or redirect leads around it) when it is one of
// the daemon's own ports on this machine.
func refuseDaemon(address string, ports []int) error {
	h, p, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	port, _ := strconv.Atoi(p)
	if !slices.Contains(ports, port) {
		return nil
	}
	ip := net.ParseIP(h)
	if ip == nil {
		return nil
	}
	if ip.IsLoopback() || ip.IsUnspecified() || localAddress(ip) {
		return fmt.Errorf("%s is the loci daemon's own listener, which a source may not call", address)
	}
	return nil
}

// localAddress reports an address of one of this machine's interfaces.
func localAddress(ip net.IP) bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return true // unknown: refuse rather than let a source reach the daemon
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}
