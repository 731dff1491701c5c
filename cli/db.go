package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"
	"github.com/dolthub/vitess/go/vt/sqlparser"
	"github.com/spf13/cobra"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store/disk"
)

// maxSQLBytes bounds the SQL `loci db query` reads from standard input.
const maxSQLBytes = 1 << 20

// maxAnswerBytes bounds one answer of the admin listener the console
// reads (db.max_result_rows rows of drawer content).
const maxAnswerBytes = 512 << 20

// dbCmd is `loci db`: the database admin listener (open, state, close)
// and a one-query console onto it.
func (a *app) dbCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "db", Short: "The database admin listener: read-only SQL over the live palace (serve, status, stop, query)",
		Long: "The database admin listener is a separate listener of the daemon, opened only on request, that answers\n" +
			"read-only SQL (MySQL's dialect) over the live palace's records: JSON-RPC over WebSocket at ws://ADDRESS/rpc.\n" +
			"Sign in as user loci with the daemon's token as password (the word loci when authentication is off).\n" +
			"It is not available on a shared store: connect to the PostgreSQL database itself."}
	cmd.AddCommand(a.dbServeCmd(), a.dbStatusCmd(), a.dbStopCmd(), a.dbQueryCmd())
	return cmd
}

func (a *app) dbServeCmd() *cobra.Command {
	var bind string
	var port int
	var allowRemote bool
	var origins []string
	c := &cobra.Command{
		Use:   "serve",
		Short: "Open the database admin listener (settings not given are the configuration's db.*)",
		Long: "Open the database admin listener. It listens on db.bind:db.port (127.0.0.1:8000 by default; --port 0\n" +
			"lets the OS choose) until `loci db stop` or the daemon stops. Beyond loopback only with authentication on\n" +
			"and --allow-remote. Browser pages of other sites are refused unless given with --allowed-origin.\n" +
			"Already open with the same settings, it reports the listener; with others it is refused.",
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			var o api.DBOpen
			f := c.Flags()
			if f.Changed("bind") {
				o.Bind = &bind
			}
			if f.Changed("port") {
				o.Port = &port
			}
			if f.Changed("allow-remote") {
				o.AllowRemote = &allowRemote
			}
			if f.Changed("allowed-origin") {
				o.AllowedOrigins = &origins
			}
			return show(a, c.Context(), http.MethodPost, "/api/db", o, func(st *api.DBState) {
				a.printDBState(st)
				if st.Open {
					a.printf("\nquery:  loci db query \"SELECT name FROM wings\"\n")
					a.printf("close:  loci db stop\n")
				}
			})
		},
	}
	f := c.Flags()
	f.StringVar(&bind, "bind", "", "address to listen on (db.bind; beyond loopback needs authentication and --allow-remote)")
	f.IntVar(&port, "port", 0, "port to listen on (db.port; 0 lets the OS choose)")
	f.BoolVar(&allowRemote, "allow-remote", false, "allow a bind beyond loopback (db.allow_remote; needs authentication on)")
	f.StringArrayVar(&origins, "allowed-origin", nil, "a browser origin to admit, e.g. https://console.example (repeatable; db.allowed_origins)")
	return c
}

func (a *app) dbStatusCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show the database admin listener's state: open or closed, its URL, connections and limits",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return show(a, c.Context(), http.MethodGet, "/api/db", nil, a.printDBState)
		},
	}
}

func (a *app) dbStopCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "stop",
		Short: "Close the database admin listener and every connection to it (succeeds when it is closed)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return show(a, c.Context(), http.MethodDelete, "/api/db", nil, func(*api.DBState) {
				a.printf("the database admin listener is closed\n")
			})
		},
	}
}

