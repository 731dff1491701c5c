package transport

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/loci-dev/loci/fault"
)

// replacement is U+FFFD as UTF-8.
var replacement = []byte("\uFFFD")

// checkUTF8 refuses a JSON text holding a string that is not valid UTF-8:
// raw bytes that are not UTF-8, or a \u escape of a lone surrogate.
// encoding/json would replace either with U+FFFD, so the stored text would
// not be what was sent, and two different sends would compare equal. The
// error names the field (its key path) holding the string.
func checkUTF8(raw []byte) error {
	if utf8.Valid(raw) && !surrogateEscape(raw) {
		return nil
	}
	type level struct {
		obj       bool
		key       string
		expectKey bool
	}
	var stack []level
	dec := json.NewDecoder(bytes.NewReader(raw))
	prev := dec.InputOffset()
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // not JSON: the decoder says so next
		}
		end := dec.InputOffset()
		lit := raw[prev:end]
		prev = end
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				stack = append(stack, level{obj: true, expectKey: true})
			case '[':
				stack = append(stack, level{})
			default:
				stack = stack[:len(stack)-1]
				if n := len(stack); n > 0 && stack[n-1].obj {
					stack[n-1].expectKey = true
				}
			}
			continue
		case string:
			n := len(stack)
			isKey := n > 0 && stack[n-1].obj && stack[n-1].expectKey
			if replaced(t, lit) {
				field := "body"
				if !isKey {
					var keys []string
					for _, l := range stack {
						if l.obj && l.key != "" {
							keys = append(keys, l.key)
						}
					}
					if len(keys) > 0 {
						field = strings.Join(keys, ".")
					}
				}
				return fault.Invalid(field, "is not valid UTF-8 (raw bytes that are not UTF-8, or a lone \\u surrogate escape); send text as UTF-8 so it is stored exactly as sent")
			}
			if isKey {
				stack[n-1].key, stack[n-1].expectKey = t, false
				continue
			}
		}
		if n := len(stack); n > 0 && stack[n-1].obj {
			stack[n-1].expectKey = true
		}
	}
}

// replaced reports whether decoding the literal lit into s replaced
// something with U+FFFD: s holds more of them than lit spells out.
func replaced(s string, lit []byte) bool {
	got := strings.Count(s, "\uFFFD")
	if got == 0 {
		return false
	}
	spelled := bytes.Count(lit, replacement) + bytes.Count(bytes.ToLower(lit), []byte(`\ufffd`))
	return got > spelled
}

// surrogateEscape reports a \u escape in the surrogate range (U+D800 to
// U+DFFF), paired or not; only then is the slower walk needed.
func surrogateEscape(raw []byte) bool {
	for i := bytes.Index(raw, []byte(`\u`)); i >= 0 && i+3 < len(raw); {
		if c, d := raw[i+2], raw[i+3]; (c == 'd' || c == 'D') && strings.IndexByte("89abcdefABCDEF", d) >= 0 {
			return true
		}
		j := bytes.Index(raw[i+2:], []byte(`\u`))
		if j < 0 {
			return false
		}
		i += 2 + j
	}
	return false
}
