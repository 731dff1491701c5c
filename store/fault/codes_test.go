package fault

import (
	"regexp"
	"testing"
)

var codeFormat = regexp.MustCompile(`^loci::[a-z]+::[a-z_]+$`)

func TestRegistry(t *testing.T) {
	reg := Registered()
	if len(reg) == 0 {
		t.Fatal("empty registry")
	}
	for c, s := range reg {
		if !codeFormat.MatchString(string(c)) {
			t.Errorf("code %q does not match loci::<module>::<kind>", c)
		}
		if s < 400 || s > 599 {
			t.Errorf("code %s has status %d", c, s)
		}
	}
	// The spec's mapping table, for the codes it names.
	want := map[Code]int{
		JobsTransitionInvalid: 400, InputInvalid: 400, AuthUnauthorized: 401, ModeForbidden: 403,
		PalaceWingNotFound: 404, PalaceRoomNotFound: 404, PalaceDrawerNotFound: 404, JobsNotFound: 404,
		JobsOrphaned: 409, JobsContended: 409, PalaceDrawerNameTaken: 409, PalaceBusy: 409, PalaceDrawerSuperseded: 409,
		ServerFailed: 500,
	}
	for c, s := range want {
		if reg[c] != s {
			t.Errorf("%s: status %d, spec says %d", c, reg[c], s)
		}
	}
}

func TestBodyAndRemote(t *testing.T) {
	e := &Error{Code: ClientRemoteRejected, Status: 409, Remote: PalaceBusy, Msg: "m", Help: "h"}
	b := e.Body()
	if b.Code != string(ClientRemoteRejected) || b.Status != 409 || b.RemoteCode != string(PalaceBusy) || b.Error != "m" || b.Help != "h" {
		t.Fatalf("body %+v", b)
	}
	if got := As(nil); got != nil {
		t.Fatal("As(nil) not nil")
	}
	if As(errString("x")).Code != ServerFailed {
		t.Fatal("plain error not a server failure")
	}
}

type errString string

func (e errString) Error() string { return string(e) }
