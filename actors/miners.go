package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"slices"
	"sort"
	"sync"

	"github.com/loci-dev/loci/sources"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/config"
	"github.com/loci-dev/loci/store/fault"
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
	Jobs    *Jobs
	// Env reads the environment (credential availability); nil: the
	// process's.
	Env func(string) (string, bool)
	// Configs are the named source configurations of the file.
	Configs map[string]config.SourceConfig
	// Load reads the configuration file again (Reload).
	Load func() (config.Config, error)

	mu sync.RWMutex
	// lastErr is why the last reload failed ("" when it did not).
	lastErr string
}

// Snapshot is the miners now, the configuration file and why the last
// reload failed ("" when it did not).
func (m *Miners) Snapshot() (defined map[string]config.Miner, file, lastErr string) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.Defined, m.File, m.lastErr
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
	m.Defined, m.Configs, m.File, m.lastErr = next, c.SourceConfigs, file, ""
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
	if cred != nil {
		in.CredentialKind = cred.Kind()
		in.CredentialAvailable = m.credentialAvailable(cred)
	}
	if !def.Enabled {
		in.State = MinerDisabled
	}
	a, err := m.Sources.Adapter(in.Source)
	if err == nil {
		err = sources.CheckOptions(a, opts)
	}
	if err == nil {
		_, err = a.Resolve(def.Locator, opts)
	}
	if err == nil && a.Info().Capabilities.NeedsCredentials && !in.CredentialAvailable {
		err = fault.New(fault.MinerNotRunnable, "its credential cannot be read", "set the credential the miner names")
	}
	if err != nil {
		in.State, in.Reason = MinerUnavailable, fault.As(err).Msg
	}
	return in
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

func (m *Miners) credentialAvailable(c *config.CredentialRef) bool {
	env := m.Env
	if env == nil {
		env = os.LookupEnv
	}
	switch c.Kind() {
	case "env":
		v, ok := env(c.Env)
		return ok && v != ""
	case "file":
		st, err := os.Stat(c.File)
		return err == nil && st.Mode().IsRegular() && st.Size() > 0
	}
	return false // oauth sign-in is not supported yet
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
	switch in.State {
	case MinerDisabled:
		return nil, false, fault.Newf(fault.MinerDisabled, "enable it in the configuration file (enabled = true), then reload", "miner %q is disabled", name)
	case MinerUnavailable:
		return nil, false, fault.Newf(fault.MinerNotRunnable, "correct the miner in the configuration file", "miner %q cannot run: %s", name, in.Reason)
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
	params := map[string]any{"source": in.Source, "locator": in.Miner.Locator, "full": run.Full}
	if len(opts) > 0 {
		params["options"] = opts
	}
	if in.Miner.Wing != "" {
		params["wing"] = in.Miner.Wing
	}
	if in.Miner.MaxDocuments != nil {
		params["max_documents"] = *in.Miner.MaxDocuments
	}
	b, err := json.Marshal(params)
	if err != nil {
		return nil, false, fault.Wrap(fault.SerializationFailed, err, fmt.Sprintf("miner %q: %v", name, err), "report this as a bug")
	}
	sub := Submission{Type: "mine", RequestedBy: run.RequestedBy, Channel: run.Channel, Params: b}
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
	if in.Miner.Enabled == on {
		return in, nil
	}
	if on {
		def := in.Miner
		def.Enabled = true
		if would := m.info(name, def); would.State == MinerUnavailable {
			return in, fault.Newf(fault.MinerNotRunnable, "correct the miner in the configuration file, then enable it",
				"miner %q cannot run: %s", name, would.Reason)
		}
	}
	if err := m.edit(func(file string) error { return config.SetMinerEnabled(file, name, on) }); err != nil {
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
	Options      map[string]string
	UnsetOptions []string
	Unset        []string
	AllowBroaden bool
}

// Put creates a miner or changes the fields named, in the configuration
// file (the miner's table only), then reloads. It reports whether the
// miner was created, whether anything changed, and whether its source
// identity (where its cursor lives) changed. A change that may widen what
// it reads needs AllowBroaden (loci::miner::scope_broadened); enabling
// one that cannot run is loci::miner::not_runnable.
func (m *Miners) Put(name string, c MinerChange) (info MinerInfo, created, changed, identityChanged bool, err error) {
	if p := config.MinerName(name); p != "" {
		return info, false, false, false, fault.Newf(fault.MinerInvalid, "name miners with lowercase letters, digits, - and _", "miner name %q %s", name, p)
	}
	defined, _, _ := m.Snapshot()
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
			return info, false, false, false, fault.Newf(fault.MinerInvalid, "unset takes wing, credential, source, max_documents or schedule",
				"unset: %q is not a field that can be unset", f)
		}
	}
	if next.Locator == "" {
		return info, false, false, false, fault.New(fault.MinerInvalid, "locator is required: what the source reads (for the directory source, an absolute path)",
			"give the miner a locator")
	}
	if k := next.Credential.Kind(); next.Credential != nil && k == "" {
		return info, false, false, false, fault.New(fault.MinerInvalid, "credential names where a secret is read: exactly one of env, file or oauth",
			"correct the credential")
	}
	src, opts, _ := m.effective(next)
	a, err := m.Sources.Adapter(src)
	if err != nil {
		return info, false, false, false, fault.Wrap(fault.MinerInvalid, err, fault.As(err).Msg, fault.As(err).Help)
	}
	if err := sources.CheckOptions(a, opts); err != nil {
		return info, false, false, false, fault.Wrap(fault.MinerInvalid, err, fault.As(err).Msg, fault.As(err).Help)
	}
	if exists && broadens(prev, next) && !c.AllowBroaden {
		return info, false, false, false, fault.Newf(fault.MinerScopeBroadened, "pass allow_broaden to let the miner read more than it was saved to",
			"the change to miner %q may widen what it reads", name)
	}
	if next.Enabled && (!exists || !prev.Enabled) {
		if would := m.info(name, next); would.State == MinerUnavailable {
			return info, false, false, false, fault.Newf(fault.MinerNotRunnable, "correct the miner, or save it disabled",
				"miner %q cannot run: %s", name, would.Reason)
		}
	}
	created = !exists
	changed = created || !reflect.DeepEqual(prev, next)
	identityChanged = exists && (prev.Source != next.Source || prev.Locator != next.Locator || prev.Options["dir"] != next.Options["dir"])
	if changed {
		if err := m.edit(func(file string) error { return config.PutMinerTable(file, name, next) }); err != nil {
			return info, false, false, false, err
		}
	}
	info, err = m.Get(name)
	return info, created, changed, identityChanged, err
}

