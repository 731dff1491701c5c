// Package postgres is the shared store backend: the palace in a PostgreSQL
// database that several daemons use at once. Every store family is a set
// of tables (schema/*.sql, applied declaratively and tracked by its content
// hash); each row keeps the record as JSON beside the columns its indexes
// need, so a person can read it with psql.
//
// Writes: every Update is one transaction that first takes one
// transaction-scoped advisory lock (the writer lock), so the writes of all
// daemons on the database are serial, as one daemon's writer makes them on
// the embedded store. That keeps every rule the store family functions
// check (a name held once, a copy filed once) without serialization
// failures, and it orders the change log: sequences are handed out under
// the lock and the lock is released only after the commit is visible, so no
// reader ever sees an entry of sequence n+1 before the entry n (see
// docs/DECISIONS.md). A reader (View) is one REPEATABLE READ, read-only
// transaction: one snapshot. A commit that logged changes notifies
// (NOTIFY loci_changes) the other daemons, whose followers catch up
// (Watch); they also poll, in case a notification is lost.
//
// The URL's password is never logged or returned: errors name the host
// and the database only.
package postgres

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
)

// Scheme is the URL scheme this backend registers ("postgresql" too).
const Scheme = "postgres"

// Advisory lock keys: the writer lock every Update takes, the schema
// lock of a schema sync, and the migration lock `loci migrate` and a start
// hold (a session lock: a crash of its holder releases it).
const (
	writerLock  int64 = 0x6c6f6369_0001 // "loci" 1
	schemaLock  int64 = 0x6c6f6369_0002
	migrateLock int64 = 0x6c6f6369_0003
)

// Channel is the NOTIFY channel of committed changes; its payload is the
// committing handle's origin.
const Channel = "loci_changes"

// StatementTimeout bounds one statement; IdleInTransaction bounds a
// transaction left idle by its holder (the server ends the session). The
// URL's options may set either (statement_timeout=..., in ms).
var (
	StatementTimeout  = time.Minute
	IdleInTransaction = time.Minute
)

// PollEvery is how often Watch wakes the followers when no notification
// came (a lost notification, a listener reconnecting).
var PollEvery = time.Second

//go:embed schema/*.sql
var schemaFS embed.FS

// Schema is the declarative schema: every file of schema/ in name order.
func Schema() string {
	names, _ := fs.Glob(schemaFS, "schema/*.sql")
	slices.Sort(names)
	var b strings.Builder
	for _, n := range names {
		s, _ := schemaFS.ReadFile(n)
		b.WriteString("-- " + n + "\n")
		b.Write(s)
		b.WriteString("\n")
	}
	return b.String()
}

func init() {
	open := func(ctx context.Context, o store.OpenOptions) (store.DB, error) { return Open(ctx, o) }
	store.RegisterBackend(Scheme, open)
	store.RegisterBackend("postgresql", open)
}

// DB is the PostgreSQL backend of store.DB.
type DB struct {
	pool   *pgxpool.Pool
	cfg    *pgxpool.Config
	log    *slog.Logger
	where  string // host:port/database: what errors and status may name
	origin string

	// refusing is set when Open refused cleartext password
	// authentication (the connection is neither verified TLS nor
	// loopback): an open failing on it says so.
	refusing bool

	closeOnce sync.Once
}

