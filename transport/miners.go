package transport

import (
	"net/http"
	"sort"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/config"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/services"
	"github.com/loci-dev/loci/store"
)

// minersHandler is a handler of the miners' and source configurations'
// routes: fn gets the miners and the route's path parameter key ("" for
// none).
type minersHandler func(m *services.Miners, v string, w http.ResponseWriter, r *http.Request) error

func (s *Server) minersRoute(key string, fn minersHandler) handler {
	inner := serviceRoute(s.miners, key, fn)
	return func(w http.ResponseWriter, r *http.Request) error {
		if err := s.refreshSources(r); err != nil {
			return err
		}
		return inner(w, r)
	}
}

// refreshSources loads the source packages again before a miner is read
// or run, or a mine submitted: a module changed on disk makes its source,
// and the miners reading it, unavailable now.
func (s *Server) refreshSources(r *http.Request) error {
	if s.Packages == nil {
		return nil
	}
	return s.Packages.Refresh(r.Context())
}

// serviceRoute adapts a handler of a service's routes: fn gets the service
// (or the route answers why there is none) and the route's path parameter
// key ("" for none).
func serviceRoute[S any](service func() (S, error), key string, fn func(S, string, http.ResponseWriter, *http.Request) error) handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		svc, err := service()
		if err != nil {
			return err
		}
		var v string
		if key != "" {
			if v, err = param(r, key); err != nil {
				return err
			}
		}
		return fn(svc, v, w, r)
	}
}

// listMiners is GET /api/miners: {miners, config_file?, error?}.
func listMiners(m *services.Miners, _ string, w http.ResponseWriter, _ *http.Request) error {
	return writeJSON(w, http.StatusOK, apiMiners(m))
}

// getMiner is GET /api/miners/{name}.
func getMiner(m *services.Miners, name string, w http.ResponseWriter, _ *http.Request) error {
	in, err := m.Get(name)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, apiMiner(in))
}

// runMiner is POST /api/miners/{name}/run: the mine job, 202.
func runMiner(m *services.Miners, name string, w http.ResponseWriter, r *http.Request) error {
	var b api.MinerRun
	if err := decodeBody(r, &b, true); err != nil {
		return err
	}
	job, err := m.Run(r.Context(), name, services.MinerRun{Full: b.Full, RequestedBy: b.RequestedBy, Channel: store.ByHTTP,
		Options: b.Options, AllowBroaden: b.AllowBroaden})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusAccepted, apiJob(job))
}

// reloadMiners is POST /api/miners/reload: the configuration file read
// again; an unusable file is loci::miner::config_file (409) and the miners
// stay as they were.
func reloadMiners(m *services.Miners, _ string, w http.ResponseWriter, _ *http.Request) error {
	rl, err := m.Reload()
	if err != nil {
		return err
	}
	nonNil := func(v []string) []string {
		if v == nil {
			return []string{}
		}
		return v
	}
	return writeJSON(w, http.StatusOK, api.MinersReloaded{Miners: apiMiners(m).Miners, Added: nonNil(rl.Added), Removed: nonNil(rl.Removed),
		Changed: nonNil(rl.Changed), Enabled: nonNil(rl.Enabled), Disabled: nonNil(rl.Disabled), Broadened: nonNil(rl.Broadened)})
}

// enableMiner is POST /api/miners/{name}/enable and /disable: the
// configuration file's enabled line, then a reload; the miner as it is.
func enableMiner(on bool) minersHandler {
	return func(m *services.Miners, name string, w http.ResponseWriter, _ *http.Request) error {
		in, err := m.SetEnabled(name, on)
		if err != nil {
			return err
		}
		return writeJSON(w, http.StatusOK, apiMiner(in))
	}
}

// putMiner is PUT /api/miners/{name}: create, or change the fields named.
func putMiner(m *services.Miners, name string, w http.ResponseWriter, r *http.Request) error {
	var b api.MinerPut
	if err := decodeBody(r, &b, true); err != nil {
		return err
	}
	c := services.MinerChange{Source: b.Source, Locator: b.Locator, Wing: b.Wing, Enabled: b.Enabled, Options: b.Options,
		UnsetOptions: b.UnsetOptions, Unset: b.Unset, AllowBroaden: b.AllowBroaden, Credential: credentialRef(b.Credential),
		MaxDocuments: b.MaxDocuments}
	in, saved, err := m.Put(name, c)
	if err != nil {
		return err
	}
	return writeJSON(w, createdStatus(saved.Created), api.MinerPutResult{Miner: apiMiner(in), Created: saved.Created, Changed: saved.Changed,
		IdentityChanged: saved.IdentityChanged, ConfigWritten: configWritten(saved)})
}

// configWritten is where a PUT's change went.
func configWritten(s services.Saved) api.ConfigWritten {
	return api.ConfigWritten{ConfigFile: s.File, ConfigFileCreated: s.FileCreated}
}

