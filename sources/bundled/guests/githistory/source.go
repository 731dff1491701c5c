package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/loci-dev/loci/sources/bundled/guests/internal/wire"
	"github.com/loci-dev/loci/sources/contract"
)

const (
	// git is the one program the manifest names.
	git = "git"
	// room, kind: where the commits go and what their drawers say they are.
	room = "commits"
	kind = "git-commit"
	// defaultLimit is a page's size when the host names none.
	defaultLimit = 1000
	// maxPaths is the most changed paths a commit's text names.
	maxPaths = 1000
	// maxNameBytes bounds a document's name (a subject can be long).
	maxNameBytes = 200
	// tooLarge is the kind of Result.Error the host answers for output
	// over its cap.
	tooLarge = "too_large"
)

// logFormat is what git log writes per commit, each field ended by a NUL
// (a message holds no NUL): hash, author name, email, strict ISO 8601
// author date, parent hashes, the raw message. With -z and --name-only
// the changed paths follow, after a newline, each ended by a NUL; commits
// are separated by one more NUL.
const logFormat = "--format=format:%H%x00%an%x00%ae%x00%aI%x00%P%x00%B%x00"

// gitArgs are the arguments before every git command: settings a user's
// configuration could otherwise change the output with.
var gitArgs = []string{"-c", "core.quotepath=off", "-c", "log.showSignature=false", "-c", "log.showRoot=true",
	"-c", "i18n.logOutputEncoding=UTF-8", "-c", "color.ui=never"}

// logArgs is a git log over revs (hashes this source checked) with the
// commit format.
func logArgs(extra ...string) []string {
	a := append(slices.Clone(gitArgs), "log", "--no-color", "--no-renames", "--no-ext-diff", "--no-textconv",
		"--encoding=UTF-8", "-z", "--name-only", logFormat)
	return append(a, extra...)
}

func run(args ...string) contract.Need {
	return contract.Need{Kind: contract.NeedRun, Program: git, Args: append(slices.Clone(gitArgs), args...)}
}

// source is the contract.Handler.
type source struct{}

// cursor is an item's cursor: the listing (Base..Head, Base "" for all of
// Head's history) of Total commits it belongs to, its position N (1 for
// the oldest) and its hash.
type cursor struct {
	Base   string `json:"base"`
	Head   string `json:"head"`
	Total  int    `json:"total"`
	N      int    `json:"n"`
	Commit string `json:"commit"`
}