// Open connects to the database at o.Location (postgres://user@host:port/db?options),
// with o.Password when given (else the URL's, PGPASSWORD or a passfile), and
// checks that it answers. A failure is loci::store::backend_failed naming
// the host and database, never the password.
func Open(ctx context.Context, o store.OpenOptions) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(o.Location)
	if err != nil {
		return nil, fault.New(fault.StoreBackendFailed, "the datastore URL is not a PostgreSQL URL loci can read",
			"write it postgres://USER@HOST:PORT/DATABASE?sslmode=..., the password in LOCI_DATASTORE_PASSWORD or a file (datastore.password_file)")
	}
	if o.Password != "" {
		cfg.ConnConfig.Password = o.Password
	}
	if cfg.MaxConns < 8 {
		cfg.MaxConns = 8
	}
	if cfg.ConnConfig.ConnectTimeout == 0 || cfg.ConnConfig.ConnectTimeout > 5*time.Second {
		cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	}
	if cfg.ConnConfig.RuntimeParams == nil {
		cfg.ConnConfig.RuntimeParams = map[string]string{}
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = DaemonApplication
	if o.ApplicationName != "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = o.ApplicationName
	}
	// A database is not ours: bound what it may make us wait for. A
	// statement (the writer lock's wait included) fails after
	// StatementTimeout, and a session idle inside a transaction (a daemon
	// stopped while holding the writer lock) is ended by the server after
	// IdleInTransaction, releasing its locks for the other daemons; dead
	// peers are found by TCP keepalives.
	for k, v := range map[string]string{
		"statement_timeout":                   strconv.Itoa(int(StatementTimeout / time.Millisecond)),
		"idle_in_transaction_session_timeout": strconv.Itoa(int(IdleInTransaction / time.Millisecond)),
	} {
		if _, set := cfg.ConnConfig.RuntimeParams[k]; !set {
			cfg.ConnConfig.RuntimeParams[k] = v
		}
	}
	dialer := &net.Dialer{Timeout: cfg.ConnConfig.ConnectTimeout, KeepAlive: 15 * time.Second}
	cfg.ConnConfig.DialFunc = dialer.DialContext
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	db := &DB{cfg: cfg, log: log, where: Where(cfg.ConnConfig), origin: newOrigin()}
	db.guardPassword(o.Location)
	db.pool, err = pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, db.openFailed(err)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.pool.Ping(pctx); err != nil {
		db.pool.Close()
		return nil, db.openFailed(err)
	}
	return db, nil
}

// Where is what may be said of a connection: every host and port the
// driver may try, in its order (a URL may name several: each may receive
// the password), and the database, never the user's password:
// "h1:5432,h2:5433/db".
func Where(c *pgx.ConnConfig) string {
	var list []string
	add := func(host string, port uint16) {
		a := net.JoinHostPort(host, strconv.Itoa(int(port)))
		if strings.HasPrefix(host, "/") {
			a = fmt.Sprintf("socket %s:%d", host, port)
		}
		if !slices.Contains(list, a) {
			list = append(list, a)
		}
	}
	add(c.Host, c.Port)
	for _, fb := range c.Fallbacks {
		add(fb.Host, fb.Port)
	}
	return strings.Join(list, ",") + "/" + c.Database
}

// loopback reports whether host is this machine: a Unix socket's
// directory, localhost or a loopback address. What is sent there does
// not cross a network.
func loopback(host string) bool {
	if strings.HasPrefix(host, "/") || strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// verifiedTLS reports whether a connection made with t proves the
// server's identity: TLS checking the certificate chain (sslmode
// verify-ca, or require with sslrootcert) and the name (verify-full).
// nil (no TLS) and TLS skipping verification (prefer, allow, require) do
// not: whoever answers at the address gets what is sent.
func verifiedTLS(t *tls.Config) bool {
	return t != nil && (!t.InsecureSkipVerify || t.VerifyPeerCertificate != nil)
}

// sslMode is the sslmode the location asks for (its option, else
// PGSSLMODE, else libpq's default, prefer), for the warning's words.
func sslMode(location string) string {
	if u, err := url.Parse(location); err == nil && u.Query().Get("sslmode") != "" {
		return u.Query().Get("sslmode")
	}
	for _, f := range strings.Fields(location) {
		if v, ok := strings.CutPrefix(f, "sslmode="); ok {
			return v
		}
	}
	if m := os.Getenv("PGSSLMODE"); m != "" {
		return m
	}
	return "prefer (the default)"
}

// guardPassword keeps the password from whoever answers at an address
// the connection does not verify. When a host is neither this machine nor
// reached over verified TLS (sslmode verify-full or verify-ca), it warns
// once, naming the hosts and the sslmode, and refuses cleartext password
// authentication (require_auth=!password): a server asking for the
// password in clear text over such a connection, a fake one on the path,
// gets nothing, and the open fails saying why. SCRAM (PostgreSQL's
// default) and MD5 never send the password itself. A require_auth the URL
// sets is the operator's choice and is kept.
func (db *DB) guardPassword(location string) {
	c := &db.cfg.ConnConfig.Config
	var exposed []string
	note := func(host string, port uint16, t *tls.Config) {
		if loopback(host) || verifiedTLS(t) {
			return
		}
		if a := net.JoinHostPort(host, strconv.Itoa(int(port))); !slices.Contains(exposed, a) {
			exposed = append(exposed, a)
		}
	}
	note(c.Host, c.Port, c.TLSConfig)
	for _, fb := range c.Fallbacks {
		note(fb.Host, fb.Port, fb.TLSConfig)
	}
	if len(exposed) == 0 {
		return
	}
	db.log.Warn("the shared store's connection does not verify the server: the password may reach whoever answers at these addresses; "+
		"set sslmode=verify-full (with sslrootcert naming the server's CA) in datastore.url to be sure it goes to your PostgreSQL only",
		"hosts", strings.Join(exposed, ","), "sslmode", sslMode(location))
	if c.RequireAuth == "" {
		c.RequireAuth = "!password"
		db.refusing = true
	}
}

func newOrigin() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	h, _ := os.Hostname()
	return fmt.Sprintf("%s/%d/%s", h, os.Getpid(), hex.EncodeToString(b[:]))
}

