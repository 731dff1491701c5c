package transport

import (
	"encoding/json"
	"io"
	"net/http"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/services"
)

// The plugin routes are authenticated like every route but not gated by
// the memory mode (installing code is not a memory write), and have no
// MCP tool: an agent never installs code.

// The headers of POST /api/plugins: the consents (a JSON object, source
// name → consent digest) and the sources installed on their own to adopt
// (a JSON list of names).
const (
	HeaderConsents    = "X-Loci-Consents"
	HeaderAdoptSource = "X-Loci-Adopt-Sources"
)

// maxPluginHeader is the most either header may hold.
const maxPluginHeader = 64 << 10

// pluginUpload reports POST /api/plugins and /api/plugins/preview: their
// body is a plugin archive of up to 64 MiB, not a JSON body of up to 4
// MiB.
func pluginUpload(r *http.Request) bool {
	p := routedPath(r)
	return r.Method == http.MethodPost && (p == "/api/plugins" || p == "/api/plugins/preview")
}

func (s *Server) pluginsOr() (*services.Plugins, error) {
	if s.Plugins == nil {
		return nil, fault.New(fault.ServerFailed, "plugins are not available on this daemon", "see the log")
	}
	return s.Plugins, nil
}

// pluginBody is the request's body as a plugin archive (archiveBody).
func (s *Server) pluginBody(w http.ResponseWriter, r *http.Request) (io.Reader, func(), error) {
	return s.archiveBody(w, r, services.MaxPluginBytes, "plugin", "plugin archive")
}

// pluginHeaders reads X-Loci-Consents and X-Loci-Adopt-Sources.
func pluginHeaders(r *http.Request) (services.PluginInstallOptions, error) {
	var o services.PluginInstallOptions
	if v := r.Header.Get(HeaderConsents); v != "" {
		if len(v) > maxPluginHeader {
			return o, fault.Invalid(HeaderConsents, "is longer than 64 KiB")
		}
		if err := json.Unmarshal([]byte(v), &o.Consents); err != nil {
			return o, fault.Invalid(HeaderConsents, `is not a JSON object of source name to consent digest ({"notes": "<digest>"})`)
		}
	}
	if v := r.Header.Get(HeaderAdoptSource); v != "" {
		if len(v) > maxPluginHeader {
			return o, fault.Invalid(HeaderAdoptSource, "is longer than 64 KiB")
		}
		if err := json.Unmarshal([]byte(v), &o.Adopt); err != nil {
			return o, fault.Invalid(HeaderAdoptSource, `is not a JSON list of source names (["notes"])`)
		}
	}
	return o, nil
}

// listPlugins is GET /api/plugins: every installed plugin with its
// modules and their state.
func listPlugins(p *services.Plugins, _ string, w http.ResponseWriter, r *http.Request) error {
	list, err := p.List(r.Context())
	return answerOK(w, api.PluginList{Plugins: list}, err)
}

// installPlugin is POST /api/plugins with a plugin archive as the body
// and the headers X-Loci-Consents and X-Loci-Adopt-Sources: 201 (200
// when it replaced a version) with {plugin, replaced, adopted}.
func (s *Server) installPlugin(p *services.Plugins, _ string, w http.ResponseWriter, r *http.Request) error {
	o, err := pluginHeaders(r)
	if err != nil {
		return err
	}
	body, done, err := s.pluginBody(w, r)
	if err != nil {
		return err
	}
	defer done()
	out, err := p.Install(r.Context(), body, o)
	return answerInstalled(w, out, out.Replaced, err)
}

// previewPlugin is POST /api/plugins/preview with a plugin archive as the
// body: what installing it would ask; nothing changes.
func (s *Server) previewPlugin(p *services.Plugins, _ string, w http.ResponseWriter, r *http.Request) error {
	body, done, err := s.pluginBody(w, r)
	if err != nil {
		return err
	}
	defer done()
	out, err := p.Preview(r.Context(), body)
	return answerOK(w, out, err)
}

// showPlugin is GET /api/plugins/{id}.
func showPlugin(p *services.Plugins, id string, w http.ResponseWriter, r *http.Request) error {
	v, err := p.Show(r.Context(), id)
	return answerOK(w, v, err)
}

// removePlugin is DELETE /api/plugins/{id}: refused (409) while any of
// its modules is enabled; what they mined stays.
func removePlugin(p *services.Plugins, id string, w http.ResponseWriter, r *http.Request) error {
	out, err := p.Remove(r.Context(), id)
	return answerOK(w, out, err)
}

// searchPluginRegistry is GET /api/plugin-registry/search?q=&registry=.
func searchPluginRegistry(p *services.Plugins, _ string, w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	out, err := p.Search(r.Context(), q.Get("q"), q.Get("registry"))
	return answerOK(w, out, err)
}

// showRegistryPlugin is GET /api/plugin-registry/plugins/{id}?version=&registry=:
// the plugin fetched and verified, its preview; nothing installed.
func showRegistryPlugin(p *services.Plugins, id string, w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	out, err := p.ShowRegistry(r.Context(), id, q.Get("version"), q.Get("registry"))
	return answerOK(w, out, err)
}

// installPluginFromRegistry is POST /api/plugin-registry/install with
// {id, version?, registry?, consents?, adopt_sources?, archive_digest?}.
func installPluginFromRegistry(p *services.Plugins, _ string, w http.ResponseWriter, r *http.Request) error {
	var in api.PluginRegistryInstall
	if err := decodeBody(r, &in, false); err != nil {
		return err
	}
	out, err := p.InstallRegistry(r.Context(), in)
	return answerInstalled(w, out, out.Replaced, err)
}