// printDBState prints the listener's state for a person: never a token
// (the state holds none), only where the password comes from.
func (a *app) printDBState(st *api.DBState) {
	if !st.Open {
		a.printf("the database admin listener is closed (open it with `loci db serve`)\n")
		a.printf("settings:    %s:%d, allow_remote %t\n", st.Bind, st.Port, st.AllowRemote)
		return
	}
	a.printf("the database admin listener is open\n")
	a.printf("url:         %s\n", st.URL)
	a.printf("address:     %s\n", st.Address)
	if st.OpenedAt != nil {
		a.printf("opened:      %s\n", ago(*st.OpenedAt))
	}
	a.printf("user:        %s\n", st.User)
	if st.Auth {
		a.printf("password:    the daemon's token (LOCI_AUTH_TOKEN or auth.token); a script may send it as Authorization: Bearer on the upgrade\n")
	} else {
		a.printf("password:    %s (authentication is off)\n", st.User)
	}
	a.printf("encodings:   %s (WebSocket subprotocols)\n", strings.Join(st.Encodings, ", "))
	origins := "this machine's pages only"
	if len(st.AllowedOrigins) > 0 {
		origins = "this machine's pages and " + strings.Join(st.AllowedOrigins, ", ")
	}
	a.printf("origins:     %s\n", origins)
	a.printf("connections: %d (%d sessions)\n", st.Connections, st.Sessions)
	limits := fmt.Sprintf("%d s a query, %d rows read, %d rows returned a statement", st.Limits.QueryTimeoutSecs, st.Limits.MaxScanRows, st.Limits.MaxResultRows)
	if st.Limits.MaxResultBytes > 0 {
		limits += ", " + sizeText(st.Limits.MaxResultBytes) + " of rows a statement (about their JSON size)"
	}
	a.printf("limits:      %s\n", limits)
}

// sizeText is a size limit for a person: whole mebibytes as "64 MiB",
// others as disk.Bytes writes them.
func sizeText(n int64) string {
	if n > 0 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return disk.Bytes(n)
}

func (a *app) dbQueryCmd() *cobra.Command {
	var wide bool
	c := &cobra.Command{
		Use:   "query SQL",
		Short: "Run SQL on the database admin listener and print each statement's rows (\"-\" reads the SQL from stdin)",
		Long: "Run one query (one or more statements separated by ';') on the open database admin listener, signed in\n" +
			"with the CLI's token (LOCI_AUTH_TOKEN or auth.token), and print each statement's rows as a table, or\n" +
			"the answer as JSON with --json. The SQL is MySQL's dialect over read-only tables (wings, rooms, drawers,\n" +
			"entities, mentions, relationships, jobs, ...); a statement that would write is refused. The statements\n" +
			"after a failed one are not run (the output says how many), and the command exits non-zero.\n\n" +
			"In the tables, SQL NULL prints as " + nullCell + " (the text 'NULL' prints as NULL), line breaks and tabs as \\n and \\t,\n" +
			fmt.Sprintf("and a cell longer than %d characters is clipped, ending in %s: --wide prints every cell whole. --json prints\n", maxCellRunes, clipMark) +
			"the listener's answer as it came.",
		Example: "  loci db query \"SELECT wing, room, count(*) FROM drawers GROUP BY wing, room\"\n" +
			"  echo \"SELECT name, kind FROM entities\" | loci db query -",
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			sql := args[0]
			if sql == "-" {
				b, err := io.ReadAll(io.LimitReader(c.InOrStdin(), maxSQLBytes+1))
				if err != nil {
					return fault.Wrap(fault.IOFailed, err, "cannot read the SQL from standard input", "pass the SQL as the argument")
				}
				if len(b) > maxSQLBytes {
					return fault.Newf(fault.InputInvalid, "split the query", "the SQL on standard input is longer than %d bytes", maxSQLBytes)
				}
				sql = string(b)
			}
			if strings.TrimSpace(sql) == "" {
				return fault.Invalid("SQL", "is empty; pass a statement such as \"SELECT name FROM wings\"")
			}
			if !utf8.ValidString(sql) {
				return fault.Invalid("SQL", "is not valid UTF-8")
			}
			return a.dbQuery(c.Context(), sql, wide)
		},
	}
	c.Flags().BoolVar(&wide, "wide", false, fmt.Sprintf("print every cell whole (by default a cell longer than %d characters is clipped)", maxCellRunes))
	return c
}

