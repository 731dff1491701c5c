package sandbox

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/sources/contract"
)

const (
	helpFailed     = "the source's module failed: see the message, and report it to the package's author if it repeats"
	helpTimeout    = "the source did not answer in time: raise mining.source_timeout_secs if it is only slow, or report it to the package's author"
	helpPermission = "the package asked for something its consented permissions do not include: install a version whose manifest asks for it (and consent), or report it to the package's author"
)

// Call runs one call of source's module m: req on standard input, the
// answer read from standard output, each round of Needs done within the
// grants. The errors are loci::source::timeout, ::permission_denied (a
// Need the grants do not allow) and ::failed (a trap, memory past the
// ceiling, output past the cap, a malformed answer), each naming the
// source. A guest's own error answer is an Answer with Error, not an
// error. Call never panics.
func (r *Runtime) Call(ctx context.Context, m *Module, source string, g Grants, l Limits, req *contract.Request) (a *contract.Answer, err error) {
	defer func() {
		if p := recover(); p != nil {
			a, err = nil, fault.New(fault.SourceFailed,
				fmt.Sprintf("the sandbox failed running the source %s: %v", source, p), helpFailed)
		}
	}()
	if m == nil || m.rt != r || req == nil {
		return nil, fault.New(fault.SourceFailed, "the sandbox was asked to run the source "+source+" without its module or request", "report it: this is a bug")
	}
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if closed {
		return nil, errClosed()
	}
	c, err := newCall(source, g, l)
	if err != nil {
		return nil, err
	}

	callCtx, cancel := ctx, context.CancelFunc(func() {})
	if l.Timeout > 0 {
		callCtx, cancel = context.WithTimeout(ctx, l.Timeout)
	}
	defer cancel()
	c.r, c.parent, c.ctx = r, ctx, callCtx

	round := *req
	round.Results, round.State = nil, nil
	for n := 1; ; n++ {
		if n > MaxRounds {
			return nil, c.failed("asked for more than %d rounds of needs", MaxRounds)
		}
		in, err := json.Marshal(&round)
		if err != nil {
			return nil, fault.Wrap(fault.SourceFailed, err, "the request to the source "+source+" cannot be written", "report it: this is a bug")
		}
		out, err := c.instance(m, in)
		if err != nil {
			return nil, err
		}
		a, err := c.answer(req, out)
		if err != nil {
			return nil, err
		}
		if len(a.Needs) == 0 {
			return a, nil
		}
		results, err := c.needs(a.Needs)
		if err != nil {
			return nil, err
		}
		if err := c.expired(); err != nil {
			return nil, err
		}
		round.Results, round.State = results, a.State
	}
}

// call is one Call's settings and state.
type call struct {
	r        *Runtime
	source   string
	g        Grants
	limit    time.Duration
	outCap   int64
	memBytes uint64
	env      []string // granted names, sorted
	dirs     []string // cleaned absolute paths
	parent   context.Context
	ctx      context.Context
	stderr   []byte // the last instance's
}

func newCall(source string, g Grants, l Limits) (*call, error) {
	c := &call{source: source, g: g, limit: l.Timeout, outCap: l.OutputBytes}
	if c.outCap <= 0 {
		c.outCap = MaxOutputBytes
	}
	mib := g.MemoryMiB
	if mib <= 0 {
		mib = DefaultMemoryMiB
	}
	c.memBytes = uint64(min(mib, MaxMemoryMiB)) << 20
	for name := range g.Env {
		if name == "" || strings.ContainsAny(name, "=\x00") {
			return nil, fault.New(fault.SourceFailed, fmt.Sprintf("the source %s was granted an environment variable named %q", source, name), "report it: this is a bug")
		}
		c.env = append(c.env, name)
	}
	slices.Sort(c.env)
	for _, d := range g.Dirs {
		if !filepath.IsAbs(d) {
			return nil, fault.New(fault.SourceFailed, fmt.Sprintf("the source %s was granted a directory that is not absolute: %q", source, fault.Clip(d, fault.MaxQuoted)), "report it: this is a bug")
		}
		c.dirs = append(c.dirs, filepath.Clean(d))
	}
	return c, nil
}

