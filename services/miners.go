package services

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/loci-dev/loci/actors"
	"github.com/loci-dev/loci/config"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/services/kinds"
	"github.com/loci-dev/loci/sources"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/triggers"
)

// Miner states.
const (
	MinerReady       = "ready"
	MinerDisabled    = "disabled"
	MinerUnavailable = "unavailable"
)

// Miners is the service of the saved miners of the configuration file:
// reading them with their state, and running one (a mine job).
type Miners struct {
	// Defined is the miners as the configuration file defines them.
	Defined map[string]config.Miner
	// File is the configuration file ("" when none was read).
	File    string
	Sources *sources.Registry
	Jobs    *actors.Jobs
	// Env reads the environment (credential availability); nil: the
	// process's.
	Env func(string) (string, bool)
	// Configs are the named source configurations of the file.
	Configs map[string]config.SourceConfig
	// Load reads the configuration file again (Reload).
	Load func() (config.Config, error)
	// NewFile is the configuration file the daemon reads at its next
	// start, for a daemon that read none (config.DefaultFile): the first
	// change creates it. "" refuses changes while no file was read.
	NewFile string
	// Writer names the daemon in the header of a file it creates.
	Writer string
	// Log notes a configuration file created (nil: not noted).
	Log *slog.Logger
	// CredentialsDir is credentials.dir: a credential file named through
	// the API must lie inside it ("" refuses every one). Taken again at
	// each reload.
	CredentialsDir string
	// SignIn gives the runs of miners whose credential is oauth their
	// access token (nil: none is signed in).
	SignIn *SignIn

	mu sync.RWMutex
	// lastErr is why the last reload failed ("" when it did not).
	lastErr string
	// editMu serialises the changes of the configuration file (miners,
	// source configurations and triggers): each reads the file and
	// writes it back whole.
	editMu sync.Mutex
}

// Snapshot is the miners now, the configuration file and why the last
// reload failed ("" when it did not).
func (m *Miners) Snapshot() (defined map[string]config.Miner, file, lastErr string) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.Defined, m.File, m.lastErr
}

// FileToCreate is, while the daemon has read no configuration file, the
// one the first change creates ("" once a file was read, or when none can
// be created).
func (m *Miners) FileToCreate() string {
	if _, file, _ := m.Snapshot(); file != "" {
		return ""
	}
	return m.NewFile
}

// Reloaded is what a reload changed, by miner name.
type Reloaded struct {
	Added, Removed, Changed, Enabled, Disabled, Broadened []string
}

// Reload reads the configuration file again and takes its miners: an
// unreadable or invalid file is loci::miner::config_file, and the miners
// stay as they were (the daemon keeps serving).
func (m *Miners) Reload() (Reloaded, error) {
	if m.Load == nil {
		return Reloaded{}, fault.New(fault.MinerConfigFile, "this daemon cannot reload its configuration", "restart it")
	}
	return m.Take(m.Load())
}

// Take takes the miners of a configuration read again (err: why it could
// not be read), as Reload does.
func (m *Miners) Take(c config.Config, err error) (Reloaded, error) {
	var r Reloaded
	next, file := c.Miners, c.File
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		m.lastErr = fault.As(err).Msg
		return r, fault.Wrap(fault.MinerConfigFile, err, "the configuration file cannot be used: "+fault.As(err).Msg,
			"correct the file and reload again; the miners stay as they were")
	}
	prev := m.Defined
	for name, n := range next {
		p, ok := prev[name]
		switch {
		case !ok:
			r.Added = append(r.Added, name)
			if n.Enabled {
				r.Enabled = append(r.Enabled, name)
			}
			continue
		case reflect.DeepEqual(p, n):
			continue
		}
		r.Changed = append(r.Changed, name)
		if n.Enabled && !p.Enabled {
			r.Enabled = append(r.Enabled, name)
		}
		if !n.Enabled && p.Enabled {
			r.Disabled = append(r.Disabled, name)
		}
		if broadens(p, n) {
			r.Broadened = append(r.Broadened, name)
		}
	}
	for name := range prev {
		if _, ok := next[name]; !ok {
			r.Removed = append(r.Removed, name)
		}
	}
	for _, l := range []*[]string{&r.Added, &r.Removed, &r.Changed, &r.Enabled, &r.Disabled, &r.Broadened} {
		sort.Strings(*l)
	}
	m.Defined, m.Configs, m.File, m.lastErr, m.CredentialsDir = next, c.SourceConfigs, file, "", c.Credentials.Dir
	return r, nil
}

