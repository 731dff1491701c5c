package sqlview

import (
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/sqltypes"
	"github.com/dolthub/vitess/go/vt/sqlparser"

	"github.com/loci-dev/loci/fault"
)

// helpCanceled is the help of a query stopped by its caller.
const helpCanceled = "run the query again once the listener is open (loci db serve) and the daemon is running"

// canceled is the fault of a query whose context was cancelled (not timed
// out): its listener closed, or the daemon is stopping.
func canceled() *fault.Error {
	return fault.New(fault.DBCanceled,
		"the query was stopped before it finished: its listener closed or the daemon is stopping", helpCanceled)
}

// rowTooLarge is the fault of a statement with one row past the answer's
// size limit: no part of it can be sent.
func rowTooLarge(n, limit int64) *fault.Error {
	return fault.Newf(fault.DBTooLarge,
		"read a part of the large values (LEFT(content, 1000), SUBSTRING(...)) or their LENGTH(...), or select fewer columns",
		"the row is larger than the answer's limit (about %s, past %s): the statement was stopped", sizeText(n), sizeText(limit))
}

// binaryValue is a []byte value: bytes of a binary column (BLOB,
// VARBINARY, BINARY, a x'..' literal), text of a text one.
func binaryValue(b []byte, typ sql.Type) any {
	if typ != nil && types.IsTextOnly(typ) {
		return string(b)
	}
	return append([]byte(nil), b...)
}

// isBinary reports whether a column's type holds bytes: BINARY,
// VARBINARY or a BLOB.
func isBinary(typ sql.Type) bool {
	if typ == nil {
		return false
	}
	switch typ.Type() {
	case sqltypes.Binary, sqltypes.VarBinary, sqltypes.Blob:
		return true
	}
	return false
}

// planText is the statement to run for st: a plain EXPLAIN or DESCRIBE of
// a statement (MySQL's traditional format, which the engine answers with
// a row of NULLs) runs as EXPLAIN FORMAT=TREE, the engine's plan as text
// rows; any other statement runs as written.
func planText(st string) string {
	parsed, err := sqlparser.Parse(st)
	if err != nil {
		return st
	}
	x, ok := parsed.(*sqlparser.Explain)
	if !ok || x.Plan || x.Analyze || (x.ExplainFormat != "" && !strings.EqualFold(x.ExplainFormat, sqlparser.TraditionalStr)) {
		return st
	}
	return "EXPLAIN FORMAT=TREE " + sqlparser.String(x.Statement)
}

// readOnlySession makes the session's @@transaction_read_only read 1: the
// console never writes (@@read_only is set for the engine as a whole).
func readOnlySession(ctx *sql.Context) {
	_ = ctx.Session.SetSessionVariable(ctx, "transaction_read_only", int8(1))
}

// helpLimitVar is the help of a LIMIT the engine cannot bind.
const helpLimitVar = "LIMIT and OFFSET take a number written in the statement (LIMIT 10), not a @variable; " + helpInvalid

// invalid is an engine's refusal of a statement as loci::db::query_invalid,
// with help for what the engine cannot do.
func invalid(err error) *fault.Error {
	msg := err.Error()
	if strings.Contains(msg, "limit expression expected") || strings.Contains(msg, "offset expression expected") {
		return fault.New(fault.DBQueryInvalid, msg, helpLimitVar)
	}
	return fault.New(fault.DBQueryInvalid, msg, helpInvalid)
}
