package kinds

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/loci-dev/loci/actors"
	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/config"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/sources"
	"github.com/loci-dev/loci/sources/secret"
	"github.com/loci-dev/loci/store"
)

// mineParams are a mine submission's fields.
type mineParams struct {
	Path    string            `json:"path,omitempty" jsonschema:"absolute path of a directory to mine (or give source)"`
	Source  string            `json:"source,omitempty" jsonschema:"a source by name instead of path: claude-code, codex, opencode (an agent's sessions; locator defaults to the agent's own folder), chatgpt-export, claude-export (locator: the unzipped export's folder), git-history (the commits reachable from HEAD; locator: the repository's top folder), directory-wasm (a directory, read in a sandbox), or an installed source package (loci source list)"`
	Locator string            `json:"locator,omitempty" jsonschema:"what the source should read"`
	Options map[string]string `json:"options,omitempty" jsonschema:"source options: key=value strings the source declares (directory: dir, since, prune=true closes the drawers of files gone; the built-in sources take prune, git-history takes no option)"`
	Full    bool              `json:"full,omitempty" jsonschema:"read everything again (nothing is duplicated), not only what changed"`
	Wing    string            `json:"wing,omitempty" jsonschema:"wing to file into (default: the directory's name; an agent's sessions or an export: the source's name)"`
	// MaxDocuments overrides mining.max_documents for this job (a miner's
	// own limit).
	MaxDocuments *int `json:"max_documents,omitempty" jsonschema:"stop after this many documents (default mining.max_documents; 0 unlimited); the next job goes on"`
}

// Mining is what the mine kind needs of the daemon: its sources and the
// mining settings.
type Mining struct {
	Sources *sources.Registry
	// ChunkChars is mining.chunk_chars; MaxDocuments mining.max_documents
	// (0: unlimited).
	ChunkChars   int
	MaxDocuments int
	// Secrets is mining.secrets: redact, skip or allow.
	Secrets secret.Policy
	// Dedup is the palace's duplicate rules (kinds.All sets it).
	Dedup store.Dedup
	// DB, when set, checks at submission that a wing given by its id is
	// one (kinds.All sets it).
	DB store.DB
	// DocDelay slows reading by this much a document: end-to-end tests
	// (LOCI_TEST_MINE_DELAY) that need a mine still running.
	DocDelay time.Duration
	// Env reads the environment for a credential that names a variable
	// (nil: the process's).
	Env func(string) (string, bool)
	// Log notes a source's panic with its stack (nil: not noted).
	Log *slog.Logger
	// Token is a fresh access token of the sign-in key (of source) for a
	// run whose credential is oauth (services.SignIn.AccessToken; nil:
	// none is signed in).
	Token func(ctx context.Context, key, source string) ([]byte, error)
}

// MineInput is a mine job's stored input.
type MineInput struct {
	Source  string            `json:"source"`
	Locator string            `json:"locator"`
	Options map[string]string `json:"options,omitempty"`
	Full    bool              `json:"full,omitempty"`
	Wing    string            `json:"wing"`
	// Limit is the effective max_documents (0: unlimited).
	Limit int `json:"limit"`
	// Credential is the reference to the credential the run reads with
	// (a miner's), read when the job runs: the reference (an environment
	// variable's name, a file's path), never the credential.
	Credential *config.CredentialRef `json:"credential,omitempty"`
}

// mineState is a mine job's checkpoint: where it is (the cursor past the
// last document filed) and its counts so far.
type mineState struct {
	Started bool            `json:"started"`
	Cursor  json.RawMessage `json:"cursor,omitempty"`
	Stats   api.MineResult  `json:"stats"`
	// Failed counts the documents whose reading the source's code failed
	// (a panic: counted skipped too); FirstFailure names the first and
	// why, for the result's note.
	Failed       int    `json:"failed,omitempty"`
	FirstFailure string `json:"first_failure,omitempty"`
}

// Mine is the mine kind: read a directory (or another source) into
// drawers, document by document, past the source's cursor.
func Mine(m Mining) actors.Kind {
	return actors.Define(KindMine, actors.Spec[mineParams]{
		Background: true,
		Files:      true,
		Abortable:  true,
		Writes:     always,
		Tool: &actors.Tool{Name: "loci_mine", Description: "Mine a directory (absolute path on the daemon's machine) into drawers: each file becomes drawers in room files of a wing, kept current by mining again; or, with source, an agent's sessions or a chat export (turns, never reasoning or tool output), a git repository's commits (git-history) or an installed source package's documents. Returns the job at once.",
			Idempotent: true, OpenWorld: true, Unoffered: []string{"max_documents"}},
		Decode: func(ctx context.Context, s actors.Submission, p mineParams) (actors.Plan, error) {
			in, id, err := m.plan(p)
			if err != nil {
				return actors.Plan{}, err
			}
			in.Credential = s.Credential
			if a, _ := m.Sources.Adapter(in.Source); a != nil && a.Info().Capabilities.NeedsCredentials && in.Credential == nil {
				return actors.Plan{}, fault.Invalid("source", fmt.Sprintf("the %s source reads with a credential: run it through a miner that names one", in.Source))
			}
			if _, isID := store.CanonicalUUID(in.Wing); isID && m.DB != nil {
				// A name makes its wing; an id must be one already, or
				// every document of the run would fail.
				if err := checkWing(ctx, m.DB, in.Wing); err != nil {
					return actors.Plan{}, err
				}
			}
			// One mine job at a time per source: its cursor is one.
			// A source reads this machine (its folders, its programs, its
			// files): on a shared store a daemon of this host runs it.
			return actors.Plan{Input: in, Lane: "source:" + id.Key(), Local: actors.ThisHost}, nil
		},
		Run: m.run,
	})
}