// dbQuery runs sql on the open listener and prints its answer (every
// cell whole with wide).
func (a *app) dbQuery(ctx context.Context, sql string, wide bool) error {
	var st api.DBState
	if _, err := a.call(ctx, http.MethodGet, "/api/db", nil, &st); err != nil {
		return err
	}
	if !st.Open {
		return fault.New(fault.DBNotOpen, "the database admin listener is not open", "open it with `loci db serve`, then run the query again")
	}
	cfg, err := a.config()
	if err != nil {
		return err
	}
	// The server bounds the query (db.query_timeout_secs); this bounds a
	// listener that stops answering.
	ctx, cancel := context.WithTimeout(ctx, time.Duration(st.Limits.QueryTimeoutSecs)*time.Second+30*time.Second)
	defer cancel()
	st.URL = reachable(st.URL, a.address(cfg))
	rc, err := dialRPC(ctx, st, cfg.Auth.Token)
	if err != nil {
		return err
	}
	defer rc.close()
	raw, err := rc.call(ctx, "query", sql)
	if err != nil {
		return err
	}
	var results []api.DBStatement
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&results); err != nil {
		return fault.Wrap(fault.ClientRequestFailed, err, "the listener's answer to query is not the expected JSON", "check that client and daemon versions match")
	}
	if a.jsonOut {
		writeJSONTo(a.stdout, json.RawMessage(raw))
	}
	opts := tableOptions{limits: st.Limits, wide: wide}
	for i, r := range results {
		if r.Status != "OK" {
			// The statements after it were not run; its error is the
			// command's.
			if !a.jsonOut {
				if i > 0 {
					a.printf("\n")
				}
				a.printf("%s\n", notRun(i+1, statementCount(sql)))
			}
			return &fault.Error{Code: fault.Code(r.Code), Msg: r.Result, Help: r.Help}
		}
		if !a.jsonOut {
			if i > 0 {
				a.printf("\n")
			}
			a.printTable(r, opts)
		}
	}
	return nil
}

// statementCount is how many statements the listener runs of sql: the
// pieces the SQL engine's own splitter makes of it (the splitter
// dbadmin/sqlview.Engine.Query uses), blank ones left out; 0 when it
// cannot split it.
func statementCount(sql string) int {
	pieces, err := sqlparser.SplitStatementToPieces(sql)
	if err != nil {
		return 0
	}
	n := 0
	for _, p := range pieces {
		if p = strings.TrimSpace(p); p != "" && p != ";" {
			n++
		}
	}
	return n
}

// notRun says which statement failed (the n-th) and how many of the
// query's total were not run after it; a total it cannot trust (0, or no
// more than n) is not counted.
func notRun(n, total int) string {
	switch {
	case total == n:
		return fmt.Sprintf("statement %d of %d failed (the last one)", n, total)
	case total > n:
		rest := total - n
		if rest == 1 {
			return fmt.Sprintf("statement %d of %d failed: the 1 statement after it was not run", n, total)
		}
		return fmt.Sprintf("statement %d of %d failed: the %d statements after it were not run", n, total, rest)
	}
	return fmt.Sprintf("statement %d failed: the statements after it were not run", n)
}

// reachable is the listener's URL as this client can reach it: a
// listener bound to every address (0.0.0.0, [::]) is reached on the host
// the daemon was reached on (daemon, host:port).
func reachable(rawURL, daemon string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return rawURL
	}
	ip := net.ParseIP(u.Hostname())
	host, _, err := net.SplitHostPort(daemon)
	if ip == nil || !ip.IsUnspecified() || err != nil || host == "" {
		return rawURL
	}
	u.Host = net.JoinHostPort(host, u.Port())
	return u.String()
}