// openFailed is a failed open as loci::store::backend_failed naming the
// hosts and the database: the message says what went wrong (each cause
// the driver met, one per host tried), the help what to do about each and
// the driver's or PostgreSQL's own words, the password scrubbed.
func (db *DB) openFailed(err error) error {
	var causes, helps []string
	add := func(cause, help string) {
		if !slices.Contains(causes, cause) {
			causes = append(causes, cause)
			helps = append(helps, help)
		}
	}
	var pe *pgconn.PgError
	var dns *net.DNSError
	var cv *tls.CertificateVerificationError
	var ua x509.UnknownAuthorityError
	var hn x509.HostnameError
	text := err.Error()
	switch {
	case db.refusing && strings.Contains(text, "require_auth"):
		add("the server asked for the password in clear text over a connection that does not verify it, and loci did not send it",
			"a server that wants the password in clear text on an unverified connection may be anyone on the path: connect with sslmode=verify-full "+
				"(and sslrootcert naming the server's CA) in datastore.url, or have PostgreSQL use scram-sha-256 (pg_hba.conf, password_encryption)")
	case strings.Contains(text, "require_auth"):
		add("the server's sign-in method is not one require_auth in datastore.url allows",
			"change require_auth in datastore.url, or the server's method in its pg_hba.conf")
	}
	if errors.As(err, &pe) {
		switch {
		case (pe.Code == "28P01" || pe.Code == "28000" && strings.Contains(pe.Message, "password")) && db.cfg.ConnConfig.Password == "":
			add("PostgreSQL asked for a password and none was given",
				"give the password in the environment variable LOCI_DATASTORE_PASSWORD or in a file named by datastore.password_file")
		case pe.Code == "28P01":
			add("the user or password was refused",
				"check the user in datastore.url and the password in LOCI_DATASTORE_PASSWORD or datastore.password_file")
		case pe.Code == "28000" && strings.Contains(pe.Message, "pg_hba"):
			add("PostgreSQL does not let this user in from this machine (pg_hba.conf)",
				"add a line for this user, database and address to the server's pg_hba.conf (hostssl for TLS), or use sslmode as it requires")
		case pe.Code == "28000":
			add("the user was refused", "check the user in datastore.url and the server's pg_hba.conf")
		case pe.Code == "3D000":
			add("the database does not exist", "the database in datastore.url does not exist: create it (createdb) or name another")
		case pe.Code == "42501":
			add("the user may not connect to that database", "GRANT CONNECT ON DATABASE to the user in datastore.url")
		case pe.Code == "53300":
			add("PostgreSQL has no connection left", "raise max_connections on the server or stop what holds its connections")
		case pe.Code == "57P03":
			add("PostgreSQL is starting or shutting down", "try again in a moment")
		}
	}
	if strings.Contains(text, "server refused TLS connection") {
		add("the server does not offer TLS, which the sslmode of datastore.url requires",
			"turn TLS on in the server (ssl = on in postgresql.conf, with a certificate) or, on a network you trust, change sslmode")
	}
	if errors.As(err, &cv) || errors.As(err, &ua) || errors.As(err, &hn) {
		add("the server's TLS certificate could not be verified",
			"name the CA that signed the server's certificate in sslrootcert, and the host as its certificate names it")
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		add("connection refused: nothing listens at that address",
			"check that PostgreSQL runs there and listens on that address and port (listen_addresses, port in postgresql.conf)")
	}
	if errors.As(err, &dns) && dns.IsNotFound {
		add("the host name is not known (DNS)", "check the host name in datastore.url")
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() || strings.Contains(text, "timeout") {
		add(fmt.Sprintf("no answer within %s (a timeout)", db.cfg.ConnConfig.ConnectTimeout),
			"check the address, that a firewall lets this machine reach it, and that the server is not overloaded")
	}
	if errors.As(err, &ne) && !ne.Timeout() && len(causes) == 0 {
		add("the network refused the connection", "check the address in datastore.url and the network between this machine and the server")
	}
	if len(causes) == 0 {
		add("PostgreSQL or the driver refused the connection",
			"check datastore.url (host, port, database, user, sslmode) and that PostgreSQL at "+db.where+" accepts connections")
	}
	said := strings.Join(strings.Fields(db.scrub(text)), " ")
	return fault.Wrap(fault.StoreBackendFailed, errors.New(db.scrub(text)),
		"cannot open the shared store at "+db.where+": "+strings.Join(causes, "; "),
		strings.Join(helps, "; ")+". The driver said: "+said)
}

// scrub removes the password from a message, whatever PostgreSQL or the
// driver put in it.
func (db *DB) scrub(s string) string {
	if p := db.cfg.ConnConfig.Password; p != "" {
		s = strings.ReplaceAll(s, p, "***")
	}
	return s
}

// Unavailable reports whether err is the database being unreachable (a
// refused or dropped connection, a server shutting down), not a refusal of
// the statement.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		// Class 08: connection exception; 57P01-03: admin shutdown, crash
		// shutdown, cannot connect now.
		return strings.HasPrefix(pe.Code, "08") || pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03"
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "conn closed") || strings.Contains(msg, "connection refused") ||
		strings.Contains(msg, "unexpected EOF") || strings.Contains(msg, "broken pipe") || strings.Contains(msg, "connection reset")
}

