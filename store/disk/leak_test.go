package disk

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine is still running
// when they end: a test that starts something must stop it.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
