// Package sqlview answers read-only SQL over the live store: a real
// embedded SQL engine (go-mysql-server, MySQL's dialect) planning over
// tables that read the store through one consistent view per query. It is
// what the database admin listener (package dbadmin) runs a `query` with.
// Nothing here writes: a statement that would change the palace is
// refused with loci::db::read_only.
package sqlview

import (
	"context"
	"time"

	_ "github.com/dolthub/go-mysql-server" // the engine (skeleton: wired by the implementation)

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
)

// Limits bound one query.
type Limits struct {
	// ScanRows is how many rows one statement may read from the store
	// (every table, every pass); past it the statement fails with
	// loci::db::too_large.
	ScanRows int
	// ResultRows is how many rows one statement returns; past it the rows
	// are cut and Result.Truncated is set.
	ResultRows int
	// Timeout bounds the whole query (all its statements):
	// loci::db::timeout past it.
	Timeout time.Duration
}

// Database is the one database the engine serves, Namespace the one
// namespace (`use` accepts these).
const (
	Namespace = "loci"
	Database  = "palace"
)

// Engine runs SQL over a store. Safe for concurrent use: each Query reads
// its own view.
type Engine struct {
	db     store.DB
	limits Limits
}

// New is an engine over db.
func New(db store.DB, l Limits) *Engine { return &Engine{db: db, limits: l} }

// Limits is the bounds in force.
func (e *Engine) Limits() Limits { return e.limits }

// Column is one column of a result or a table.
type Column struct {
	Name string `json:"name"`
	// Type is the SQL type as the engine names it (VARCHAR, BIGINT,
	// DATETIME(6), DOUBLE, JSON, ...).
	Type string `json:"type"`
	// Doc says what the column holds (tables only).
	Doc string `json:"doc,omitempty"`
}

// Table is one table the engine offers.
type Table struct {
	Name    string   `json:"name"`
	Doc     string   `json:"doc"`
	Columns []Column `json:"columns"`
	// Indexed names the columns whose predicates are answered by the
	// store's own indexes (equality, and ranges where noted in Doc).
	Indexed []string `json:"indexed"`
}

// Result is one statement's answer.
type Result struct {
	// Statement is the statement's text as run.
	Statement string   `json:"statement"`
	Columns   []Column `json:"columns"`
	// Rows hold JSON-ready values: string, int64, float64, bool, nil;
	// times as RFC 3339 strings with nanoseconds, JSON columns as
	// decoded JSON.
	Rows [][]any `json:"rows"`
	// Truncated says the rows were cut at Limits.ResultRows.
	Truncated bool `json:"truncated"`
	// RowsRead is how many rows the statement read from the store.
	RowsRead int           `json:"rows_read"`
	Duration time.Duration `json:"-"`
	// Err is a failed statement's error; the statements after a failed one
	// are not run (their results are absent).
	Err *fault.Error `json:"-"`
}

// Query runs one or more statements (separated by ';') against one
// consistent view of the store, with vars as user variables (@name). A
// statement's failure is in its Result; the error is for the query as a
// whole (nothing to run, the deadline).
func (e *Engine) Query(ctx context.Context, sql string, vars map[string]any) ([]Result, error) {
	return nil, fault.New(fault.DBUnsupported, "SQL is not wired yet", "")
}

// Tables lists the tables with their columns.
func (e *Engine) Tables() []Table { return nil }
