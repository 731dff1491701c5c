package main

import (
	"context"
	"log/slog"
	"time"
)

// lifecycle stops the daemon's parts in the reverse of the order they
// started, each within a budget of its own, so that a stalled part (a slow
// client, a job that does not checkpoint) cannot spend the next one's time.
// A start that fails stops what had started.
type lifecycle struct {
	log   *slog.Logger
	parts []part
}

// part is one started part of the daemon and how to stop it.
type part struct {
	name   string
	budget time.Duration
	stop   func(ctx context.Context) error
}

// started records that a part runs; stop ends it within budget.
func (l *lifecycle) started(name string, budget time.Duration, stop func(ctx context.Context) error) {
	l.parts = append(l.parts, part{name, budget, stop})
}

// startedPlain records a part whose stop takes no context: it is waited
// for at most budget (and left to finish on its own after).
func (l *lifecycle) startedPlain(name string, budget time.Duration, stop func() error) {
	l.started(name, budget, func(ctx context.Context) error {
		done := make(chan error, 1)
		go func() { done <- stop() }()
		select {
		case err := <-done:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	})
}

// stop stops every started part, the last started first.
func (l *lifecycle) stop(base context.Context) {
	for i := len(l.parts) - 1; i >= 0; i-- {
		p := l.parts[i]
		ctx, cancel := context.WithTimeout(base, p.budget)
		t0 := time.Now()
		err := p.stop(ctx)
		cancel()
		if err != nil {
			l.log.Warn("stopping "+p.name, "err", err, "took", time.Since(t0).Round(time.Millisecond))
		} else {
			l.log.Debug("stopped "+p.name, "took", time.Since(t0).Round(time.Millisecond))
		}
	}
	l.parts = nil
}
