package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/sources/contract"
)

var t0 = time.Date(2024, 3, 1, 9, 0, 0, 0, time.UTC)

// A history of a few hundred commits, a merge among them: discovery
// lists every commit once, oldest first (git's own order reversed), each
// carrying its document; paging by any limit lists the same.
func TestDiscoverEveryCommitOldestFirst(t *testing.T) {
	repo := newRepo(t)
	commits := linear(300, t0, 1)
	// A side branch off commit 100, merged at commit 150.
	side := spec{msg: "side work\n", at: t0.Add(100*time.Minute + time.Second), files: map[string]string{"side.txt": "side"},
		branch: "side", from: ":100"}
	commits[149].msg, commits[149].merge = "Merge the side work\n", ":101" // the side commit is the 101st imported
	all := append(slices.Clone(commits[:100]), side)
	all = append(all, commits[100:]...)
	for i := range all[101:] {
		all[101+i].from = ""
	}
	all[101].from = ":100"
	importCommits(t, repo, "", 0, all)
	gitIn(t, repo, nil, "branch", "-D", "side")

	want := revList(t, repo, "HEAD")
	if len(want) != 301 {
		t.Fatalf("the repository has %d commits", len(want))
	}
	h := &host{}
	listed := h.discoverAll(t, repo, 0, nil)
	if got := itemIDs(listed); !slices.Equal(got, want) {
		t.Fatalf("discovered %d commits, git lists %d; first difference at %d", len(got), len(want), firstDiff(got, want))
	}
	for _, limit := range []int{1, 7, 64, 300, 301, 5000} {
		paged := h.discoverAll(t, repo, limit, nil)
		if got := itemIDs(paged); !slices.Equal(got, want) {
			t.Fatalf("limit %d: %d commits, first difference at %d", limit, len(got), firstDiff(got, want))
		}
	}
	// Every item carries its document; commit 42's says what git says.
	c42 := listed[41]
	d := c42.Document
	if d == nil || c42.Filtered != "" {
		t.Fatalf("item %+v has no document", c42)
	}
	wantText := "commit " + c42.ID + "\nAuthor: Ada Lovelace <ada@example.com>\nDate: " + t0.Add(42*time.Minute).Format("2006-01-02T15:04:05-07:00") +
		"\n\nchange 42\n\nwhy change 42 was made\n\nChanged: dir2/file42.txt\n"
	if !slices.Equal(d.Units, []string{wantText}) {
		t.Fatalf("commit 42's text:\n%q\nwant\n%q", d.Units, wantText)
	}
	if d.Name != c42.ID[:12]+" change 42" || d.Room != "commits" || d.Kind != "git-commit" || d.URI != "git:"+c42.ID || d.Meta != c42.ID ||
		d.Bytes != int64(len(wantText)) || c42.Size != d.Bytes {
		t.Fatalf("commit 42's document: %+v", d)
	}
	var merge *contract.Document
	for _, it := range listed {
		if strings.HasSuffix(it.Document.Name, "Merge the side work") {
			merge = it.Document
		}
	}
	if merge == nil || !strings.Contains(merge.Units[0], "\nMerge: ") {
		t.Fatalf("the merge commit: %+v", merge)
	}
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// Past the last cursor, three new commits are listed, exactly those,
// oldest first; then nothing; strictly after any cursor come the
// commits after it.
func TestIncrementalByCommit(t *testing.T) {
	repo := newRepo(t)
	importCommits(t, repo, "", 0, linear(250, t0, 1))
	h := &host{}
	first := h.discoverAll(t, repo, 100, nil)
	if len(first) != 250 {
		t.Fatalf("%d commits", len(first))
	}
	last := first[len(first)-1].Cursor
	if got := h.discoverAll(t, repo, 100, last); len(got) != 0 {
		t.Fatalf("nothing new, yet %d listed", len(got))
	}
	importCommits(t, repo, "refs/heads/main^0", 1000, linear(3, t0, 251))
	next := h.discoverAll(t, repo, 100, last)
	if got, want := itemIDs(next), revList(t, repo, "HEAD~3..HEAD"); !slices.Equal(got, want) || len(got) != 3 {
		t.Fatalf("after 3 new commits: %q, want %q", got, want)
	}
	if !strings.Contains(next[2].Document.Units[0], "why change 253 was made") {
		t.Fatalf("the newest commit's text: %q", next[2].Document.Units[0])
	}
	if got := h.discoverAll(t, repo, 2, next[2].Cursor); len(got) != 0 {
		t.Fatalf("past the newest: %d listed", len(got))
	}
	// Strictly after a cursor in the middle of a listing (a run stopped
	// between pages resumes): the rest of that listing.
	for _, i := range []int{0, 99, 100, 180, 248} {
		rest := itemIDs(h.discoverAll(t, repo, 100, first[i].Cursor))
		if want := itemIDs(first[i+1:]); !slices.Equal(rest, want) {
			t.Fatalf("past commit %d: %d listed, want %d", i+1, len(rest), len(want))
		}
	}
	// A resumed listing stays on its own range; the next run lists the
	// newer commits from the listing's head.
	rest := h.discoverAll(t, repo, 500, first[200].Cursor)
	if got := itemIDs(h.discoverAll(t, repo, 500, rest[len(rest)-1].Cursor)); !slices.Equal(got, itemIDs(next)) {
		t.Fatalf("after the resumed listing: %q, want the 3 new commits", got)
	}
}

// A rewritten history: past the old head, the commits HEAD reaches that
// it did not (the rewritten ones) are listed; an old head gone from the
// repository is cursor_invalid.
func TestRewrittenHistory(t *testing.T) {
	repo := newRepo(t)
	importCommits(t, repo, "", 0, linear(20, t0, 1))
	h := &host{}
	all := h.discoverAll(t, repo, 0, nil)
	// Drop the last 2 commits and write 4 others in their place.
	gitIn(t, repo, nil, "update-ref", "refs/heads/main", "HEAD~2")
	importCommits(t, repo, "refs/heads/main^0", 100, linear(4, t0.Add(time.Hour), 500))
	got := h.discoverAll(t, repo, 3, all[len(all)-1].Cursor)
	if want := revList(t, repo, "HEAD~4..HEAD"); !slices.Equal(itemIDs(got), want) {
		t.Fatalf("after the rewrite: %q, want the 4 new commits %q", itemIDs(got), want)
	}
	// A head the repository no longer has.
	var c cursor
	if err := json.Unmarshal(all[len(all)-1].Cursor, &c); err != nil {
		t.Fatal(err)
	}
	c.Head = strings.Repeat("ab", 20)
	c.Commit = c.Head
	c.N = c.Total
	raw, _ := json.Marshal(c)
	a := h.call(t, contract.Request{Call: contract.CallDiscover, Locator: repo, Cursor: raw})
	if a.Error == nil || a.Error.Kind != contract.ErrCursor || !strings.Contains(a.Error.Message, "full") {
		t.Fatalf("a pruned head: %+v", a)
	}
	// Resuming a listing whose commits are gone.
	c.N = 1
	c.Total = 5
	raw, _ = json.Marshal(c)
	if a := h.call(t, contract.Request{Call: contract.CallDiscover, Locator: repo, Cursor: raw}); a.Error == nil || a.Error.Kind != contract.ErrCursor {
		t.Fatalf("resuming a pruned listing: %+v", a)
	}
}

// A message with newlines, unicode, "---" lines, tabs, quotes and a path
// with spaces and unicode survives whole; the lease-timeout question finds
// its commit by the message's body.
func TestUnusualMessages(t *testing.T) {
	repo := newRepo(t)
	msgs := []string{
		"Raise the lease timeout to 90s\n\nWorkers on slow disks lost their lease mid-job: a 30s lease\nexpired while a 40s fsync ran, so two workers took the same job.\n",
		"---\n--- a/x\n+++ b/y\n---\n\n    indented\tand tabbed\n\n\n\nafter blank lines\n",
		"Ünïcödé: 日本語のコミット 🚀 — “quotes” 'single' \\ back\\slash\n\n\x01 a control byte and \u200b a zero-width space\n",
		"subject/with/slashes // and ../dots\n",
		"commit 0123456789012345678901234567890123456789\nAuthor: Not Really <x>\n",
	}
	var specs []spec
	for i, m := range msgs {
		specs = append(specs, spec{msg: m, at: t0.Add(time.Duration(i) * time.Hour), files: map[string]string{
			fmt.Sprintf("dir with space/ファイル %d.txt", i): "x", fmt.Sprintf("plain%d", i): "y"}})
	}
	importCommits(t, repo, "", 0, specs)
	items := (&host{}).discoverAll(t, repo, 2, nil)
	if len(items) != len(msgs) {
		t.Fatalf("%d items", len(items))
	}
	for i, it := range items {
		text := it.Document.Units[0]
		if !strings.Contains(text, "\n\n"+strings.TrimRight(msgs[i], "\n")+"\n") {
			t.Errorf("commit %d's text lost its message:\n%q", i, text)
		}
		if !strings.Contains(text, fmt.Sprintf("dir with space/ファイル %d.txt", i)) || !strings.Contains(text, fmt.Sprintf("plain%d", i)) {
			t.Errorf("commit %d's text lost a changed path:\n%q", i, text)
		}
		if n := it.Document.Name; strings.ContainsAny(n, "/\n\x01\u200b") || strings.TrimSpace(n) != n {
			t.Errorf("commit %d's name %q", i, n)
		}
	}
	if !strings.Contains(items[0].Document.Units[0], "a 40s fsync ran") || !strings.Contains(items[0].Document.Name, "lease timeout") {
		t.Errorf("the lease timeout commit: %+v", items[0].Document)
	}
	if items[3].Document.Name != items[3].ID[:12]+" subject∕with∕slashes ∕∕ and ..∕dots" {
		t.Errorf("a subject with slashes is named %q", items[3].Document.Name)
	}
}

// The user's git configuration cannot change what git writes for this
// source: quoted paths, signatures, colours, a hidden root commit's paths.
func TestRepositoryConfigCannotChangeTheOutput(t *testing.T) {
	repo := newRepo(t)
	importCommits(t, repo, "", 0, []spec{{msg: "root\n", at: t0, files: map[string]string{"é.txt": "x"}}})
	for _, kv := range [][2]string{{"core.quotepath", "true"}, {"log.showSignature", "true"}, {"color.ui", "always"},
		{"log.showRoot", "false"}, {"i18n.logOutputEncoding", "ISO-8859-1"}, {"diff.noprefix", "true"}, {"log.decorate", "full"}} {
		gitIn(t, repo, nil, "config", kv[0], kv[1])
	}
	items := (&host{}).discoverAll(t, repo, 0, nil)
	if len(items) != 1 || !strings.HasSuffix(items[0].Document.Units[0], "\n\nroot\n\nChanged: é.txt\n") {
		t.Fatalf("under a hostile configuration: %+v", items)
	}
}

// Output over the host's cap is asked for again in halves; a commit too
// large alone is listed as filtered, the others still listed.
func TestOutputOverTheCap(t *testing.T) {
	repo := newRepo(t)
	specs := linear(40, t0, 1)
	specs[17].msg = "huge\n\n" + strings.Repeat("a long explanation ", 1000) + "\n"
	importCommits(t, repo, "", 0, specs)
	h := &host{outCap: 8 << 10}
	items := h.discoverAll(t, repo, 40, nil)
	if got, want := itemIDs(items), revList(t, repo, "HEAD"); !slices.Equal(got, want) {
		t.Fatalf("under a cap: %d commits, want %d", len(got), len(want))
	}
	for i, it := range items {
		if (i == 17) != (it.Filtered == "too_large") || (i == 17) != (it.Document == nil) {
			t.Errorf("commit %d: filtered %q, document %v", i+1, it.Filtered, it.Document != nil)
		}
	}
	// Read answers it filtered too.
	a := h.call(t, contract.Request{Call: contract.CallRead, Locator: repo, Items: items[16:19]})
	if a.Error != nil || len(a.Documents) != 3 || a.Documents[1].Error == nil || a.Documents[1].Error.Kind != contract.ErrFiltered ||
		a.Documents[0].Document == nil || a.Documents[2].Document == nil {
		t.Fatalf("reading around the huge commit: %+v", a)
	}
}

// Read answers listed commits with the document discovery carried; a
// commit the repository does not have is not_found.
func TestRead(t *testing.T) {
	repo := newRepo(t)
	importCommits(t, repo, "", 0, linear(30, t0, 1))
	h := &host{}
	items := h.discoverAll(t, repo, 0, nil)
	ask := append(slices.Clone(items), contract.Item{ID: strings.Repeat("cd", 20)}, contract.Item{ID: "--output=/tmp/x"})
	slices.Reverse(ask)
	a := h.call(t, contract.Request{Call: contract.CallRead, Locator: repo, Items: ask})
	if a.Error != nil || len(a.Documents) != len(ask) {
		t.Fatalf("read: %+v", a.Error)
	}
	for i, r := range a.Documents {
		if r.ID != ask[i].ID {
			t.Fatalf("result %d is %s, want %s", i, r.ID, ask[i].ID)
		}
		if ask[i].Document == nil {
			if r.Error == nil || r.Error.Kind != contract.ErrNotFound {
				t.Errorf("%s: %+v, want not_found", r.ID, r.Error)
			}
			continue
		}
		if r.Error != nil || !slices.Equal(r.Document.Units, ask[i].Document.Units) || r.Document.Name != ask[i].Document.Name {
			t.Errorf("%s read %+v, discovered %+v", r.ID, r.Document, ask[i].Document)
		}
	}
}

func TestResolve(t *testing.T) {
	repo := newRepo(t)
	importCommits(t, repo, "", 0, linear(2, t0, 1))
	gitIn(t, repo, nil, "checkout", "-q", "main")
	top, _ := filepath.EvalSymlinks(repo)
	// A link to the top folder is the directory given: the host keeps it
	// as the identity's locator.
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(repo, link); err != nil {
		t.Fatal(err)
	}
	h := &host{}
	for _, c := range []struct{ locator, want, kind string }{
		{repo, repo, ""},
		{repo + "/dir1/../", repo, ""},
		{link, link, ""},
		{"", "", contract.ErrInvalid},
		{"relative", "", contract.ErrInvalid},
		{t.TempDir(), "", contract.ErrInvalid},
		{repo + "/missing", "", contract.ErrInvalid},
	} {
		a := h.call(t, contract.Request{Call: contract.CallResolve, Locator: c.locator})
		if c.kind != "" {
			if a.Error == nil || a.Error.Kind != c.kind {
				t.Errorf("resolve %q: %+v, want %s", c.locator, a, c.kind)
			}
			continue
		}
		if a.Error != nil || a.Identity == nil || a.Identity.Locator != c.want {
			t.Errorf("resolve %q: %+v %v, want %q", c.locator, a.Identity, a.Error, c.want)
		}
	}
	// A folder inside the work tree is refused with the top folder to
	// give instead (a miner of it would mine the whole repository).
	for _, sub := range []string{repo + "/dir1", repo + "/dir1/../dir1/", link + "/dir1"} {
		want := filepath.Clean(sub) + " is inside the git repository " + top + ": point git-history at the repository's top folder (" + top + ")"
		if a := h.call(t, contract.Request{Call: contract.CallResolve, Locator: sub}); a.Error == nil || a.Error.Kind != contract.ErrInvalid || a.Error.Message != want {
			t.Errorf("resolve %q: %+v, want the error %q", sub, a.Error, want)
		}
	}
	if a := h.call(t, contract.Request{Call: contract.CallResolve, Locator: repo, Options: map[string]string{"branch": "x"}}); a.Error == nil || a.Error.Kind != contract.ErrInvalid {
		t.Errorf("an option: %+v", a)
	}
}

// An empty repository lists nothing; a cursor of another shape is
// refused.
func TestEmptyRepositoryAndForeignCursors(t *testing.T) {
	repo := newRepo(t)
	h := &host{}
	if got := h.discoverAll(t, repo, 10, nil); len(got) != 0 {
		t.Fatalf("an empty repository listed %d", len(got))
	}
	hash := strings.Repeat("a", 40)
	for _, c := range []string{`{"ctime_ns":1,"path":"a"}`, `{"commit":"` + hash + `"}`, `"` + hash + `"`,
		`{"base":"","head":"HEAD","total":1,"n":1,"commit":"` + hash + `"}`,
		`{"base":"--all","head":"` + hash + `","total":1,"n":1,"commit":"` + hash + `"}`,
		`{"base":"","head":"` + hash + `","total":1,"n":2,"commit":"` + hash + `"}`,
		`{"base":"","head":"` + hash + `","total":1,"n":1,"commit":"` + hash + `","x":1}`,
		`{"head":"` + hash + `","total":1,"n":1,"commit":"` + hash + `"}`} {
		a := h.call(t, contract.Request{Call: contract.CallDiscover, Locator: repo, Cursor: json.RawMessage(c)})
		if a.Error == nil || a.Error.Kind != contract.ErrCursor {
			t.Errorf("cursor %s: %+v, want cursor_invalid", c, a)
		}
	}
}

// A host that refuses git (a permission not granted) fails the call
// with its reason, never a crash.
func TestProgramRefused(t *testing.T) {
	req := contract.Request{Contract: contract.Version, Call: contract.CallDiscover, Locator: "/repo",
		State: json.RawMessage(`{"step":"head"}`), Results: []contract.Result{{Error: contract.Errorf("permission_denied", "git is not granted")}}}
	b, _ := json.Marshal(req)
	a := contract.Handle(source{}, strings.NewReader(string(b)))
	if a.Error == nil || a.Error.Kind != contract.ErrFailed || !strings.Contains(a.Error.Message, "git is not granted") {
		t.Fatalf("%+v", a)
	}
}

// A name cut to its length never ends in a space (the host refuses a
// drawer name with one at either end).
func TestNameCutNeverEndsInASpace(t *testing.T) {
	for pad := range 8 {
		s := strings.Repeat("x", maxNameBytes-1-pad) + strings.Repeat(" y", 20)
		if n := name(s); strings.TrimSpace(n) != n || len(n) > maxNameBytes {
			t.Fatalf("pad %d: %q", pad, n)
		}
	}
}
