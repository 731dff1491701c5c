// Package wire writes a Go guest's answers to standard output, faster
// than encoding/json where it matters: Serve is contract.Serve, except
// that the answers carrying documents or items (a page of a listing, a
// read) are written by hand, byte for byte what encoding/json writes;
// encoding/json's reflection is most of a call's cost in WebAssembly.
// The bundled guests use it; it imports the contract and the standard
// library only.
package wire

import (
	"bufio"
	"encoding/json"
	"os"
	"strconv"
	"unicode/utf8"

	"github.com/loci-dev/loci/sources/contract"
)

// Serve is contract.Serve with a faster writer for the answers that
// carry items or documents. Every other answer goes through
// encoding/json.
func Serve(h contract.Handler) {
	a := contract.Handle(h, os.Stdin)
	w := bufio.NewWriterSize(os.Stdout, 1<<16)
	var err error
	if Fast(a) {
		_, err = w.Write(AppendAnswer(make([]byte, 0, 1<<20), a))
	} else {
		err = json.NewEncoder(w).Encode(a)
	}
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		os.Stderr.WriteString("writing the answer: " + err.Error() + "\n")
		os.Exit(1)
	}
}

// Fast reports an answer AppendAnswer writes: items or documents, and
// nothing else.
func Fast(a *contract.Answer) bool {
	return a.Error == nil && len(a.Needs) == 0 && len(a.State) == 0 && a.Identity == nil && (a.Items != nil || a.Documents != nil)
}

// appendAnswer appends a's JSON (as encoding/json writes it, newline
// ended) to b; a is one fast accepts.
func AppendAnswer(b []byte, a *contract.Answer) []byte {
	b = append(b, '{')
	sep := false
	if len(a.Items) > 0 {
		b = append(b, `"items":[`...)
		for i := range a.Items {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendItem(b, &a.Items[i])
		}
		b = append(b, ']')
		sep = true
	}
	if a.More {
		if sep {
			b = append(b, ',')
		}
		b = append(b, `"more":true`...)
		sep = true
	}
	if len(a.Documents) > 0 {
		if sep {
			b = append(b, ',')
		}
		b = append(b, `"documents":[`...)
		for i, r := range a.Documents {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"id":`...)
			b = AppendString(b, r.ID)
			if r.Document != nil {
				b = append(b, `,"document":`...)
				b = appendDocument(b, r.Document)
			}
			if r.Error != nil {
				b = append(b, `,"error":{"kind":`...)
				b = AppendString(b, r.Error.Kind)
				b = append(b, `,"message":`...)
				b = AppendString(b, r.Error.Message)
				b = append(b, '}')
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, "}\n"...)
}

func appendItem(b []byte, it *contract.Item) []byte {
	b = append(b, `{"id":`...)
	b = AppendString(b, it.ID)
	b = append(b, `,"cursor":`...)
	b = appendRaw(b, it.Cursor)
	if it.Size != 0 {
		b = append(b, `,"size":`...)
		b = strconv.AppendInt(b, it.Size, 10)
	}
	if it.Filtered != "" {
		b = append(b, `,"filtered":`...)
		b = AppendString(b, it.Filtered)
	}
	if it.Document != nil {
		b = append(b, `,"document":`...)
		b = appendDocument(b, it.Document)
	}
	return append(b, '}')
}

func appendDocument(b []byte, d *contract.Document) []byte {
	b = append(b, `{"name":`...)
	b = AppendString(b, d.Name)
	for _, f := range []struct{ key, v string }{{"room", d.Room}, {"kind", d.Kind}, {"uri", d.URI}} {
		if f.v != "" {
			b = append(b, `,"`+f.key+`":`...)
			b = AppendString(b, f.v)
		}
	}
	if len(d.Origin) > 0 {
		b = append(b, `,"origin":`...)
		b = appendRaw(b, d.Origin)
	}
	if d.Meta != "" {
		b = append(b, `,"meta":`...)
		b = AppendString(b, d.Meta)
	}
	b = append(b, `,"units":`...)
	if d.Units == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, u := range d.Units {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendString(b, u)
		}
		b = append(b, ']')
	}
	if d.Bytes != 0 {
		b = append(b, `,"bytes":`...)
		b = strconv.AppendInt(b, d.Bytes, 10)
	}
	return append(b, '}')
}

// appendRaw appends a JSON value this source wrote itself (compact,
// valid), or null.
func appendRaw(b []byte, raw json.RawMessage) []byte {
	if len(raw) == 0 {
		return append(b, "null"...)
	}
	return append(b, raw...)
}

const hex = "0123456789abcdef"

// AppendString appends s as a JSON string the way encoding/json does:
// invalid UTF-8 as U+FFFD, control characters, <, >, & and U+2028 and
// U+2029 escaped.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