// isHash reports a full object name (SHA-1 or SHA-256, lowercase hex):
// what this source passes to git, never an option or a revision
// expression.
func isHash(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for i := range len(s) {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func parseCursor(raw json.RawMessage) (*cursor, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	bad := contract.Errorf(contract.ErrCursor, "the cursor is not one the git-history source wrote; mine again with full, which reads everything again without duplicating")
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || len(fields) != 5 {
		return nil, bad
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var c cursor
	if err := dec.Decode(&c); err != nil || (c.Base != "" && !isHash(c.Base)) || !isHash(c.Head) || !isHash(c.Commit) ||
		c.Total < 1 || c.N < 1 || c.N > c.Total {
		return nil, bad
	}
	return &c, nil
}

// noOptions refuses every option: the source takes none.
func noOptions(opts map[string]string) error {
	for k := range opts {
		return contract.Errorf(contract.ErrInvalid, "unknown option %q; the git-history source takes none", k)
	}
	return nil
}

// Resolve asks git whether the locator is a work tree's top folder: its
// identity is then the locator itself (the host keeps the directory given
// as the identity of a source that reads it, a symbolic link too). A
// folder inside a work tree is refused, naming the top folder to give
// instead: a miner of a subfolder would file every commit of the whole
// repository under another identity.
func (source) Resolve(req *contract.Request) (*contract.Answer, error) {
	if req.Locator == "" {
		return nil, contract.Errorf(contract.ErrInvalid, "the locator is required: the absolute path of a git work tree")
	}
	if !path.IsAbs(req.Locator) {
		return nil, contract.Errorf(contract.ErrInvalid, "%q is relative; an absolute path is required (the daemon reads it on its own machine)", req.Locator)
	}
	if err := noOptions(req.Options); err != nil {
		return nil, err
	}
	loc := path.Clean(req.Locator)
	if len(req.Results) == 0 {
		n := run("rev-parse", "--show-toplevel", "--show-prefix")
		n.Dir = loc
		return &contract.Answer{Needs: []contract.Need{n}}, nil
	}
	r := req.Results[0]
	if r.Error != nil {
		return nil, contract.Errorf(contract.ErrInvalid, "%q cannot be read as a git work tree: %s", loc, r.Error.Message)
	}
	// Two lines: the top folder, then the locator's path under it ("" at
	// the top itself).
	top, prefix, _ := strings.Cut(strings.TrimSuffix(string(r.Stdout), "\n"), "\n")
	if r.Exit != 0 || top == "" {
		return nil, contract.Errorf(contract.ErrInvalid, "%q is not a git work tree: %s", loc, strings.TrimSpace(string(r.Stderr)))
	}
	if prefix != "" {
		top = path.Clean(top)
		return nil, contract.Errorf(contract.ErrInvalid, "%s is inside the git repository %s: point git-history at the repository's top folder (%s)", loc, top, top)
	}
	return &contract.Answer{Identity: &contract.Identity{Locator: loc}}, nil
}

// state is what a discover call carries from round to round.
type state struct {
	Step  string `json:"step"`
	Base  string `json:"base,omitempty"`
	Head  string `json:"head,omitempty"`
	Total int    `json:"total,omitempty"`
	// Start is how many of the listing are filed; K the window asked.
	Start int `json:"start,omitempty"`
	K     int `json:"k,omitempty"`
	// Resumed: the listing came from the cursor, not from this call's
	// look at HEAD (a failure then means the cursor's commits are gone).
	Resumed bool `json:"resumed,omitempty"`
}

// The steps of a discover call.
const (
	stepHead  = "head"  // asked git for HEAD (and whether the cursor's head exists)
	stepCount = "count" // asked for the size of base..head
	stepLog   = "log"   // asked for a window of the listing
	stepHash  = "hash"  // asked for the hash of a commit too large to list
)

func (s state) answer(needs ...contract.Need) *contract.Answer {
	b, _ := json.Marshal(s)
	return &contract.Answer{Needs: needs, State: b}
}

func (s state) rng() string {
	if s.Base == "" {
		return s.Head
	}
	return s.Base + ".." + s.Head
}

// logNeed asks for the window of s.K commits after the first s.Start of
// the listing: git log lists newest first, so the window is the one
// that skips the Total-Start-K newest.
func (s state) logNeed() contract.Need {
	return contract.Need{Kind: contract.NeedRun, Program: git,
		Args: logArgs("--skip="+strconv.Itoa(s.Total-s.Start-s.K), "-n", strconv.Itoa(s.K), s.rng(), "--")}
}

// Discover lists the commits past the cursor, oldest first, each with
// its document.
func (source) Discover(req *contract.Request) (*contract.Answer, error) {
	cur, err := parseCursor(req.Cursor)
	if err != nil {
		return nil, err
	}
	if err := noOptions(req.Options); err != nil {
		return nil, err
	}
	limit := req.Limit
	if limit <= 0 {
		limit = defaultLimit
	}
	if len(req.Results) == 0 {
		if cur != nil && cur.N < cur.Total {
			// Resume the listing the cursor is in.
			s := state{Step: stepLog, Base: cur.Base, Head: cur.Head, Total: cur.Total, Start: cur.N, Resumed: true}
			s.K = min(limit, s.Total-s.Start)
			return s.answer(s.logNeed()), nil
		}
		needs := []contract.Need{run("rev-parse", "--verify", "-q", "HEAD^{commit}")}
		if cur != nil {
			needs = append(needs, run("rev-parse", "--verify", "-q", cur.Head+"^{commit}"))
		}
		return state{Step: stepHead}.answer(needs...), nil
	}
	var s state
	if err := json.Unmarshal(req.State, &s); err != nil {
		return nil, contract.Errorf(contract.ErrFailed, "the host sent back a state this source did not write: %v", err)
	}
	switch s.Step {
	case stepHead:
		if len(req.Results) != 1+btoi(cur != nil) {
			return nil, contract.Errorf(contract.ErrFailed, "the host answered %d results for %d needs", len(req.Results), 1+btoi(cur != nil))
		}
		head := req.Results[0]
		if head.Error != nil {
			return nil, contract.Errorf(contract.ErrFailed, "running git: %s", head.Error.Message)
		}
		switch head.Exit {
		case 0:
		case 1: // no HEAD commit yet: an empty repository has nothing to list
			return &contract.Answer{Items: []contract.Item{}}, nil
		default:
			return nil, gitFailed("finding HEAD", head)
		}
		h := strings.TrimSpace(string(head.Stdout))
		if !isHash(h) {
			return nil, contract.Errorf(contract.ErrFailed, "git rev-parse answered %q for HEAD, not a commit's hash", h)
		}
		s = state{Step: stepCount, Head: h}
		if cur != nil {
			if old := req.Results[1]; old.Error != nil || old.Exit != 0 {
				return nil, contract.Errorf(contract.ErrCursor, "the last commit listed, %s, is no longer in the repository (its history was rewritten and pruned); mine again with full, which reads everything again without duplicating", cur.Head)
			}
			if cur.Head == h {
				return &contract.Answer{Items: []contract.Item{}}, nil
			}
			s.Base = cur.Head
		}
		return s.answer(run("rev-list", "--count", s.rng(), "--")), nil
	case stepCount:
		r, err := one(req.Results)
		if err != nil {
			return nil, err
		}
		if r.Error != nil || r.Exit != 0 {
			return nil, gitFailed("counting the commits", r)
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(r.Stdout)))
		if err != nil || n < 0 {
			return nil, contract.Errorf(contract.ErrFailed, "git rev-list --count answered %q", r.Stdout)
		}
		if n == 0 { // HEAD moved back: nothing past the cursor
			return &contract.Answer{Items: []contract.Item{}}, nil
		}
		s.Step, s.Total, s.Start, s.K = stepLog, n, 0, min(limit, n)
		return s.answer(s.logNeed()), nil
	case stepLog:
		r, err := one(req.Results)
		if err != nil {
			return nil, err
		}
		if r.Error != nil && r.Error.Kind == tooLarge {
			if s.K > 1 { // ask again for half as many
				s.K /= 2
				return s.answer(s.logNeed()), nil
			}
			s.Step = stepHash
			return s.answer(run("rev-list", "--skip="+strconv.Itoa(s.Total-s.Start-1), "-n", "1", s.rng(), "--")), nil
		}
		if r.Error != nil || r.Exit != 0 {
			if s.Resumed {
				return nil, contract.Errorf(contract.ErrCursor, "the listing the cursor is in (%s) cannot be read again: %s; mine again with full, which reads everything again without duplicating", s.rng(), gitMessage(r))
			}
			return nil, gitFailed("listing the commits", r)
		}
		commits, err := parseLog(r.Stdout)
		if err != nil {
			return nil, err
		}
		if len(commits) != s.K {
			return nil, contract.Errorf(contract.ErrFailed, "git log listed %d commits of %s where %d were expected", len(commits), s.rng(), s.K)
		}
		slices.Reverse(commits)
		a := &contract.Answer{Items: make([]contract.Item, 0, len(commits)), More: s.Start+s.K < s.Total}
		for i, c := range commits {
			a.Items = append(a.Items, s.item(s.Start+i+1, c.hash, func(it *contract.Item) { it.Document = c.document() }))
		}
		return a, nil
	case stepHash:
		r, err := one(req.Results)
		if err != nil {
			return nil, err
		}
		h := strings.TrimSpace(string(r.Stdout))
		if r.Error != nil || r.Exit != 0 || !isHash(h) {
			return nil, gitFailed("naming a commit too large to list", r)
		}
		it := s.item(s.Start+1, h, func(it *contract.Item) { it.Filtered = tooLarge })
		return &contract.Answer{Items: []contract.Item{it}, More: s.Start+1 < s.Total}, nil
	}
	return nil, contract.Errorf(contract.ErrFailed, "the host sent back a state of an unknown step %q", s.Step)
}

// item is the listing's nth commit (1 the oldest), hash h.
func (s state) item(n int, h string, fill func(*contract.Item)) contract.Item {
	// The cursor's JSON, written by hand (hashes need no escaping): the
	// fields of cursor.
	c := make([]byte, 0, 64+len(s.Base)+len(s.Head)+len(h))
	c = append(c, `{"base":"`+s.Base+`","head":"`+s.Head+`","total":`...)
	c = strconv.AppendInt(c, int64(s.Total), 10)
	c = append(c, `,"n":`...)
	c = strconv.AppendInt(c, int64(n), 10)
	c = append(c, `,"commit":"`+h+`"}`...)
	it := contract.Item{ID: h, Cursor: c}
	fill(&it)
	if it.Document != nil {
		it.Size = it.Document.Bytes
	}
	return it
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func one(rs []contract.Result) (contract.Result, error) {
	if len(rs) != 1 {
		return contract.Result{}, contract.Errorf(contract.ErrFailed, "the host answered %d results for one need", len(rs))
	}
	return rs[0], nil
}

func gitMessage(r contract.Result) string {
	if r.Error != nil {
		return r.Error.Message
	}
	msg := strings.TrimSpace(strings.ToValidUTF8(string(r.Stderr), "\uFFFD"))
	if len(msg) > 500 {
		msg = msg[:500] + "…"
	}
	return fmt.Sprintf("git exited %d: %s", r.Exit, msg)
}

func gitFailed(doing string, r contract.Result) error {
	return contract.Errorf(contract.ErrFailed, "%s: %s", doing, gitMessage(r))
}

// Read reads listed commits again (discovery already carried them): one
// git log for all, and when git refuses that (a commit gone), one per
// commit, a commit git does not know being not_found.
func (source) Read(req *contract.Request) (*contract.Answer, error) {
	if err := noOptions(req.Options); err != nil {
		return nil, err
	}
	var hashes []string
	for _, it := range req.Items {
		if isHash(it.ID) {
			hashes = append(hashes, it.ID)
		}
	}
	found := map[string]*contract.Document{}
	failed := map[string]*contract.Error{}
	switch {
	case len(hashes) == 0:
	case len(req.Results) == 0:
		return state{Step: "all"}.answer(contract.Need{Kind: contract.NeedRun, Program: git,
			Args: logArgs(append([]string{"--no-walk=unsorted"}, append(hashes, "--")...)...)}), nil
	case len(req.Results) == 1 && string(req.State) == `{"step":"all"}`:
		r := req.Results[0]
		if r.Error != nil && r.Error.Kind != tooLarge {
			return nil, gitFailed("reading the commits", r)
		}
		if r.Error != nil || r.Exit != 0 { // one by one
			needs := make([]contract.Need, len(hashes))
			for i, h := range hashes {
				needs[i] = contract.Need{Kind: contract.NeedRun, Program: git, Args: logArgs("--no-walk", "-n", "1", h, "--")}
			}
			return state{Step: "each"}.answer(needs...), nil
		}
		commits, err := parseLog(r.Stdout)
		if err != nil {
			return nil, err
		}
		for _, c := range commits {
			found[c.hash] = c.document()
		}
	case len(req.Results) == len(hashes) && string(req.State) == `{"step":"each"}`:
		for i, r := range req.Results {
			switch {
			case r.Error != nil && r.Error.Kind == tooLarge:
				failed[hashes[i]] = &contract.Error{Kind: contract.ErrFiltered, Message: tooLarge}
			case r.Error != nil:
				return nil, gitFailed("reading the commits", r)
			case r.Exit != 0:
				failed[hashes[i]] = contract.Errorf(contract.ErrNotFound, "commit %s is not in the repository", hashes[i])
			default:
				commits, err := parseLog(r.Stdout)
				if err != nil {
					return nil, err
				}
				for _, c := range commits {
					found[c.hash] = c.document()
				}
			}
		}
	default:
		return nil, contract.Errorf(contract.ErrFailed, "the host answered %d results for this source's needs", len(req.Results))
	}
	a := &contract.Answer{Documents: make([]contract.ReadResult, len(req.Items))}
	for i, it := range req.Items {
		a.Documents[i].ID = it.ID
		switch {
		case found[it.ID] != nil:
			a.Documents[i].Document = found[it.ID]
		case failed[it.ID] != nil:
			a.Documents[i].Error = failed[it.ID]
		default:
			a.Documents[i].Error = contract.Errorf(contract.ErrNotFound, "commit %q is not in the repository", it.ID)
		}
	}
	return a, nil
}

// commit is one commit as git log wrote it.
type commit struct {
	hash, name, email, date string
	parents                 []string
	message                 string
	paths                   []string
}

// parseLog reads git log's output in logFormat with -z --name-only.
func parseLog(b []byte) ([]commit, error) {
	var out []commit
	field := func() (string, bool) {
		i := bytes.IndexByte(b, 0)
		if i < 0 {
			return "", false
		}
		f := string(b[:i])
		b = b[i+1:]
		return f, true
	}
	for len(b) > 0 {
		var f [6]string
		for i := range f {
			var ok bool
			if f[i], ok = field(); !ok {
				return nil, contract.Errorf(contract.ErrFailed, "git log's output ends inside a commit")
			}
		}
		if !isHash(f[0]) {
			return nil, contract.Errorf(contract.ErrFailed, "git log's output is not in the format asked (%q where a commit's hash belongs)", truncate(f[0], 80))
		}
		c := commit{hash: f[0], name: f[1], email: f[2], date: f[3], parents: strings.Fields(f[4]), message: f[5]}
		if len(b) > 0 && b[0] == '\n' { // the changed paths
			b = b[1:]
			for len(b) > 0 && b[0] != 0 {
				p, ok := field()
				if !ok {
					return nil, contract.Errorf(contract.ErrFailed, "git log's output ends inside a path")
				}
				c.paths = append(c.paths, p)
			}
		}
		if len(b) > 0 && b[0] == 0 { // the separator
			b = b[1:]
		}
		out = append(out, c)
	}
	return out, nil
}

// document is a commit's document: its text is what git show would say
// of it, the message whole.
func (c commit) document() *contract.Document {
	valid := func(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }
	msg := strings.TrimRight(valid(c.message), "\n")
	var t strings.Builder
	t.WriteString("commit " + c.hash + "\n")
	if len(c.parents) > 1 {
		t.WriteString("Merge: " + strings.Join(c.parents, " ") + "\n")
	}
	t.WriteString("Author: " + valid(c.name) + " <" + valid(c.email) + ">\n")
	t.WriteString("Date: " + c.date + "\n\n")
	t.WriteString(msg + "\n")
	if len(c.paths) > 0 {
		paths := c.paths
		t.WriteString("\nChanged: ")
		if len(paths) > maxPaths {
			paths = paths[:maxPaths]
		}
		t.WriteString(valid(strings.Join(paths, ", ")))
		if len(c.paths) > maxPaths {
			fmt.Fprintf(&t, ", and %d more", len(c.paths)-maxPaths)
		}
		t.WriteString("\n")
	}
	subject, _, _ := strings.Cut(strings.TrimSpace(msg), "\n")
	// The origin's JSON, written by hand (encoding/json is most of a
	// call's cost in WebAssembly): the commit, its author and date.
	origin := make([]byte, 0, 128+len(c.name)+len(c.email))
	origin = append(origin, `{"author":`...)
	origin = wire.AppendString(origin, c.name)
	origin = append(origin, `,"commit":"`+c.hash+`","date":`...)
	origin = wire.AppendString(origin, c.date)
	origin = append(origin, `,"email":`...)
	origin = wire.AppendString(origin, c.email)
	origin = append(origin, '}')
	text := t.String()
	return &contract.Document{Name: name(c.hash[:12] + " " + subject), Room: room, Kind: kind, URI: "git:" + c.hash,
		Origin: origin, Meta: c.hash, Units: []string{text}, Bytes: int64(len(text))}
}

// name makes a commit's subject a drawer name: one line of printable
// characters, no slash (a drawer name's path separator), at most
// maxNameBytes.
func name(s string) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r == '/':
			return '∕'
		case unicode.IsControl(r), unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp), unicode.IsSpace(r):
			return ' '
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	return strings.TrimSpace(truncate(s, maxNameBytes))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
