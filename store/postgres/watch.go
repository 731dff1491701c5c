package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgxlisten"

	"github.com/loci-dev/loci/store"
)

var _ store.Watcher = (*DB)(nil)

// Watch wakes the daemon's followers when another handle commits changes:
// LISTEN on Channel over a connection of its own (pgxlisten reconnects it
// after a loss, and wakes once after each reconnection, since
// notifications sent meanwhile are gone), and a poll every PollEvery as the
// fallback. It returns when ctx ends. wake must not block.
func (db *DB) Watch(ctx context.Context, wake func()) {
	l := &pgxlisten.Listener{
		Connect: func(ctx context.Context) (*pgx.Conn, error) {
			return pgx.ConnectConfig(ctx, db.cfg.ConnConfig.Copy())
		},
		LogError: func(_ context.Context, err error) {
			if ctx.Err() == nil {
				db.log.Debug("listening for other daemons' changes failed; polling meanwhile", "err", db.scrub(err.Error()))
			}
		},
		ReconnectDelay: time.Second,
	}
	l.Handle(Channel, &watchHandler{origin: db.origin, wake: wake})
	go func() { _ = l.Listen(ctx) }()
	t := time.NewTicker(PollEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			wake()
		}
	}
}

// watchHandler wakes on another handle's notification, and once when the
// listener (re)connects: what was notified while it was away is lost.
type watchHandler struct {
	origin string
	wake   func()
}

func (h *watchHandler) HandleNotification(_ context.Context, n *pgconn.Notification, _ *pgx.Conn) error {
	if n.Payload != h.origin {
		h.wake()
	}
	return nil
}

func (h *watchHandler) HandleBacklog(context.Context, string, *pgx.Conn) error {
	h.wake()
	return nil
}
