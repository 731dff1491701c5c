package transport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/config"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/services"
	"github.com/loci-dev/loci/store"
)

// triggersHandler is a handler of the trigger routes: fn gets the
// supervisor and the route's path parameter ("" for none).
type triggersHandler func(t *services.Triggers, v string, w http.ResponseWriter, r *http.Request) error

func (s *Server) triggersRoute(key string, fn triggersHandler) handler {
	return serviceRoute(func() (*services.Triggers, error) {
		if s.Triggers == nil {
			return nil, fault.New(fault.ServerFailed, "this server runs no triggers", "report it")
		}
		return s.Triggers, nil
	}, key, fn)
}

// listTriggers is GET /api/triggers.
func listTriggers(t *services.Triggers, _ string, w http.ResponseWriter, r *http.Request) error {
	return writeJSON(w, http.StatusOK, apiTriggers(r.Context(), t))
}

// getTrigger is GET /api/triggers/{name}.
func getTrigger(t *services.Triggers, name string, w http.ResponseWriter, r *http.Request) error {
	in, err := t.Get(r.Context(), name)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, apiTrigger(in))
}

// putTrigger is PUT /api/triggers/{name}: create (disabled unless enabled
// is sent) or change the fields named.
func putTrigger(t *services.Triggers, name string, w http.ResponseWriter, r *http.Request) error {
	var b api.TriggerPut
	if err := decodeBody(r, &b, true); err != nil {
		return err
	}
	settings := map[string]string{}
	for k, v := range b.Settings {
		switch v := v.(type) {
		case string:
			settings[k] = v
		case bool, float64:
			settings[k] = fmt.Sprint(v)
		default:
			return fault.New(fault.TriggerInvalid, "settings."+k+": must be a string, a boolean or a number", "correct settings."+k)
		}
	}
	in, saved, err := t.Put(r.Context(), name, services.TriggerChange{Miner: b.Miner, Type: b.Type, Enabled: b.Enabled,
		Credential: credentialRef(b.Credential), Settings: settings, UnsetSettings: b.UnsetSettings, Unset: b.Unset})
	if err != nil {
		return err
	}
	return writeJSON(w, createdStatus(saved.Created), api.TriggerPutResult{Trigger: apiTrigger(in), Created: saved.Created, Changed: saved.Changed,
		ConfigWritten: configWritten(saved)})
}

// deleteTrigger is DELETE /api/triggers/{name}: {removed: name}.
func deleteTrigger(t *services.Triggers, name string, w http.ResponseWriter, r *http.Request) error {
	if err := t.Delete(r.Context(), name); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, api.MinerRemoved{Removed: name})
}

// enableTrigger is POST /api/triggers/{name}/enable and /disable.
func enableTrigger(on bool) triggersHandler {
	return func(t *services.Triggers, name string, w http.ResponseWriter, r *http.Request) error {
		in, err := t.SetEnabled(r.Context(), name, on)
		if err != nil {
			return err
		}
		return writeJSON(w, http.StatusOK, apiTrigger(in))
	}
}

// reloadTriggers is POST /api/triggers/reload.
func reloadTriggers(t *services.Triggers, _ string, w http.ResponseWriter, r *http.Request) error {
	rl, err := t.Reload(r.Context())
	if err != nil {
		return err
	}
	nonNil := func(v []string) []string {
		if v == nil {
			return []string{}
		}
		return v
	}
	return writeJSON(w, http.StatusOK, api.TriggersReloaded{Triggers: apiTriggers(r.Context(), t).Triggers,
		Added: nonNil(rl.Added), Removed: nonNil(rl.Removed), Changed: nonNil(rl.Changed)})
}

// fireTrigger is POST /api/triggers/{name}/fire: {outcome, job}.
func fireTrigger(t *services.Triggers, name string, w http.ResponseWriter, r *http.Request) error {
	outcome, job, err := t.Fire(r.Context(), name, store.ByHTTP)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusAccepted, api.TriggerFired{Outcome: outcome, Job: apiJob(job)})
}

func apiTriggers(ctx context.Context, t *services.Triggers) api.TriggerList {
	list := t.List(ctx)
	_, file, lastErr := t.Snapshot()
	wh := t.Webhook
	out := api.TriggerList{Triggers: make([]api.Trigger, len(list)), ConfigFile: file, ConfigFileToCreate: t.Miners.FileToCreate(), Error: lastErr,
		Webhook: api.WebhookListener{Enabled: wh.Enable, Bind: wh.Bind, Port: wh.Port, AllowRemote: wh.AllowRemote}}
	if wh.Enable && t.Listener != nil {
		on := t.Listener.Addr() != ""
		out.Webhook.Listening = &on
	}
	for i, in := range list {
		out.Triggers[i] = apiTrigger(in)
	}
	return out
}

func apiTrigger(in services.TriggerInfo) api.Trigger {
	out := api.Trigger{Name: in.Name, Miner: in.Trigger.Miner, Type: in.Trigger.Type, Enabled: in.Trigger.Enabled,
		Settings: in.Settings, Status: in.Status, Reason: in.Reason, Setup: in.Setup, Running: in.Running, Endpoint: in.Endpoint,
		Counters: api.TriggerCounters{Fired: in.Fired, Coalesced: in.Coalesced, Failed: in.Failed, Deliveries: in.Deliveries},
		NextDue:  in.NextDue, LastError: in.LastError, LastJob: in.LastJob}
	if out.Setup == nil {
		out.Setup = []string{}
	}
	if out.Settings == nil {
		out.Settings = map[string]string{}
	}
	if in.CredentialKind != "" {
		out.Credential = &api.MinerCredential{Kind: in.CredentialKind, Available: in.CredentialAvailable}
	}
	return out
}