// nullCell is SQL NULL in a table, apart from any text (the string
// 'NULL' prints as NULL); clipMark ends a cell clipped at maxCellRunes
// characters (without --wide).
const (
	nullCell     = "∅"
	clipMark     = "…"
	maxCellRunes = 80
)

// tableOptions are how printTable prints: the limits in force (to say
// which one cut the rows) and whether cells are printed whole.
type tableOptions struct {
	limits api.DBLimits
	wide   bool
}

// printTable prints a statement's rows aligned under its column names.
func (a *app) printTable(r api.DBStatement, o tableOptions) {
	clipped := false
	if len(r.Columns) > 0 {
		cells := make([][]string, 0, len(r.Rows)+1)
		head := make([]string, len(r.Columns))
		for i, c := range r.Columns {
			head[i] = c.Name
		}
		cells = append(cells, head)
		for _, row := range r.Rows {
			line := make([]string, len(r.Columns))
			for i := range line {
				if i < len(row) {
					line[i] = cell(row[i])
					if !o.wide && utf8.RuneCountInString(line[i]) > maxCellRunes {
						line[i] = string([]rune(line[i])[:maxCellRunes-1]) + clipMark
						clipped = true
					}
				}
			}
			cells = append(cells, line)
		}
		width := make([]int, len(head))
		for _, line := range cells {
			for i, v := range line {
				width[i] = max(width[i], utf8.RuneCountInString(v))
			}
		}
		for n, line := range cells {
			var b strings.Builder
			for i, v := range line {
				if i > 0 {
					b.WriteString(" | ")
				}
				b.WriteString(v)
				if i < len(line)-1 {
					b.WriteString(strings.Repeat(" ", width[i]-utf8.RuneCountInString(v)))
				}
			}
			a.printf("%s\n", b.String())
			if n == 0 {
				parts := make([]string, len(width))
				for i, w := range width {
					parts[i] = strings.Repeat("-", w)
				}
				a.printf("%s\n", strings.Join(parts, "-+-"))
			}
		}
	}
	rows := "rows"
	if len(r.Rows) == 1 {
		rows = "row"
	}
	a.printf("(%d %s, %s)\n", len(r.Rows), rows, r.Time)
	if clipped {
		a.printf("cells longer than %d characters are clipped (ending in %s): --wide prints them whole\n", maxCellRunes, clipMark)
	}
	if r.Truncated {
		a.printf("%s\n", truncation(r.TruncatedBy, o.limits))
	}
}

// truncation says which limit cut a statement's rows (by, the answer's
// truncated_by) and how to see the rest; a listener that does not say
// gets the row limit's words, the only one older listeners named.
func truncation(by string, l api.DBLimits) string {
	switch by {
	case "bytes":
		size := "the answer's size limit"
		if l.MaxResultBytes > 0 {
			size += " (" + sizeText(l.MaxResultBytes) + ")"
		}
		return "the rows were cut at " + size + ": select fewer or shorter columns (e.g. LEFT(content, 200)), or narrow the query (WHERE, LIMIT), to see the rest"
	case "rows":
		return fmt.Sprintf("the rows were cut at db.max_result_rows (%d): narrow the query (WHERE, LIMIT) to see the rest", l.MaxResultRows)
	}
	return "the rows were cut at db.max_result_rows: narrow the query (WHERE, LIMIT) to see the rest"
}

// cell is a value as a table shows it: nullCell for null, JSON for
// objects and arrays, line breaks and tabs escaped so a row stays on one
// line.
func cell(v any) string {
	var s string
	switch x := v.(type) {
	case nil:
		return nullCell
	case string:
		s = x
	case json.Number:
		s = x.String()
	case bool:
		s = fmt.Sprint(x)
	default:
		b, _ := json.Marshal(x)
		s = string(b)
	}
	return strings.NewReplacer("\\", "\\\\", "\n", "\\n", "\r", "\\r", "\t", "\\t").Replace(s)
}

// rpcConn is a JSON-RPC connection to the admin listener's /rpc, in the
// json encoding.
type rpcConn struct {
	ws   *websocket.Conn
	next int
}

