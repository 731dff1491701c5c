package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/loci-dev/loci/config"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/sources/conformance"
	"github.com/loci-dev/loci/sources/installed"
	"github.com/loci-dev/loci/sources/pack"
	"github.com/loci-dev/loci/sources/sandbox"
)

// sourceTest is loci source test's body: the conformance cases against
// the package built in dir, run in the real sandbox through the
// installed adapter, with the permissions its manifest asks for (as if
// the user had consented to them), over the folder locator. Each call is
// bounded by the default mining.source_timeout_secs.
func sourceTest(ctx context.Context, dir, locator string, out io.Writer) error {
	p, err := pack.ReadDir(dir)
	if err != nil {
		return err
	}
	m := p.Manifest
	if why := m.Compatible(version); why != "" {
		return fault.New(fault.SourceIncompatible, fmt.Sprintf("%s %s cannot run on this loci: %s", m.Name, m.Version, why),
			"rebuild it against this loci's contract (loci source init copies it), or change its loci requirement")
	}
	fmt.Fprintf(out, "testing %s %s (%s, module sha256 %s)\n", m.Name, m.Version, dir, p.ModuleDigest())
	fmt.Fprintf(out, "granted, as its manifest asks:\n")
	for _, w := range m.Permissions.Words() {
		fmt.Fprintf(out, "  - %s\n", w)
	}
	fmt.Fprintf(out, "locator: %s\n", locator)

	rt, err := sandbox.New(ctx)
	if err != nil {
		return named(err, "starting the sandbox")
	}
	defer rt.Close(context.WithoutCancel(ctx))
	mod, err := rt.Compile(ctx, p.ModuleDigest(), p.Module)
	if err != nil {
		return named(err, "compiling "+m.Module)
	}
	timeout := time.Duration(config.Default(os.LookupEnv).Mining.SourceTimeoutSecs) * time.Second
	a, err := installed.New(p, installed.InSandbox(rt, mod, m.Name, timeout), installed.Options{Timeout: timeout, Getenv: os.LookupEnv})
	if err != nil {
		return named(err, "loading "+m.Name)
	}
	results := conformance.Run(ctx, a, locator, nil)
	failed := 0
	for _, r := range results {
		if r.Err != nil {
			failed++
			fmt.Fprintf(out, "FAIL  %s: %v\n", r.Case, r.Err)
			continue
		}
		fmt.Fprintf(out, "PASS  %s\n", r.Case)
	}
	if failed > 0 {
		return fault.New(fault.SourceFailed, fmt.Sprintf("%s failed %d of %d conformance cases", m.Name, failed, len(results)),
			"read each FAIL line above, correct the source, then loci source build and loci source test again")
	}
	if len(results) == 0 {
		return fault.New(fault.SourceFailed, "the conformance suite ran no case", "report it: this loci's conformance suite is empty")
	}
	fmt.Fprintf(out, "all %d conformance cases passed\n", len(results))
	return nil
}

// named is err as loci::source::failed saying what was being done, unless
// it already carries a code.
func named(err error, doing string) error {
	if fe := fault.As(err); fe.Code != fault.ServerFailed {
		return err
	}
	return fault.Wrap(fault.SourceFailed, err, doing+": "+err.Error(), "check the module: loci source build, then loci source test again")
}
