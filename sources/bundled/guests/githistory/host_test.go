package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/sources/contract"
)

// host does what the daemon does for a guest, natively: it runs each
// "run" Need with os/exec (the program by its name, no shell, in the
// locator unless the need names a directory), caps what it captures at
// outCap bytes (Result.Error too_large above it) and calls the guest
// again with the results and its state until it answers.
type host struct {
	outCap int
	// runs counts the programs run, rounds the guest's calls.
	runs, rounds int
}

// maxRounds bounds the rounds of one call, as the sandbox will.
const maxRounds = 64

func (h *host) call(tb testing.TB, req contract.Request) *contract.Answer {
	tb.Helper()
	req.Contract = contract.Version
	for range maxRounds {
		h.rounds++
		b, err := json.Marshal(req)
		if err != nil {
			tb.Fatal(err)
		}
		a := contract.Handle(source{}, bytes.NewReader(b))
		if len(a.Needs) == 0 {
			out, err := json.Marshal(a)
			if err != nil {
				tb.Fatal(err)
			}
			var back contract.Answer
			if err := json.Unmarshal(out, &back); err != nil {
				tb.Fatal(err)
			}
			return &back
		}
		req.Results = make([]contract.Result, len(a.Needs))
		for i, n := range a.Needs {
			req.Results[i] = h.run(tb, req.Locator, n)
		}
		req.State = a.State
	}
	tb.Fatalf("the guest asked for more than %d rounds", maxRounds)
	return nil
}

func (h *host) run(tb testing.TB, locator string, n contract.Need) contract.Result {
	tb.Helper()
	if n.Kind != contract.NeedRun || n.Program != "git" {
		return contract.Result{Error: contract.Errorf("permission_denied", "%s %q is not granted", n.Kind, n.Program)}
	}
	h.runs++
	cmd := exec.Command(n.Program, n.Args...)
	cmd.Dir = locator
	if n.Dir != "" {
		cmd.Dir = n.Dir
	}
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	r := contract.Result{Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}
	switch {
	case errors.As(err, &exit):
		r.Exit = exit.ExitCode()
	case err != nil:
		return contract.Result{Error: contract.Errorf("failed", "running %s: %v", n.Program, err)}
	}
	if h.outCap > 0 && len(r.Stdout)+len(r.Stderr) > h.outCap {
		return contract.Result{Error: contract.Errorf("too_large", "%s wrote more than %d bytes", n.Program, h.outCap)}
	}
	return r
}

// discoverAll pages through discovery past cur with limit and returns
// every item.
func (h *host) discoverAll(tb testing.TB, repo string, limit int, cur json.RawMessage) []contract.Item {
	tb.Helper()
	var all []contract.Item
	for range 1 << 20 {
		a := h.call(tb, contract.Request{Call: contract.CallDiscover, Locator: repo, Cursor: cur, Limit: limit})
		if a.Error != nil {
			tb.Fatalf("discover: %v", a.Error)
		}
		if limit > 0 && len(a.Items) > limit {
			tb.Fatalf("%d items for a limit of %d", len(a.Items), limit)
		}
		all = append(all, a.Items...)
		if !a.More {
			return all
		}
		if len(a.Items) == 0 {
			tb.Fatal("More with no items")
		}
		cur = a.Items[len(a.Items)-1].Cursor
	}
	tb.Fatal("discovery never ended")
	return nil
}

// spec is a commit a test makes: its message, its author's time and the
// files it writes (path: content).
type spec struct {
	msg   string
	at    time.Time
	files map[string]string
	// branch is the branch it goes on ("": main); from, when set, its
	// parent (a mark or commit-ish) instead of the branch's tip; merge,
	// when set, its second parent.
	branch, from, merge string
}

// gitIn runs git in dir, failing the test on an error.
func gitIn(tb testing.TB, dir string, stdin []byte, args ...string) string {
	tb.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C", "GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@example.com")
	cmd.Stdin = bytes.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// newRepo makes a repository in a temporary directory (HEAD on main, no
// commit yet).
func newRepo(tb testing.TB) string {
	tb.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		tb.Skip("git is not installed")
	}
	dir := tb.TempDir()
	gitIn(tb, dir, nil, "init", "-q")
	gitIn(tb, dir, nil, "symbolic-ref", "HEAD", "refs/heads/main")
	return dir
}

// importCommits appends commits to main with git fast-import, fast: the
// first has from as its parent (a commit-ish; "" a root commit, or main's
// tip when main exists). Marks count from mark0+1.
func importCommits(tb testing.TB, repo, from string, mark0 int, commits []spec) {
	tb.Helper()
	var b bytes.Buffer
	data := func(s string) { fmt.Fprintf(&b, "data %d\n%s\n", len(s), s) }
	for i, c := range commits {
		branch := c.branch
		if branch == "" {
			branch = "main"
		}
		fmt.Fprintf(&b, "commit refs/heads/%s\nmark :%d\n", branch, mark0+i+1)
		fmt.Fprintf(&b, "author Ada Lovelace <ada@example.com> %d +0000\n", c.at.Unix())
		fmt.Fprintf(&b, "committer Ada Lovelace <ada@example.com> %d +0000\n", c.at.Unix())
		data(c.msg)
		switch {
		case c.from != "":
			fmt.Fprintf(&b, "from %s\n", c.from)
		case i == 0 && from != "":
			fmt.Fprintf(&b, "from %s\n", from)
		}
		if c.merge != "" {
			fmt.Fprintf(&b, "merge %s\n", c.merge)
		}
		for p, body := range c.files {
			fmt.Fprintf(&b, "M 644 inline %s\n", p)
			data(body)
		}
		b.WriteString("\n")
	}
	b.WriteString("done\n")
	gitIn(tb, repo, b.Bytes(), "fast-import", "--quiet", "--done", "--force")
}

// linear is n commits of a simple history starting at t0.
func linear(n int, t0 time.Time, first int) []spec {
	out := make([]spec, n)
	for i := range out {
		k := first + i
		out[i] = spec{msg: fmt.Sprintf("change %d\n\nwhy change %d was made", k, k), at: t0.Add(time.Duration(k) * time.Minute),
			files: map[string]string{fmt.Sprintf("dir%d/file%d.txt", k%5, k): fmt.Sprint("content ", k)}}
	}
	return out
}

// revList is git's own listing, oldest first.
func revList(tb testing.TB, repo string, args ...string) []string {
	tb.Helper()
	return strings.Fields(gitIn(tb, repo, nil, append([]string{"rev-list", "--reverse"}, args...)...))
}

func itemIDs(items []contract.Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.ID
	}
	return out
}

func init() {
	// The tests' git must not read the user's configuration.
	os.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(os.TempDir(), "loci-githistory-test-no-config"))
}
