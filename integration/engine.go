package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/aymanbagabas/go-udiff"

	"github.com/loci-dev/loci/fault"
)

// Format is how a file is edited.
type Format string

// The formats.
const (
	FormatJSON     Format = "json"     // JSON or JSONC, spliced member by member
	FormatTOML     Format = "toml"     // TOML, spliced table by table
	FormatMarkdown Format = "markdown" // a block between begin and end lines
	FormatFile     Format = "file"     // a whole file of loci's (a plugin)
)

// PartKind is the kind of one piece loci owns in a file.
type PartKind string

// The kinds of parts.
const (
	// KindJSONKey is a member at Path (the MCP entry).
	KindJSONKey PartKind = "json_key"
	// KindJSONHook is an element of the array at Path whose command is
	// Command (a hook).
	KindJSONHook PartKind = "json_hook"
	// KindTOMLTable is the table at Path with its sub-tables.
	KindTOMLTable PartKind = "toml_table"
	// KindBlock is the instructions block of the agent Name.
	KindBlock PartKind = "block"
	// KindWhole is the whole file.
	KindWhole PartKind = "whole"
)

// Part is one piece loci owns in a file: as wanted (Value) and as
// recorded in the manifest.
type Part struct {
	Kind PartKind `json:"kind"`
	Path []string `json:"path,omitempty"`
	// Command identifies loci's hook element.
	Command string `json:"command,omitempty"`
	// Name is the agent of an instructions block.
	Name string `json:"name,omitempty"`
	// Created counts the containers at the end of Path (a hook's array,
	// then the objects holding it) that loci created, removed with the
	// part when empty.
	Created int `json:"created,omitempty"`
	// Previous is the value of a member named loci that --force replaced,
	// put back by remove.
	Previous json.RawMessage `json:"previous,omitempty"`
	// Value is what loci wants: a JSON value, or the text of a table,
	// block or file.
	Value any `json:"-"`
}

// id identifies a part across installs.
func (p Part) id() string {
	return string(p.Kind) + ":" + strings.Join(p.Path, "\x00") + ":" + p.Name
}

// File is what an integration wants in one file.
type File struct {
	Path   string
	Format Format
	Parts  []Part
	// Check says whether the agent would accept the file (beyond parsing).
	Check func(src []byte) error
}

// plan is one install's context, given to the agents' layouts.
type plan struct {
	*Env
	agent     Agent
	project   string
	transport string
}

// Change is what an operation does (or would do) to one file.
type Change struct {
	Path string `json:"path"`
	// Action: create, modify, delete, restore or unchanged.
	Action string `json:"action"`
	// Diff is the unified diff of the change.
	Diff   string `json:"diff,omitempty"`
	before []byte
	after  []byte
	exists bool // after the change, the file exists
}

// Result is an operation's outcome.
type Result struct {
	Agent   string   `json:"agent"`
	Scope   string   `json:"scope"`
	DryRun  bool     `json:"dry_run"`
	Changed bool     `json:"changed"`
	Version string   `json:"agent_version,omitempty"`
	Changes []Change `json:"changes"`
	// Notes say what the person still has to do (export the token, approve
	// the server or the hooks in the agent).
	Notes []string `json:"notes,omitempty"`
}

func unified(path string, before, after []byte) string {
	return udiff.Unified("a"+path, "b"+path, string(before), string(after))
}

// readCurrent reads a file; absent is (nil, false).
func readCurrent(path string) ([]byte, bool, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fault.Wrap(fault.IntegrationValidationFailed, err, fmt.Sprintf("cannot read %s: %v", path, err),
			"check the file's permissions; nothing was written")
	}
	return b, true, nil
}

// validate parses src in its format and runs the agent's check.
func validate(f File, src []byte) error {
	var err error
	switch f.Format {
	case FormatJSON:
		_, err = parseJSON(src)
	case FormatTOML:
		_, err = parseTOML(src)
	}
	if err == nil && f.Check != nil && len(bytes.TrimSpace(src)) > 0 {
		err = f.Check(src)
	}
	if err != nil {
		return errInvalid(f.Path, err)
	}
	return nil
}

// jsonEqual compares a raw JSON value with a Go value as JSON.
func jsonEqual(raw json.RawMessage, v any) bool {
	want, err := json.Marshal(v)
	if err != nil {
		return false
	}
	var a, b any
	if json.Unmarshal(stripJSONC(raw), &a) != nil || json.Unmarshal(want, &b) != nil {
		return false
	}
	return reflect.DeepEqual(a, b)
}

