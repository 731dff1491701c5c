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

// maxJSONDepth is the deepest document a JSON function reads or builds
// (MySQL's own limit): past it the statement fails with too_large, so
// that no walk over a document (the engine's, or the measure here) nests
// without end, and no path JSON_SEARCH writes grows with the depth.
const maxJSONDepth = 100

// tooDeep is the size a measure answers for a document past maxJSONDepth.
const tooDeep = 1<<62 + 1

func init() {
	for _, name := range jsonBuilders {
		mode := walkText
		if name == "json_pretty" {
			mode = walkPretty
		}
		boundedFuncs[name] = jsonArgs(mode)
		jsonResults[name] = true
	}
	// JSON_SEARCH writes a path for every string it matches: at most
	// every string's path, measured before any is written.
	boundedFuncs["json_search"] = jsonArgs(walkPaths)
	for name := range jsonResults {
		if _, ok := boundedFuncs[name]; !ok {
			boundedFuncs[name] = jsonArgs(walkDepth)
		}
	}
}

// jsonArgs is the size of a JSON function's result from its arguments,
// each measured in the mode's way until the sum is past MaxValueBytes.
func jsonArgs(mode walkMode) sizeFunc {
	return func(_ *sql.Context, v []any) int64 {
		budget := int64(MaxValueBytes) + 1
		var n int64
		for _, x := range v {
			m := jsonText(x, budget-n, mode)
			if m == tooDeep {
				return m
			}
			if n += m; n >= budget {
				return n
			}
		}
		if mode == walkDepth {
			return 0
		}
		return n
	}
}

// walkMode is what a measure counts.
type walkMode int

const (
	walkText   walkMode = iota // the document's text
	walkPretty                 // JSON_PRETTY's text: every value indented by its depth
	walkPaths                  // JSON_SEARCH's paths: every string's path
	walkDepth                  // only the depth (its steps still bounded)
)

// jsonText is the bytes of a value's JSON text (pretty: indented as
// JSON_PRETTY indents), counted only until budget is reached: a
// document whose parts are shared (JSON_ARRAY(s, s) repeated) costs at
// most budget steps to measure, never its full expansion. The answer is
// at least budget when the text is that large or larger.
func jsonText(v any, budget int64, mode walkMode) int64 {
	w := jsonWalk{budget: budget, mode: mode, pretty: mode == walkPretty}
	if mode == walkDepth {
		w.budget = MaxValueBytes + 1
	}
	w.value(v, 0, 1)
	if w.deep {
		return tooDeep
	}
	if mode == walkDepth {
		return 0
	}
	return w.n
}

type jsonWalk struct {
	n, budget int64
	mode      walkMode
	pretty    bool
	deep      bool
}

func (w *jsonWalk) full() bool { return w.n >= w.budget }

// value measures v at depth, whose path ($[0].k...) is path bytes long.
func (w *jsonWalk) value(v any, depth, path int64) {
	if w.full() {
		return
	}
	if depth > maxJSONDepth {
		w.deep = true
		w.n = w.budget
		return
	}
	switch x := v.(type) {
	case nil:
		w.n += 4
	case bool:
		w.n += 5
	case string:
		if w.mode == walkPaths {
			w.n += path + 4
			return
		}
		w.str(x)
	case []byte:
		w.n += int64(len(x))*2 + 2
	case float64:
		w.n += int64(len(strconv.FormatFloat(x, 'g', -1, 64)))
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32:
		w.n += int64(len(fmt.Sprint(x)))
	case []any:
		w.n += 2
		for i, e := range x {
			if w.full() {
				return
			}
			w.n += 2 + w.indent(depth+1)
			w.value(e, depth+1, path+2+int64(len(strconv.Itoa(i))))
		}
	case map[string]any:
		w.n += 2
		for k, e := range x {
			if w.full() {
				return
			}
			w.n += 4 + w.indent(depth+1)
			w.str(k)
			w.value(e, depth+1, path+3+int64(len(k)))
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
		w.value(in, depth, path)
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
