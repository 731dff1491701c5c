// Package sandbox runs source packages' WebAssembly modules under wazero
// with exactly the permissions granted and nothing ambient: each call is
// a WASI command run in a fresh instance of a module compiled once and
// cached by digest, with the request on standard input and the answer on
// standard output (sources/contract), read-only directories, the named
// environment variables, a memory ceiling, a time limit and an output
// cap. A guest's Needs (a program to run, a URL to fetch) are done by the
// host only when granted.
//
// One Runtime holds one wazero runtime (the compiler where the platform
// has one), WASI preview 1 instantiated once, and the compiled modules by
// digest. The memory ceiling is per call: an allocator handed to each
// instance refuses to grow its linear memory past Grants.MemoryMiB, so
// packages with different ceilings share one runtime and one compiled
// module. Granted directories are mounted through os.Root, so a symbolic
// link inside one cannot lead out of it.
package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/loci-dev/loci/fault"
)

// MaxOutputBytes is the most a call may answer, and the most output of a
// program run for a guest the host captures: 16 MiB.
const MaxOutputBytes = 16 << 20

// DefaultMemoryMiB is the ceiling of a call whose grants name none (the
// same as a manifest's default, pack.DefaultMemoryMiB); MaxMemoryMiB is
// the most a 32-bit WebAssembly memory can hold.
const (
	DefaultMemoryMiB = 64
	MaxMemoryMiB     = 4096
)

// MaxRounds is the most rounds of Needs one call may ask for.
const MaxRounds = 32

// MaxStderrBytes is how much of a guest's standard error the host keeps
// (the head, where a panic's message is), for error messages.
const MaxStderrBytes = 64 << 10

// ErrTooLarge is the kind of a Result's error when a program's output or a
// fetched body passed the output cap: the guest decides (the spec skips an
// over-size item).
const ErrTooLarge = "too_large"

// Grants are what one call may touch: a package's consented permissions
// resolved for one run.
type Grants struct {
	// Dirs are absolute host directories, mounted read-only at the same
	// paths in the guest (a symbolic link leading out of one is refused).
	Dirs []string
	// Programs are the programs it may run, by exact name (found on the
	// daemon's PATH), never through a shell.
	Programs []string
	// Env are the environment variables it sees, by name (only these).
	Env map[string]string
	// Network: it may fetch.
	Network bool
	// MemoryMiB is its memory ceiling (0: DefaultMemoryMiB).
	MemoryMiB int
}

// Limits bound one call.
type Limits struct {
	// Timeout is the whole call's time, every round of Needs included
	// (mining.source_timeout_secs). 0: only ctx bounds the call.
	Timeout time.Duration
	// OutputBytes caps the answer and each program's captured output
	// (0: MaxOutputBytes).
	OutputBytes int64
}

// Options configure a runtime.
type Options struct {
	// CacheDir, when set, is a directory where wazero keeps compiled code
	// across restarts (a large module compiles in about a second); else
	// the compilation cache is in memory only.
	CacheDir string
	// DaemonPorts, when set, lists the ports of the daemon's own
	// listeners: a fetch may not reach them on this machine (a loopback,
	// unspecified or local interface address), whatever name it used, so
	// that a package granted the network cannot call the daemon's API
	// (which, with authentication off, installs packages).
	DaemonPorts func() []int
}

// Runtime compiles and runs modules. It is safe for concurrent use.
type Runtime struct {
	rt    wazero.Runtime
	cache wazero.CompilationCache
	http  *http.Client

	mu      sync.Mutex
	closed  bool
	modules map[string]*compiling
	// compiles counts compilations (the tests check one per digest).
	compiles atomic.Int64
}

// compiling is one digest's compilation: done closes when m or err is set.
type compiling struct {
	done chan struct{}
	m    *Module
	err  error
}

// Module is a compiled module, cached by the digest of its bytes.
type Module struct {
	digest   string
	rt       *Runtime
	compiled wazero.CompiledModule
	// minPages is the most initial pages of its memories: an instance
	// whose ceiling is below it cannot start.
	minPages uint32
	// grown is the memory its last instance grew to (the next one
	// reserves as much at once).
	grown atomic.Uint64
}

// Digest is the SHA-256 in hex of the module's bytes.
func (m *Module) Digest() string { return m.digest }

// New makes a runtime with the compilation cache in memory.
func New(ctx context.Context) (*Runtime, error) { return NewWith(ctx, Options{}) }