// apply computes the file with loci's parts as wanted: the new content
// and the parts to record. owned are the parts the manifest says loci
// wrote.
func apply(f File, cur []byte, owned map[string]Part, force bool) ([]byte, []Part, error) {
	var recorded []Part
	switch f.Format {
	case FormatJSON:
		doc, err := parseJSON(cur)
		if err != nil {
			return nil, nil, errInvalid(f.Path, err)
		}
		for _, p := range f.Parts {
			old, mine := owned[p.id()]
			switch p.Kind {
			case KindJSONKey:
				have, err := doc.get(p.Path)
				if err != nil {
					return nil, nil, errInvalid(f.Path, fmt.Errorf("%s is not an object", strings.Join(p.Path[:len(p.Path)-1], ".")))
				}
				if mine {
					p.Previous, p.Created = old.Previous, old.Created
				} else {
					if have != nil && !force {
						return nil, nil, errConflict(f.Path, "an entry "+strings.Join(p.Path, ".")+"")
					}
					p.Previous = append(json.RawMessage(nil), have...)
					p.Created = missingContainers(doc, p.Path[:len(p.Path)-1])
				}
				if have == nil || !jsonEqual(have, p.Value) {
					if err := doc.set(p.Path, p.Value); err != nil {
						return nil, nil, errInvalid(f.Path, err)
					}
				}
			case KindJSONHook:
				els, _, _, err := doc.elements(p.Path)
				if err != nil {
					return nil, nil, errInvalid(f.Path, fmt.Errorf("%s: %v", strings.Join(p.Path, "."), err))
				}
				if mine {
					p.Created = old.Created
				} else {
					p.Created = missingContainers(doc, p.Path)
				}
				at := hookIndex(doc, els, p.Command, old.Command)
				switch {
				case at < 0:
					if err := doc.appendElement(p.Path, p.Value); err != nil {
						return nil, nil, errInvalid(f.Path, err)
					}
				case !jsonEqual(json.RawMessage(doc.src[els[at].Index:els[at].Index+len(els[at].Raw)]), p.Value):
					if err := doc.replaceElement(p.Path, at, p.Value); err != nil {
						return nil, nil, errInvalid(f.Path, err)
					}
				}
			default:
				return nil, nil, fmt.Errorf("integration: part %s in a JSON file", p.Kind)
			}
			recorded = append(recorded, p)
		}
		return doc.src, recorded, nil
	case FormatTOML:
		decoded, err := parseTOML(cur)
		if err != nil {
			return nil, nil, errInvalid(f.Path, err)
		}
		out := string(cur)
		for _, p := range f.Parts {
			_, mine := owned[p.id()]
			_, has := tomlGet(decoded, p.Path)
			from, to, header := tomlTable(out, p.Path)
			if has && !header {
				return nil, nil, fault.Newf(fault.IntegrationConflict,
					"write it as a ["+strings.Join(p.Path, ".")+"] table or remove it, then run this again",
					"%s defines %s inline, which loci cannot edit in place", f.Path, strings.Join(p.Path, "."))
			}
			if has && !mine && !force {
				return nil, nil, errConflict(f.Path, "a table ["+strings.Join(p.Path, ".")+"]")
			}
			text := p.Value.(string)
			if !header || out[from:to] != text {
				out = tomlSetTable(out, p.Path, text)
			}
			recorded = append(recorded, p)
		}
		return []byte(out), recorded, nil
	case FormatMarkdown:
		out := string(cur)
		for _, p := range f.Parts {
			out = mdSet(out, p.Name, p.Value.(string))
			recorded = append(recorded, p)
		}
		return []byte(out), recorded, nil
	case FormatFile:
		p := f.Parts[0]
		_, mine := owned[p.id()]
		want := p.Value.(string)
		if cur != nil && !mine && string(cur) != want && !force {
			return nil, nil, errConflict(f.Path, "a file of the same name")
		}
		return []byte(want), []Part{p}, nil
	}
	return nil, nil, fmt.Errorf("integration: unknown format %q", f.Format)
}

// missingContainers counts the objects at the end of path that do not
// exist yet.
func missingContainers(doc *jsonDoc, path []string) int {
	for i := 0; i <= len(path); i++ {
		if _, ok, _ := doc.lookup(path[:i]); !ok {
			return len(path) - i + 1
		}
	}
	return 0
}

