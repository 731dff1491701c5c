package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// sourcePackages measures the installed sources against a real daemon
// with embedding off (issue 29): the bundled WebAssembly directory source
// against the built-in one on the same tree of small files, in turns,
// each mine into a fresh palace; then the bundled git-history source over
// a repository of many commits (commits/s), and again after new commits
// (incremental).
func sourcePackages(bin, dir string, files, commits int, wasmSource string) error {
	r := rand.New(rand.NewPCG(29, 29))
	tree := filepath.Join(dir, "tree")
	if err := smallTree(tree, files, r); err != nil {
		return err
	}
	rates := map[string][]float64{}
	for turn := range 4 {
		source := "directory"
		if turn%2 == 1 {
			source = wasmSource
		}
		palace := filepath.Join(dir, fmt.Sprintf("p%d", turn))
		d, err := startConfigured(bin, palace, filepath.Join(dir, "off.toml"), "[embedding]\ndefault = \"\"\n")
		if err != nil {
			return err
		}
		t0 := time.Now()
		res, err := mineBody(d.addr, map[string]any{"type": "mine", "source": source, "locator": tree, "wing": "tree"})
		el := time.Since(t0)
		d.stop()
		if err != nil {
			return fmt.Errorf("%s: %w", source, err)
		}
		rate := float64(res.Documents) / el.Seconds()
		rates[source] = append(rates[source], rate)
		fmt.Printf("turn %d: the %s source mined %d files in %s, %.0f files/s (%d drawers)\n",
			turn+1, source, res.Documents, el.Round(time.Millisecond), rate, res.Created)
		_ = os.RemoveAll(palace)
	}
	mean := func(xs []float64) float64 {
		s := 0.0
		for _, x := range xs {
			s += x
		}
		return s / float64(len(xs))
	}
	b, w := mean(rates["directory"]), mean(rates[wasmSource])
	fmt.Printf("%d files: built-in %.0f files/s, %s %.0f files/s: %.2f of the built-in's (target >= 0.5)\n", files, b, wasmSource, w, w/b)

	repo := filepath.Join(dir, "repo")
	if err := gitRepo(repo, commits, 0); err != nil {
		return err
	}
	d, err := startConfigured(bin, filepath.Join(dir, "pg"), filepath.Join(dir, "off.toml"), "[embedding]\ndefault = \"\"\n")
	if err != nil {
		return err
	}
	defer d.stop()
	t0 := time.Now()
	res, err := mineBody(d.addr, map[string]any{"type": "mine", "source": "git-history", "locator": repo, "wing": "repo"})
	if err != nil {
		return fmt.Errorf("git-history: %w", err)
	}
	el := time.Since(t0)
	fmt.Printf("git-history over %d commits: %s, %.0f commits/s (%d drawers; target >= 2,000 commits/s)\n",
		res.Documents, el.Round(time.Millisecond), float64(res.Documents)/el.Seconds(), res.Created)
	if err := gitRepo(repo, 100, commits); err != nil {
		return err
	}
	t0 = time.Now()
	res, err = mineBody(d.addr, map[string]any{"type": "mine", "source": "git-history", "locator": repo, "wing": "repo"})
	if err != nil {
		return fmt.Errorf("git-history again: %w", err)
	}
	fmt.Printf("git-history again after 100 new commits: %s, %d documents past the cursor\n", time.Since(t0).Round(time.Millisecond), res.Documents)
	return nil
}

// gitRepo makes (or extends) a git repository at dir with n commits made
// by git fast-import, numbered from first, each changing one file.
func gitRepo(dir string, n, first int) error {
	git := func(stdin []byte, args ...string) error {
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Stdin = bytes.NewReader(stdin)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	if first == 0 {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := git(nil, "init", "-q", "-b", "main"); err != nil {
			return err
		}
	}
	r := rand.New(rand.NewPCG(uint64(first), 29))
	var s bytes.Buffer
	for i := first; i < first+n; i++ {
		msg := fmt.Sprintf("change %d: %s\n\n%s\n", i, sentence(r), sentence(r))
		body := sentence(r) + "\n"
		fmt.Fprintf(&s, "commit refs/heads/main\nmark :%d\ncommitter Bench <bench@example.com> %d +0000\ndata %d\n%s",
			i+1, 1700000000+i*60, len(msg), msg)
		if i == first && first > 0 {
			s.WriteString("from refs/heads/main^0\n")
		}
		fmt.Fprintf(&s, "M 644 inline src/file%04d.txt\ndata %d\n%s\n", i%500, len(body), body)
	}
	return git(s.Bytes(), "fast-import", "--quiet")
}
