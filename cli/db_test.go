package cli

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/loci-dev/loci/api"
)

// The console reaches a listener bound to every address on the host it
// reached the daemon on; any other URL is used as the daemon gave it.
func TestReachable(t *testing.T) {
	for _, c := range []struct{ url, daemon, want string }{
		{"ws://0.0.0.0:8000/rpc", "10.1.2.3:8420", "ws://10.1.2.3:8000/rpc"},
		{"ws://[::]:8000/rpc", "[fd00::7]:8420", "ws://[fd00::7]:8000/rpc"},
		{"ws://0.0.0.0:8000/rpc", "db.example:8420", "ws://db.example:8000/rpc"},
		{"ws://127.0.0.1:8000/rpc", "10.1.2.3:8420", "ws://127.0.0.1:8000/rpc"},
		{"ws://192.168.1.4:8000/rpc", "127.0.0.1:8420", "ws://192.168.1.4:8000/rpc"},
		{"ws://0.0.0.0:8000/rpc", "not-an-address", "ws://0.0.0.0:8000/rpc"},
	} {
		if got := reachable(c.url, c.daemon); got != c.want {
			t.Errorf("reachable(%q, %q) = %q, want %q", c.url, c.daemon, got, c.want)
		}
	}
}

// A table prints SQL NULL as ∅, apart from the text 'NULL'; a cell past
// maxCellRunes characters is clipped, ending in …, and a line says so,
// unless wide asks for every cell whole.
func TestDBTableNullAndClip(t *testing.T) {
	long := strings.Repeat("abcd", 50)
	r := api.DBStatement{DBStatementOK: api.DBStatementOK{Status: "OK", Time: "1ms", Columns: []api.DBColumn{{Name: "nothing"}, {Name: "word"}, {Name: "long_text"}},
		Rows: [][]any{{nil, "NULL", long}}}}
	var out bytes.Buffer
	a := &app{stdout: &out}
	a.printTable(r, tableOptions{})
	lines := strings.Split(out.String(), "\n")
	cells := strings.Split(lines[2], " | ")
	if len(cells) != 3 || strings.TrimSpace(cells[0]) != nullCell || strings.TrimSpace(cells[1]) != "NULL" {
		t.Fatalf("NULL and 'NULL' not apart: %q", lines[2])
	}
	if want := long[:maxCellRunes-1] + clipMark; cells[2] != want || utf8.RuneCountInString(cells[2]) != maxCellRunes {
		t.Fatalf("long cell %q, want %q", cells[2], want)
	}
	if !strings.Contains(out.String(), "--wide prints them whole") {
		t.Fatalf("no word of the clipping:\n%s", out.String())
	}

	out.Reset()
	a.printTable(r, tableOptions{wide: true})
	if !strings.Contains(out.String(), long) || strings.Contains(out.String(), clipMark) || strings.Contains(out.String(), "--wide") {
		t.Fatalf("--wide clipped a cell:\n%s", out.String())
	}
	// A cell of exactly the limit is whole.
	out.Reset()
	a.printTable(api.DBStatement{DBStatementOK: api.DBStatementOK{Columns: []api.DBColumn{{Name: "x"}}, Rows: [][]any{{long[:maxCellRunes]}}}}, tableOptions{})
	if !strings.Contains(out.String(), long[:maxCellRunes]+"\n") || strings.Contains(out.String(), clipMark) {
		t.Fatalf("a cell of %d characters was clipped:\n%s", maxCellRunes, out.String())
	}
}

// A truncated statement says which limit cut it (truncated_by), with the
// limit's value; without truncated_by, the row limit's old words.
func TestDBTruncationSaysWhich(t *testing.T) {
	l := api.DBLimits{MaxResultRows: 10000, MaxResultBytes: 64 << 20}
	for _, c := range []struct{ by, want, not string }{
		{"rows", "cut at db.max_result_rows (10000)", "size"},
		{"bytes", "cut at the answer's size limit (64 MiB)", "max_result_rows"},
		{"", "cut at db.max_result_rows:", "size"},
	} {
		var out bytes.Buffer
		a := &app{stdout: &out}
		a.printTable(api.DBStatement{DBStatementOK: api.DBStatementOK{Columns: []api.DBColumn{{Name: "x"}}, Rows: [][]any{{"a"}}, Truncated: true, TruncatedBy: c.by}}, tableOptions{limits: l})
		if !strings.Contains(out.String(), c.want) || strings.Contains(out.String(), c.not) {
			t.Errorf("truncated_by %q: %q, want %q", c.by, out.String(), c.want)
		}
	}
	var out bytes.Buffer
	a := &app{stdout: &out}
	a.printTable(api.DBStatement{DBStatementOK: api.DBStatementOK{Columns: []api.DBColumn{{Name: "x"}}, Rows: [][]any{{"a"}}}}, tableOptions{limits: l})
	if strings.Contains(out.String(), "cut") {
		t.Errorf("a whole result says it was cut: %q", out.String())
	}
}

// loci db status lists the size limit with the others.
func TestDBStatusSizeLimit(t *testing.T) {
	var out bytes.Buffer
	a := &app{stdout: &out}
	a.printDBState(&api.DBState{Open: true, URL: "ws://127.0.0.1:8000/rpc", User: "loci",
		Limits: api.DBLimits{QueryTimeoutSecs: 30, MaxScanRows: 2_000_000, MaxResultRows: 10_000, MaxResultBytes: 64 << 20}})
	if !strings.Contains(out.String(), "limits:      30 s a query, 2000000 rows read, 10000 rows returned a statement, 64 MiB of rows a statement") {
		t.Fatalf("loci db status:\n%s", out.String())
	}
	if sizeText(3<<19) != "1.5 MiB" {
		t.Fatalf("sizeText(1.5 MiB) = %q", sizeText(3<<19))
	}
}

// The statements of a query are counted by the SQL engine's splitter: a
// ';' in a string, a comment or a quoted name does not split, blank
// pieces do not count; the line after a failed statement says how many
// were not run.
func TestDBStatementsNotRun(t *testing.T) {
	for sql, want := range map[string]int{
		"SELECT 1":                         1,
		"SELECT 1;":                        1,
		"SELECT 1; SELECT 'a;b'; SELECT 3": 3,
		"SELECT 1;;  ; SELECT 2;\n":        2,
		"SELECT `x;y` FROM wings; SELECT \"q;\"; -- c;\nSELECT 3": 3,
		"SELECT 1 /* ; */; SELECT 2":                              2,
	} {
		if got := statementCount(sql); got != want {
			t.Errorf("statementCount(%q) = %d, want %d", sql, got, want)
		}
	}
	for _, c := range []struct {
		n, total int
		want     string
	}{
		{2, 4, "statement 2 of 4 failed: the 2 statements after it were not run"},
		{1, 2, "statement 1 of 2 failed: the 1 statement after it was not run"},
		{3, 3, "statement 3 of 3 failed (the last one)"},
		{2, 0, "statement 2 failed: the statements after it were not run"},
	} {
		if got := notRun(c.n, c.total); got != c.want {
			t.Errorf("notRun(%d, %d) = %q, want %q", c.n, c.total, got, c.want)
		}
	}
}
