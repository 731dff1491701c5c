package main

import (
	"testing"
)

// BenchmarkGitHistoryNative lists a 10,000-commit history (made with git
// fast-import) from the start, natively: the guest's work and git's, each
// "run" Need done with os/exec as the daemon's host does, without the
// sandbox. It reports commits/s per page size.
func BenchmarkGitHistoryNative(b *testing.B) {
	repo := newRepo(b)
	importCommits(b, repo, "", 0, linear(10000, t0, 1))
	for _, limit := range []int{256, 1000} {
		b.Run(limitName(limit), func(b *testing.B) {
			h := &host{}
			n := 0
			for b.Loop() {
				n += len(h.discoverAll(b, repo, limit, nil))
			}
			if n != 10000*b.N {
				b.Fatalf("listed %d commits in %d runs", n, b.N)
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "commits/s")
			b.ReportMetric(float64(h.runs)/float64(b.N), "git-runs/op")
		})
	}
}

func limitName(n int) string {
	if n == 1000 {
		return "limit=1000"
	}
	return "limit=256"
}
