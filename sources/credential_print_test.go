package sources

import (
	"fmt"
	"strings"
	"testing"
)

func TestCredentialInAnUnexportedFieldNeverPrintsItsSecret(t *testing.T) {
	type holder struct{ c Credential }
	h := holder{c: NewCredential("env", []byte("s3cr3t-value"))}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d"} {
		out := fmt.Sprintf(verb, h)
		for _, bad := range []string{"s3cr3t-value", "115 51 99", "7333637233742d76616c7565"} {
			if strings.Contains(out, bad) {
				t.Errorf("%s of a struct holding a credential = %q: it shows the secret", verb, out)
			}
		}
	}
}
