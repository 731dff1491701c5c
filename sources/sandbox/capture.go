package sandbox

import (
	"bytes"
	"errors"
	"sync/atomic"
)

// errOverCap is what a capped writer answers past its cap.
var errOverCap = errors.New("output past the cap")

// capped keeps what is written up to limit bytes; the write that would
// pass it is refused, over is set and stop is called (it stops the writer:
// the instance or the program), so nothing past the cap is ever held.
type capped struct {
	buf   []byte // never grown past limit
	limit int64
	// budget, when set, is shared with other writers of one round: each
	// byte kept is taken from it too.
	budget *atomic.Int64
	over   bool
	// overBudget: the round's budget ran out before this writer's cap.
	overBudget bool
	stop       func()
}

func (w *capped) Write(p []byte) (int, error) {
	if w.over {
		return 0, errOverCap
	}
	n := int64(len(p))
	over := int64(len(w.buf))+n > w.limit
	if !over && w.budget != nil && w.budget.Add(-n) < 0 {
		over, w.overBudget = true, true
	}
	if over {
		w.over = true
		if w.stop != nil {
			w.stop()
		}
		return 0, errOverCap
	}
	if need := len(w.buf) + len(p); need > cap(w.buf) {
		nb := make([]byte, len(w.buf), min(max(need, 2*cap(w.buf), 512), int(w.limit)))
		copy(nb, w.buf)
		w.buf = nb
	}
	w.buf = append(w.buf, p...)
	return len(p), nil
}

// bytes is what was kept.
func (w *capped) bytes() []byte { return w.buf }

// head keeps the first limit bytes written and drops the rest without
// complaint (a guest's standard error: its first lines say what went
// wrong).
type head struct {
	buf   bytes.Buffer
	limit int
}

func (w *head) Write(p []byte) (int, error) {
	if room := w.limit - w.buf.Len(); room > 0 {
		w.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