// plan checks a submission and makes the job's input: exactly one of path
// and source, a source that exists with the options it declares, a
// locator it accepts, and a wing.
func (m Mining) plan(p mineParams) (MineInput, store.SourceIdentity, error) {
	var id store.SourceIdentity
	if (p.Source == "") == (p.Path == "") {
		return MineInput{}, id, fault.Invalid("path", "give exactly one of path (a directory) or source (with its locator)")
	}
	name, loc := p.Source, p.Locator
	if p.Path != "" {
		if p.Locator != "" {
			return MineInput{}, id, fault.Invalid("locator", "goes with source; with path, leave it out")
		}
		name, loc = sources.DirectoryName, p.Path
	}
	a, err := m.Sources.Adapter(name)
	if err != nil {
		return MineInput{}, id, err
	}
	if err := sources.CheckOptions(a, p.Options); err != nil {
		return MineInput{}, id, err
	}
	if prune, err := sources.Prune(p.Options); err != nil {
		return MineInput{}, id, err
	} else if _, lists := a.(sources.Lister); prune && !lists {
		return MineInput{}, id, fault.Invalid("options", fmt.Sprintf("the %s source cannot list all its documents, so it cannot prune", name))
	}
	if err := sources.Guard(name, func() (err error) { id, err = a.Resolve(loc, p.Options); return err }); err != nil {
		return MineInput{}, id, err
	}
	wing := p.Wing
	if info := a.Info(); wing == "" && (info.DefaultLocator != "" || info.Format != "") {
		wing = name // agents' sessions and chat exports: the source's name, wherever they are read
	} else if wing == "" {
		wing = filepath.Base(filepath.Clean(loc))
		if store.CheckPlace("wing", wing) != nil {
			return MineInput{}, id, fault.Invalid("wing", fmt.Sprintf("is required: the directory's name %q cannot name a wing", wing))
		}
	} else if _, isID := store.CanonicalUUID(wing); !isID {
		if err := store.CheckPlace("wing", wing); err != nil {
			return MineInput{}, id, err
		}
	}
	limit := m.MaxDocuments
	if p.MaxDocuments != nil {
		if *p.MaxDocuments < 0 {
			return MineInput{}, id, fault.Invalid("max_documents", "must not be negative (0 is unlimited)")
		}
		limit = *p.MaxDocuments
	}
	return MineInput{Source: name, Locator: loc, Options: p.Options, Full: p.Full, Wing: wing, Limit: limit}, id, nil
}

// mineBatch bounds the documents (and bytes) filed in one transaction; a
// batch the store finds too big for one is halved, and a document too big
// alone is skipped.
// A source that reads in batches (an installed one: a call costs a
// module's start, milliseconds for a Go guest) is handed batches of up to
// mineBatchCalls documents, so that its calls are few and full; the bytes'
// bound is the same.
const (
	mineBatch      = 64
	mineBatchCalls = 512
	mineBatchBytes = 1 << 20
)

// target is where a source stands in the wing a job mines into: the
// state's key ("" while the wing does not exist), the state (nil when the
// source was never mined into the wing) and the documents to file again
// because drawers of theirs were deleted.
type target struct {
	key   string
	wing  *store.Wing
	state *store.SourceState
	stale map[string]bool
}

// readTarget reads the source's state in the wing.
func readTarget(r store.Reader, source, wing string) (target, error) {
	t := target{stale: map[string]bool{}}
	w, err := store.FindWing(r, wing)
	if fault.Is(err, fault.PalaceWingNotFound) {
		return t, nil
	}
	if err != nil {
		return t, err
	}
	t.wing, t.key = w, store.TargetKey(source, w.ID)
	if t.state, err = r.Source(t.key); err != nil {
		return t, err
	}
	err = r.StaleDocuments(t.key, func(doc string) bool { t.stale[doc] = true; return true })
	return t, err
}

