// Package sandbox runs source packages' WebAssembly modules under wazero
// with exactly the permissions granted and nothing ambient: each call is
// a WASI command run in a fresh instance of a module compiled once and
// cached by digest, with the request on standard input and the answer on
// standard output (sources/contract), read-only directories, the named
// environment variables, a memory ceiling, a time limit and an output
// cap. A guest's Needs (a program to run, a URL to fetch) are done by the
// host only when granted.
package sandbox

import (
	"context"
	"errors"
	"time"

	_ "github.com/tetratelabs/wazero" // the stub's placeholder until the runtime is built

	"github.com/loci-dev/loci/sources/contract"
)

// MaxOutputBytes is the most a call may answer, and the most output of a
// program run for a guest the host captures: 16 MiB.
const MaxOutputBytes = 16 << 20

// Grants are what one call may touch: a package's consented permissions
// resolved for one run.
type Grants struct {
	// Dirs are absolute host directories, mounted read-only at the same
	// paths in the guest.
	Dirs []string
	// Programs are the programs it may run, by exact name (found on the
	// daemon's PATH), never through a shell.
	Programs []string
	// Env are the environment variables it sees, by name (only these).
	Env map[string]string
	// Network: it may fetch.
	Network bool
	// MemoryMiB is its memory ceiling.
	MemoryMiB int
}

// Limits bound one call.
type Limits struct {
	// Timeout is the whole call's time, every round of Needs included
	// (mining.source_timeout_secs).
	Timeout time.Duration
	// OutputBytes caps the answer and each program's captured output
	// (0: MaxOutputBytes).
	OutputBytes int64
}

// Runtime compiles and runs modules. It is safe for concurrent use.
type Runtime struct{}

// Module is a compiled module, cached by the digest of its bytes.
type Module struct{ digest string }

// New makes a runtime.
func New(ctx context.Context) (*Runtime, error) { return &Runtime{}, nil }

// Compile is the module of wasm (whose SHA-256 in hex is digest),
// compiled once per digest.
func (r *Runtime) Compile(ctx context.Context, digest string, wasm []byte) (*Module, error) {
	return nil, errors.New("sandbox: not built yet")
}

// Call runs one call of source's module m: req on standard input, the
// answer read from standard output, each round of Needs done within the
// grants. The errors are loci::source::timeout, ::permission_denied (a
// Need the grants do not allow) and ::failed (a trap, memory past the
// ceiling, output past the cap, a malformed answer), each naming the
// source.
func (r *Runtime) Call(ctx context.Context, m *Module, source string, g Grants, l Limits, req *contract.Request) (*contract.Answer, error) {
	return nil, errors.New("sandbox: not built yet")
}

// Close frees every compiled module.
func (r *Runtime) Close(ctx context.Context) error { return nil }
