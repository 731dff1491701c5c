package sqlview

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"unicode/utf8"

	sqle "github.com/dolthub/go-mysql-server"
	"github.com/dolthub/go-mysql-server/memory"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/expression/function"
	"github.com/dolthub/go-mysql-server/sql/types"

	"github.com/loci-dev/loci/fault"
)

// MaxValueBytes is the largest value a statement may make (a string
// built by REPEAT, LPAD, RPAD, SPACE, CONCAT, CONCAT_WS, REPLACE,
// REGEXP_REPLACE, HEX, TO_BASE64 or UNCOMPRESS, or a JSON document built
// by JSON_ARRAY, JSON_OBJECT, JSON_MERGE*, JSON_SET and the other JSON
// builders, measured as text): past it the statement
// fails with loci::db::too_large before the value is made. The engine's
// @@max_allowed_packet reads it.
const MaxValueBytes = 16 << 20

// helpValue is the help of a value past MaxValueBytes.
const helpValue = "make smaller values (a value may hold at most 16 MiB, @@max_allowed_packet): read a part with LEFT(...) or SUBSTRING(...), or count with LENGTH(...) of the stored column instead of a built one"

// sizeFunc is the bytes a function's result will take, from its
// arguments' values (nil when an argument is NULL: no result to bound).
type sizeFunc func(ctx *sql.Context, vals []any) int64

// boundedFuncs are the engine's functions whose result size an argument
// chooses, each with the size its result will take.
var boundedFuncs = map[string]sizeFunc{
	"repeat": func(ctx *sql.Context, v []any) int64 { return mul(textLen(v[0]), intArg(ctx, v[1])) },
	"space":  func(ctx *sql.Context, v []any) int64 { return intArg(ctx, v[0]) },
	"lpad":   padSize,
	"rpad":   padSize,
	"concat": func(_ *sql.Context, v []any) int64 { return sumLen(v) },
	"concat_ws": func(_ *sql.Context, v []any) int64 {
		if len(v) == 0 {
			return 0
		}
		return sumLen(v[1:]) + int64(len(v))*textLen(v[0])
	},
	"replace": func(_ *sql.Context, v []any) int64 {
		s, from, to := text(v[0]), text(v[1]), text(v[2])
		if from == "" || len(to) <= len(from) {
			return int64(len(s))
		}
		return int64(len(s)) + mul(int64(strings.Count(s, from)), int64(len(to)-len(from)))
	},
	// At most one replacement per character and one at the end (a
	// pattern that matches the empty string): an upper bound.
	"regexp_replace": func(_ *sql.Context, v []any) int64 {
		if len(v) < 3 {
			return 0
		}
		s := text(v[0])
		return int64(len(s)) + mul(int64(utf8.RuneCountInString(s)+1), textLen(v[2]))
	},
	"hex":       func(_ *sql.Context, v []any) int64 { return mul(textLen(v[0]), 2) },
	"to_base64": func(_ *sql.Context, v []any) int64 { return textLen(v[0])/3*4 + textLen(v[0])/57 + 8 },
	// UNCOMPRESS's input starts with its result's length (4 bytes, little
	// endian): a few bytes of input can ask for 4 GiB.
	"uncompress": func(_ *sql.Context, v []any) int64 {
		s := text(v[0])
		if len(s) < 4 {
			return 0
		}
		return int64(s[0]) | int64(s[1])<<8 | int64(s[2])<<16 | int64(s[3])<<24
	},
}

// own are the functions answered here once bounded, not by the engine:
// the engine's SPACE builds its spaces one at a time, each a copy of the
// string so far (quadratic: SPACE(1000000) would run for minutes).
var own = map[string]func(ctx *sql.Context, vals []any) (any, error){
	"space": func(ctx *sql.Context, v []any) (any, error) {
		if v[0] == nil {
			return nil, nil
		}
		n := intArg(ctx, v[0])
		if n < 0 {
			n = 0
		}
		return strings.Repeat(" ", int(n)), nil
	},
}

// sums marks the functions whose arguments each add to the result: their
// arguments are checked as they are read, so that a thousand large ones
// are not all made before the sum is seen.
var sums = map[string]bool{"concat": true, "concat_ws": true}

// padSize is LPAD's and RPAD's result: the length asked, in characters
// as wide as the widest of the string's and the pad's.
func padSize(ctx *sql.Context, v []any) int64 {
	n := intArg(ctx, v[1])
	w := int64(1)
	for _, x := range v {
		if s, ok := x.(string); ok {
			for _, r := range s {
				if l := int64(utf8.RuneLen(r)); l > w {
					w = l
				}
			}
		}
	}
	return mul(n, w)
}

func sumLen(v []any) int64 {
	var n int64
	for _, x := range v {
		n += textLen(x)
	}
	return n
}