// run mines: discover past the cursor of the source in the wing (and the
// documents whose drawers were deleted), then read, normalise, chunk and
// file the documents in order, a batch a transaction, the cursor advanced
// in the same transaction as the drawers; with prune, close the drawers of
// documents gone from the source. It stops between batches when asked
// (pause, cancel, shutdown) and resumes from its checkpoint.
func (m Mining) run(ctx context.Context, r *actors.Run) (_ any, err error) {
	var in MineInput
	if err := json.Unmarshal(r.Job.Input, &in); err != nil {
		return nil, fault.Wrap(fault.StoreMalformed, err, "the job's input is unreadable", "submit the mine job again")
	}
	// The adapter of this moment: replaced or removed in the registry
	// while the job runs, it is still the one the job reads with.
	a, err := m.Sources.Adapter(in.Source)
	if err != nil {
		return nil, err
	}
	cred, err := m.credential(ctx, in, a.Info().Capabilities.NeedsCredentials)
	if err != nil {
		return nil, err
	}
	// What the source's code returns may quote the credential: the job's
	// error never does.
	defer func() { err = scrubbed(err, cred); m.notePanic(r, err, cred) }()
	var id store.SourceIdentity
	if err := sources.Guard(in.Source, func() (err error) { id, err = a.Resolve(in.Locator, in.Options); return err }); err != nil {
		return nil, err
	}
	src := sources.Run{ID: id, Options: in.Options, Credential: cred}
	prune, err := sources.Prune(in.Options)
	if err != nil {
		return nil, err
	}
	key := id.Key()
	var st mineState
	_ = json.Unmarshal(r.Job.Checkpoint, &st)
	if in.Limit > 0 {
		st.Stats.Limit = &in.Limit
	}
	var t target
	if err := r.DB().View(ctx, func(rd store.Reader) (err error) { t, err = readTarget(rd, key, in.Wing); return err }); err != nil {
		return nil, err
	}
	if !st.Started {
		switch {
		case in.Full:
			st.Stats.Mode = api.MineFull
		case t.state == nil:
			st.Stats.Mode = api.MineFirst
		default:
			st.Stats.Mode = api.MineIncremental
			st.Cursor = t.state.Cursor
		}
		if err := sources.Guard(in.Source, func() error { return a.ParseCursor(st.Cursor) }); err != nil {
			return nil, err
		}
	}
	// A discovery (a source's listing, an installed one's calls) is
	// abandoned at a pause, cancel or shutdown: nothing was filed from it.
	dctx, stopDiscovery := context.WithCancel(ctx)
	go func() {
		select {
		case <-r.Stops():
			stopDiscovery()
		case <-dctx.Done():
		}
	}()
	refs, err := m.discover(dctx, r, a, src, in, t, st.Cursor)
	stopDiscovery()
	if err != nil && r.Stopping() {
		return nil, actors.ErrStopped
	}
	if err != nil {
		return nil, err
	}
	if refs, err = m.withStale(ctx, r, a, src, in, t, refs); err != nil {
		return nil, err
	}
	if !st.Started {
		st.Started, st.Stats.Discovered = true, len(refs)
	}
	total := int64(st.Stats.Discovered)
	t0, done0, bytes0 := time.Now(), st.Stats.Documents, st.Stats.Bytes
	progress := func(s api.MineResult, current string) store.Progress {
		msg := fmt.Sprintf("%d of %d documents, %s read", s.Documents, total, megabytes(s.Bytes))
		if secs := time.Since(t0).Seconds(); secs > 0.5 {
			msg += fmt.Sprintf(", %.0f documents/s, %s/s", float64(s.Documents-done0)/secs, megabytes(int64(float64(s.Bytes-bytes0)/secs)))
		}
		if current != "" {
			msg += "; last: " + current
		}
		return store.Progress{Current: int64(s.Documents), Total: &total, Message: msg}
	}
	maxBatch := mineBatch
	if _, ok := a.(sources.BatchReader); ok {
		maxBatch = mineBatchCalls
	}
	batch := maxBatch
	for i := 0; i < len(refs); {
		if r.Stopping() {
			return nil, actors.ErrStopped
		}
		if in.Limit > 0 && st.Stats.Documents >= in.Limit {
			st.Stats.Truncated = true
			break
		}
		next := st
		size := int64(0)
		end := i
		var stale []string
		for end < len(refs) && end-i < batch && size < mineBatchBytes && (in.Limit == 0 || next.Stats.Documents < in.Limit) {
			size += refs[end].Size
			next.Stats.Documents++
			if t.stale[refs[end].ID] {
				stale = append(stale, refs[end].ID)
				next.Stats.Refiled++
			}
			if refs[end].Cursor != nil {
				next.Cursor = refs[end].Cursor
			}
			end++
		}
		if m.DocDelay > 0 {
			time.Sleep(m.DocDelay * time.Duration(end-i))
		}
		docs, err := m.readAll(ctx, a, src, refs[i:end], key, t.key, in, r, &next)
		if err != nil {
			return nil, err
		}
		last := refs[end-1].ID
		err = m.commit(ctx, r, &next, docs, stale, key, id, in.Wing, progress(next.Stats, m.shown(last)))
		if errors.Is(err, store.ErrTxnTooBig) && len(docs) > 1 {
			batch = max(1, len(docs)/2)
			continue
		}
		if errors.Is(err, store.ErrTxnTooBig) {
			// One document too big for a transaction: not filed.
			next.Stats.Skipped++
			err = m.commit(ctx, r, &next, nil, stale, key, id, in.Wing, progress(next.Stats, m.shown(last)))
		}
		if err != nil {
			return nil, err
		}
		batch = min(maxBatch, 2*batch)
		st, i = next, end
		if in.Limit > 0 && st.Stats.Documents >= in.Limit && i < len(refs) {
			st.Stats.Truncated = true
			break
		}
	}
	pruneNote := ""
	if prune && !st.Stats.Truncated {
		if pruneNote, err = m.prune(ctx, r, a, src, in, key, &st); err != nil {
			return nil, err
		}
	}
	if st.Failed > 0 {
		pruneNote = strings.TrimSpace(fmt.Sprintf("%d documents could not be read, the source failing on them (the first, %s); they were skipped. %s",
			st.Failed, st.FirstFailure, pruneNote))
	}
	return m.finish(ctx, r, in, key, st.Stats, pruneNote)
}

