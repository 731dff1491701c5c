package services

import (
	"context"
	"time"

	"github.com/loci-dev/loci/sources"
	"github.com/loci-dev/loci/triggers"
	"github.com/loci-dev/loci/triggers/watch"
)

// The loops of the trigger types, apart from the supervisor so that tests
// drive them on a fake clock. Each runs until ctx ends and asks for runs
// through ask.

// runSchedule waits for a schedule's slots. due is the slot remembered
// from before (nil: the trigger just started, and its first slot is one
// interval, or the next time of day, away: it never fires on enable); a
// slot already past fires at once, once, whatever the number of slots
// missed.
//
// claim keeps each next slot, so that a restart knows it, and decides who
// fires a slot: claim(&slot, next) replaces the remembered slot by next
// and reports true when the remembered slot is still slot; otherwise
// another daemon (on a shared store) fired it, and claim answers the slot
// it remembered, which this loop waits for instead. claim(nil, next) at
// the start keeps next unless a slot is remembered already (another
// daemon runs the trigger), and answers the slot to wait for.
func runSchedule(ctx context.Context, set triggers.Settings, due *time.Time, ask func(), claim func(slot *time.Time, next time.Time) (time.Time, bool)) {
	var next time.Time
	if due == nil {
		next, _ = claim(nil, set.NextDue(time.Now()))
	} else {
		next = *due
	}
	for {
		timer := time.NewTimer(time.Until(next))
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
		// Claimed before the request: a daemon that dies between the two
		// misses the slot rather than another firing it again.
		slot := next
		won := false
		if next, won = claim(&slot, set.After(slot, time.Now())); won {
			ask()
		}
	}
}

// runPoll asks every interval; after a failed request it waits longer
// (set.Backoff, up to max_backoff) and returns to its interval on the first
// success. show reports when it asks next.
func runPoll(ctx context.Context, set triggers.Settings, ask func() error, show func(time.Time)) {
	failures := 0
	for {
		wait := set.Backoff(failures)
		show(time.Now().Add(wait))
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
		if err := ask(); err != nil {
			failures++
		} else {
			failures = 0
		}
	}
}

// runWatch watches a directory (watch.Dir, skipping what the directory
// source skips) and asks after each debounced burst of changes. A watch that cannot be set up, or fails (its
// directory removed or moved, say), is set up again after a growing wait
// (1 s, doubling, at most a minute); setup reports each failure and (nil)
// each success. Each arm after a failure asks for a run at once, once the
// watches are set: files made while nothing watched would otherwise wait
// for some later change. rescan asks so at the first arm too (the
// supervisor's word that the trigger was waiting, its directory missing).
func runWatch(ctx context.Context, set triggers.Settings, rescan bool, ask func(), setup func(error)) {
	wait := time.Second
	for {
		err := watch.Dir(ctx, set, sources.SkippedDir, ask, func() {
			setup(nil)
			wait = time.Second
			if rescan {
				ask()
			}
		})
		if ctx.Err() != nil {
			return
		}
		setup(err)
		rescan = true
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
		wait = min(2*wait, time.Minute)
	}
}
