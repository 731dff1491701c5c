package cli

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"filippo.io/age"

	"github.com/loci-dev/loci/fault"
)

// TestEncryptedExportRefusesATerminal: an encrypted export without --out
// whose standard output is a terminal is refused before the daemon is
// asked (age refuses to write binary to a terminal too), saying to give
// --out or redirect; a plain export and a redirected one are not.
func TestEncryptedExportRefusesATerminal(t *testing.T) {
	tty, _ := openTerminal(t)
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	var hits atomic.Int32
	full := exportBytes(t)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/x-ndjson")
		_, _ = w.Write(full)
	}))
	defer hs.Close()
	dir := t.TempDir()
	newApp := func(stdout *bytes.Buffer) *app {
		a := &app{stderr: &bytes.Buffer{}, addr: strings.TrimPrefix(hs.URL, "http://"),
			env: func(k string) (string, bool) {
				v, ok := map[string]string{"HOME": dir, "XDG_CONFIG_HOME": dir, "LOCI_EXPORT_PASSPHRASE": "a long passphrase"}[k]
				return v, ok
			}}
		if stdout == nil {
			a.stdout = tty
		} else {
			a.stdout = stdout
		}
		return a
	}
	for _, args := range [][]string{{"--encrypt-to", id.Recipient().String()}, {"--passphrase"}, {"--passphrase", "--out", "-"}} {
		cmd := newApp(nil).exportCmd()
		cmd.SetArgs(args)
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		err := cmd.Execute()
		fe := fault.As(err)
		if err == nil || fe.Code != fault.InputInvalid || !strings.Contains(fe.Msg+fe.Help, "--out") || !strings.Contains(fe.Msg, "terminal") {
			t.Fatalf("%v to a terminal: %v", args, err)
		}
	}
	if hits.Load() != 0 {
		t.Fatalf("the daemon was asked %d times", hits.Load())
	}
	// Redirected, it is written.
	var buf bytes.Buffer
	cmd := newApp(&buf).exportCmd()
	cmd.SetArgs([]string{"--encrypt-to", id.Recipient().String()})
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	if err := cmd.Execute(); err != nil || !bytes.HasPrefix(buf.Bytes(), []byte("age-encryption.org/")) {
		t.Fatalf("redirected: %v %q", err, buf.Bytes())
	}
	// A plain export may go to the terminal.
	cmd = newApp(nil).exportCmd()
	cmd.SetArgs(nil)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	if err := cmd.Execute(); err != nil {
		t.Fatalf("plain export to a terminal: %v", err)
	}
}
