package fault

import (
	"regexp"
	"testing"
	"unicode/utf8"
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
		ServerFailed: 500, SourceNotEnabled: 409, SourceBuiltin: 400, SourceBundled: 400,
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

func TestLongInputIsQuotedByPrefix(t *testing.T) {
	long := stringsRepeat("é", 50_000) // 100 KB
	for _, c := range []struct {
		name string
		e    *Error
	}{
		{"a long value quoted by Newf", Newf(PalacePathInvalid, "h", "wing name %q is too long", long)},
		{"a long value given to Invalid", Invalid("name", long)},
		{"a long field given to Invalid", Invalid(long, "is not a field")},
		{"a long message given to New", New(InputInvalid, long, "h")},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := c.e.Body()
			if len(b.Error) > MaxMsg+32 || len(b.Help) > 2*MaxQuoted+64 {
				t.Fatalf("message %d bytes, help %d bytes", len(b.Error), len(b.Help))
			}
			if !utf8.ValidString(b.Error) || !utf8.ValidString(b.Help) {
				t.Fatal("cut inside a character")
			}
		})
	}
	if got := Clip("short", 10); got != "short" {
		t.Fatal(got)
	}
	if got := Clip("abcdef", 3); got != "abc…(6 bytes)" {
		t.Fatal(got)
	}
}

func stringsRepeat(s string, n int) string {
	b := make([]byte, 0, len(s)*n)
	for range n {
		b = append(b, s...)
	}
	return string(b)
}