// deleteMiner is DELETE /api/miners/{name}: {removed: name}; what the
// miner mined stays.
func deleteMiner(m *services.Miners, name string, w http.ResponseWriter, _ *http.Request) error {
	if err := m.Delete(name); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, api.MinerRemoved{Removed: name})
}

// listSourceConfigs is GET /api/source-configs.
func listSourceConfigs(m *services.Miners, _ string, w http.ResponseWriter, _ *http.Request) error {
	return writeJSON(w, http.StatusOK, apiSourceConfigs(m.SourceConfigs()))
}

// getSourceConfig is GET /api/source-configs/{id}.
func getSourceConfig(m *services.Miners, id string, w http.ResponseWriter, _ *http.Request) error {
	c, err := m.SourceConfig(id)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, apiSourceConfig(c))
}

// putSourceConfig is PUT /api/source-configs/{id}.
func putSourceConfig(m *services.Miners, id string, w http.ResponseWriter, r *http.Request) error {
	var b api.SourceConfigPut
	if err := decodeBody(r, &b, true); err != nil {
		return err
	}
	in, saved, err := m.PutSourceConfig(id, services.SourceConfigChange{Source: b.Source, Options: b.Options,
		UnsetOptions: b.UnsetOptions, UnsetCredential: b.UnsetCredential, Credential: credentialRef(b.Credential)})
	if err != nil {
		return err
	}
	return writeJSON(w, createdStatus(saved.Created), api.SourceConfigPutResult{Config: apiSourceConfig(in), Created: saved.Created, Changed: saved.Changed,
		ConfigWritten: configWritten(saved)})
}

// deleteSourceConfig is DELETE /api/source-configs/{id}: only the
// configuration goes.
func deleteSourceConfig(m *services.Miners, id string, w http.ResponseWriter, _ *http.Request) error {
	if err := m.DeleteSourceConfig(id); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, api.MinerRemoved{Removed: id})
}

// scheduleMiner is POST /api/miners/{name}/schedule/enable and /disable:
// opting in and out of the miner's configured schedule.
func scheduleMiner(on bool) minersHandler {
	return func(m *services.Miners, name string, w http.ResponseWriter, _ *http.Request) error {
		in, err := m.SetSchedule(name, on)
		if err != nil {
			return err
		}
		return writeJSON(w, http.StatusOK, apiMiner(in))
	}
}

func credentialRef(c *api.CredentialRef) *config.CredentialRef {
	if c == nil {
		return nil
	}
	return &config.CredentialRef{Env: c.Env, File: c.File, OAuth: c.OAuth}
}

func apiSourceConfigs(list []services.SourceConfigInfo) api.SourceConfigList {
	out := api.SourceConfigList{Configs: make([]api.SourceConfig, len(list))}
	for i, c := range list {
		out.Configs[i] = apiSourceConfig(c)
	}
	return out
}

func apiSourceConfig(c services.SourceConfigInfo) api.SourceConfig {
	out := api.SourceConfig{ID: c.ID, Source: c.Source, Options: map[string]string{}, Implicit: c.Implicit}
	for k, v := range c.Options {
		out.Options[k] = v
	}
	if c.CredentialKind != "" {
		out.Credential = &api.MinerCredential{Kind: c.CredentialKind, Available: c.CredentialAvailable}
	}
	return out
}

func (s *Server) miners() (*services.Miners, error) {
	if s.Miners == nil {
		return nil, fault.New(fault.ServerFailed, "this server has no miners", "report it")
	}
	return s.Miners, nil
}

func apiMiners(m *services.Miners) api.MinerList {
	list := m.List()
	_, file, lastErr := m.Snapshot()
	out := api.MinerList{Miners: make([]api.Miner, len(list)), ConfigFile: file, ConfigFileToCreate: m.FileToCreate(), Error: lastErr}
	for i, in := range list {
		out.Miners[i] = apiMiner(in)
	}
	return out
}

func apiMiner(in services.MinerInfo) api.Miner {
	src := in.Miner.Source // an adapter, or a source configuration's id
	if src == "" {
		src = in.Source
	}
	out := api.Miner{Name: in.Name, Source: src, Locator: in.Miner.Locator, Wing: in.Miner.Wing, Options: map[string]string{},
		Enabled: in.Miner.Enabled, MaxDocuments: in.Miner.MaxDocuments, State: in.State, Reason: in.Reason}
	keys := make([]string, 0, len(in.Miner.Options))
	for k := range in.Miner.Options {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out.Options[k] = in.Miner.Options[k]
	}
	if in.CredentialKind != "" {
		out.Credential = &api.MinerCredential{Kind: in.CredentialKind, Available: in.CredentialAvailable}
	}
	if sc := in.Miner.Schedule; sc != nil {
		out.Schedule = &api.MinerSchedule{Every: sc.Every, At: sc.At, Enabled: sc.Enabled}
	}
	return out
}

// APIMiner is a miner as GET /api/miners shows it (its credential's kind
// and availability only, never its name, path or value): what the admin
// listener's miners table shows too.
func APIMiner(in services.MinerInfo) api.Miner { return apiMiner(in) }
