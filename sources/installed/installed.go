// Package installed serves a source package as a sources.Adapter: its
// manifest gives the adapter's name, options and capabilities, and every
// stage it runs (resolve, discover, read) is a call into the package's
// module in the sandbox, with the permissions the user consented to
// resolved for the run (the locator, the named variables' values).
package installed

import (
	"context"
	"errors"
	"time"

	"github.com/loci-dev/loci/sources"
	"github.com/loci-dev/loci/sources/contract"
	"github.com/loci-dev/loci/sources/pack"
	"github.com/loci-dev/loci/sources/sandbox"
)

// Caller runs one call of a package with the grants of its run: the
// sandbox (Runtime.Call over a compiled module) in the daemon, a Go
// handler in-process in tests.
type Caller func(ctx context.Context, g sandbox.Grants, req *contract.Request) (*contract.Answer, error)

// Options are what a source needs besides its package.
type Options struct {
	// Timeout is each call's time limit (mining.source_timeout_secs).
	Timeout time.Duration
	// Getenv reads the daemon's environment for the variables the
	// package may read (os.LookupEnv).
	Getenv func(string) (string, bool)
}

// New is the adapter of package p, its calls made through call.
func New(p *pack.Package, call Caller, o Options) (sources.Adapter, error) {
	return nil, errors.New("installed: not built yet")
}
