package cli

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/loci-dev/loci/fault"
)

// A checkpoint payload that is empty or not JSON is refused before any
// daemon is reached, with the problem as the message and the remedy as
// the help (not the other way round).
func TestCheckpointPayloadErrorsSayTheProblem(t *testing.T) {
	for _, tc := range []struct{ in, msg, help string }{
		{"{bad", "not valid JSON", "correct the payload"},
		{"  \n", "is empty", "pass -f FILE"},
	} {
		t.Run(tc.msg, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			a := &app{stdout: &stdout, stderr: &stderr, env: func(string) (string, bool) { return "", false }}
			cmd := a.checkpointCmd()
			cmd.SetIn(strings.NewReader(tc.in))
			cmd.SetArgs(nil)
			cmd.SilenceUsage, cmd.SilenceErrors = true, true
			err := cmd.Execute()
			var fe *fault.Error
			if !errors.As(err, &fe) {
				t.Fatalf("err %v", err)
			}
			if fe.Code != fault.InputInvalid || !strings.Contains(fe.Msg, tc.msg) || !strings.Contains(fe.Help, tc.help) {
				t.Fatalf("code %s, message %q, help %q", fe.Code, fe.Msg, fe.Help)
			}
		})
	}
}