// broadens reports a change that may widen what a miner reads: another
// source or locator, or a narrowing option (dir, since) removed or
// changed.
func broadens(p, n config.Miner) bool {
	if p.Source != n.Source || p.Locator != n.Locator {
		return true
	}
	for _, k := range narrowing {
		if v, ok := p.Options[k]; ok && n.Options[k] != v {
			return true
		}
	}
	return false
}

// MinerInfo is a miner with its state and, for an unavailable one, why.
type MinerInfo struct {
	Name  string
	Miner config.Miner
	// Source and Options are what the miner reads with: its own, or those
	// of the source configuration it names, its own options over them.
	Source  string
	Options map[string]string
	// Credential is the reference's kind and whether the credential can
	// be read now; never its name, path or value.
	CredentialKind      string
	CredentialAvailable bool
	State               string
	Reason              string
	// help is what to do about Reason when its cause says (enable the
	// source, reinstall it); "" when the miner itself is to be corrected.
	help string
}

// List is every miner, by name.
func (m *Miners) List() []MinerInfo {
	defined, _, _ := m.Snapshot()
	names := make([]string, 0, len(defined))
	for n := range defined {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]MinerInfo, len(names))
	for i, n := range names {
		out[i] = m.info(n, defined[n])
	}
	return out
}

// Get is one miner, or loci::miner::not_found.
func (m *Miners) Get(name string) (MinerInfo, error) {
	defined, _, _ := m.Snapshot()
	def, ok := defined[name]
	if !ok {
		return MinerInfo{}, fault.Newf(fault.MinerNotFound, "list the miners (GET /api/miners, loci miner list); miners are defined in the configuration file",
			"no miner is named %q", name)
	}
	return m.info(name, def), nil
}

func (m *Miners) info(name string, def config.Miner) MinerInfo {
	src, opts, cred := m.effective(def)
	in := MinerInfo{Name: name, Miner: def, Source: src, Options: opts, State: MinerReady}
	signInWhy := ""
	if cred != nil {
		in.CredentialKind = cred.Kind()
		if cred.Kind() == "oauth" {
			key, src := m.signInKey(def)
			in.CredentialAvailable, signInWhy = m.signedIn(key, src)
		} else {
			in.CredentialAvailable = m.credentialAvailable(cred)
		}
	}
	if !def.Enabled {
		in.State = MinerDisabled
	}
	if err := m.check(name, def); err != nil {
		in.State, in.Reason = MinerUnavailable, fault.As(err).Msg
		return in
	}
	if err := m.checkSourceConfig(def); err != nil {
		in.State, in.Reason = MinerUnavailable, fault.As(err).Msg
		return in
	}
	a, err := m.Sources.Adapter(in.Source)
	if err == nil {
		err = sources.CheckOptions(a, opts)
	}
	if err == nil {
		err = sources.Guard(in.Source, func() error { _, err := a.Resolve(def.Locator, opts); return err })
	}
	if err == nil && a.Info().Capabilities.NeedsCredentials && !in.CredentialAvailable {
		err = fault.New(fault.MinerNotRunnable, "its credential cannot be read", "set the credential the miner names")
	}
	if err == nil && signInWhy != "" {
		// Signed in once, not any more (a refused refresh, a changed
		// source), or a source that does not sign in at all.
		key, src := m.signInKey(def)
		err = fault.New(fault.CredentialRequired, "its oauth sign-in: "+signInWhy, signInHelp(src, key))
		in.help = signInHelp(src, key)
	}
	if err != nil {
		fe := fault.As(err)
		in.State, in.Reason = MinerUnavailable, fe.Msg
		switch fe.Code {
		case fault.SourceNotEnabled, fault.SourceUnavailable, fault.SourceIncompatible:
			// The source is at fault, not the miner: its own help says
			// what to do (loci source enable NAME).
			in.help = fe.Help
		}
	}
	return in
}

