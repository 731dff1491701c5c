package sqlview

import (
	"strings"

	"github.com/dolthub/vitess/go/vt/sqlparser"

	"github.com/loci-dev/loci/fault"
)

// hostFuncs are functions that reach beyond the palace: the daemon's host
// files (LOAD_FILE) or the engine's process-wide named locks, which would
// outlive the query.
var hostFuncs = map[string]bool{
	"load_file": true, "get_lock": true, "release_lock": true, "release_all_locks": true,
	"is_free_lock": true, "is_used_lock": true,
}

// gatherFuncs are the aggregates that gather every row of a group into
// one JSON document: the engine's own grow without a bound (ten rows of
// 10 MB make 100 MB), so they are refused before the engine plans.
var gatherFuncs = map[string]bool{"json_arrayagg": true, "json_objectagg": true}

// helpGather is the help of a refused JSON aggregate.
const helpGather = "select the rows themselves (each row is one value), or gather them with GROUP_CONCAT(...), which stops at @@group_concat_max_len"

// guard admits only statements that read: SELECT (and UNION, WITH, a
// parenthesised SELECT), SHOW, DESCRIBE and EXPLAIN of those, USE of the
// palace, and SET of user variables (@name, which live for the query). It
// refuses INSERT, UPDATE, DELETE, REPLACE, DDL, TRUNCATE, SET of system
// variables, LOAD DATA, CALL, PREPARE, transactions, locks, ANALYZE,
// SELECT ... INTO OUTFILE/DUMPFILE and the functions that reach the host,
// with loci::db::read_only (or loci::db::query_invalid when it does not
// parse), before the engine plans anything.
func guard(st string) *fault.Error {
	parsed, err := sqlparser.Parse(st)
	if err != nil {
		return fault.New(fault.DBQueryInvalid, err.Error(), helpInvalid)
	}
	if ferr := admit(parsed, st); ferr != nil {
		return ferr
	}
	var ferr *fault.Error
	_ = sqlparser.Walk(func(n sqlparser.SQLNode) (bool, error) {
		if ferr != nil {
			return false, nil
		}
		switch x := n.(type) {
		case *sqlparser.FuncExpr:
			if name := x.Name.Lowered(); hostFuncs[name] {
				ferr = fault.Newf(fault.DBReadOnly, "the SQL console reads the palace's tables only, never the daemon's host or its locks",
					"%s is refused: it reaches beyond the palace", strings.ToUpper(name))
			} else if gatherFuncs[name] {
				ferr = fault.Newf(fault.DBUnsupported, helpGather,
					"%s is not supported here: it gathers every row into one document, with no bound on its size", strings.ToUpper(name))
			}
		case *sqlparser.Select:
			ferr = into(x.Into)
		case *sqlparser.SetOp:
			ferr = into(x.Into)
		}
		return ferr == nil, nil
	}, parsed)
	return ferr
}

func into(in *sqlparser.Into) *fault.Error {
	if in != nil && (in.Outfile != "" || in.Dumpfile != "") {
		return fault.New(fault.DBReadOnly, "SELECT ... INTO OUTFILE/DUMPFILE is refused: it writes a file on the daemon's host",
			"read the rows from the answer instead; "+helpReadOnly)
	}
	return nil
}

// admit refuses a statement kind that writes.
func admit(parsed sqlparser.Statement, st string) *fault.Error {
	switch x := parsed.(type) {
	case *sqlparser.Select, *sqlparser.SetOp, *sqlparser.ParenSelect, *sqlparser.Show:
		return nil
	case *sqlparser.Explain:
		// EXPLAIN (ANALYZE runs the statement) of a read only.
		return admit(x.Statement, st)
	case *sqlparser.Use:
		return nil
	case *sqlparser.Set:
		for _, e := range x.Exprs {
			if e.Scope != sqlparser.SetScope_User {
				return fault.Newf(fault.DBReadOnly, "set a user variable (SET @name = value) or use the query's variables; "+helpReadOnly,
					"SET of the system variable %s is refused: the SQL console is read-only", sqlparser.String(e.Name))
			}
		}
		return nil
	}
	return fault.Newf(fault.DBReadOnly, helpReadOnly, "%s is refused: the SQL console is read-only and nothing here changes the palace", verb(st))
}

// verb is a statement's leading words, for the refusal.
func verb(st string) string {
	f := strings.Fields(strings.ToUpper(st))
	switch {
	case len(f) == 0:
		return "the statement"
	case len(f) > 1 && (f[0] == "LOAD" || f[0] == "CREATE" || f[0] == "DROP" || f[0] == "ALTER" || f[0] == "RENAME" || f[0] == "LOCK"):
		return f[0] + " " + strings.Trim(f[1], "`;")
	}
	return strings.Trim(f[0], ";")
}
