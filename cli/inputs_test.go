package cli

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
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

// When the daemon dies while loci mine waits for its job, the error says
// which job it was waiting on and how to find it once the daemon runs
// again (the mine resumes then), with and without --json.
func TestMineWaitNamesItsJobWhenTheDaemonDies(t *testing.T) {
	for _, jsonOut := range []bool{false, true} {
		t.Run(fmt.Sprint("json=", jsonOut), func(t *testing.T) {
			const id = "0b9f3c1e-2d4a-4c5b-8e6f-7a8b9c0d1e2f"
			job := `{"id": "` + id + `", "kind": "mine", "status": "%s", "priority": "normal", "progress": {"current": 1}, "attempts": 1, "max_attempts": 3, "created_at": "2026-01-01T00:00:00Z"}`
			var hs *httptest.Server
			var once sync.Once
			hs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if r.Method == http.MethodPost {
					w.WriteHeader(http.StatusCreated)
					fmt.Fprintf(w, job, "queued")
					return
				}
				fmt.Fprintf(w, job, "running")
				// The daemon dies after its first answer to the wait.
				once.Do(func() { go hs.Close() })
			}))
			defer hs.Close()
			dir := t.TempDir()
			scope := filepath.Join(dir, ".loci.toml")
			if err := os.WriteFile(scope, []byte("mode = \"full\"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			env := map[string]string{"HOME": dir, "XDG_CONFIG_HOME": dir, "LOCI_PROJECT": scope}
			var stdout, stderr bytes.Buffer
			a := &app{stdout: &stdout, stderr: &stderr, jsonOut: jsonOut, addr: strings.TrimPrefix(hs.URL, "http://"),
				env: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}
			cmd := a.mineCmd()
			cmd.SetArgs([]string{dir})
			cmd.SilenceUsage, cmd.SilenceErrors = true, true
			err := cmd.Execute()
			fe := fault.As(err)
			if err == nil || (fe.Code != fault.ClientNotRunning && fe.Code != fault.ClientRequestFailed) {
				t.Fatalf("err %v", err)
			}
			if !strings.Contains(fe.Help, "mine job "+id) || !strings.Contains(fe.Help, "loci job get "+id) {
				t.Fatalf("help %q names no job", fe.Help)
			}
			if jsonOut && stdout.Len() != 0 {
				t.Fatalf("--json stdout %q", stdout.String())
			}
		})
	}
}