// credential reads the credential the job's input refers to, now (none
// when it refers to none). One that cannot be read is none for a source
// that reads without (as the miner's state says: it is ready), and fails
// the job of a source that needs it with what kind of reference it was,
// never its name, path or value. An oauth credential is the sign-in's
// access token, refreshed when it is near its expiry; not signed in
// (loci::credential::required) or a refused refresh
// (loci::credential::refresh_failed) fails the job whatever the source
// needs: the miner asked for it.
func (m Mining) credential(ctx context.Context, in MineInput, needed bool) (sources.Credential, error) {
	if in.Credential == nil {
		return sources.Credential{}, nil
	}
	if in.Credential.Kind() == "oauth" {
		if m.Token == nil || in.Credential.SignIn == "" {
			return sources.Credential{}, fault.Newf(fault.CredentialRequired, "run it through its miner once the source is signed in (loci source auth "+in.Source+")",
				"the %s source's credential is an oauth sign-in this daemon cannot read", in.Source)
		}
		b, err := m.Token(ctx, in.Credential.SignIn, in.Source)
		if err != nil {
			return sources.Credential{}, err
		}
		return sources.NewCredential("oauth", b), nil
	}
	b, err := in.Credential.Read(m.Env)
	if err != nil && !needed {
		return sources.Credential{}, nil
	}
	if err != nil {
		return sources.Credential{}, fault.Newf(fault.MinerNotRunnable, "set the credential the miner names, then run it again",
			"the %s source's credential (%s) cannot be read: %v", in.Source, in.Credential.Kind(), err)
	}
	return sources.NewCredential(in.Credential.Kind(), b), nil
}

// notePanic logs a source's panic (err wrapping a *sources.Panic) with
// where it happened: the job, the source, what it panicked with (as the
// job shows it) and the stack.
func (m Mining) notePanic(r *actors.Run, err error, cred sources.Credential) {
	var p *sources.Panic
	if m.Log == nil || !errors.As(err, &p) {
		return
	}
	m.Log.Error("a source panicked", "job", r.Job.ID, "source", p.Source, "err", cred.Scrub(p.Error()), "stack", string(p.Stack))
}

// scrubDocument replaces the credential's value in what a document files
// (its text, name, room, kind, URI, origin and metadata): a source's code
// never puts the credential in the palace, by mistake or on purpose.
func scrubDocument(doc *sources.Document, cred sources.Credential) {
	if cred.IsZero() || doc == nil {
		return
	}
	for i, u := range doc.Units {
		doc.Units[i] = cred.Scrub(u)
	}
	doc.ID, doc.Name, doc.Room, doc.Kind = cred.Scrub(doc.ID), cred.Scrub(doc.Name), cred.Scrub(doc.Room), cred.Scrub(doc.Kind)
	doc.URI, doc.Meta = cred.Scrub(doc.URI), cred.Scrub(doc.Meta)
	if o := cred.Scrub(string(doc.Origin)); o != string(doc.Origin) {
		if json.Valid([]byte(o)) {
			doc.Origin = json.RawMessage(o)
		} else {
			doc.Origin = nil
		}
	}
}

// scrubbed is err with the credential's value replaced wherever its
// message or help quotes it (a source's own error may).
func scrubbed(err error, cred sources.Credential) error {
	if err == nil || cred.IsZero() {
		return err
	}
	e := fault.As(err)
	msg, help := cred.Scrub(e.Msg), cred.Scrub(e.Help)
	if msg == e.Msg && help == e.Help && cred.Scrub(err.Error()) == err.Error() {
		return err
	}
	return fault.New(e.Code, msg, help)
}