// RetryAfter is the Retry-After, in seconds, of a write refused while the
// database is unreachable.
const RetryAfter = 5

// The help of loci::store::backend_failed (503) for a write and for a read
// refused while the database is unreachable: a read says nothing changed.
var (
	unreachableWrite = fmt.Sprintf("nothing was written; the daemon reconnects on its own: try again in %d s (Retry-After)", RetryAfter)
	unreachableRead  = fmt.Sprintf("nothing was changed; the daemon reconnects on its own: try again in %d s (Retry-After)", RetryAfter)
)

// asRead gives a read's error the read's wording: the unreachable
// database's 503 (fail's) says nothing was changed, not written. Any
// other error is returned as it is.
func asRead(err error) error {
	var fe *fault.Error
	if !errors.As(err, &fe) || fe.Code != fault.StoreBackendFailed || fe.Status != 503 || fe.Help != unreachableWrite {
		return err
	}
	c := *fe
	c.Help = unreachableRead
	return &c
}

// fail turns a database error into the store's: a serialization failure
// or deadlock is store.ErrConflict (the writer runs it again), an
// unreachable database is loci::store::backend_failed with status 503
// (Retry-After: the daemon reconnects on its own), anything else
// loci::store::backend_failed naming the host.
func (db *DB) fail(err error) error {
	if err == nil {
		return nil
	}
	var fe *fault.Error
	if errors.As(err, &fe) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrTxnTooBig) {
		return err
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01") {
		return store.ErrConflict
	}
	if Unavailable(err) {
		return &fault.Error{Code: fault.StoreBackendFailed, Status: 503, RetryAfter: RetryAfter, Err: errors.New(db.scrub(err.Error())),
			Msg:  "the shared store at " + db.where + " is unreachable",
			Help: unreachableWrite}
	}
	return fault.Wrap(fault.StoreBackendFailed, errors.New(db.scrub(err.Error())), "the shared store at "+db.where+" refused a statement",
		"see the daemon log; report it if it repeats")
}

