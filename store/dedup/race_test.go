//go:build race

package dedup

// raceScale shrinks the statistical tests under the race detector, which
// makes their edit distances ten times slower; the rules are the same.
const raceScale = 4
