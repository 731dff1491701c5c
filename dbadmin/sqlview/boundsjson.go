package sqlview

import (
	"fmt"
	"strconv"

	"github.com/dolthub/go-mysql-server/sql"
)

// jsonBuilders are the engine's JSON functions that build a document
// from their arguments: the document's text is about the sum of the
// arguments' texts, so those are measured before the document is made.
// JSON_PRETTY's text also indents every value by its depth.
var jsonBuilders = []string{
	"json_array", "json_object", "json_merge", "json_merge_preserve", "json_merge_patch",
	"json_set", "json_insert", "json_replace", "json_array_append", "json_array_insert",
	"json_quote", "json_pretty",
}

// jsonResults are the engine's JSON functions whose result is measured
// once made (a wildcard path gathers every value it reaches, and a value
// of shared parts may be far larger as text than in memory): a result
// past MaxValueBytes is refused before anything turns it into text.
var jsonResults = map[string]bool{"json_extract": true, "json_search": true, "json_keys": true}

func init() {
	for _, name := range jsonBuilders {
		pretty := name == "json_pretty"
		boundedFuncs[name] = func(_ *sql.Context, v []any) int64 {
			budget := int64(MaxValueBytes) + 1
			var n int64
			for _, x := range v {
				n += jsonText(x, budget-n, pretty)
				if n >= budget {
					return n
				}
			}
			return n
		}
		jsonResults[name] = true
	}
	for name := range jsonResults {
		if _, ok := boundedFuncs[name]; !ok {
			boundedFuncs[name] = func(*sql.Context, []any) int64 { return 0 }
		}
	}
}

// jsonText is the bytes of a value's JSON text (pretty: indented as
// JSON_PRETTY indents), counted only until budget is reached: a
// document whose parts are shared (JSON_ARRAY(s, s) repeated) costs at
// most budget steps to measure, never its full expansion. The answer is
// at least budget when the text is that large or larger.
func jsonText(v any, budget int64, pretty bool) int64 {
	w := jsonWalk{budget: budget, pretty: pretty}
	w.value(v, 0)
	return w.n
}

type jsonWalk struct {
	n, budget int64
	pretty    bool
}

func (w *jsonWalk) full() bool { return w.n >= w.budget }

func (w *jsonWalk) value(v any, depth int64) {
	if w.full() {
		return
	}
	switch x := v.(type) {
	case nil:
		w.n += 4
	case bool:
		w.n += 5
	case string:
		w.str(x)
	case []byte:
		w.n += int64(len(x))*2 + 2
	case float64:
		w.n += int64(len(strconv.FormatFloat(x, 'g', -1, 64)))
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32:
		w.n += int64(len(fmt.Sprint(x)))
	case []any:
		w.n += 2
		for _, e := range x {
			if w.full() {
				return
			}
			w.n += 2 + w.indent(depth+1)
			w.value(e, depth+1)
		}
	case map[string]any:
		w.n += 2
		for k, e := range x {
			if w.full() {
				return
			}
			w.n += 4 + w.indent(depth+1)
			w.str(k)
			w.value(e, depth+1)
		}
	case sql.JSONWrapper:
		// A document kept as its text (the engine's lazy JSON) is its
		// text's length; others are walked.
		if l, ok := x.(interface{ GetBytes() ([]byte, error) }); ok {
			if b, err := l.GetBytes(); err == nil {
				w.n += int64(len(b))
				if w.pretty {
					w.n += int64(len(b)) * (depth + 1)
				}
				return
			}
		}
		in, err := x.ToInterface()
		if err != nil {
			return
		}
		if _, ok := in.(sql.JSONWrapper); ok {
			w.n += int64(len(fmt.Sprint(in)))
			return
		}
		w.value(in, depth)
	default:
		w.n += int64(len(fmt.Sprint(x)))
	}
}

// indent is a value's indentation in JSON_PRETTY's text: a new line and
// two spaces for each level.
func (w *jsonWalk) indent(depth int64) int64 {
	if !w.pretty {
		return 0
	}
	return 1 + 2*depth
}

// str is a JSON string's text: quoted, with its escapes.
func (w *jsonWalk) str(s string) {
	w.n += int64(len(s)) + 2
	for i := 0; i < len(s) && !w.full(); i++ {
		if c := s[i]; c == '"' || c == '\\' || c < 0x20 {
			w.n += 5
		}
	}
}
