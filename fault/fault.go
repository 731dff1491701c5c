// Package fault defines loci's one error type. Every failure that reaches a
// client (REST, MCP or CLI) is a *fault.Error carrying a stable code of the
// form loci::<module>::<kind>, a message, a help text saying what to do, and
// the HTTP status the code maps to. The cause (Err) is only ever logged.
package fault

import (
	"errors"
	"fmt"
	"reflect"
	"unicode/utf8"
)

// Bounds on what an error repeats of its input: a refused 100 KB name is
// quoted by a prefix, and no message grows past MaxMsg bytes.
const (
	// MaxQuoted is the most of one string argument a message repeats.
	MaxQuoted = 96
	// MaxMsg is the most bytes of a message a client receives.
	MaxMsg = 1024
)

// Clip shortens s to at most n bytes on a character boundary, marking the
// cut with "…" and the full length.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s…(%d bytes)", s[:cut], len(s))
}

// clipArgs bounds the string arguments of a formatted message.
func clipArgs(args []any) []any {
	out := args
	for i, a := range args {
		if s, ok := a.(string); ok && len(s) > MaxQuoted {
			if &out[0] == &args[0] {
				out = append([]any(nil), args...)
			}
			out[i] = Clip(s, MaxQuoted)
		}
	}
	return out
}

// Error is the single error type of loci. Msg and Help reach clients as
// {error, code, help}; Err is the underlying cause, for logs only.
type Error struct {
	Code Code
	Msg  string
	Help string
	Err  error
	// Status overrides the code's registered HTTP status: the CLI reports
	// a daemon's rejection with the daemon's status, and a shared store
	// that cannot be reached answers 503 (Service Unavailable).
	Status int
	// RetryAfter, when above 0, is how many seconds a client should wait
	// before trying again: REST sends it as the Retry-After header.
	RetryAfter int
	// Remote is the daemon's own code when Code is client::remote_rejected.
	Remote Code
}

// Error implements error.
func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Msg, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Msg)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// HTTPStatus is the status this error is answered with.
func (e *Error) HTTPStatus() int {
	if e.Status != 0 {
		return e.Status
	}
	return e.Code.Status()
}

// Body is the wire form of an error: {error, code, help}.
type Body struct {
	Error string `json:"error"`
	Code  string `json:"code"`
	Help  string `json:"help"`
	// Status is the HTTP status; set only where a client reports a remote
	// rejection.
	Status int `json:"status,omitempty"`
	// RemoteCode is the daemon's own code on a client::remote_rejected.
	RemoteCode string `json:"remote_code,omitempty"`
}

// Body renders the error for a client.
func (e *Error) Body() Body {
	b := Body{Error: Clip(e.Msg, MaxMsg), Code: string(e.Code), Help: e.Help}
	if e.Code == ClientRemoteRejected {
		b.Status = e.HTTPStatus()
		b.RemoteCode = string(e.Remote)
	}
	return b
}

// New makes an error with a code, a message and a help text.
func New(code Code, msg, help string) *Error {
	return &Error{Code: code, Msg: msg, Help: help}
}

// Newf is New with a formatted message.
func Newf(code Code, help, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, clipArgs(args)...), Help: help}
}

// Wrap makes an error with a code around a cause.
func Wrap(code Code, err error, msg, help string) *Error {
	return &Error{Code: code, Msg: msg, Help: help, Err: err}
}

// Invalid is the common loci::input::invalid error naming the offending field.
func Invalid(field, problem string) *Error {
	return &Error{
		Code: InputInvalid,
		Msg:  fmt.Sprintf("%s: %s", Clip(field, MaxQuoted), Clip(problem, MaxMsg/2)),
		Help: fmt.Sprintf("correct %q and send the request again", Clip(field, MaxQuoted)),
	}
}

// As returns err as a *Error, or a server failure wrapping it when it is
// not one.
func As(err error) *Error {
	if err == nil {
		return nil
	}
	var fe *Error
	if errors.As(err, &fe) {
		return fe
	}
	return &Error{Code: ServerFailed, Msg: "internal error", Help: "see the daemon log; report it if it repeats", Err: err}
}

// Is reports whether err is a *Error with the given code.
func Is(err error, code Code) bool {
	var fe *Error
	return errors.As(err, &fe) && fe.Code == code
}

// JSONType names what a Go value of kind k is in JSON ("a string", "a
// number", "an array", "an object", "true or false"), for an error about a
// field of the wrong type.
func JSONType(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map, reflect.Pointer, reflect.Interface:
		return "an object"
	}
	return "a number"
}