// Backend names the backend.
func (db *DB) Backend() string { return Scheme }

// Location is the database without credentials: host:port/database.
func (db *DB) Location() string { return "postgres://" + db.where }

// Shared is true: several daemons may use the database at once.
func (db *DB) Shared() bool { return true }

// Origin is this handle's instance, the origin of the changes it logs.
func (db *DB) Origin() string { return db.origin }

// Pool is the connection pool (the backend's own tests, `loci migrate`).
func (db *DB) Pool() *pgxpool.Pool { return db.pool }

// Close closes the pool; it is safe to call twice.
func (db *DB) Close() error {
	db.closeOnce.Do(func() { db.pool.Close() })
	return nil
}

// View runs fn in one read-only REPEATABLE READ transaction: one snapshot.
func (db *DB) View(ctx context.Context, fn func(store.Reader) error) error {
	return asRead(db.view(ctx, fn))
}

// view is View with a write's wording for an unreachable database.
func (db *DB) view(ctx context.Context, fn func(store.Reader) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	// The snapshot is taken at the transaction's first statement, not at
	// BEGIN: the SELECT sent with BEGIN (one round trip) takes it at once,
	// so the view is the palace as it was when View was called.
	q, err := db.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly,
		BeginQuery: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SELECT 1"})
	if err != nil {
		return db.fail(err)
	}
	defer func() { _ = q.Rollback(context.WithoutCancel(ctx)) }()
	t := &tx{db: db, q: q, ctx: ctx, now: time.Now().UTC()}
	if err := t.run(fn(t)); err != nil {
		return err
	}
	return db.fail(q.Commit(ctx))
}

// run is what the function of a View or Update (its error err) makes of
// the transaction: the context's error once a statement stopped on it,
// whatever the function made of that, else the function's own error as
// it gave it (the helpers already turned the database's errors into the
// store's); nil when the transaction may commit.
func (t *tx) run(err error) error {
	if t.cancelled != nil {
		return t.cancelled
	}
	return err
}

// Update runs fn in one read-write transaction holding the writer lock and
// commits it (synchronously: durable when Update returns nil). A commit
// that logged changes notifies the other daemons.
func (db *DB) Update(ctx context.Context, fn func(store.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	q, err := db.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return db.fail(err)
	}
	defer func() { _ = q.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := q.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", writerLock); err != nil {
		return db.fail(err)
	}
	t := &tx{db: db, q: q, ctx: ctx, write: true, now: time.Now().UTC()}
	if err := t.run(fn(t)); err != nil {
		return err
	}
	if err := t.keepCounts(); err != nil {
		return err
	}
	if t.seqRead && t.seq > t.firstSeq {
		if _, err := q.Exec(ctx, "SELECT pg_notify($1, $2)", Channel, db.origin); err != nil {
			return db.fail(err)
		}
	}
	return db.fail(q.Commit(ctx))
}

// Migrator is the migration runner: the schema applied under its
// advisory lock, the data steps under the migration lock.
func (db *DB) Migrator(steps []store.Step) store.Migrator {
	return &store.Runner{DB: db, Schema: Schema(), Steps: steps, LockTTL: time.Minute, Sync: db.syncSchema, Lock: db.lockMigrations}
}

// ApplySchema applies the declarative schema without recording it (the
// conformance suite's fresh store: tables there, nothing migrated); a
// daemon's start applies it through the Migrator.
func (db *DB) ApplySchema(ctx context.Context) error { return db.syncSchema(ctx) }

