package transport

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/loci-dev/loci/fault"
)

// MaxBodyBytes bounds a JSON request body.
const MaxBodyBytes = 4 << 20

// decodeBody reads a JSON object strictly: unknown fields, trailing data,
// wrong types and oversize bodies are loci::input::invalid naming the
// problem. An empty body decodes as {} when optional is set.
func decodeBody(r *http.Request, v any, optional bool) error {
	if hasBody(r) {
		if err := requireJSON(r); err != nil {
			return err
		}
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
	if err != nil {
		return fault.Wrap(fault.InputInvalid, err, "body: cannot be read", "send the request again")
	}
	if len(raw) > MaxBodyBytes {
		return fault.Newf(fault.InputTooLarge, "send at most 4 MiB; split the content", "body: is larger than %d bytes", MaxBodyBytes)
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		if optional {
			return nil
		}
		return fault.Invalid("body", "is empty; a JSON object is required")
	}
	if err := checkUTF8(raw); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		var se *json.SyntaxError
		switch {
		case errors.As(err, &te):
			field := te.Field
			if field == "" {
				field = "body"
			}
			return fault.Invalid(field, fmt.Sprintf("must be %s, not JSON %s", fault.JSONType(te.Type.Kind()), te.Value))
		case errors.As(err, &se):
			return fault.Invalid("body", fmt.Sprintf("is not valid JSON (at byte %d)", se.Offset))
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return fault.Invalid(strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`), "is not a field of this request")
		}
		return fault.Invalid("body", "is not a valid JSON object: "+err.Error())
	}
	if dec.More() {
		return fault.Invalid("body", "has data after the JSON object")
	}
	return nil
}

// param is a path parameter, unescaped.
func param(r *http.Request, name string) (string, error) {
	v := chi.URLParam(r, name)
	s, err := url.PathUnescape(v)
	if err != nil {
		return "", fault.Newf(fault.PalacePathInvalid, "percent-encode names correctly", "path segment %q is not valid percent-encoding", v)
	}
	return s, nil
}

// queryLimit parses a limit: absent or 0 is def, above max or negative is
// refused.
func queryLimit(r *http.Request, name string, def, max int) (int, error) {
	n, given, err := queryWhole(r, name)
	if err != nil || !given {
		return def, err
	}
	return checkLimit(name, n, def, max)
}

// queryWhole reads an optional whole-number query parameter: absent or
// empty is not given; anything but a whole number is refused naming it.
// Every numeric query parameter is read through it (checkQuery has
// refused unknown and repeated ones already).
func queryWhole(r *http.Request, name string) (n int, given bool, err error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return 0, false, nil
	}
	n, err = strconv.Atoi(v)
	if err != nil {
		return 0, false, fault.Invalid(name, fmt.Sprintf("%q is not a whole number", v))
	}
	return n, true, nil
}

// queryRange reads an optional whole number from lo to hi; absent is def.
func queryRange(r *http.Request, name string, def, lo, hi int) (int, error) {
	n, given, err := queryWhole(r, name)
	switch {
	case err != nil:
		return 0, err
	case !given:
		return def, nil
	case n < lo || n > hi:
		return 0, fault.Invalid(name, fmt.Sprintf("%d is outside %d to %d (default %d)", n, lo, hi, def))
	}
	return n, nil
}

// queryInstant reads an optional instant (RFC 3339 or a date); absent or
// empty is nil.
func queryInstant(r *http.Request, name string) (*time.Time, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return nil, nil
	}
	t, err := ParseInstant(name, v)
	if err != nil {
		return nil, err
	}
	return &t, nil
}

// checkLimit applies the limit rules: 0 is the default, def; 1 to max as
// given; anything else is refused naming the argument.
func checkLimit(name string, n, def, max int) (int, error) {
	switch {
	case n < 0 || n > max:
		return 0, fault.Invalid(name, fmt.Sprintf("%d is outside 0 to %d (0 means the default, %d)", n, max, def))
	case n == 0:
		return def, nil
	}
	return n, nil
}

// queryBool parses an optional boolean query parameter.
func queryBool(r *http.Request, name string) (bool, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fault.Invalid(name, fmt.Sprintf("%q is not true or false", v))
	}
	return b, nil
}

// ParseInstant reads an RFC 3339 timestamp or a YYYY-MM-DD date (midnight
// UTC at the start of that day).
func ParseInstant(field, v string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t.UTC(), nil
	}
	if t, err := time.Parse(time.DateOnly, v); err == nil {
		return t.UTC(), nil
	}
	return time.Time{}, fault.Invalid(field, fmt.Sprintf("%q is not an RFC 3339 timestamp or a YYYY-MM-DD date", v))
}
