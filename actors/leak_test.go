package actors

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/loci-dev/loci/store/postgres/pgtest"
)

// TestMain fails the package's tests if any goroutine is still running
// when they end: a test that starts the actor system, a follower or the
// job dispatcher must stop it. The PostgreSQL cluster some tests start
// (pgtest) is stopped first.
func TestMain(m *testing.M) {
	code := pgtest.Main(m)
	if code == 0 {
		// bleve's package init starts one process-wide analysis queue
		// (bleve/config.go: Config.analysisQueue, four workers) that lives
		// as long as the program; no index owns or stops it.
		if err := goleak.Find(goleak.IgnoreTopFunction("github.com/blevesearch/bleve_index_api.AnalysisWorker")); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: errors on successful test run: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
