package kinds

import "github.com/loci-dev/loci/actors"

// MineParams are the fields of a mine submission, typed: what the daemon's
// own callers (a miner's run) build, so that the compiler checks them.
type MineParams = mineParams

// MineSubmission is a submission of a mine job of p, requested by
// requestedBy (store.ByCLI, ...; empty: channel) through channel.
func MineSubmission(p MineParams, requestedBy, channel string) actors.Submission {
	return actors.Submission{Type: KindMine, RequestedBy: requestedBy, Channel: channel, Typed: p}
}