// instance runs one fresh instance of m with in on its standard input and
// returns its standard output.
func (c *call) instance(m *Module, in []byte) (out []byte, err error) {
	if m.minPages > 0 && uint64(m.minPages)*pageBytes > c.memBytes {
		return nil, c.failed("needs %s of memory to start, more than its ceiling of %s", size(int64(m.minPages)*pageBytes), size(int64(c.memBytes)))
	}
	ctx, stop := context.WithCancel(c.ctx)
	defer stop()
	mem := &ceiling{limit: c.memBytes, hint: m.grown.Load()}
	defer func() {
		if p := mem.peak.Load(); p > 0 && !mem.refused.Load() {
			m.grown.Store(p) // the last instance's: one big call does not weigh on every later one
		}
	}()
	stdout := &capped{limit: c.outCap, stop: stop}
	stderr := &head{limit: MaxStderrBytes}

	// Each granted dir is an os.Root seen through fs.FS (read-only by
	// nature): unlike a plain directory mount, a symbolic link inside it
	// cannot lead the guest out of it.
	fs := wazero.NewFSConfig()
	for _, d := range c.dirs {
		root, err := os.OpenRoot(d)
		if err != nil {
			return nil, c.failed("cannot be given its directory %s: %s", fault.Clip(d, fault.MaxQuoted), fault.Clip(err.Error(), 200))
		}
		defer root.Close()
		fs = fs.WithFSMount(root.FS(), d)
	}
	cfg := wazero.NewModuleConfig().
		WithName(""). // anonymous: instances of one module run side by side
		WithArgs(c.source).
		WithStdin(bytes.NewReader(in)).
		WithStdout(stdout).
		WithStderr(stderr).
		WithFSConfig(fs).
		WithSysWalltime().
		WithSysNanotime().
		WithNanosleep(func(ns int64) { sleep(ctx, time.Duration(ns)) }).
		WithRandSource(rand.Reader)
	for _, name := range c.env {
		cfg = cfg.WithEnv(name, c.g.Env[name])
	}

	var mod interface{ Close(context.Context) error }
	func() {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("the runtime stopped it: %v", p)
			}
		}()
		mod, err = c.r.rt.InstantiateModule(experimental.WithMemoryAllocator(ctx, mem), m.compiled, cfg)
	}()
	if mod != nil {
		_ = mod.Close(ctx) // a _start that returned without proc_exit
	}
	c.stderr = stderr.buf.Bytes()

	switch {
	case stdout.over:
		return nil, c.failed("answered more than %s", size(c.outCap))
	case err == nil: // it finished, even if the deadline came just after
		return stdout.bytes(), nil
	case c.ctx.Err() != nil:
		return nil, c.expired()
	case mem.refused.Load() || bytes.Contains(c.stderr, []byte("out of memory")):
		return nil, c.failedStderr(err, "ran out of memory (its ceiling is %s)", size(int64(c.memBytes)))
	}
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		return nil, c.failedStderr(err, "exited with code %d", exit.ExitCode())
	}
	return nil, c.failedStderr(err, "trapped: %s", trap(err))
}

// answer decodes and checks one round's answer.
func (c *call) answer(req *contract.Request, out []byte) (*contract.Answer, error) {
	out = bytes.TrimSpace(out)
	if len(out) == 0 {
		return nil, c.failedStderr(nil, "answered nothing")
	}
	if out[0] != '{' {
		return nil, c.failed("answered malformed JSON: not an object")
	}
	var a contract.Answer
	if err := json.Unmarshal(out, &a); err != nil {
		return nil, c.failed("answered malformed JSON: %s", fault.Clip(err.Error(), 200))
	}
	result := a.Identity != nil || len(a.Items) > 0 || a.More || len(a.Documents) > 0
	switch {
	case len(a.Needs) > 0 && (a.Error != nil || result):
		return nil, c.failed("answered needs together with an error or a result")
	case len(a.Needs) > 0:
		return &a, nil
	case a.Error != nil && result:
		return nil, c.failed("answered both an error and a result")
	case a.Error != nil:
		return &a, nil
	}
	switch req.Call {
	case contract.CallResolve:
		if a.Identity == nil {
			return nil, c.failed("answered neither an error nor an identity to resolve")
		}
	case contract.CallRead:
		if len(a.Documents) != len(req.Items) {
			return nil, c.failed("answered %d documents for %d items to read", len(a.Documents), len(req.Items))
		}
	}
	// discover: no items and no more is an answer (nothing new).
	return &a, nil
}

