package integration

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/jsonc"
)

// The JSON edits splice text into the document as it is: every byte
// outside the member or element they add, replace or delete stays as it
// was (key order, indentation, comments of a JSONC file). Positions are
// found on the document with comments and trailing commas blanked out
// (jsonc.ToJSON keeps every offset), and the edit is made on the original
// bytes.

// jsonDoc is a JSON (or JSONC) document being edited.
type jsonDoc struct {
	src []byte // the document as it is
}

// errNotObject is returned when a path crosses a value that is not an
// object.
var errNotObject = errors.New("not an object")

// parseJSON checks that src is a JSON (or JSONC) object.
func parseJSON(src []byte) (*jsonDoc, error) {
	if len(bytes.TrimSpace(src)) == 0 {
		return &jsonDoc{src: []byte("{}\n")}, nil
	}
	clean := jsonc.ToJSON(src)
	if !json.Valid(clean) {
		var v any
		err := json.Unmarshal(clean, &v)
		return nil, fmt.Errorf("not valid JSON: %v", err)
	}
	if root := gjson.ParseBytes(clean); !root.IsObject() {
		return nil, errors.New("the top level is not an object")
	}
	return &jsonDoc{src: src}, nil
}

// root is the top-level value with its absolute offset.
func (d *jsonDoc) root() gjson.Result {
	clean := jsonc.ToJSON(d.src)
	r := gjson.ParseBytes(clean)
	r.Raw = strings.TrimRight(r.Raw, " \t\r\n")
	r.Index = bytes.Index(clean, []byte(r.Raw))
	return r
}

// member finds key in the object obj: the key's and the value's results
// (absolute offsets), and whether it is there.
func member(obj gjson.Result, key string) (k, v gjson.Result, ok bool) {
	obj.ForEach(func(kk, vv gjson.Result) bool {
		if kk.String() == key {
			k, v, ok = kk, vv, true
			return false
		}
		return true
	})
	return k, v, ok
}

// lookup returns the value at path and whether it exists; an
// intermediate value that is not an object is errNotObject.
func (d *jsonDoc) lookup(path []string) (gjson.Result, bool, error) {
	cur := d.root()
	for _, key := range path {
		if !cur.IsObject() {
			return gjson.Result{}, false, errNotObject
		}
		_, v, ok := member(cur, key)
		if !ok {
			return gjson.Result{}, false, nil
		}
		cur = v
	}
	return cur, true, nil
}

// get returns the raw value at path, nil when absent.
func (d *jsonDoc) get(path []string) (json.RawMessage, error) {
	v, ok, err := d.lookup(path)
	if err != nil || !ok {
		return nil, err
	}
	return json.RawMessage(d.src[v.Index : v.Index+len(v.Raw)]), nil
}

// splice replaces src[from:to] with text.
func (d *jsonDoc) splice(from, to int, text string) {
	out := make([]byte, 0, len(d.src)-(to-from)+len(text))
	out = append(out, d.src[:from]...)
	out = append(out, text...)
	out = append(out, d.src[to:]...)
	d.src = out
}

// indentUnit is the document's indentation step: the leading whitespace of
// its first indented line, else two spaces.
func (d *jsonDoc) indentUnit() string {
	for _, line := range bytes.Split(d.src, []byte("\n"))[1:] {
		ws := line[:len(line)-len(bytes.TrimLeft(line, " \t"))]
		if len(ws) > 0 && len(ws) < len(line) {
			return string(ws)
		}
	}
	return "  "
}

// lineIndent is the leading whitespace of the line holding offset i.
func (d *jsonDoc) lineIndent(i int) string {
	start := bytes.LastIndexByte(d.src[:i], '\n') + 1
	line := d.src[start:]
	return string(line[:len(line)-len(bytes.TrimLeft(line, " \t"))])
}

// render marshals v indented for a value starting on a line indented by
// prefix; with no unit, on one line.
func render(v any, prefix, unit string) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if unit != "" {
		enc.SetIndent(prefix, unit)
	}
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return string(bytes.TrimRight(b.Bytes(), "\n")), nil
}

// set writes value at path, creating the objects on the way; an existing
// value is replaced in place.
func (d *jsonDoc) set(path []string, value any) error {
	unit := d.indentUnit()
	cur := d.root()
	for i, key := range path {
		if !cur.IsObject() {
			return errNotObject
		}
		k, v, ok := member(cur, key)
		if ok && i < len(path)-1 {
			cur = v
			continue
		}
		if ok {
			if !strings.Contains(v.Raw, "\n") {
				unit = "" // a one-line value stays on one line
			}
			text, err := render(value, d.lineIndent(k.Index), unit)
			if err != nil {
				return err
			}
			d.splice(v.Index, v.Index+len(v.Raw), text)
			return nil
		}
		// Build the rest of the path as nested objects and insert it.
		var nested any = value
		for j := len(path) - 1; j > i; j-- {
			nested = orderedObject{{path[j], nested}}
		}
		return d.insertMember(cur, key, nested, unit)
	}
	return nil
}

// orderedObject is a JSON object that keeps its keys' order.
type orderedObject []field

type field struct {
	key   string
	value any
}

