package postgres

import (
	"context"
	"slices"
)

// DaemonApplication is the application_name a handle gives its sessions
// by default (a daemon's, and any loci command's that does not name
// itself: store.OpenOptions.ApplicationName).
const DaemonApplication = "loci"

// OtherDaemons counts the loci daemons connected to this handle's
// database: sessions of the same database named DaemonApplication (this
// handle's are not, when it was opened with another
// store.OpenOptions.ApplicationName, as `loci migrate --to` opens its
// own). A daemon holds several sessions (its pool, its listener): the
// daemons are counted by their listeners (one LISTEN session each), at
// least one when any session is there (another role's sessions show
// their application name, not their statements, unless this role may read
// every statistic: pg_read_all_stats). hosts are the client addresses the
// sessions come from, sorted ("local" for a Unix socket, "unknown" where
// PostgreSQL does not show it to this role).
func (db *DB) OtherDaemons(ctx context.Context) (n int, hosts []string, err error) {
	var sessions, listeners int
	err = db.pool.QueryRow(ctx, `SELECT count(*),
			count(*) FILTER (WHERE query ILIKE 'listen %'),
			coalesce(array_agg(DISTINCT coalesce(host(client_addr), CASE WHEN client_port = -1 THEN 'local' ELSE 'unknown' END)), '{}')
		FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = $1 AND pid <> pg_backend_pid()`,
		DaemonApplication).Scan(&sessions, &listeners, &hosts)
	if err != nil {
		return 0, nil, db.fail(err)
	}
	slices.Sort(hosts)
	n = listeners
	if n == 0 && sessions > 0 {
		n = 1
	}
	return n, hosts, nil
}
