package installed

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/sources"
	"github.com/loci-dev/loci/sources/contract"
)

// do makes one call with grants g: the request stamped with the contract
// version, the run's token and the time, the context bounded by the call's time limit.
// The answer comes back only when it is the call's own (no error, no
// needs left); an error answer is mapped to loci's codes, and every error
// names the source.
func (a *adapter) do(ctx context.Context, g grants, req *contract.Request) (*contract.Answer, error) {
	req.Contract = contract.Version
	req.Token = g.token
	if a.o.Prepare != nil {
		if err := a.o.Prepare(ctx); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			var fe *fault.Error
			if errors.As(err, &fe) {
				return nil, err
			}
			return nil, a.failed(fmt.Sprintf("could not be prepared for its %s call: %v", req.Call, err))
		}
	}
	req.Now = time.Now().UTC().Format(time.RFC3339)
	cctx := ctx
	if a.o.Timeout > 0 {
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeout(ctx, a.o.Timeout)
		defer cancel()
	}
	ans, err := a.call(cctx, g.Grants, req)
	if err != nil {
		switch {
		case ctx.Err() != nil:
			// The job's own stop, not the source's doing.
			return nil, ctx.Err()
		case cctx.Err() != nil:
			// This call's time limit, whatever the caller made of it.
			return nil, fault.Newf(fault.SourceTimeout, "raise mining.source_timeout_secs if the source is slow, or report it to whoever wrote it",
				"the source %s: its %s call ran past its time limit of %s and was stopped", a.m.Name, req.Call, a.o.Timeout)
		}
		var fe *fault.Error
		if errors.As(err, &fe) {
			// The sandbox's own (timeout, permission_denied, failed): what
			// they quote of the guest cleaned, the source named, the cause
			// (which may quote more of the guest) left out.
			msg := a.clean(fe.Msg, g)
			if !strings.Contains(msg, a.m.Name) {
				msg = "the source " + a.m.Name + ": " + msg
			}
			return nil, fault.New(fe.Code, msg, fe.Help)
		}
		return nil, a.failed(fmt.Sprintf("its %s call failed: %s", req.Call, a.quote(err.Error(), g)))
	}
	switch {
	case ans == nil:
		return nil, a.failed(fmt.Sprintf("gave no answer to its %s call", req.Call))
	case ans.Error != nil:
		return nil, a.guestError(req.Call, ans.Error, g)
	case len(ans.Needs) > 0:
		return nil, a.failed(fmt.Sprintf("answered its %s call with needs the host did not do", req.Call))
	}
	return ans, nil
}

// help is the help of a source's failure.
func (a *adapter) help() string {
	return "the source's code failed, not the daemon: report it to whoever wrote the " + a.m.Name + " source"
}

// failed is loci::source::failed: the source named, then what it did.
func (a *adapter) failed(what string) *fault.Error {
	return fault.New(fault.SourceFailed, "the source "+a.m.Name+": "+what, a.help())
}

// guestError maps a package's error answer to loci's codes: invalid is
// the user's input, cursor_invalid a stored cursor the source does not
// read, anything else (failed, a kind contract 1 does not know) the
// source failing.
func (a *adapter) guestError(call string, e *contract.Error, g grants) error {
	msg := a.quote(e.Message, g)
	switch e.Kind {
	case contract.ErrInvalid:
		return fault.New(fault.InputInvalid, fmt.Sprintf("the source %s: %s", a.m.Name, msg),
			"correct the locator or the options and try again")
	case contract.ErrCursor:
		return fault.New(fault.SourceCursorInvalid, fmt.Sprintf("the source %s: the stored cursor is not one it reads: %s", a.m.Name, msg),
			"mine again with full, which reads everything again without duplicating")
	case contract.ErrFailed:
		return a.failed(fmt.Sprintf("its %s call failed: %s", call, msg))
	}
	return a.failed(fmt.Sprintf("its %s call failed with an error of kind %s, which contract %d does not know: %s",
		call, a.quote(e.Kind, g), contract.Version, msg))
}

// quote is a package's own text as an error repeats it: cleaned
// (clean), at most maxQuoted bytes, quoted.
func (a *adapter) quote(s string, g grants) string {
	return fmt.Sprintf("%q", fault.Clip(a.clean(s, g), maxQuoted))
}

// clean is a package's text made safe to show and keep: valid UTF-8,
// control characters (a terminal's escapes) made spaces, the values of
// the run's token (the credential it was handed) and the values of the
// variables it was granted replaced by their names, and secrets the
// scanner finds redacted. A package's message may repeat a token it was
// given; the job's error is stored and shown.
func (a *adapter) clean(s string, g grants) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(g.token) >= 4 {
		s = strings.ReplaceAll(s, g.token, "[credential]")
	}
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	// Longest values first, so that one holding another is replaced whole.
	names := make([]string, 0, len(g.Env))
	for n, v := range g.Env {
		if len(v) >= 4 {
			names = append(names, n)
		}
	}
	sort.Slice(names, func(i, j int) bool { return len(g.Env[names[i]]) > len(g.Env[names[j]]) })
	for _, n := range names {
		s = strings.ReplaceAll(s, g.Env[n], "[$"+n+"]")
	}
	red, _ := sources.Redact(s, sources.Scan(s))
	return red
}

// sameJSON reports two JSON texts equal byte for byte once compacted.
func sameJSON(x, y json.RawMessage) bool {
	var bx, by bytes.Buffer
	if json.Compact(&bx, x) != nil || json.Compact(&by, y) != nil {
		return bytes.Equal(x, y)
	}
	return bytes.Equal(bx.Bytes(), by.Bytes())
}