// Delete removes a miner's table from the configuration file and reloads.
// What it mined stays.
func (m *Miners) Delete(name string) error {
	if _, err := m.Get(name); err != nil {
		return err
	}
	return m.edit(func(file string) error { return config.DeleteMinerTable(file, name) })
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
// table of the configuration file, then reloads.
func (m *Miners) PutSourceConfig(id string, c SourceConfigChange) (info SourceConfigInfo, created, changed bool, err error) {
	if p := config.MinerName(id); p != "" {
		return info, false, false, fault.Newf(fault.MinerInvalid, "name source configurations with lowercase letters, digits, - and _", "source configuration id %q %s", id, p)
	}
	m.mu.RLock()
	prev, exists := m.Configs[id]
	m.mu.RUnlock()
	next := prev
	next.Options = mergeOptions(prev.Options, c.Options, c.UnsetOptions)
	if c.Source != nil {
		next.Source = *c.Source
	}
	if c.Credential != nil {
		if c.Credential.Kind() == "" {
			return info, false, false, fault.New(fault.MinerInvalid, "credential names where a secret is read: exactly one of env, file or oauth", "correct the credential")
		}
		next.Credential = c.Credential
	}
	if c.UnsetCredential {
		next.Credential = nil
	}
	if next.Source == "" {
		return info, false, false, fault.New(fault.MinerInvalid, "source is required for a new source configuration: the adapter it configures", "give source")
	}
	a, err := m.Sources.Adapter(next.Source)
	if err != nil {
		return info, false, false, fault.Wrap(fault.MinerInvalid, err, fault.As(err).Msg, fault.As(err).Help)
	}
	if err := sources.CheckOptions(a, next.Options); err != nil {
		return info, false, false, fault.Wrap(fault.MinerInvalid, err, fault.As(err).Msg, fault.As(err).Help)
	}
	created, changed = !exists, !exists || !reflect.DeepEqual(prev, next)
	if changed {
		if err := m.edit(func(file string) error { return config.PutSourceConfigTable(file, id, next) }); err != nil {
			return info, false, false, err
		}
	}
	info, err = m.SourceConfig(id)
	return info, created, changed, err
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
	return m.edit(func(file string) error { return config.DeleteSourceConfigTable(file, id) })
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
	if err := m.edit(func(file string) error { return config.PutMinerTable(file, name, next) }); err != nil {
		return in, err
	}
	return m.Get(name)
}

// edit changes the configuration file (fn gets its path), then reloads it.
func (m *Miners) edit(fn func(file string) error) error {
	_, file, _ := m.Snapshot()
	if err := fn(file); err != nil {
		return err
	}
	_, err := m.Reload()
	return err
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