// hookIndex finds loci's element in a hook array: the matcher group whose
// hooks run command (or the command loci wrote before).
func hookIndex(doc *jsonDoc, els []gjsonResult, commands ...string) int {
	for i, el := range els {
		var group struct {
			Hooks []struct {
				Command string `json:"command"`
			} `json:"hooks"`
		}
		if json.Unmarshal(stripJSONC([]byte(el.Raw)), &group) != nil {
			continue
		}
		for _, h := range group.Hooks {
			for _, c := range commands {
				if c != "" && h.Command == c {
					return i
				}
			}
		}
	}
	return -1
}

// unapply takes loci's recorded parts out of a file's content: nil and
// false when the file is to be deleted.
func unapply(rec FileRecord, cur []byte) ([]byte, bool, error) {
	switch rec.Format {
	case FormatJSON:
		doc, err := parseJSON(cur)
		if err != nil {
			return nil, false, errInvalid(rec.Path, err)
		}
		for i := len(rec.Parts) - 1; i >= 0; i-- {
			p := rec.Parts[i]
			switch p.Kind {
			case KindJSONKey:
				if p.Previous != nil {
					var v any
					if err := json.Unmarshal(stripJSONC(p.Previous), &v); err == nil {
						if err := doc.set(p.Path, json.RawMessage(stripJSONC(p.Previous))); err != nil {
							return nil, false, errInvalid(rec.Path, err)
						}
						continue
					}
				}
				if err := doc.remove(p.Path); err != nil {
					return nil, false, errInvalid(rec.Path, err)
				}
				pruneEmpty(doc, p.Path[:len(p.Path)-1], p.Created)
			case KindJSONHook:
				els, _, _, err := doc.elements(p.Path)
				if err != nil {
					return nil, false, errInvalid(rec.Path, err)
				}
				if at := hookIndex(doc, els, p.Command); at >= 0 {
					if err := doc.removeElement(p.Path, at); err != nil {
						return nil, false, errInvalid(rec.Path, err)
					}
				}
				pruneEmpty(doc, p.Path, p.Created)
			}
		}
		if rec.Created && isEmptyJSON(doc.src) {
			return nil, false, nil
		}
		return doc.src, true, nil
	case FormatTOML:
		out := string(cur)
		for _, p := range rec.Parts {
			out = tomlRemoveTable(out, p.Path)
		}
		if rec.Created && strings.TrimSpace(out) == "" {
			return nil, false, nil
		}
		return []byte(out), true, nil
	case FormatMarkdown:
		out := string(cur)
		for _, p := range rec.Parts {
			out = mdRemove(out, p.Name)
		}
		if rec.Created && strings.TrimSpace(out) == "" {
			return nil, false, nil
		}
		return []byte(out), true, nil
	}
	return nil, false, nil // a whole file of loci's goes
}

// pruneEmpty removes up to n empty containers at the end of path.
func pruneEmpty(doc *jsonDoc, path []string, n int) {
	for ; n > 0 && len(path) > 0; n-- {
		v, ok, err := doc.lookup(path)
		if err != nil || !ok {
			return
		}
		empty := true
		v.ForEach(func(_, _ gjsonResult) bool { empty = false; return false })
		if !empty {
			return
		}
		_ = doc.remove(path)
		path = path[:len(path)-1]
	}
}

// isEmptyJSON says whether a JSON object holds nothing but metadata: a
// file loci created that holds no more once loci's parts are out goes,
// even when the agent added its "$schema" to it meanwhile (OpenCode does).
func isEmptyJSON(src []byte) bool {
	var v map[string]any
	if json.Unmarshal(stripJSONC(src), &v) != nil {
		return false
	}
	for k := range v {
		if !strings.HasPrefix(k, "$") {
			return false
		}
	}
	return true
}

// Install writes loci's integration into the agent's files (or, when it
// is there already, brings loci's parts up to date: the same as update).
func (e *Env) Install(ctx context.Context, name string, opt Options) (*Result, error) {
	return e.install(ctx, name, opt, false)
}

// Update rewrites loci's parts of an installed integration (the MCP URL,
// the binary's path, the assets), leaving everything else as it is.
func (e *Env) Update(ctx context.Context, name string, opt Options) (*Result, error) {
	return e.install(ctx, name, opt, true)
}