// fixHelp is what to do so that a miner that is unavailable can run:
// the source's own help when the source is the cause, else correct the
// miner (then, after, e.g. "then enable it").
func (in MinerInfo) fixHelp(after string) string {
	if in.help != "" {
		return in.help
	}
	return "correct the miner in the configuration file" + after
}

// UsingSource names the miners that read with the named source (their
// own source, or that of the source configuration they name), sorted.
func (m *Miners) UsingSource(source string) []string {
	defined, _, _ := m.Snapshot()
	var out []string
	for name, def := range defined {
		if src, _, _ := m.effective(def); src == source {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// effective is the source, options and credential a miner reads with: a
// source naming a source configuration takes that configuration's source,
// options (the miner's own over them) and credential (unless the miner
// names one); no source is the directory source.
func (m *Miners) effective(def config.Miner) (string, map[string]string, *config.CredentialRef) {
	m.mu.RLock()
	sc, ok := m.Configs[def.Source]
	m.mu.RUnlock()
	if !ok {
		src := def.Source
		if src == "" {
			src = sources.DirectoryName
		}
		return src, def.Options, def.Credential
	}
	opts := mergeOptions(sc.Options, def.Options, nil)
	cred := def.Credential
	if cred == nil {
		cred = sc.Credential
	}
	return sc.Source, opts, cred
}

// SourceConfigInfo is a source configuration: explicit (a
// [source_configs.<id>] table) or implicit (one per source adapter, its
// id the adapter's name, no options and no credential).
type SourceConfigInfo struct {
	ID, Source          string
	Options             map[string]string
	Implicit            bool
	CredentialKind      string
	CredentialAvailable bool
}

// SourceConfigs lists the explicit source configurations and the implicit
// one of every adapter no explicit one shadows, by id.
func (m *Miners) SourceConfigs() []SourceConfigInfo {
	m.mu.RLock()
	configs := m.Configs
	m.mu.RUnlock()
	var out []SourceConfigInfo
	for id, sc := range configs {
		in := SourceConfigInfo{ID: id, Source: sc.Source, Options: sc.Options}
		if sc.Credential != nil {
			in.CredentialKind, in.CredentialAvailable = sc.Credential.Kind(), m.credentialAvailable(sc.Credential)
			if sc.Credential.Kind() == "oauth" {
				in.CredentialAvailable, _ = m.signedIn(ConfigKey(id), sc.Source)
			}
		}
		out = append(out, in)
	}
	for _, name := range m.Sources.Names() {
		if _, ok := configs[name]; !ok {
			out = append(out, SourceConfigInfo{ID: name, Source: name, Implicit: true})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// SourceConfig is one source configuration, or loci::source::not_found.
func (m *Miners) SourceConfig(id string) (SourceConfigInfo, error) {
	for _, c := range m.SourceConfigs() {
		if c.ID == id {
			return c, nil
		}
	}
	return SourceConfigInfo{}, fault.Newf(fault.SourceNotFound, "list them (GET /api/source-configs); explicit ones are [source_configs.<id>] tables of the configuration file",
		"no source configuration has the id %q", id)
}

// signInKey is the sign-in a miner's oauth credential reads: the
// explicit source configuration's it names, else its source's.
func (m *Miners) signInKey(def config.Miner) (key, source string) {
	m.mu.RLock()
	sc, ok := m.Configs[def.Source]
	m.mu.RUnlock()
	if ok {
		return ConfigKey(def.Source), sc.Source
	}
	src, _, _ := m.effective(def)
	return SourceKey(src), src
}

// signedIn reports whether key (of source) is signed in, and else why
// not ("" when it never signed in).
func (m *Miners) signedIn(key, source string) (bool, string) {
	if m.SignIn == nil {
		return false, ""
	}
	return m.SignIn.SignedIn(key, source)
}

// credentialAvailable reports whether the credential can be read now, the
// way the run will read it (config.CredentialRef.Read): a file the daemon
// may not open, an empty one or an unset variable is not available.
func (m *Miners) credentialAvailable(c *config.CredentialRef) bool {
	_, err := c.Read(m.Env)
	return err == nil
}

// check is the first problem of a miner's definition itself, with the
// error its run gives: a
// wing name that cannot name a wing is loci::palace::path_invalid (as the
// mine job refuses it); a bad name, no locator, a credential not naming
// exactly one place, a negative max_documents or a schedule that is not
// one are loci::miner::invalid; a wing id no wing has is
// loci::palace::wing_not_found. A miner with such a problem reads
// unavailable, and saving, enabling or running it is refused.
func (m *Miners) check(name string, def config.Miner) error {
	if err := checkDefinition(name, def); err != nil {
		return err
	}
	// A wing named by its id must be one: else every run fails at its
	// first document (a name makes the wing; an id cannot).
	if _, isID := store.CanonicalUUID(def.Wing); isID && m.Jobs != nil {
		return checkWing(m.Jobs.DB, def.Wing)
	}
	return nil
}

// checkWing refuses a wing id no wing has (loci::palace::wing_not_found).
func checkWing(db store.DB, wing string) error {
	return db.View(context.Background(), func(r store.Reader) error { _, err := store.FindWing(r, wing); return err })
}

// checkDefinition is check without the palace: the miner's own fields,
// whatever the machine it would run on.
func checkDefinition(name string, def config.Miner) error {
	bad := func(problem, help string) error { return fault.New(fault.MinerInvalid, problem, help) }
	if p := config.MinerName(name); p != "" {
		return bad(fmt.Sprintf("miner name %q %s", name, p), "name miners with lowercase letters, digits, - and _")
	}
	if def.Locator == "" {
		return bad("locator: is required: what the source reads (for the directory source, an absolute path)", "give the miner a locator")
	}
	if def.Credential != nil && places(def.Credential) != 1 {
		return bad("credential: names where a secret is read: exactly one of env, file or oauth", "correct the credential")
	}
	if def.MaxDocuments != nil && *def.MaxDocuments < 0 {
		return bad(fmt.Sprintf("max_documents: %d is negative (0 is unlimited)", *def.MaxDocuments), "give max_documents as 0 or more, or unset it")
	}
	if s := def.Schedule; s != nil && (s.Every != "" || s.At != "") {
		raw := map[string]string{"every": s.Every}
		if s.At != "" {
			raw["at"] = s.At
		}
		if _, err := triggers.Check(triggers.Schedule, raw); err != nil {
			return bad("schedule."+strings.TrimPrefix(fault.As(err).Msg, "settings."),
				"correct the miner's schedule: every is a number and a unit (s, m, h or d), at least 1s; at is HH:MM UTC, with whole days only")
		}
	}
	if def.Wing == "" {
		if base := filepath.Base(filepath.Clean(def.Locator)); store.CheckPlace("wing", base) != nil {
			return bad(fmt.Sprintf("wing: is required: the locator's last name %q cannot name a wing", base), "give the miner a wing")
		}
	} else if _, isID := store.CanonicalUUID(def.Wing); !isID {
		if err := store.CheckPlace("wing", def.Wing); err != nil {
			return err
		}
	}
	return nil
}

// places is how many places a credential reference names (1 when right).
func places(c *config.CredentialRef) int {
	n := 0
	for _, set := range []bool{c.Env != "", c.File != "", c.OAuth} {
		if set {
			n++
		}
	}
	return n
}

// checkSourceConfig is the first problem of the source configuration a
// miner names, if it names one (loci::miner::invalid): an id that cannot
// be one, no source, a credential not naming exactly one place.
func (m *Miners) checkSourceConfig(def config.Miner) error {
	m.mu.RLock()
	sc, ok := m.Configs[def.Source]
	m.mu.RUnlock()
	if !ok {
		return nil
	}
	bad := func(problem string) error {
		return fault.Newf(fault.MinerInvalid, "correct [source_configs."+def.Source+"] in the configuration file (PUT /api/source-configs/"+def.Source+")",
			"source configuration %q: %s", def.Source, problem)
	}
	switch {
	case config.MinerName(def.Source) != "":
		return bad("the id " + config.MinerName(def.Source))
	case sc.Source == "":
		return bad("source is required: the source it configures")
	case sc.Credential != nil && places(sc.Credential) != 1:
		return bad("credential: give exactly one of env, file or oauth")
	}
	return nil
}

// checkCredentialFile refuses a credential file named through the API
// (REST, and the CLI through it) that does not lie inside credentials.dir
// (config.CredentialFileInside), as code (the caller's invalid code). Every
// such path gets the same answer, so that whether a file exists is never
// told. A path written by hand in the configuration file is not checked.
func (m *Miners) checkCredentialFile(code fault.Code, c *config.CredentialRef) error {
	if c == nil || c.File == "" {
		return nil
	}
	m.mu.RLock()
	dir := m.CredentialsDir
	m.mu.RUnlock()
	if dir == "" {
		return fault.New(code, "credential.file: credentials.dir is not set, so no credential file can be named through the API",
			"set credentials.dir in the configuration file and put the secret in a file inside it, or name an environment variable instead (credential env)")
	}
	if !config.CredentialFileInside(dir, c.File) {
		return fault.Newf(code, "put the secret in a file inside "+dir+" and name that file, or name an environment variable instead (credential env); a path written by hand in the configuration file is not limited",
			"credential.file: a credential file named through the API must be an absolute path inside credentials.dir (%s), through no link leading out of it", dir)
	}
	if tokens, err := TokenDir(dir); err == nil && (filepath.Clean(c.File) == tokens || config.CredentialFileInside(tokens, c.File)) {
		// The sign-in tokens (a refresh token among them) are the
		// daemon's: a run is handed a fresh access token, never them.
		return fault.Newf(code, "put the secret in a file inside "+dir+" but outside its oauth folder, or give the miner credential oauth",
			"credential.file: %s holds the daemon's sign-in tokens, which no credential may name", tokens)
	}
	return nil
}

// MinerRun is what a run of a miner may add: a full re-read, who asked,
// options that override the saved ones for this run, and consent to a
// change that may widen what is read.
type MinerRun struct {
	Full         bool
	RequestedBy  string
	Channel      string
	Options      map[string]string
	AllowBroaden bool
}

// narrowing are the options whose change may widen what a miner reads.
var narrowing = []string{"dir", "since"}

// Run submits a mine job for a miner: refused while it is disabled
// (loci::miner::disabled) or cannot run (loci::miner::not_runnable); an
// override of a narrowing option (dir, since) needs AllowBroaden
// (loci::miner::scope_broadened).
func (m *Miners) Run(ctx context.Context, name string, run MinerRun) (*store.Job, error) {
	job, _, err := m.Request(ctx, name, run, false)
	return job, err
}

// Request is Run for a trigger: with join, a queued run of the same
// source and settings is joined (coalesced) instead of queuing another.
func (m *Miners) Request(ctx context.Context, name string, run MinerRun, join bool) (*store.Job, bool, error) {
	in, err := m.Get(name)
	if err != nil {
		return nil, false, err
	}
	if err := m.check(name, in.Miner); err != nil {
		return nil, false, err
	}
	_, _, cred := m.effective(in.Miner)
	if cred.Kind() == "oauth" && in.State != MinerDisabled {
		key, src := m.signInKey(in.Miner)
		if ok, why := m.signedIn(key, src); !ok {
			if why == "" {
				why = "it has not signed in"
			}
			return nil, false, fault.Newf(fault.CredentialRequired, signInHelp(src, key),
				"miner %q reads with an oauth sign-in and the source %s is not signed in: %s", name, src, why)
		}
		c := *cred
		c.SignIn = key
		cred = &c
	}
	switch in.State {
	case MinerDisabled:
		return nil, false, fault.Newf(fault.MinerDisabled, "enable it first: loci miner enable "+name+" (POST /api/miners/"+name+"/enable)", "miner %q is disabled", name)
	case MinerUnavailable:
		return nil, false, fault.Newf(fault.MinerNotRunnable, in.fixHelp(""), "miner %q cannot run: %s", name, in.Reason)
	}
	opts := map[string]string{}
	for k, v := range in.Options {
		opts[k] = v
	}
	for k, v := range run.Options {
		if saved, ok := in.Options[k]; ok && saved != v && !run.AllowBroaden && slices.Contains(narrowing, k) {
			return nil, false, fault.Newf(fault.MinerScopeBroadened, "pass allow_broaden to read more than the miner is saved to read",
				"option %s=%q of miner %q would change its saved %q and may widen what it reads", k, v, name, saved)
		}
		opts[k] = v
	}
	p := kinds.MineParams{Source: in.Source, Locator: in.Miner.Locator, Full: run.Full, Wing: in.Miner.Wing,
		MaxDocuments: in.Miner.MaxDocuments}
	if len(opts) > 0 {
		p.Options = opts
	}
	sub := kinds.MineSubmission(p, run.RequestedBy, run.Channel)
	sub.Credential = cred
	if join {
		return m.Jobs.Join(ctx, sub)
	}
	job, err := m.Jobs.Submit(ctx, sub)
	return job, false, err
}

// SetEnabled enables or disables a miner in the configuration file (its
// enabled line, nothing else), then reloads. It is idempotent; enabling
// checks first that the miner can run (loci::miner::not_runnable).
func (m *Miners) SetEnabled(name string, on bool) (MinerInfo, error) {
	in, err := m.Get(name)
	if err != nil {
		return in, err
	}
	if on {
		if err := m.check(name, in.Miner); err != nil {
			return in, err
		}
	}
	if in.Miner.Enabled == on {
		return in, nil
	}
	if on {
		def := in.Miner
		def.Enabled = true
		if would := m.info(name, def); would.State == MinerUnavailable {
			return in, fault.Newf(fault.MinerNotRunnable, would.fixHelp(", then enable it"),
				"miner %q cannot run: %s", name, would.Reason)
		}
	}
	if _, err := m.edit(func(file string) error { return config.SetMinerEnabled(file, name, on) }); err != nil {
		return in, err
	}
	return m.Get(name)
}

// MinerChange is a PUT of a miner: the fields named change (nil: kept),
// options are merged key by key, UnsetOptions and Unset (wing, credential,
// source, max_documents, schedule) remove what they name.
type MinerChange struct {
	Source       *string
	Locator      *string
	Wing         *string
	Enabled      *bool
	Credential   *config.CredentialRef
	MaxDocuments *int
	Options      map[string]string
	UnsetOptions []string
	Unset        []string
	AllowBroaden bool
}

// Saved is what a PUT did: whether it created the entry and changed it,
// whether a miner's source identity (where its cursor lives) changed, and
// the configuration file it was written to (or that was read, when nothing
// changed; "" for none), FileCreated when the change created that file.
type Saved struct {
	Created, Changed, IdentityChanged bool
	File                              string
	FileCreated                       bool
}

// Put creates a miner or changes the fields named, in the configuration
// file (the miner's table only; the file is created when the daemon read
// none), then reloads. Every field is checked first, and a refusal changes
// nothing: the definition itself (checkDefinition: a wing that cannot be
// one is loci::palace::path_invalid, as its run would say), a credential
// file named here outside credentials.dir, the source, its options and
// the locator it must resolve (loci::miner::invalid). A change that may
// widen what it reads needs AllowBroaden (loci::miner::scope_broadened);
// enabling one that cannot run is loci::miner::not_runnable.
func (m *Miners) Put(name string, c MinerChange) (info MinerInfo, saved Saved, err error) {
	if p := config.MinerName(name); p != "" {
		return info, saved, fault.Newf(fault.MinerInvalid, "name miners with lowercase letters, digits, - and _", "miner name %q %s", name, p)
	}
	defined, file, _ := m.Snapshot()
	saved.File = file
	prev, exists := defined[name]
	next := prev
	next.Options = mergeOptions(prev.Options, c.Options, c.UnsetOptions)
	if c.Source != nil {
		next.Source = *c.Source
	}
	if c.Locator != nil {
		next.Locator = *c.Locator
	}
	if c.Wing != nil {
		next.Wing = *c.Wing
	}
	if c.Enabled != nil {
		next.Enabled = *c.Enabled
	}
	if c.Credential != nil {
		next.Credential = c.Credential
	}
	if c.MaxDocuments != nil {
		n := *c.MaxDocuments
		next.MaxDocuments = &n
	}
	for _, f := range c.Unset {
		switch f {
		case "wing":
			next.Wing = ""
		case "credential":
			next.Credential = nil
		case "source":
			next.Source = ""
		case "max_documents":
			next.MaxDocuments = nil
		case "schedule":
			next.Schedule = nil
		default:
			return info, saved, fault.Newf(fault.MinerInvalid, "unset takes wing, credential, source, max_documents or schedule",
				"unset: %q is not a field that can be unset", f)
		}
	}
	if err := m.check(name, next); err != nil {
		return info, saved, err
	}
	if err := m.checkCredentialFile(fault.MinerInvalid, c.Credential); err != nil {
		return info, saved, err
	}
	if err := m.checkSourceConfig(next); err != nil {
		return info, saved, err
	}
	src, opts, _ := m.effective(next)
	a, err := m.Sources.Adapter(src)
	if err != nil {
		return info, saved, fault.Wrap(fault.MinerInvalid, err, fault.As(err).Msg, fault.As(err).Help)
	}
	if err := sources.CheckOptions(a, opts); err != nil {
		return info, saved, fault.Wrap(fault.MinerInvalid, err, fault.As(err).Msg, fault.As(err).Help)
	}
	if _, err := a.Resolve(next.Locator, opts); err != nil {
		return info, saved, fault.Wrap(fault.MinerInvalid, err, fault.As(err).Msg, "correct the locator or the options: what the source is to read must resolve now")
	}
	if exists && broadens(prev, next) && !c.AllowBroaden {
		return info, saved, fault.Newf(fault.MinerScopeBroadened, "pass allow_broaden to let the miner read more than it was saved to",
			"the change to miner %q may widen what it reads", name)
	}
	if next.Enabled && (!exists || !prev.Enabled) {
		if would := m.info(name, next); would.State == MinerUnavailable {
			return info, saved, fault.Newf(fault.MinerNotRunnable, "correct the miner, or save it disabled",
				"miner %q cannot run: %s", name, would.Reason)
		}
	}
	saved.Created = !exists
	saved.Changed = saved.Created || !reflect.DeepEqual(prev, next)
	saved.IdentityChanged = exists && (prev.Source != next.Source || prev.Locator != next.Locator || prev.Options["dir"] != next.Options["dir"])
	if saved.Changed {
		w, err := m.edit(func(file string) error { return config.PutMinerTable(file, name, next) })
		saved.File, saved.FileCreated = w.File, w.Created
		if err != nil {
			return info, saved, err
		}
	}
	info, err = m.Get(name)
	return info, saved, err
}

// Delete removes a miner's table from the configuration file and reloads.
// What it mined stays.
func (m *Miners) Delete(name string) error {
	if _, err := m.Get(name); err != nil {
		return err
	}
	_, err := m.edit(func(file string) error { return config.DeleteMinerTable(file, name) })
	return err
}

// SourceConfigChange is a PUT of a source configuration: source (required
// for a new id), options merged key by key, UnsetOptions removed, the
// credential set or (UnsetCredential) removed.
type SourceConfigChange struct {
	Source          *string
	Options         map[string]string
	UnsetOptions    []string
	Credential      *config.CredentialRef
	UnsetCredential bool
}

// PutSourceConfig creates a source configuration or changes it, in its
// table of the configuration file (created when the daemon read none),
// then reloads. A credential file named here must lie inside
// credentials.dir (loci::miner::invalid).
func (m *Miners) PutSourceConfig(id string, c SourceConfigChange) (info SourceConfigInfo, saved Saved, err error) {
	if p := config.MinerName(id); p != "" {
		return info, saved, fault.Newf(fault.MinerInvalid, "name source configurations with lowercase letters, digits, - and _", "source configuration id %q %s", id, p)
	}
	m.mu.RLock()
	prev, exists := m.Configs[id]
	saved.File = m.File
	m.mu.RUnlock()
	next := prev
	next.Options = mergeOptions(prev.Options, c.Options, c.UnsetOptions)
	if c.Source != nil {
		next.Source = *c.Source
	}
	if c.Credential != nil {
		if c.Credential.Kind() == "" {
			return info, saved, fault.New(fault.MinerInvalid, "credential names where a secret is read: exactly one of env, file or oauth", "correct the credential")
		}
		if err := m.checkCredentialFile(fault.MinerInvalid, c.Credential); err != nil {
			return info, saved, err
		}
		next.Credential = c.Credential
	}
	if c.UnsetCredential {
		next.Credential = nil
	}
	if next.Source == "" {
		return info, saved, fault.New(fault.MinerInvalid, "source is required for a new source configuration: the adapter it configures", "give source")
	}
	a, err := m.Sources.Adapter(next.Source)
	if err != nil {
		return info, saved, fault.Wrap(fault.MinerInvalid, err, fault.As(err).Msg, fault.As(err).Help)
	}
	if err := sources.CheckOptions(a, next.Options); err != nil {
		return info, saved, fault.Wrap(fault.MinerInvalid, err, fault.As(err).Msg, fault.As(err).Help)
	}
	saved.Created, saved.Changed = !exists, !exists || !reflect.DeepEqual(prev, next)
	if saved.Changed {
		w, err := m.edit(func(file string) error { return config.PutSourceConfigTable(file, id, next) })
		saved.File, saved.FileCreated = w.File, w.Created
		if err != nil {
			return info, saved, err
		}
	}
	info, err = m.SourceConfig(id)
	return info, saved, err
}

// DeleteSourceConfig removes an explicit source configuration's table
// (miners naming it become unavailable until it is back); an implicit
// one cannot be removed.
func (m *Miners) DeleteSourceConfig(id string) error {
	c, err := m.SourceConfig(id)
	if err != nil {
		return err
	}
	if c.Implicit {
		return fault.Newf(fault.MinerInvalid, "implicit configurations come with their source; nothing to remove",
			"%q is the implicit configuration of a source", id)
	}
	_, err = m.edit(func(file string) error { return config.DeleteSourceConfigTable(file, id) })
	return err
}

// SetSchedule opts a miner in to or out of its configured schedule (the
// schedule's enabled flag in its table), then reloads; idempotent. A
// miner without a schedule cannot opt in (loci::miner::invalid). The
// trigger supervisor runs what is opted in.
func (m *Miners) SetSchedule(name string, on bool) (MinerInfo, error) {
	in, err := m.Get(name)
	if err != nil {
		return in, err
	}
	sc := in.Miner.Schedule
	if sc == nil || sc.Every == "" {
		if !on {
			return in, nil
		}
		return in, fault.Newf(fault.MinerInvalid, "give the miner a schedule (schedule = { every = \"1h\" }) first",
			"miner %q has no schedule to opt in to", name)
	}
	if sc.Enabled == on {
		return in, nil
	}
	next := in.Miner
	s := *sc
	s.Enabled = on
	next.Schedule = &s
	if _, err := m.edit(func(file string) error { return config.PutMinerTable(file, name, next) }); err != nil {
		return in, err
	}
	return m.Get(name)
}

// edit changes the configuration file (fn gets its path), then reloads it.
func (m *Miners) edit(fn func(file string) error) (FileWrite, error) {
	return m.write(fn, func() error {
		_, err := m.Reload()
		return err
	})
}

// FileWrite is the configuration file a change was written to, and
// whether the change created it.
type FileWrite struct {
	File    string
	Created bool
}

// write changes the configuration file, one change at a time: fn gets its
// path, then reload reads it again, both under the edit lock. A daemon
// that read no file creates the one it reads at its next start (NewFile,
// config.CreateFile) first, and notes it in the log.
func (m *Miners) write(fn func(file string) error, reload func() error) (FileWrite, error) {
	m.editMu.Lock()
	defer m.editMu.Unlock()
	_, file, _ := m.Snapshot()
	var w FileWrite
	if file == "" {
		if m.NewFile == "" {
			return w, fault.New(fault.MinerConfigFile, "no configuration file was read, so there is no file to write to",
				"create one (it may be empty), name it with --config or LOCI_CONFIG, and restart")
		}
		created, err := config.CreateFile(m.NewFile, m.Writer, time.Now())
		if err != nil {
			return w, err
		}
		file, w.Created = m.NewFile, created
		if created && m.Log != nil {
			m.Log.Info("created the configuration file, which the daemon reads from now on and at its next start", "file", file)
		}
	}
	w.File = file
	if err := fn(file); err != nil {
		if w.Created {
			_ = reload() // the file exists now, even if the change failed
		}
		return w, err
	}
	return w, reload()
}

// mergeOptions is base with set over it and unset removed, as a new map
// (nil when empty).
func mergeOptions(base, set map[string]string, unset []string) map[string]string {
	out := map[string]string{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range set {
		out[k] = v
	}
	for _, k := range unset {
		delete(out, k)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