// expired is the error of a call whose context ended: the source's
// timeout, or the caller's cancellation; nil while it runs.
func (c *call) expired() error {
	if c.ctx.Err() == nil {
		return nil
	}
	if err := c.parent.Err(); err != nil {
		return fault.Wrap(fault.SourceFailed, err, "the call of the source "+c.source+" was stopped", "the job was cancelled or the daemon is stopping")
	}
	return fault.Wrap(fault.SourceTimeout, context.DeadlineExceeded,
		fmt.Sprintf("the source %s did not answer within %s (mining.source_timeout_secs)", c.source, seconds(c.limit)), helpTimeout)
}

func (c *call) failed(format string, args ...any) error {
	return fault.New(fault.SourceFailed, "the source "+c.source+" "+fmt.Sprintf(format, args...), helpFailed)
}

// failedStderr is failed with the head of the guest's standard error.
func (c *call) failedStderr(cause error, format string, args ...any) error {
	msg := "the source " + c.source + " " + fmt.Sprintf(format, args...)
	if ex := c.excerpt(); ex != "" {
		msg += ": " + ex
	}
	return &fault.Error{Code: fault.SourceFailed, Msg: msg, Help: helpFailed, Err: cause}
}

// excerpt is the first lines of the guest's standard error, on one line,
// with the values of the granted environment variables masked (a guest
// printing its token does not put it in a job's error). A Go trace
// (after "panic:" or "fatal error:") is cut to its first frame of the
// guest's own code, without addresses: the message says what failed and
// where, not the goroutines' memory.
func (c *call) excerpt() string {
	s := strings.TrimSpace(string(c.stderr))
	if s == "" {
		return ""
	}
	lines := strings.Split(s, "\n")
	var keep []string
	for i, raw := range lines {
		ln := strings.TrimSpace(raw)
		if traceStart(ln) {
			if f := firstFrame(lines[i+1:]); f != "" {
				keep = append(keep, f)
			}
			break
		}
		if ln == "" || strings.HasPrefix(ln, "[signal ") {
			continue
		}
		keep = append(keep, ln)
		if len(keep) == 6 {
			break
		}
	}
	s = strings.Join(keep, " | ")
	for _, name := range c.env {
		if v := c.g.Env[name]; len(v) >= 6 {
			s = strings.ReplaceAll(s, v, "["+name+"]")
		}
	}
	return fault.Clip(s, 600)
}

// traceStart reports the first line of a Go trace's stacks.
func traceStart(ln string) bool {
	return ln == "runtime stack:" || strings.HasPrefix(ln, "goroutine ") && strings.HasSuffix(ln, ":")
}

// firstFrame is the first frame of a Go trace that is the guest's own
// (not the runtime's), else its first frame, as "at FUNC (DIR/FILE:LINE)";
// "" when there is none.
func firstFrame(lines []string) string {
	first := ""
	for i := 0; i+1 < len(lines); i++ {
		fn, at := lines[i], lines[i+1]
		if fn == "" || strings.HasPrefix(fn, "\t") || !strings.HasPrefix(at, "\t") || traceStart(strings.TrimSpace(fn)) {
			continue
		}
		if j := strings.LastIndexByte(fn, '('); j > 0 && strings.HasSuffix(fn, ")") {
			fn = fn[:j]
		}
		file, _, _ := strings.Cut(strings.TrimSpace(at), " ")
		if k := strings.LastIndexByte(file, '/'); k >= 0 {
			if k2 := strings.LastIndexByte(file[:k], '/'); k2 >= 0 {
				file = file[k2+1:]
			}
		}
		frame := "at " + fn + " (" + file + ")"
		if !strings.HasPrefix(fn, "runtime.") && !strings.HasPrefix(fn, "runtime/") && !strings.HasPrefix(fn, "internal/") && fn != "panic" {
			return frame
		}
		if first == "" {
			first = frame
		}
		i++
	}
	return first
}

// trap is the first line of a wazero error, without wazero's prefix.
func trap(err error) string {
	s := firstLine(err.Error())
	if i := strings.Index(s, "failed: "); i >= 0 && strings.HasPrefix(s, "module[") {
		s = s[i+len("failed: "):]
	}
	return fault.Clip(s, 200)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// sleep is a guest's sleep: real time, cut short when its call ends.
func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// seconds writes a duration the way the setting counts it.
func seconds(d time.Duration) string {
	if d >= time.Second && d%time.Second == 0 {
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return d.String()
}

// size writes a byte count in MiB, KiB or bytes, whichever is exact.
func size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