// MarshalJSON writes the fields in order.
func (o orderedObject) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(f.key)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		var vb bytes.Buffer
		enc := json.NewEncoder(&vb)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(f.value); err != nil {
			return nil, err
		}
		b.Write(bytes.TrimRight(vb.Bytes(), "\n"))
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// insertMember adds "key": value as the last member of obj.
func (d *jsonDoc) insertMember(obj gjson.Result, key string, value any, unit string) error {
	kq, _ := json.Marshal(key)
	closeAt := obj.Index + len(obj.Raw) - 1
	var firstKey, lastVal gjson.Result
	n := 0
	obj.ForEach(func(k, v gjson.Result) bool {
		if n == 0 {
			firstKey = k
		}
		lastVal = v
		n++
		return true
	})
	if n == 0 {
		outer := d.lineIndent(obj.Index)
		inner := outer + unit
		text, err := render(value, inner, unit)
		if err != nil {
			return err
		}
		d.splice(obj.Index+1, closeAt, "\n"+inner+string(kq)+": "+text+"\n"+outer)
		return nil
	}
	end := lastVal.Index + len(lastVal.Raw)
	if !bytes.Contains(d.src[obj.Index:firstKey.Index], []byte("\n")) {
		// A one-line object stays on one line.
		text, err := render(value, "", "")
		if err != nil {
			return err
		}
		d.splice(end, end, ", "+string(kq)+": "+text)
		return nil
	}
	inner := d.lineIndent(firstKey.Index)
	text, err := render(value, inner, unit)
	if err != nil {
		return err
	}
	d.splice(end, end, ",\n"+inner+string(kq)+": "+text)
	return nil
}

// remove deletes the member at path (nothing when absent) with the
// separator that went with it.
func (d *jsonDoc) remove(path []string) error {
	if len(path) == 0 {
		return nil
	}
	parent, ok, err := d.lookup(path[:len(path)-1])
	if err != nil || !ok || !parent.IsObject() {
		return err
	}
	key := path[len(path)-1]
	type span struct{ k, v gjson.Result }
	var all []span
	at := -1
	parent.ForEach(func(k, v gjson.Result) bool {
		if k.String() == key && at < 0 {
			at = len(all)
		}
		all = append(all, span{k, v})
		return true
	})
	if at < 0 {
		return nil
	}
	closeAt := parent.Index + len(parent.Raw) - 1
	switch {
	case len(all) == 1:
		d.splice(parent.Index+1, closeAt, "")
	case at > 0:
		prev := all[at-1].v
		cur := all[at].v
		d.splice(prev.Index+len(prev.Raw), cur.Index+len(cur.Raw), "")
	default:
		d.splice(all[0].k.Index, all[1].k.Index, "")
	}
	return nil
}

// elements returns the elements of the array at path (absolute offsets).
func (d *jsonDoc) elements(path []string) ([]gjson.Result, gjson.Result, bool, error) {
	arr, ok, err := d.lookup(path)
	if err != nil || !ok {
		return nil, arr, ok, err
	}
	if !arr.IsArray() {
		return nil, arr, true, errors.New("not an array")
	}
	var out []gjson.Result
	arr.ForEach(func(_, v gjson.Result) bool {
		out = append(out, v)
		return true
	})
	return out, arr, true, nil
}

// appendElement adds value as the last element of the array at path,
// creating it (and the objects on the way) when absent.
func (d *jsonDoc) appendElement(path []string, value any) error {
	els, arr, ok, err := d.elements(path)
	if err != nil {
		return err
	}
	if !ok {
		return d.set(path, []any{value})
	}
	unit := d.indentUnit()
	closeAt := arr.Index + len(arr.Raw) - 1
	if len(els) == 0 {
		outer := d.lineIndent(arr.Index)
		inner := outer + unit
		text, err := render(value, inner, unit)
		if err != nil {
			return err
		}
		d.splice(arr.Index+1, closeAt, "\n"+inner+text+"\n"+outer)
		return nil
	}
	last := els[len(els)-1]
	end := last.Index + len(last.Raw)
	if !bytes.Contains(d.src[arr.Index:els[0].Index], []byte("\n")) {
		text, err := render(value, "", "")
		if err != nil {
			return err
		}
		d.splice(end, end, ", "+text)
		return nil
	}
	inner := d.lineIndent(els[0].Index)
	text, err := render(value, inner, unit)
	if err != nil {
		return err
	}
	d.splice(end, end, ",\n"+inner+text)
	return nil
}

// replaceElement replaces element i of the array at path.
func (d *jsonDoc) replaceElement(path []string, i int, value any) error {
	els, _, _, err := d.elements(path)
	if err != nil {
		return err
	}
	el := els[i]
	unit := d.indentUnit()
	if !strings.Contains(el.Raw, "\n") {
		unit = ""
	}
	text, err := render(value, d.lineIndent(el.Index), unit)
	if err != nil {
		return err
	}
	d.splice(el.Index, el.Index+len(el.Raw), text)
	return nil
}

// removeElement deletes element i of the array at path with its
// separator.
func (d *jsonDoc) removeElement(path []string, i int) error {
	els, arr, _, err := d.elements(path)
	if err != nil {
		return err
	}
	closeAt := arr.Index + len(arr.Raw) - 1
	switch {
	case len(els) == 1:
		d.splice(arr.Index+1, closeAt, "")
	case i > 0:
		prev, cur := els[i-1], els[i]
		d.splice(prev.Index+len(prev.Raw), cur.Index+len(cur.Raw), "")
	default:
		d.splice(els[0].Index, els[1].Index, "")
	}
	return nil
}

// gjsonResult is a located JSON value.
type gjsonResult = gjson.Result

// stripJSONC blanks a JSONC document's comments and trailing commas.
func stripJSONC(src []byte) []byte { return jsonc.ToJSON(src) }
