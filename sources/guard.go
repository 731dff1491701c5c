package sources

import (
	"fmt"
	"runtime/debug"
	"sync"

	"github.com/loci-dev/loci/fault"
)

// Panic is a panic recovered from an adapter's code: the source it came
// from, the value it panicked with and the stack where it did (for the
// daemon's log; the error shown says only the source and the value).
type Panic struct {
	Source string
	Value  any
	Stack  []byte
}

func (p *Panic) Error() string {
	return fmt.Sprintf("the %s source panicked: %s", p.Source, panicText(p.Value))
}

// panicText is a panic's value as shown: its secrets redacted (an
// adapter's panic may quote what it read), at most 300 bytes.
func panicText(v any) string {
	s := fmt.Sprint(v)
	s, _ = Redact(s, Scan(s))
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// Guard runs fn, code of the named source's adapter, turning a panic in it
// into loci::source::failed naming the source (wrapping a *Panic), so that
// a faulty or hostile adapter fails its document or job, never the daemon.
// Every call into an adapter that may run its code (Discover, Read, List,
// Resolve, ...) goes through Guard, on whatever goroutine it runs.
func Guard(source string, fn func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			p := &Panic{Source: source, Value: v, Stack: debug.Stack()}
			err = fault.Wrap(fault.SourceFailed, p, p.Error(),
				"the source's code failed, not the daemon: report it to whoever wrote the "+source+" source")
		}
	}()
	return fn()
}

// Go starts fn, code of the named source's adapter, on a goroutine of wg,
// guarded: a panic in it is handed to failed (the loci::source::failed
// error Guard makes) instead of ending the process. Every goroutine that
// runs adapter code is started through Go.
func Go(wg *sync.WaitGroup, source string, fn func(), failed func(error)) {
	wg.Go(func() {
		if err := Guard(source, func() error { fn(); return nil }); err != nil {
			failed(err)
		}
	})
}