// mul is a*b, saturating (sizes never wrap to small).
func mul(a, b int64) int64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	if a > (1<<62)/b {
		return 1 << 62
	}
	return a * b
}

// text is a value as the text the engine's string functions read.
func text(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case []byte:
		return string(x)
	}
	return fmt.Sprint(v)
}

// textLen is the bytes of a value's text.
func textLen(v any) int64 {
	switch x := v.(type) {
	case nil:
		return 0
	case string:
		return int64(len(x))
	case []byte:
		return int64(len(x))
	case sql.JSONWrapper:
		// Counted only until just past the ceiling: a document of shared
		// parts is never turned into its full text here.
		return jsonText(x, MaxValueBytes+1, walkText)
	}
	return int64(len(fmt.Sprint(v)))
}

// intArg is a count argument; a count past int64 is as large as can be,
// and one that is no number is 0 (the engine's function says what is
// wrong with it).
func intArg(ctx *sql.Context, v any) int64 {
	n, inRange, err := types.Int64.Convert(ctx, v)
	if inRange == sql.OutOfRange {
		return 1 << 62
	}
	if err != nil {
		return 0
	}
	i, _ := n.(int64)
	return i
}

// boundFunctions makes the engine's functions that choose their result's
// size answer through bounded wrappers: the engine's own function, run
// only once the size its arguments ask for is known to be within
// MaxValueBytes. The wrappers are offered by the database provider (the
// engine asks it before its built-ins); the engine's
// @@max_allowed_packet, @@read_only and @@global.read_only read the
// ceiling and 1.
func boundFunctions(gms *sqle.Engine) {
	cat := gms.Analyzer.Catalog
	mp, ok := cat.DbProvider.(*memory.DbProvider)
	if !ok {
		panic(fmt.Sprintf("sqlview: the engine's provider is a %T, not the memory provider the bounded functions wrap", cat.DbProvider))
	}
	builtins := function.NewRegistry()
	fns := map[string]sql.Function{}
	for name, size := range boundedFuncs {
		orig, ok := builtins[name]
		if !ok {
			panic("sqlview: the engine has no function " + name)
		}
		fns[name] = sql.FunctionN{Name: name, Fn: func(args ...sql.Expression) (sql.Expression, error) {
			return newBounded(name, orig, size, args)
		}}
	}
	cat.DbProvider = &boundedProvider{DbProvider: mp, fns: fns}
	globalsOnce.Do(setGlobals)
}

var globalsOnce sync.Once

// setGlobals sets the engine's process-wide variables the console
// reports: read_only and max_allowed_packet.
func setGlobals() {
	ctx := sql.NewEmptyContext()
	_ = sql.SystemVariables.SetGlobal(ctx, "read_only", int8(1))
	_ = sql.SystemVariables.SetGlobal(ctx, "max_allowed_packet", int64(MaxValueBytes))
}

// boundedProvider is the engine's database provider that also offers the
// bounded functions.
type boundedProvider struct {
	*memory.DbProvider
	fns map[string]sql.Function
}

var _ sql.FunctionProvider = (*boundedProvider)(nil)

// Function is a bounded wrapper of the engine's function of that name.
func (p *boundedProvider) Function(_ *sql.Context, name string) (sql.Function, bool) {
	f, ok := p.fns[strings.ToLower(name)]
	return f, ok
}

// bounded is one call of a bounded function: it reads its arguments,
// refuses a result past MaxValueBytes, and otherwise answers the engine's
// own function over the values read (inner reads them by position).
type bounded struct {
	name string
	fn   sql.Function
	size sizeFunc
	args []sql.Expression
	// shown is the engine's function over the arguments: its type,
	// nullability and text.
	shown sql.Expression
	// inner is the engine's function over the values read.
	inner sql.Expression
}

var (
	_ sql.FunctionExpression = (*bounded)(nil)
	_ sql.CollationCoercible = (*bounded)(nil)
)

func newBounded(name string, fn sql.Function, size sizeFunc, args []sql.Expression) (sql.Expression, error) {
	shown, err := fn.NewInstance(args)
	if err != nil {
		return nil, err
	}
	b := &bounded{name: name, fn: fn, size: size, args: args, shown: shown}
	if allResolved(args) {
		if err := b.build(); err != nil {
			return nil, err
		}
	}
	return b, nil
}

func allResolved(args []sql.Expression) bool {
	for _, a := range args {
		if !a.Resolved() {
			return false
		}
	}
	return true
}

// build makes inner: the engine's function over the values' positions.
func (b *bounded) build() error {
	fields := make([]sql.Expression, len(b.args))
	for i, a := range b.args {
		fields[i] = expression.NewGetField(i, a.Type(), fmt.Sprintf("arg%d", i), a.IsNullable())
	}
	inner, err := b.fn.NewInstance(fields)
	b.inner = inner
	return err
}

