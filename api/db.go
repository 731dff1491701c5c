package api

import "time"

// DBOpen is the body of POST /api/db: every field optional; an absent one
// takes the configuration's db.* value.
type DBOpen struct {
	Bind           *string   `json:"bind,omitempty"`
	Port           *int      `json:"port,omitempty"`
	AllowRemote    *bool     `json:"allow_remote,omitempty"`
	AllowedOrigins *[]string `json:"allowed_origins,omitempty"`
}

// DBState is the database admin listener's state (GET, POST and DELETE
// /api/db, `loci db status`).
type DBState struct {
	// Open says whether the listener is accepting connections.
	Open bool `json:"open"`
	// Address is host:port it listens on (the OS's port when db.port is
	// 0); URL the WebSocket endpoint, ws://ADDRESS/rpc. Both empty when
	// closed.
	Address string `json:"address,omitempty"`
	URL     string `json:"url,omitempty"`
	// The settings it was opened with, Port the one it bound (the OS's
	// choice when db.port is 0); when closed, what an open with an empty
	// body would use.
	Bind           string   `json:"bind"`
	Port           int      `json:"port"`
	AllowRemote    bool     `json:"allow_remote"`
	AllowedOrigins []string `json:"allowed_origins"`
	// OpenedAt is when it opened; nil when closed.
	OpenedAt *time.Time `json:"opened_at,omitempty"`
	// Connections is how many WebSocket connections are open, Sessions
	// how many sessions they hold (attach adds one to a connection).
	Connections int `json:"connections"`
	Sessions    int `json:"sessions"`
	// Encodings are the /rpc encodings served (WebSocket subprotocols).
	Encodings []string `json:"encodings"`
	// User is the user name to sign in as; Auth whether the password is
	// the daemon's token (auth.enabled) or the word "loci".
	User string `json:"user"`
	Auth bool   `json:"auth"`
	// Limits are the per-query bounds in force.
	Limits DBLimits `json:"limits"`
}

// DBLimits are the bounds of one SQL query (db.query_timeout_secs,
// db.max_scan_rows, db.max_result_rows).
type DBLimits struct {
	QueryTimeoutSecs int `json:"query_timeout_secs"`
	MaxScanRows      int `json:"max_scan_rows"`
	MaxResultRows    int `json:"max_result_rows"`
	// MaxResultBytes is the size past which a statement's rows are cut
	// (about their JSON size), whatever their number.
	MaxResultBytes int64 `json:"max_result_bytes"`
}

// DBColumn is a result's column in a /rpc query answer: its name and SQL
// type as the engine names it.
type DBColumn struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// DBStatementOK is one statement's answer in a /rpc query answer (the
// array has one per statement run): its columns, its rows (JSON-ready
// values), whether and by what they were cut, the rows it read and its
// time ("1.77ms").
type DBStatementOK struct {
	Status    string     `json:"status"` // "OK"
	Time      string     `json:"time"`
	Columns   []DBColumn `json:"columns"`
	Rows      [][]any    `json:"rows"`
	Truncated bool       `json:"truncated"`
	// TruncatedBy says what cut the rows: "rows" (db.max_result_rows) or
	// "bytes" (the size limit); absent when none was cut.
	TruncatedBy string `json:"truncated_by,omitempty"`
	RowsRead    int    `json:"rows_read"`
}

// DBStatementErr is a failed statement's answer: the statements after it
// were not run.
type DBStatementErr struct {
	Status string `json:"status"` // "ERR"
	Time   string `json:"time"`
	// Result is the error's message; Code and Help the house's.
	Result string `json:"result"`
	Code   string `json:"code"`
	Help   string `json:"help"`
}

// DBStatement is what a client reads of either answer (Status says
// which).
type DBStatement struct {
	DBStatementOK
	Result string `json:"result"`
	Code   string `json:"code"`
	Help   string `json:"help"`
}