// dialRPC connects to the listener of st and signs in: with the token as
// bearer on the upgrade when authentication is on, else as user loci with
// the password loci.
func dialRPC(ctx context.Context, st api.DBState, token string) (*rpcConn, error) {
	h := http.Header{}
	if st.Auth {
		if token == "" {
			return nil, fault.New(fault.DBSignInRequired, "authentication is on and the CLI has no token to sign in with",
				"set LOCI_AUTH_TOKEN (or auth.token) to the daemon's token")
		}
		h.Set("Authorization", "Bearer "+token)
	}
	ws, resp, err := websocket.Dial(ctx, st.URL, &websocket.DialOptions{Subprotocols: []string{"json"}, HTTPHeader: h})
	if err != nil {
		if resp != nil && resp.StatusCode >= 300 {
			raw, _ := io.ReadAll(resp.Body)
			var b fault.Body
			if json.Unmarshal(raw, &b) == nil && b.Code != "" {
				return nil, &fault.Error{Code: fault.Code(b.Code), Msg: b.Error, Help: b.Help, Status: resp.StatusCode}
			}
		}
		return nil, fault.Wrap(fault.ClientRequestFailed, err, "cannot connect to the database admin listener at "+st.URL+": "+err.Error(),
			"check it is open (loci db status) and reachable from here")
	}
	ws.SetReadLimit(maxAnswerBytes)
	rc := &rpcConn{ws: ws}
	if !st.Auth {
		if _, err := rc.call(ctx, "signin", map[string]string{"user": st.User, "pass": st.User}); err != nil {
			rc.close()
			return nil, err
		}
	}
	return rc, nil
}

// call sends one request and waits for its answer: the result as JSON,
// or the listener's error as a *fault.Error with its code and help.
func (rc *rpcConn) call(ctx context.Context, method string, params ...any) (json.RawMessage, error) {
	rc.next++
	id := rc.next
	req, err := json.Marshal(map[string]any{"id": id, "method": method, "params": params})
	if err != nil {
		return nil, fault.Wrap(fault.SerializationFailed, err, "cannot encode the request", "report this as a bug")
	}
	if err := rc.ws.Write(ctx, websocket.MessageText, req); err != nil {
		return nil, rpcFailed(err)
	}
	for {
		_, msg, err := rc.ws.Read(ctx)
		if err != nil {
			return nil, rpcFailed(err)
		}
		var ans struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Code    int        `json:"code"`
				Message string     `json:"message"`
				Data    fault.Body `json:"data"`
			} `json:"error"`
		}
		if err := json.Unmarshal(msg, &ans); err != nil {
			return nil, fault.Wrap(fault.ClientRequestFailed, err, "the listener's answer is not JSON-RPC", "check that client and daemon versions match")
		}
		if string(ans.ID) != fmt.Sprint(id) {
			continue // not this request's answer
		}
		if ans.Error != nil {
			d := ans.Error.Data
			if d.Code == "" {
				d = fault.Body{Code: string(fault.ClientRequestFailed), Error: ans.Error.Message, Help: "see the daemon log"}
			}
			return nil, &fault.Error{Code: fault.Code(d.Code), Msg: d.Error, Help: d.Help}
		}
		return ans.Result, nil
	}
}

// rpcFailed is a connection that failed or was closed mid-call.
func rpcFailed(err error) error {
	if s := websocket.CloseStatus(err); s != -1 {
		var ce websocket.CloseError
		errors.As(err, &ce)
		return fault.Wrap(fault.ClientRequestFailed, err, fmt.Sprintf("the database admin listener closed the connection (%d %s)", s, ce.Reason),
			"check it is still open (loci db status)")
	}
	return fault.Wrap(fault.ClientRequestFailed, err, "the connection to the database admin listener failed: "+err.Error(),
		"check it is still open (loci db status) and try again")
}

func (rc *rpcConn) close() { _ = rc.ws.Close(websocket.StatusNormalClosure, "") }
