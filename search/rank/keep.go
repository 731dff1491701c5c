package rank

// Keep is a search leg's further scope check, made by its caller (which
// reads the candidates' drawers): it answers, for each id, whether that
// candidate stays. It is asked about candidates in rank order, a window at
// a time, so that a store reads a window's drawers in one call
// (store.PalaceReader.DrawersByID) rather than one call per candidate.
type Keep func(ids []string) []bool

// KeepInOrder returns the positions, in order, of the first want of n
// candidates that keep accepts (all of the first want when keep is nil).
// keep sees a window of as many candidates as are still wanted, then, after
// a window with refusals, twice as many as the last window (bounded by what
// is left), so a scope that refuses most candidates costs few calls and
// one that refuses none costs one.
func KeepInOrder(n, want int, id func(i int) string, keep Keep) []int {
	if want <= 0 {
		return nil
	}
	out := make([]int, 0, min(want, n))
	if keep == nil {
		for i := range min(want, n) {
			out = append(out, i)
		}
		return out
	}
	window := 0
	for next := 0; next < n && len(out) < want; {
		window = min(max(want-len(out), 2*window), n-next)
		ids := make([]string, window)
		for j := range ids {
			ids[j] = id(next + j)
		}
		ok := keep(ids)
		for j := range ids {
			if j < len(ok) && ok[j] && len(out) < want {
				out = append(out, next+j)
			}
		}
		next += window
	}
	return out
}

// Each makes a Keep of a check of one id at a time (for callers with
// nothing to batch).
func Each(keep func(id string) bool) Keep {
	return func(ids []string) []bool {
		out := make([]bool, len(ids))
		for i, id := range ids {
			out[i] = keep(id)
		}
		return out
	}
}