// syncSchema applies the declarative schema in one transaction under the
// schema lock: every statement creates what is missing (IF NOT EXISTS).
func (db *DB) syncSchema(ctx context.Context) error {
	err := pgx.BeginFunc(ctx, db.pool, func(q pgx.Tx) error {
		if _, err := q.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", schemaLock); err != nil {
			return err
		}
		_, err := q.Exec(ctx, Schema())
		return err
	})
	if err != nil {
		return fault.Wrap(fault.StoreSchemaSync, errors.New(db.scrub(err.Error())), "applying the schema to "+db.where+" failed",
			"check that the user in datastore.url may create tables in that database")
	}
	return nil
}

// lockMigrations takes the migration lock: a session lock on a connection
// of its own, which PostgreSQL releases if its holder dies.
func (db *DB) lockMigrations(ctx context.Context) (func(context.Context) error, error) {
	c, err := db.pool.Acquire(ctx)
	if err != nil {
		return nil, db.fail(err)
	}
	var ok bool
	if err := c.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", migrateLock).Scan(&ok); err != nil {
		c.Release()
		return nil, db.fail(err)
	}
	if !ok {
		c.Release()
		return nil, fault.New(fault.MigrateLocked, "another daemon or `loci migrate` is migrating "+db.where,
			"wait for it to finish; a lock whose holder died is released by PostgreSQL at once")
	}
	return func(ctx context.Context) error {
		defer c.Release()
		_, err := c.Exec(ctx, "SELECT pg_advisory_unlock($1)", migrateLock)
		return db.fail(err)
	}, nil
}

// Meta: operational records in their own table, outside transactions.

// GetMeta reads an operational record.
func (db *DB) GetMeta(ctx context.Context, key string) (string, bool, error) {
	var v string
	err := db.pool.QueryRow(ctx, "SELECT value FROM loci_meta WHERE key = $1", key).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	if undefinedTable(err) {
		return "", false, nil // before the first schema sync
	}
	if err != nil {
		return "", false, asRead(db.fail(err))
	}
	return v, true, nil
}

// PutMeta writes an operational record.
func (db *DB) PutMeta(ctx context.Context, key, value string) error {
	if err := db.ensureMeta(ctx); err != nil {
		return err
	}
	_, err := db.pool.Exec(ctx, "INSERT INTO loci_meta(key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value", key, value)
	return db.fail(err)
}

// DeleteMeta removes an operational record.
func (db *DB) DeleteMeta(ctx context.Context, key string) error {
	_, err := db.pool.Exec(ctx, "DELETE FROM loci_meta WHERE key = $1", key)
	if undefinedTable(err) {
		return nil
	}
	return db.fail(err)
}

// CompareAndSwapMeta sets key to value when it currently holds old ("":
// absent), atomically.
func (db *DB) CompareAndSwapMeta(ctx context.Context, key, old, value string) (bool, error) {
	if err := db.ensureMeta(ctx); err != nil {
		return false, err
	}
	var tag pgconn.CommandTag
	var err error
	switch {
	case old == "" && value == "":
		var n int
		err = db.pool.QueryRow(ctx, "SELECT count(*) FROM loci_meta WHERE key = $1", key).Scan(&n)
		return n == 0, db.fail(err)
	case old == "":
		tag, err = db.pool.Exec(ctx, "INSERT INTO loci_meta(key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING", key, value)
	case value == "":
		tag, err = db.pool.Exec(ctx, "DELETE FROM loci_meta WHERE key = $1 AND value = $2", key, old)
	default:
		tag, err = db.pool.Exec(ctx, "UPDATE loci_meta SET value = $3 WHERE key = $1 AND value = $2", key, old, value)
	}
	if err != nil {
		return false, db.fail(err)
	}
	return tag.RowsAffected() == 1, nil
}

// ensureMeta creates the operational table before the first schema sync
// (the migration runner records its hash there).
func (db *DB) ensureMeta(ctx context.Context) error {
	_, err := db.pool.Exec(ctx, "CREATE TABLE IF NOT EXISTS loci_meta (key text PRIMARY KEY, value text NOT NULL)")
	if err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "23505" {
			return nil // a concurrent creation
		}
	}
	return db.fail(err)
}

func undefinedTable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "42P01"
}