// discover lists the documents past the cursor and, when the adapter is
// a Suspecter, puts before them the suspects that the source's state in
// the wing does not know (a directory moved in with files at old times):
// they are filed out of order, the cursor staying where it is.
func (m Mining) discover(ctx context.Context, r *actors.Run, a sources.Adapter, src sources.Run, in MineInput,
	t target, cursor json.RawMessage) (refs []sources.Ref, err error) {
	sa, ok := a.(sources.Suspecter)
	if !ok || len(cursor) == 0 {
		err = sources.Guard(in.Source, func() (err error) { refs, err = a.Discover(ctx, src, cursor); return err })
		return refs, err
	}
	var suspects []sources.Ref
	err = sources.Guard(in.Source, func() (err error) { refs, suspects, err = sa.DiscoverSuspects(ctx, src, cursor); return err })
	if err != nil || len(suspects) == 0 {
		return refs, err
	}
	var unknown []sources.Ref
	err = r.DB().View(ctx, func(rd store.Reader) error {
		for _, ref := range suspects {
			if t.key != "" {
				if d, err := rd.SourceDocument(t.key, ref.ID); err != nil {
					return err
				} else if d != nil {
					continue
				}
			}
			ref.Cursor = nil
			unknown = append(unknown, ref)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return append(unknown, refs...), nil
}

// withStale puts before refs the documents whose drawers were deleted
// since they were filed (past the cursor or not), from a full listing;
// the marks of those gone from the source are cleared, as nothing is left
// to file again.
func (m Mining) withStale(ctx context.Context, r *actors.Run, a sources.Adapter, src sources.Run, in MineInput,
	t target, refs []sources.Ref) ([]sources.Ref, error) {
	if len(t.stale) == 0 {
		return refs, nil
	}
	listing, complete, err := listAll(ctx, a, src)
	if err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(refs))
	for _, ref := range refs {
		seen[ref.ID] = true
	}
	var out []sources.Ref
	listed := map[string]bool{}
	for _, ref := range listing {
		listed[ref.ID] = true
		if t.stale[ref.ID] && !seen[ref.ID] {
			ref.Cursor = nil // filed again out of order: the cursor stays
			out = append(out, ref)
		}
	}
	var gone []string
	for doc := range t.stale {
		if complete && !listed[doc] {
			gone = append(gone, doc)
		}
	}
	if len(gone) > 0 {
		err := r.Write(ctx, func(tx store.Tx) error {
			for _, doc := range gone {
				if err := tx.DeleteStaleDocument(t.key, doc); err != nil {
					return err
				}
			}
			return nil
		}, nil, store.Progress{Message: "documents gone from the source: nothing to file again"})
		if err != nil {
			return nil, err
		}
	}
	return append(out, refs...), nil
}

// listAll lists every document the source holds now: its List when it is
// a Lister, else a discovery without a cursor.
func listAll(ctx context.Context, a sources.Adapter, src sources.Run) (refs []sources.Ref, complete bool, err error) {
	if l, ok := a.(sources.Lister); ok {
		err = sources.Guard(src.ID.Adapter, func() (err error) { refs, complete, err = l.List(ctx, src); return err })
		return refs, complete, err
	}
	err = sources.Guard(src.ID.Adapter, func() (err error) { refs, err = a.Discover(ctx, src, nil); return err })
	return refs, err == nil, err
}

// pruneBatch is how many gone documents one transaction closes.
const pruneBatch = 64

// prune closes the drawers of the documents filed from the source into
// the wing that a complete listing no longer holds, and forgets their
// state; history and as_of still find the drawers. An incomplete listing
// prunes nothing (the note says so).
func (m Mining) prune(ctx context.Context, r *actors.Run, a sources.Adapter, src sources.Run, in MineInput, key string, st *mineState) (string, error) {
	listing, complete, err := listAll(ctx, a, src)
	if err != nil {
		return "", err
	}
	if !complete {
		return "Nothing was pruned: part of the source could not be listed (an unreadable directory).", nil
	}
	present := make(map[string]bool, len(listing))
	for _, ref := range listing {
		present[ref.ID] = true
	}
	var tkey string
	var gone []string
	err = r.DB().View(ctx, func(rd store.Reader) error {
		t, err := readTarget(rd, key, in.Wing)
		if err != nil || t.key == "" {
			return err
		}
		tkey = t.key
		return rd.SourceDocuments(t.key, func(d *store.DocumentState) bool {
			if !present[d.ID] {
				gone = append(gone, d.ID)
			}
			return true
		})
	})
	if err != nil {
		return "", err
	}
	dd := m.Dedup
	for part := range slices.Chunk(gone, pruneBatch) {
		if r.Stopping() {
			return "", actors.ErrStopped
		}
		next := *st
		base := next.Stats
		err := r.Write(ctx, func(tx store.Tx) error {
			s := base
			for _, doc := range part {
				closed, found, err := store.PruneDocument(tx, tkey, doc, r.Job.RequestedBy, r.Job.ID, dd)
				if err != nil {
					return err
				}
				if found {
					s.Pruned++
				}
				s.Retired += closed
			}
			next.Stats = s
			src, err := tx.Source(tkey)
			if err != nil || src == nil {
				return err
			}
			src.Documents = max(0, src.Documents-(s.Pruned-base.Pruned))
			return tx.PutSource(src)
		}, &next, store.Progress{Current: int64(base.Documents), Message: fmt.Sprintf("pruning: %d documents gone from the source", len(gone))})
		if err != nil {
			return "", err
		}
		*st = next
	}
	return "", nil
}

// finish completes a result: the wing's name, the documents tracked in
// it, the outcome and its note.
func (m Mining) finish(ctx context.Context, r *actors.Run, in MineInput, key string, s api.MineResult, pruneNote string) (api.MineResult, error) {
	s.Wing = in.Wing
	err := r.DB().View(ctx, func(rd store.Reader) error {
		t, err := readTarget(rd, key, in.Wing)
		if err != nil || t.key == "" {
			return err
		}
		s.Wing = t.wing.Name
		if t.state != nil {
			s.Tracked = t.state.Documents
		}
		return nil
	})
	if err != nil {
		return s, err
	}
	switch {
	case s.Ingested > 0 || s.Pruned > 0:
		s.Outcome = api.MineChanged
	case s.Mode == api.MineIncremental:
		s.Outcome = api.MineUpToDate
	case s.Discovered == 0:
		s.Outcome = api.MineEmpty
	case s.Unchanged > 0:
		s.Outcome = api.MineUnchanged
	default:
		s.Outcome = api.MineNothingFiled
	}
	s.Note = mineNote(s, in.Source == sources.DirectoryName, pruneNote)
	return s, nil
}

// mineNote says in words what a mine job's counts mean, and what to do
// when something is to be done.
// mineNote is the result's note; what the directory source finds past its
// cursor (change times) is said only for it.
func mineNote(s api.MineResult, directory bool, pruneNote string) string {
	var parts []string
	switch s.Outcome {
	case api.MineChanged:
		switch s.Mode {
		case api.MineFirst:
			parts = append(parts, fmt.Sprintf("The first mine of this source into wing %q: nothing of it was filed there before.", s.Wing))
		case api.MineIncremental:
			parts = append(parts, fmt.Sprintf("Filed what changed since the last mine of this source into wing %q.", s.Wing))
		default:
			parts = append(parts, fmt.Sprintf("Read everything again and filed what changed in wing %q.", s.Wing))
		}
	case api.MineUpToDate:
		parts = append(parts, fmt.Sprintf("Up to date: nothing changed since the last mine of this source into wing %q (%d documents filed there).", s.Wing, s.Tracked))
		if directory {
			parts = append(parts, "Files renamed, moved or copied in with old dates are found by their change time; a file whose content changed with none "+
				"of its times (nor its directory's) changing is found only by a full read: loci mine --full, which duplicates nothing.")
		}
	case api.MineUnchanged:
		parts = append(parts, fmt.Sprintf("Every document is as last filed in wing %q.", s.Wing))
	case api.MineEmpty:
		parts = append(parts, "Nothing to mine: the source lists no documents (for a directory: no files outside the directories "+
			"it skips, such as .git, node_modules and those starting with a dot, or none that the dir and since options select).")
	case api.MineNothingFiled:
		parts = append(parts, fmt.Sprintf("None of the %d documents found could be filed (%d filtered: empty, too large, binary or not UTF-8; %d skipped); "+
			"nothing changed.", s.Discovered, s.Filtered, s.Skipped))
	}
	if s.Refiled > 0 {
		parts = append(parts, fmt.Sprintf("%d documents were read again because drawers of theirs had been deleted.", s.Refiled))
	}
	if s.Pruned > 0 {
		parts = append(parts, fmt.Sprintf("%d documents are gone from the source: their %d drawers were closed (history and as_of still find them).", s.Pruned, s.Retired))
	}
	if pruneNote != "" {
		parts = append(parts, pruneNote)
	}
	if s.Truncated && s.Limit != nil {
		parts = append(parts, fmt.Sprintf("Stopped at the limit of %d documents: mine again to go on.", *s.Limit))
	}
	return strings.Join(parts, " ")
}

// readBatchMax is the most documents one ReadBatch call of a mine job is
// handed.
const readBatchMax = 256

// readAll reads and prepares a batch's documents, on every core: reading,
// the secret scan, chunking and the near-duplicate judging are most of a
// mine job's work, and one document's never waits for another's. A ref
// that carries its document (an installed source whose listing read it)
// is not read; an adapter that reads batches cheaper (a
// sources.BatchReader: one sandbox call for many documents) is handed
// the refs to read in chunks, one per core (at most readBatchMax each),
// and each of its results goes the way a Read's does. The documents and
// counts come back in the batch's order. Each goroutine runs the
// source's code, so it is started through sources.Go, and each Read or
// ReadBatch goes through sources.Guard: a panic in it fails that
// document, or that chunk's documents (counted skipped, the first named
// in st), a panic anywhere else in a goroutine fails the job, never the
// daemon.
func (m Mining) readAll(ctx context.Context, a sources.Adapter, src sources.Run, refs []sources.Ref, key, target string,
	in MineInput, r *actors.Run, st *mineState) ([]store.MinedDocument, error) {
	type result struct {
		md       store.MinedDocument
		ok       bool
		stats    api.MineResult
		filtered bool
		failed   string
	}
	out := make([]result, len(refs))
	// file takes ref k's read (its document or its error) through the
	// counts and, for a document, the scrub and prepare.
	file := func(k int, doc *sources.Document, err error) {
		ref, res := refs[k], &out[k]
		if err == nil && doc == nil {
			err = fault.New(fault.SourceFailed, fmt.Sprintf("the %s source read no document and no error", in.Source),
				"the source's code failed, not the daemon: report it to whoever wrote the "+in.Source+" source")
		}
		if _, ok := sources.IsFiltered(err); ok {
			res.filtered = true
			return
		}
		if sourceFailure(err) {
			res.failed = m.shown(ref.ID) + ": " + src.Credential.Scrub(fault.As(err).Msg)
			m.notePanic(r, err, src.Credential)
		}
		if err != nil {
			res.stats.Skipped++
			return
		}
		scrubDocument(doc, src.Credential)
		res.stats.Bytes += doc.Bytes
		res.stats.UnknownRecords += doc.Skipped
		res.md, res.ok = m.prepare(doc, key, target, in, r, &res.stats)
	}
	// The work: each task a list of refs (by index) that one goroutine
	// takes: a carried document, a ref to Read, or a chunk to ReadBatch.
	var tasks [][]int
	var toRead []int
	for k, ref := range refs {
		switch {
		case ref.Filtered != "":
			out[k].filtered = true
		case ref.Doc != nil:
			tasks = append(tasks, []int{k})
		default:
			toRead = append(toRead, k)
		}
	}
	br, batched := a.(sources.BatchReader)
	size := 1
	if batched {
		size = min(readBatchMax, max(1, (len(toRead)+runtime.GOMAXPROCS(0)-1)/runtime.GOMAXPROCS(0)))
	}
	for lo := 0; lo < len(toRead); lo += size {
		tasks = append(tasks, toRead[lo:min(lo+size, len(toRead))])
	}
	var wg sync.WaitGroup
	var next atomic.Int64
	var failMu sync.Mutex
	var failure error
	for range min(len(tasks), runtime.GOMAXPROCS(0)) {
		sources.Go(&wg, in.Source, func() {
			for {
				t := int(next.Add(1)) - 1
				if t >= len(tasks) {
					return
				}
				ks := tasks[t]
				if ref := refs[ks[0]]; ref.Doc != nil {
					// Filed as discovery read it; a copy, so that the
					// scrub leaves the ref as it was.
					doc := *ref.Doc
					doc.Units = slices.Clone(doc.Units)
					if doc.ID == "" {
						doc.ID = ref.ID
					}
					file(ks[0], &doc, nil)
					continue
				}
				if !batched {
					var doc *sources.Document
					err := sources.Guard(in.Source, func() (err error) { doc, err = a.Read(ctx, src, refs[ks[0]]); return err })
					file(ks[0], doc, err)
					continue
				}
				chunk := make([]sources.Ref, len(ks))
				for i, k := range ks {
					chunk[i] = refs[k]
				}
				var results []sources.ReadResult
				err := sources.Guard(in.Source, func() error { results = br.ReadBatch(ctx, src, chunk); return nil })
				if err == nil && len(results) != len(ks) {
					err = fault.New(fault.SourceFailed, fmt.Sprintf("the %s source read %d results for a batch of %d documents", in.Source, len(results), len(ks)),
						"the source's code failed, not the daemon: report it to whoever wrote the "+in.Source+" source")
				}
				for i, k := range ks {
					if err != nil {
						file(k, nil, err)
					} else {
						file(k, results[i].Doc, results[i].Err)
					}
				}
			}
		}, func(err error) {
			failMu.Lock()
			defer failMu.Unlock()
			if failure == nil {
				failure = err
			}
			next.Store(int64(len(tasks))) // the other goroutines stop
		})
	}
	wg.Wait()
	if failure != nil {
		return nil, failure
	}
	var docs []store.MinedDocument
	s := &st.Stats
	for _, res := range out {
		if res.filtered {
			s.Filtered++
		}
		if res.failed != "" {
			if st.Failed++; st.FirstFailure == "" {
				st.FirstFailure = res.failed
			}
		}
		s.Skipped += res.stats.Skipped
		s.Filtered += res.stats.Filtered
		s.Bytes += res.stats.Bytes
		s.UnknownRecords += res.stats.UnknownRecords
		if res.ok {
			docs = append(docs, res.md)
		}
	}
	return docs, nil
}

// commit files a batch of documents, the source's cursor in the wing, the
// clearing of the batch's marks to file again and the job's checkpoint in
// one transaction; next's counts become the committed ones. Nothing is
// remembered for a wing that nothing made.
func (m Mining) commit(ctx context.Context, r *actors.Run, next *mineState, docs []store.MinedDocument, stale []string, key string,
	id store.SourceIdentity, wing string, progress store.Progress) error {
	dd := m.Dedup
	base := next.Stats
	return r.Write(ctx, func(tx store.Tx) error {
		s := base
		added := 0
		for _, d := range docs {
			res, err := store.FileDocument(tx, d, dd)
			if err != nil {
				e := fault.As(err)
				return fault.Wrap(e.Code, err, fmt.Sprintf("%s: %s", d.ID, e.Msg), e.Help)
			}
			if res.New {
				added++
			}
			switch {
			case res.Unchanged:
				s.Unchanged++
			case res.Changed():
				s.Ingested++
			}
			s.Created += res.Created
			s.Superseded += res.Superseded
			s.Retired += res.Retired
			s.Similar += res.Similar
			s.Redacted += res.Redacted
		}
		next.Stats = s
		w, err := store.FindWing(tx, wing)
		if fault.Is(err, fault.PalaceWingNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		tkey := store.TargetKey(key, w.ID)
		for _, doc := range stale {
			if err := tx.DeleteStaleDocument(tkey, doc); err != nil {
				return err
			}
		}
		if was, err := tx.Source(tkey); err != nil {
			return err
		} else if was != nil {
			added += was.Documents
		}
		return tx.PutSource(&store.SourceState{Key: tkey, Identity: id, WingID: w.ID, Cursor: next.Cursor, Documents: added,
			LastJob: r.Job.ID, LastRun: tx.Now()})
	}, next, progress)
}

// prepare turns a read document into what store.FileDocument files: its
// secrets handled by the policy (redacted, or the document skipped), then
// chunked. It reports false for a document not to file.
func (m Mining) prepare(doc *sources.Document, sourceKey, target string, in MineInput, r *actors.Run, s *api.MineResult) (store.MinedDocument, bool) {
	units := doc.Units
	origin := doc.Origin
	var redactions []sources.Redaction
	if m.Secrets != secret.Allow {
		found := false
		red := make([]string, len(units))
		for i, u := range units {
			f := sources.ScanFile(doc.Name, u)
			if len(f) > 0 {
				found = true
			}
			var rs []sources.Redaction
			red[i], rs = sources.Redact(u, f)
			redactions = append(redactions, rs...)
		}
		if found && m.Secrets == secret.Skip {
			s.Skipped++
			return store.MinedDocument{}, false
		}
		if found {
			units = red
			o := map[string]any{}
			_ = json.Unmarshal(origin, &o)
			o["redacted"] = redactions
			origin, _ = json.Marshal(o)
		}
	}
	chunks := sources.Chunk(units, m.ChunkChars)
	if len(chunks) == 0 {
		s.Filtered++
		return store.MinedDocument{}, false
	}
	// A secret in a file's name or path is a secret too: what the palace
	// shows of it (the drawer's name, source.uri, the origin's path) is
	// redacted like its text; the document's own id, which only the
	// mining state keys, stays as the source gave it.
	if o := m.shown(string(origin)); o != string(origin) {
		origin = json.RawMessage(o)
	}
	md := store.MinedDocument{SourceKey: sourceKey, Target: target, ID: doc.ID, Name: m.shown(doc.Name),
		Source: store.Source{Kind: doc.Kind, URI: m.shown(doc.URI), Origin: origin}, Meta: doc.Meta,
		Revision: store.ContentHash(strings.Join(chunks, "")), Chunks: chunks, Wing: in.Wing, Room: doc.Room,
		JobID: r.Job.ID, Requested: r.Job.RequestedBy, Redactions: len(redactions)}
	// The near-duplicate judging against what is stored is done here, in
	// the job, so that the one writer only judges what arrived since.
	_ = r.DB().View(r.Context(), func(rd store.Reader) error {
		store.PrepareDocument(rd, &md, m.Dedup)
		return nil
	})
	return md, true
}

// shown is a name or path as loci shows and stores it: its secrets
// redacted unless mining.secrets allows them.
func (m Mining) shown(s string) string {
	if m.Secrets == secret.Allow || s == "" {
		return s
	}
	// A token's rule wants it to end at a space, a quote or the text's
	// end; in a path it ends at a dot or a slash: read those as spaces
	// (one byte for one, so the findings' offsets hold in s).
	spaced := strings.Map(func(c rune) rune {
		if c == '.' || c == '/' || c == '\\' {
			return ' '
		}
		return c
	}, s)
	red, _ := sources.Redact(s, sources.ScanFile("", spaced))
	return red
}

// sourceFailure reports a read error that is the source failing (its code
// failed or panicked, its call ran out of time or asked for what it may
// not), counted and named in the job's note; other errors (a document
// gone since discovery) are only counted skipped.
func sourceFailure(err error) bool {
	return fault.Is(err, fault.SourceFailed) || fault.Is(err, fault.SourceTimeout) || fault.Is(err, fault.SourcePermissionDenied)
}

func megabytes(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/1e6) }
