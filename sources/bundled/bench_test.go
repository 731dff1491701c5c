package bundled

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"testing"

	"github.com/loci-dev/loci/sources/contract"
)

// BenchmarkGitHistoryWASI lists a 10,000-commit history (made with git
// fast-import) with the committed git-history module under wazero, git
// run natively for it: the module's share of the daemon's figure, without
// the sandbox's grants and limits. It reports commits/s.
func BenchmarkGitHistoryWASI(b *testing.B) {
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("git is not installed")
	}
	repo := b.TempDir()
	var s bytes.Buffer
	for k := 1; k <= 10000; k++ {
		msg := fmt.Sprintf("change %d\n\nwhy change %d was made", k, k)
		body := fmt.Sprint("content ", k)
		fmt.Fprintf(&s, "commit refs/heads/main\nauthor Ada <ada@example.com> %d +0000\ncommitter Ada <ada@example.com> %d +0000\ndata %d\n%s\n",
			1700000000+k*60, 1700000000+k*60, len(msg), msg)
		fmt.Fprintf(&s, "M 644 inline dir%d/file%d.txt\ndata %d\n%s\n\n", k%5, k, len(body), body)
	}
	s.WriteString("done\n")
	for _, args := range [][]string{{"init", "-q"}, {"symbolic-ref", "HEAD", "refs/heads/main"}, {"fast-import", "--quiet", "--done"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Stdin = repo, bytes.NewReader(s.Bytes())
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	w := newWASI(b)
	n := 0
	for b.Loop() {
		var cur json.RawMessage
		for {
			a := w.call(b, "git-history", contract.Request{Call: contract.CallDiscover, Locator: repo, Cursor: cur, Limit: 1000})
			if a.Error != nil {
				b.Fatal(a.Error)
			}
			n += len(a.Items)
			if !a.More {
				break
			}
			cur = a.Items[len(a.Items)-1].Cursor
		}
	}
	if n != 10000*b.N {
		b.Fatalf("listed %d commits in %d runs", n, b.N)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "commits/s")
}
