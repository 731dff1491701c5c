package transport

import (
	"encoding/json"
	"io"
	"net/http"
	"time"

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

// pluginBody is the request's body as a plugin archive: refused at once
// when it declares more than 64 MiB or is empty, each read with its own
// deadline; done clears the deadline.
func (s *Server) pluginBody(w http.ResponseWriter, r *http.Request) (io.Reader, func(), error) {
	if r.ContentLength > services.MaxPluginBytes {
		return nil, nil, fault.Newf(fault.InputTooLarge, "a plugin is at most 64 MiB",
			"the request body declares %d bytes; a plugin is at most %d", r.ContentLength, services.MaxPluginBytes)
	}
	if !hasBody(r) {
		return nil, nil, fault.Invalid("body", "is empty; send the plugin archive (.tar.gz)")
	}
	rc := http.NewResponseController(w)
	return &stallReader{r: r.Body, rc: rc, wait: s.Limits.body()}, func() { _ = rc.SetReadDeadline(time.Time{}) }, nil
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
func (s *Server) listPlugins(w http.ResponseWriter, r *http.Request) error {
	p, err := s.pluginsOr()
	if err != nil {
		return err
	}
	list, err := p.List(r.Context())
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, api.PluginList{Plugins: list})
}

// installPlugin is POST /api/plugins with a plugin archive as the body
// and the headers X-Loci-Consents and X-Loci-Adopt-Sources: 201 (200
// when it replaced a version) with {plugin, replaced, adopted}.
func (s *Server) installPlugin(w http.ResponseWriter, r *http.Request) error {
	p, err := s.pluginsOr()
	if err != nil {
		return err
	}
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
	if err != nil {
		return err
	}
	status := http.StatusCreated
	if out.Replaced != "" {
		status = http.StatusOK
	}
	return writeJSON(w, status, out)
}

// previewPlugin is POST /api/plugins/preview with a plugin archive as the
// body: what installing it would ask; nothing changes.
func (s *Server) previewPlugin(w http.ResponseWriter, r *http.Request) error {
	p, err := s.pluginsOr()
	if err != nil {
		return err
	}
	body, done, err := s.pluginBody(w, r)
	if err != nil {
		return err
	}
	defer done()
	out, err := p.Preview(r.Context(), body)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, out)
}

// showPlugin is GET /api/plugins/{id}.
func (s *Server) showPlugin(w http.ResponseWriter, r *http.Request) error {
	p, err := s.pluginsOr()
	if err != nil {
		return err
	}
	id, err := param(r, "id")
	if err != nil {
		return err
	}
	v, err := p.Show(r.Context(), id)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, v)
}

// removePlugin is DELETE /api/plugins/{id}: refused (409) while any of
// its modules is enabled; what they mined stays.
func (s *Server) removePlugin(w http.ResponseWriter, r *http.Request) error {
	p, err := s.pluginsOr()
	if err != nil {
		return err
	}
	id, err := param(r, "id")
	if err != nil {
		return err
	}
	out, err := p.Remove(r.Context(), id)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, out)
}

// searchPluginRegistry is GET /api/plugin-registry/search?q=&registry=.
func (s *Server) searchPluginRegistry(w http.ResponseWriter, r *http.Request) error {
	p, err := s.pluginsOr()
	if err != nil {
		return err
	}
	q := r.URL.Query()
	out, err := p.Search(r.Context(), q.Get("q"), q.Get("registry"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, out)
}

// showRegistryPlugin is GET /api/plugin-registry/plugins/{id}?version=&registry=:
// the plugin fetched and verified, its preview; nothing installed.
func (s *Server) showRegistryPlugin(w http.ResponseWriter, r *http.Request) error {
	p, err := s.pluginsOr()
	if err != nil {
		return err
	}
	id, err := param(r, "id")
	if err != nil {
		return err
	}
	q := r.URL.Query()
	out, err := p.ShowRegistry(r.Context(), id, q.Get("version"), q.Get("registry"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, out)
}

// installPluginFromRegistry is POST /api/plugin-registry/install with
// {id, version?, registry?, consents?, adopt_sources?, archive_digest?}.
func (s *Server) installPluginFromRegistry(w http.ResponseWriter, r *http.Request) error {
	p, err := s.pluginsOr()
	if err != nil {
		return err
	}
	var in api.PluginRegistryInstall
	if err := decodeBody(r, &in, false); err != nil {
		return err
	}
	out, err := p.InstallRegistry(r.Context(), in)
	if err != nil {
		return err
	}
	status := http.StatusCreated
	if out.Replaced != "" {
		status = http.StatusOK
	}
	return writeJSON(w, status, out)
}
