package transport

import (
	"context"
	"net/http"

	"github.com/loci-dev/loci/fault"
)

// Mode is a memory mode.
type Mode string

// The memory modes.
const (
	ModeFull     Mode = "full"
	ModeReadOnly Mode = "read_only"
	ModeDisabled Mode = "disabled"
)

// ModeHeader carries the memory mode of a REST request.
const ModeHeader = "X-Loci-Mode"

// ParseMode reads a mode; "" is full.
func ParseMode(v string) (Mode, error) {
	switch Mode(v) {
	case "", ModeFull:
		return ModeFull, nil
	case ModeReadOnly, ModeDisabled:
		return Mode(v), nil
	}
	return "", fault.Newf(fault.InputInvalid, "send "+ModeHeader+": full, read_only or disabled (or leave it out for full)",
		"%s: %q is not a memory mode", ModeHeader, v)
}

type modeKey struct{}

// modeOf is the request's mode, parsed by the mode middleware.
func modeOf(r *http.Request) Mode {
	if m, ok := r.Context().Value(modeKey{}).(Mode); ok {
		return m
	}
	return ModeFull
}

func withMode(ctx context.Context, m Mode) context.Context {
	return context.WithValue(ctx, modeKey{}, m)
}

// Allow checks an operation against a mode.
func (m Mode) Allow(write bool) error {
	switch {
	case m == ModeDisabled:
		return fault.New(fault.ModeForbidden, "memory is disabled for this request",
			"send "+ModeHeader+": read_only or full to use memory")
	case m == ModeReadOnly && write:
		return fault.New(fault.ModeForbidden, "memory is read-only for this request; writing is refused",
			"send "+ModeHeader+": full to write")
	}
	return nil
}
