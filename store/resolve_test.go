package store

import (
	"strings"
	"testing"

	"github.com/loci-dev/loci/fault"
)

// A missing room's help names the command that lists the wing's rooms as
// it is typed: `loci room list` takes the wing as --wing, no argument.
func TestRoomNotFoundHelpNamesTheCommandAsTyped(t *testing.T) {
	fe := fault.As(roomNotFound("shop", "decisions"))
	if fe.Code != fault.PalaceRoomNotFound || !strings.Contains(fe.Help, "`loci room list --wing shop`") || strings.Contains(fe.Help, "<wing>") {
		t.Fatalf("%s: %s", fe.Code, fe.Help)
	}
}