// NewWith makes a runtime with options.
func NewWith(ctx context.Context, o Options) (*Runtime, error) {
	cache := wazero.NewCompilationCache()
	if o.CacheDir != "" {
		c, err := wazero.NewCompilationCacheWithDir(o.CacheDir)
		if err != nil {
			return nil, fault.Wrap(fault.IOFailed, err, "the sandbox cannot use its compilation cache "+o.CacheDir,
				"check that the directory is writable, or remove it")
		}
		cache = c
	}
	cfg := wazero.NewRuntimeConfig(). // the compiler where the platform has one
						WithCloseOnContextDone(true).
						WithCompilationCache(cache)
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		_ = rt.Close(ctx)
		_ = cache.Close(ctx)
		return nil, fault.Wrap(fault.ServerFailed, err, "the sandbox cannot start WASI", "report it: this is a bug")
	}
	return &Runtime{rt: rt, cache: cache, http: newHTTPClient(o.DaemonPorts), modules: map[string]*compiling{}}, nil
}

const helpIntegrity = "the module's bytes are not the ones installed: reinstall the package"

// Compile is the module of wasm (whose SHA-256 in hex is digest),
// compiled once per digest: concurrent callers of one digest wait for the
// one compilation. Bytes whose SHA-256 is not digest are
// loci::source::integrity; bytes that are not a WASI command are
// loci::source::failed.
func (r *Runtime) Compile(ctx context.Context, digest string, wasm []byte) (*Module, error) {
	sum := sha256.Sum256(wasm)
	if got := hex.EncodeToString(sum[:]); !strings.EqualFold(got, digest) {
		return nil, fault.New(fault.SourceIntegrity,
			fmt.Sprintf("the module's SHA-256 is %s, not %s", got, fault.Clip(digest, fault.MaxQuoted)), helpIntegrity)
	}
	digest = strings.ToLower(digest)

	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, errClosed()
	}
	c, ok := r.modules[digest]
	if !ok {
		c = &compiling{done: make(chan struct{})}
		r.modules[digest] = c
	}
	r.mu.Unlock()

	if ok {
		select {
		case <-c.done:
			return c.m, c.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}

	// Compile without the caller's cancellation: others may be waiting.
	c.m, c.err = r.compile(context.WithoutCancel(ctx), digest, wasm)
	if c.err != nil {
		r.mu.Lock()
		delete(r.modules, digest) // the next caller tries again
		r.mu.Unlock()
	}
	close(c.done)
	return c.m, c.err
}

func (r *Runtime) compile(ctx context.Context, digest string, wasm []byte) (m *Module, err error) {
	defer func() {
		if p := recover(); p != nil {
			m, err = nil, fault.New(fault.SourceFailed, fmt.Sprintf("the module %s cannot be compiled: %v", short(digest), p), helpModule)
		}
	}()
	r.compiles.Add(1)
	cm, err := r.rt.CompileModule(ctx, wasm)
	if err != nil {
		return nil, fault.Wrap(fault.SourceFailed, err,
			fmt.Sprintf("the module %s is not valid WebAssembly: %s", short(digest), firstLine(err.Error())), helpModule)
	}
	if why := notCommand(cm); why != "" {
		_ = cm.Close(ctx)
		return nil, fault.New(fault.SourceFailed, fmt.Sprintf("the module %s is not a WASI command: %s", short(digest), why), helpModule)
	}
	m = &Module{digest: digest, rt: r, compiled: cm}
	for _, d := range cm.ExportedMemories() {
		m.minPages = max(m.minPages, d.Min())
	}
	for _, d := range cm.ImportedMemories() {
		m.minPages = max(m.minPages, d.Min())
	}
	return m, nil
}

const helpModule = "the package's module must be a WASI preview 1 command (built for wasip1): ask its author"

// notCommand says why a compiled module cannot run as a WASI command, or
// "": it must export _start and import nothing but WASI preview 1.
func notCommand(cm wazero.CompiledModule) string {
	start, ok := cm.ExportedFunctions()["_start"]
	if !ok {
		return "it exports no _start"
	}
	if len(start.ParamTypes()) != 0 || len(start.ResultTypes()) != 0 {
		return "its _start takes or returns values"
	}
	for _, f := range cm.ImportedFunctions() {
		if mod, name, _ := f.Import(); mod != wasi_snapshot_preview1.ModuleName {
			return fmt.Sprintf("it imports %s.%s, which the sandbox does not give", mod, name)
		}
	}
	return ""
}

// Close frees every compiled module and the runtime; calls under way
// stop. The runtime cannot be used again.
func (r *Runtime) Close(ctx context.Context) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.modules = nil
	r.mu.Unlock()
	err := r.rt.Close(ctx)
	r.http.CloseIdleConnections()
	return errors.Join(err, r.cache.Close(ctx))
}

func errClosed() error {
	return fault.New(fault.SourceUnavailable, "the sandbox is closed", "the daemon is stopping: try again once it runs")
}

// short is a digest's first 12 characters, for messages.
func short(digest string) string {
	if len(digest) > 12 {
		return digest[:12]
	}
	return digest
}