func (e *Env) install(ctx context.Context, name string, opt Options, update bool) (*Result, error) {
	a, err := agentNamed(name)
	if err != nil {
		return nil, err
	}
	if err := checkTransport(opt.Transport); err != nil {
		return nil, err
	}
	scope := scopeName(opt.Project)
	m, err := e.readManifest(a.Name, opt.Project)
	if errors.Is(err, errNotInstalled) {
		if update {
			return nil, e.notInstalled(a.Name, "update", opt.Project)
		}
		m, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	transport := opt.Transport
	if transport == "" && m != nil {
		transport = m.Transport
	}
	if transport == "" {
		transport = TransportHTTP
	}
	found, err := e.find(ctx, a)
	if err != nil {
		return nil, err
	}
	r, err := e.Assets.Versions(a.Name)
	if err != nil {
		return nil, err
	}
	if err := supported(a, found.Version, r); err != nil {
		return nil, err
	}
	p := &plan{Env: e, agent: a, project: opt.Project, transport: transport}
	files, err := a.files(p)
	if err != nil {
		return nil, err
	}
	res := &Result{Agent: a.Name, Scope: scope, DryRun: opt.DryRun, Version: found.Version, Notes: notes(a, p)}
	next := &Manifest{Agent: a.Name, Scope: scope, Transport: transport, URL: e.URL, Loci: e.Loci, AgentVersion: found.Version}
	if m != nil {
		next.Dirs = m.Dirs
	}
	// Everything is computed and validated before anything is written.
	type write struct {
		f       File
		rec     FileRecord
		cur     []byte
		existed bool
		out     []byte
	}
	var writes []write
	for _, f := range files {
		if err := confined(opt.Project, f.Path); err != nil {
			return nil, err
		}
		cur, existed, err := readCurrent(f.Path)
		if err != nil {
			return nil, err
		}
		if existed {
			if err := validate(File{Path: f.Path, Format: f.Format}, cur); err != nil {
				return nil, err
			}
		}
		owned := map[string]Part{}
		old := m.record(f.Path)
		if old != nil {
			for _, p := range old.Parts {
				owned[p.id()] = p
			}
		}
		out, parts, err := apply(f, cur, owned, opt.Force)
		if err != nil {
			return nil, err
		}
		if err := validate(f, out); err != nil {
			return nil, err
		}
		rec := FileRecord{Path: f.Path, Format: f.Format, Created: !existed, Parts: parts}
		if old != nil {
			rec.Created, rec.Backup = old.Created, old.Backup
		}
		writes = append(writes, write{f: f, rec: rec, cur: cur, existed: existed, out: out})
		ch := Change{Path: f.Path, Action: "unchanged", before: cur, after: out, exists: true}
		if !existed || !bytes.Equal(cur, out) {
			ch.Action = "modify"
			if !existed {
				ch.Action = "create"
			}
			ch.Diff = unified(f.Path, cur, out)
			res.Changed = true
		}
		res.Changes = append(res.Changes, ch)
	}
	if opt.DryRun || (!res.Changed && m != nil) {
		return res, nil
	}
	bdir := e.backupDir(a.Name, opt.Project)
	for i := range writes {
		w := &writes[i]
		if w.existed && w.rec.Backup == "" && !bytes.Equal(w.cur, w.out) {
			made, err := mkdirs(bdir, 0o700)
			if err != nil {
				return nil, err
			}
			next.Dirs = appendNew(next.Dirs, made...)
			w.rec.Backup = filepath.Join(bdir, fmt.Sprintf("%d-%s", i, filepath.Base(w.f.Path)))
			if err := os.WriteFile(w.rec.Backup, w.cur, 0o600); err != nil {
				return nil, err
			}
		}
	}
	for i := range writes {
		w := &writes[i]
		if !w.existed || !bytes.Equal(w.cur, w.out) {
			made, err := mkdirs(filepath.Dir(w.f.Path), dirMode(opt.Project))
			if err != nil {
				return nil, err
			}
			next.Dirs = appendNew(next.Dirs, made...)
			if err := writeFile(w.f.Path, w.out); err != nil {
				return nil, fault.Wrap(fault.IntegrationValidationFailed, err, fmt.Sprintf("cannot write %s: %v", w.f.Path, err),
					"check the directory's permissions")
			}
		}
		w.rec.SHA256 = digest(w.out)
		next.Files = append(next.Files, w.rec)
	}
	// Files of an earlier install the layout no longer has stay recorded.
	if m != nil {
		for _, old := range m.Files {
			if next.record(old.Path) == nil {
				next.Files = append(next.Files, old)
			}
		}
	}
	return res, e.writeManifest(next, opt.Project)
}

// notes are what a person still has to do after an install.
func notes(a Agent, p *plan) []string {
	var out []string
	if p.Auth {
		out = append(out, "authentication is on: "+a.Name+" reads the token from "+TokenEnv+"; export it where "+a.Command+" runs (the token is not written to any file)")
	}
	switch {
	case a.Name == "claude-code" && p.project != "":
		out = append(out, "Claude Code asks once to approve the project's MCP server loci (.mcp.json) when it starts in the project")
	case a.Name == "codex":
		out = append(out, "Codex runs new hooks only once you trust them: review them with /hooks in Codex")
		if p.project != "" {
			out = append(out, "Codex reads <project>/.codex/config.toml only in a project it trusts")
		}
	}
	if p.transport == TransportStdio {
		out = append(out, "the stdio transport runs `"+p.Loci+" mcp`, which needs the daemon running (or `loci daemon start`)")
	}
	return out
}

func appendNew(list []string, more ...string) []string {
	for _, s := range more {
		found := false
		for _, l := range list {
			found = found || l == s
		}
		if !found {
			list = append(list, s)
		}
	}
	return list
}

func (e *Env) writeManifest(m *Manifest, project string) error {
	made, err := mkdirs(e.StateDir, 0o700)
	if err != nil {
		return err
	}
	m.Dirs = appendNew(m.Dirs, made...)
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return writeFile(e.manifestPath(m.Agent, project), append(b, '\n'))
}

// Remove takes loci's integration out of the agent's files: a file loci
// created is deleted, a file nobody changed since is restored from its
// backup byte for byte, and a file changed since loses only loci's parts.
func (e *Env) Remove(ctx context.Context, name string, opt Options) (*Result, error) {
	a, err := agentNamed(name)
	if err != nil {
		return nil, err
	}
	scope := scopeName(opt.Project)
	m, err := e.readManifest(a.Name, opt.Project)
	if errors.Is(err, errNotInstalled) {
		return nil, e.notInstalled(a.Name, "remove", opt.Project)
	}
	if err != nil {
		return nil, err
	}
	res := &Result{Agent: a.Name, Scope: scope, DryRun: opt.DryRun}
	for _, rec := range m.Files {
		if err := confined(opt.Project, rec.Path); err != nil {
			return nil, err
		}
		cur, exists, err := readCurrent(rec.Path)
		if err != nil {
			return nil, err
		}
		if !exists {
			res.Changes = append(res.Changes, Change{Path: rec.Path, Action: "unchanged"})
			continue
		}
		ch := Change{Path: rec.Path, before: cur}
		switch {
		case digest(cur) == rec.SHA256 && rec.Created:
			ch.Action = "delete"
		case digest(cur) == rec.SHA256 && rec.Backup != "":
			orig, err := os.ReadFile(rec.Backup)
			if err != nil {
				return nil, fault.Wrap(fault.IntegrationValidationFailed, err, fmt.Sprintf("the backup of %s is gone (%v)", rec.Path, err),
					"nothing was changed; take loci's entries out of the file by hand")
			}
			ch.Action, ch.after, ch.exists = "restore", orig, true
		default:
			out, keep, err := unapply(rec, cur)
			if err != nil {
				return nil, err
			}
			if keep {
				if err := validate(File{Path: rec.Path, Format: rec.Format}, out); err != nil {
					return nil, err
				}
			}
			ch.Action, ch.after, ch.exists = "modify", out, keep
			if !keep {
				ch.Action = "delete"
			}
		}
		if ch.exists && bytes.Equal(ch.before, ch.after) {
			ch.Action = "unchanged"
		} else {
			ch.Diff = unified(rec.Path, ch.before, ch.after)
			res.Changed = true
		}
		res.Changes = append(res.Changes, ch)
	}
	if opt.DryRun {
		return res, nil
	}
	for _, ch := range res.Changes {
		switch {
		case ch.Action == "unchanged":
		case !ch.exists:
			if err := os.Remove(ch.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, err
			}
		default:
			if err := writeFile(ch.Path, ch.after); err != nil {
				return nil, err
			}
		}
	}
	_ = os.RemoveAll(e.backupDir(a.Name, opt.Project))
	if err := os.Remove(e.manifestPath(a.Name, opt.Project)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	// loci's own state directories go when nothing is left in them.
	_ = os.Remove(filepath.Join(e.StateDir, "backups"))
	_ = os.Remove(e.StateDir)
	removeDirs(m.Dirs)
	return res, nil
}

// Status is one agent as list shows it.
type Status struct {
	Agent     string `json:"agent"`
	Command   string `json:"command"`
	Found     bool   `json:"found"`
	Path      string `json:"path,omitempty"`
	Version   string `json:"version,omitempty"`
	Supported string `json:"supported"`
	// Compatible says the version found is in the supported range.
	Compatible bool `json:"compatible"`
	// Problem is why the agent cannot be integrated, if it cannot.
	Problem   string    `json:"problem,omitempty"`
	Installed []Install `json:"installed"`
}

// Install is one install of loci into an agent, from its manifest.
type Install struct {
	Scope     string   `json:"scope"`
	Transport string   `json:"transport"`
	URL       string   `json:"url"`
	Files     []string `json:"files"`
}

// List reports each supported agent: found or not, its version, and what
// loci installed there.
func (e *Env) List(ctx context.Context) []Status {
	var out []Status
	for _, a := range Agents() {
		s := Status{Agent: a.Name, Command: a.Command, Installed: []Install{}}
		r, rerr := e.Assets.Versions(a.Name)
		if rerr == nil {
			s.Supported = rangeText(r)
		}
		f, err := e.find(ctx, a)
		s.Found, s.Path, s.Version = f.Path != "", f.Path, f.Version
		switch {
		case err != nil:
			s.Problem = fault.As(err).Msg
		case rerr != nil:
			s.Problem = fault.As(rerr).Msg
		default:
			if err := supported(a, f.Version, r); err != nil {
				s.Problem = fault.As(err).Msg
			} else {
				s.Compatible = true
			}
		}
		for _, m := range e.manifests(a.Name) {
			in := Install{Scope: m.Scope, Transport: m.Transport, URL: m.URL, Files: []string{}}
			for _, f := range m.Files {
				in.Files = append(in.Files, f.Path)
			}
			s.Installed = append(s.Installed, in)
		}
		out = append(out, s)
	}
	return out
}

// dirMode is the mode of the directories loci creates: 0700 in the
// user's own configuration (as the agents create theirs), 0755 in a
// project (its directories are shared like the rest of the tree).
func dirMode(project string) fs.FileMode {
	if project == "" {
		return 0o700
	}
	return 0o755
}

// confined refuses, for a project's install, update or remove, a file
// that is, or lies under a directory that is, a symbolic link leading out
// of the project: loci would write where --project does not reach (a
// CLAUDE.md linked to a file elsewhere gains loci's block). A link that
// stays in the project is followed. The user's own files are not
// confined: dotfile managers link them, and loci edits the target.
func confined(project, path string) error {
	if project == "" {
		return nil
	}
	root, err := filepath.EvalSymlinks(project)
	if err != nil {
		root = project
	}
	rel, err := filepath.Rel(project, path)
	if err != nil || !inside(rel) {
		return errOutside(path, path, project)
	}
	cur := project
	for _, c := range strings.Split(rel, string(filepath.Separator)) {
		cur = filepath.Join(cur, c)
		fi, err := os.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fault.Wrap(fault.IntegrationValidationFailed, err, fmt.Sprintf("cannot read %s: %v", cur, err),
				"check the file's permissions; nothing was written")
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			continue
		}
		target, err := filepath.EvalSymlinks(cur)
		if err != nil {
			return errOutside(path, cur, project)
		}
		if r, err := filepath.Rel(root, target); err != nil || !inside(r) {
			return errOutside(path, cur, project)
		}
	}
	return nil
}

// inside says whether a relative path stays in its base.
func inside(rel string) bool {
	return rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// errOutside is loci::integration::conflict for a project file that is
// (or lies under) a symbolic link leading out of the project.
func errOutside(path, link, project string) error {
	to, err := os.Readlink(link)
	if err != nil {
		to = "(not a link: the path itself)"
	}
	help := "a --project integration writes only inside the project: replace the link with a file of the project's own, or install for the user (without --project); nothing was written"
	if link != path {
		return fault.Newf(fault.IntegrationConflict, help,
			"a symbolic link leads outside the project: %s lies under %s, a link to %s (project %s)", path, link, to, project)
	}
	return fault.Newf(fault.IntegrationConflict, help,
		"a symbolic link leads outside the project: %s is a link to %s (project %s)", path, to, project)
}