func (b *bounded) FunctionName() string { return b.name }

func (b *bounded) Description() string {
	if f, ok := b.shown.(sql.FunctionExpression); ok {
		return f.Description()
	}
	return b.name
}

func (b *bounded) Resolved() bool             { return b.shown.Resolved() }
func (b *bounded) String() string             { return b.shown.String() }
func (b *bounded) DebugString() string        { return sql.DebugString(b.shown) }
func (b *bounded) Type() sql.Type             { return b.shown.Type() }
func (b *bounded) IsNullable() bool           { return b.shown.IsNullable() }
func (b *bounded) Children() []sql.Expression { return b.args }
func (b *bounded) WithChildren(c ...sql.Expression) (sql.Expression, error) {
	return newBounded(b.name, b.fn, b.size, c)
}

func (b *bounded) CollationCoercibility(ctx *sql.Context) (sql.CollationID, byte) {
	if c, ok := b.shown.(sql.CollationCoercible); ok {
		return c.CollationCoercibility(ctx)
	}
	return sql.Collation_binary, 7
}

// Eval reads the arguments, refuses a result past MaxValueBytes with
// loci::db::too_large, and answers the engine's function over them.
func (b *bounded) Eval(ctx *sql.Context, row sql.Row) (any, error) {
	if b.inner == nil {
		if err := b.build(); err != nil {
			return nil, err
		}
	}
	vals := make(sql.Row, len(b.args))
	var sum int64
	for i, a := range b.args {
		v, err := a.Eval(ctx, row)
		if err != nil {
			return nil, err
		}
		vals[i] = v
		if sums[b.name] {
			if sum += textLen(v); sum > MaxValueBytes {
				return nil, b.tooLarge(ctx, sum)
			}
		}
	}
	n := b.size(ctx, vals)
	if n > MaxValueBytes {
		return nil, b.tooLarge(ctx, n)
	}
	if n >= 1<<20 {
		if err := b.room(ctx, n); err != nil {
			return nil, err
		}
	}
	if f, ok := own[b.name]; ok {
		return f(ctx, vals)
	}
	res, err := b.inner.Eval(ctx, vals)
	if err != nil || !jsonResults[b.name] {
		return res, err
	}
	if n := resultLen(res); n > MaxValueBytes {
		return nil, b.tooLarge(ctx, n)
	}
	return res, nil
}

// resultLen is the bytes of a JSON function's result as text, counted
// only until just past MaxValueBytes.
func resultLen(v any) int64 {
	if s, ok := v.(string); ok {
		return int64(len(s))
	}
	return jsonText(v, MaxValueBytes+1, walkText)
}

// room refuses a value of n bytes (a MiB or more) that would take the
// statement's heap past its memory budget (Limits.MemoryBytes): many
// values each within MaxValueBytes (a row of a hundred 16 MiB columns)
// add up. The heap is read again after a collection before refusing, so
// that garbage does not count.
func (b *bounded) room(ctx *sql.Context, n int64) error {
	q, err := runOf(ctx)
	if err != nil || q.budget == nil {
		return nil
	}
	if heapBytes()+uint64(n) <= q.budget.MaxMemory() {
		return nil
	}
	runtime.GC()
	if heapBytes()+uint64(n) <= q.budget.MaxMemory() {
		return nil
	}
	ferr := fault.Newf(fault.DBTooLarge, "make fewer or smaller values in one statement: "+helpValue,
		"%s would make a value of %s, past what the statement may hold in memory (its values together); the statement was stopped",
		strings.ToUpper(b.name), sizeText(n))
	if q.fail == nil {
		q.fail = ferr
	}
	return ferr
}

// tooLarge is the statement's fault for a value of n bytes.
func (b *bounded) tooLarge(ctx *sql.Context, n int64) error {
	ferr := fault.Newf(fault.DBTooLarge, helpValue,
		"%s would make a value of %s, past the %s a value may hold (@@max_allowed_packet); the statement was stopped",
		strings.ToUpper(b.name), sizeText(n), sizeText(MaxValueBytes))
	if n == tooDeep {
		ferr = fault.Newf(fault.DBTooLarge, "make shallower documents: read a part with JSON_EXTRACT(doc, path)",
			"%s would read or make a JSON document nested deeper than %d levels (MySQL's limit); the statement was stopped",
			strings.ToUpper(b.name), maxJSONDepth)
	}
	if q, err := runOf(ctx); err == nil && q.fail == nil {
		q.fail = ferr
	}
	return ferr
}

// sizeText is a byte count for a message.
func sizeText(n int64) string {
	switch {
	case n >= 1<<62:
		return "more than 4 EiB"
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