// Webhooks is the webhook listener: its own socket, opened by the trigger
// supervisor when the first webhook trigger starts and closed when the
// last stops. It answers POST /hooks/<trigger> only; anything wrong with a
// delivery is the same empty 401, a body over max_body_bytes 413, more
// than max_concurrent verified deliveries at once 429 with Retry-After,
// and a delivery that could not be queued 503 (it was forgotten: send it
// again).
//
// Nobody who merely reaches the port can starve signed deliveries: a
// request must be read whole (headers and body) within WebhookReadTimeout
// of its connection being accepted; at most WebhookMaxReading connections
// are still reading at once and WebhookMaxConns open in all (more wait in
// the kernel's backlog); a connection carries one request; and a
// max_concurrent slot is taken only once the signature has checked out.
type Webhooks struct {
	Triggers *services.Triggers
	Config   config.Webhook
	Log      *slog.Logger
	// MaxConns caps the listener's open connections (WebhookMaxConns
	// where zero) and MaxReading those still reading their request
	// (WebhookMaxReading where zero); past either, connections wait in
	// the backlog (ConnBudget sizes both against the open-file limit).
	MaxConns, MaxReading int

	mu   sync.Mutex
	srv  *http.Server
	addr string
	sem  chan struct{}
}

// WebhookReadTimeout bounds the reading of a webhook request, headers and
// body, from its connection's accept; WebhookMaxReading is how many
// connections may be reading at once.
const (
	WebhookReadTimeout = 5 * time.Second
	WebhookMaxReading  = 512
)

// Start listens on webhook.bind and webhook.port.
func (h *Webhooks) Start() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.srv != nil {
		return nil
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(h.Config.Bind, strconv.Itoa(h.Config.Port)))
	if err != nil {
		return err
	}
	h.sem = make(chan struct{}, max(h.Config.MaxConcurrent, 1))
	mux := http.NewServeMux()
	mux.HandleFunc("POST /hooks/{name}", h.deliver)
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusUnauthorized) })
	h.srv = &http.Server{Handler: mux, ReadHeaderTimeout: WebhookReadTimeout, ReadTimeout: WebhookReadTimeout,
		WriteTimeout: 2 * WebhookReadTimeout, ConnContext: withReadingConn}
	// One request a connection: a connection done reading never reads
	// again, so the bound on readers holds, and no idle connection waits.
	h.srv.SetKeepAlivesEnabled(false)
	h.addr = ln.Addr().String()
	conns, reading := h.MaxConns, h.MaxReading
	if conns <= 0 {
		conns = WebhookMaxConns
	}
	if reading <= 0 {
		reading = WebhookMaxReading
	}
	srv, rl := h.srv, newReadingListener(LimitConns(h.srv, ln, conns, false), reading)
	go func() {
		if err := srv.Serve(rl); err != nil && !errors.Is(err, http.ErrServerClosed) {
			h.Log.Error("the webhook listener failed", "err", err)
		}
	}()
	return nil
}

// Stop closes the listener after the deliveries being answered.
func (h *Webhooks) Stop() {
	h.mu.Lock()
	srv := h.srv
	h.srv, h.addr = nil, ""
	h.mu.Unlock()
	if srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		_ = srv.Close()
	}
}

// Addr is the bound host:port, "" when not listening.
func (h *Webhooks) Addr() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.addr
}

func (h *Webhooks) deliver(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.Config.MaxBodyBytes))
	doneRead(r.Context())
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			w.WriteHeader(http.StatusRequestEntityTooLarge)
			return
		}
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	// The body is only verified: nothing keeps it. A slot is for verified
	// work only.
	d, ok := h.Triggers.Verify(r.PathValue("name"), r.Header.Get, body)
	if !ok {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	select {
	case h.sem <- struct{}{}:
		defer func() { <-h.sem }()
	default:
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		return
	}
	outcome, job, err := h.Triggers.Accept(r.Context(), d)
	if err != nil && fault.Is(err, fault.StoreDiskFull) {
		// The sender proved itself: it gets the reason, like any client,
		// and sends the delivery again once space is freed.
		w.Header().Set("Retry-After", "60")
		renderError(h.Log, w, r, err)
		return
	}
	if err != nil {
		h.Log.Warn("a webhook delivery could not be queued; forgotten", "trigger", r.PathValue("name"), "err", fault.As(err).Msg)
		w.Header().Set("Retry-After", "5")
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	_ = json.NewEncoder(w).Encode(api.TriggerFired{Status: outcome, Job: apiJob(job)})
}

// APITrigger is a trigger as GET /api/triggers shows it (its credential's
// kind and availability only, never where the webhook's secret is read
// nor the secret): what the admin listener's trigger_definitions table
// shows too.
func APITrigger(in services.TriggerInfo) api.Trigger { return apiTrigger(in) }
