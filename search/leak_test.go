package search

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine is still running
// when they end: a test that starts something stops it.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// bleve's package init starts one process-wide analysis queue
		// (bleve/config.go: Config.analysisQueue, four workers) that lives
		// as long as the program; no index owns or stops it.
		goleak.IgnoreTopFunction("github.com/blevesearch/bleve_index_api.AnalysisWorker"),
	)
}
