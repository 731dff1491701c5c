package services

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/actors"
	"github.com/loci-dev/loci/config"
	"github.com/loci-dev/loci/sources"
	"github.com/loci-dev/loci/store"
)

type fakeListener struct{ on bool }

func (f *fakeListener) Start() error { f.on = true; return nil }
func (f *fakeListener) Stop()        { f.on = false }
func (f *fakeListener) Addr() string {
	if f.on {
		return "127.0.0.1:1"
	}
	return ""
}

// mineParamsForTest are the fields Miners.Request sends.
type mineParamsForTest struct {
	Source       string            `json:"source"`
	Locator      string            `json:"locator"`
	Full         bool              `json:"full"`
	Options      map[string]string `json:"options"`
	Wing         string            `json:"wing"`
	MaxDocuments *int              `json:"max_documents"`
}

// Deliveries accepted and never queued are recovered: those from before
// the start at once, later ones after the grace period; a recovered
// delivery keeps its job, so a repeat is a duplicate.
func TestDeliveryRecoveryAndGrace(t *testing.T) {
	j := newJobs(t, testCfg)
	j.Register(actors.Define("mine", actors.Spec[mineParamsForTest]{
		Decode: func(_ context.Context, _ actors.Submission, p mineParamsForTest) (actors.Plan, error) {
			return actors.Plan{Input: p, Priority: store.PriorityBackground, Lane: "source:" + p.Locator}, nil
		},
		Run: done}))
	if err := j.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer j.Stop(context.Background())
	dir := t.TempDir()
	miners := &Miners{Defined: map[string]config.Miner{"docs": {Locator: dir, Enabled: true}},
		Sources: sources.NewRegistry(sources.Directory{MaxFileBytes: 1 << 20}), Jobs: j}
	tr := &Triggers{Miners: miners, DB: j.DB, Sys: j.Sys, Log: slog.New(slog.DiscardHandler),
		Webhook: config.Webhook{Enable: true, Bind: "127.0.0.1"}, Listener: &fakeListener{},
		Env:   func(string) (string, bool) { return "secret", true },
		Every: 50 * time.Millisecond, Grace: 2 * time.Second}
	put := func(id string, at time.Time) {
		_, err := j.Sys.Write(context.Background(), func(tx store.Tx) (any, error) {
			return nil, tx.PutDelivery(&store.Delivery{Trigger: "hook", ID: id, AcceptedAt: at})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	job := func(id string) string {
		var d *store.Delivery
		j.DB.View(context.Background(), func(r store.Reader) error { d, _ = r.Delivery("hook", id); return nil })
		if d == nil {
			return "forgotten"
		}
		return d.Job
	}
	put("before-start", time.Now().Add(-time.Minute))
	_, _ = j.Sys.Write(context.Background(), func(tx store.Tx) (any, error) {
		return nil, tx.PutDelivery(&store.Delivery{Trigger: "gone", ID: "x", AcceptedAt: time.Now().Add(-time.Minute)})
	})
	cfg := config.Config{Triggers: map[string]config.Trigger{"hook": {Miner: "docs", Type: "webhook", Enabled: true,
		Credential: &config.CredentialRef{Env: "HOOK"}}}}
	if err := tr.Start(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	defer tr.Stop(context.Background())
	if job("before-start") == "" || job("before-start") == "forgotten" {
		t.Fatalf("a delivery from before the start: %q", job("before-start"))
	}
	gone := func() bool {
		var d *store.Delivery
		j.DB.View(context.Background(), func(r store.Reader) error { d, _ = r.Delivery("gone", "x"); return nil })
		return d == nil
	}
	if gone() {
		t.Fatal("a delivery of a trigger not running was forgotten at start: it may start within the grace")
	}
	// A delivery the start's pass did not see (accepted, never queued,
	// already older than the grace): the second pass queues it.
	put("stuck", time.Now().Add(-time.Second))
	// Absence has no signal: 100 ms is two supervisor passes (Every is
	// 50 ms) and well inside the 2 s grace, so a pass that recovered
	// before the grace would have shown.
	time.Sleep(100 * time.Millisecond)
	if job("stuck") != "" {
		t.Fatalf("recovered before the grace: %q", job("stuck"))
	}
	deadline := time.Now().Add(15 * time.Second)
	for job("stuck") == "" || !gone() {
		if time.Now().After(deadline) {
			t.Fatalf("after the grace: stuck %q, the other trigger's delivery forgotten %v", job("stuck"), gone())
		}
		time.Sleep(20 * time.Millisecond)
	}
	tr.mu.Lock()
	set := tr.running["hook"].set
	tr.mu.Unlock()
	outcome, _, ok, err := tr.Deliver(context.Background(), "hook", func(h string) string {
		if h == "x-hub-signature-256" {
			return set.Sign([]byte("secret"), []byte("{}"))
		}
		return ""
	}, []byte("{}"))
	if !ok || err != nil || outcome == OutcomeDuplicate {
		t.Fatalf("a fresh delivery without an id: %v %v %v", outcome, ok, err)
	}
}

// What enabling a trigger needs: its miner, a source declaring the type,
// and for a webhook the listener, a loopback bind (or allow_remote with
// auth) and a readable secret; a secret-like setting is refused.
func TestTriggerSetup(t *testing.T) {
	dir := t.TempDir()
	miners := &Miners{Defined: map[string]config.Miner{"docs": {Locator: dir, Enabled: true}, "off": {Locator: dir}},
		Sources: sources.NewRegistry(sources.Directory{MaxFileBytes: 1 << 20})}
	tr := &Triggers{Miners: miners, Webhook: config.Webhook{Enable: true, Bind: "0.0.0.0"}, Listener: &fakeListener{},
		Env: func(string) (string, bool) { return "", false }}
	hook := config.Trigger{Miner: "docs", Type: "webhook", Credential: &config.CredentialRef{Env: "HOOK"}}
	need := strings.Join(tr.setup(hook), "\n")
	if !strings.Contains(need, "beyond loopback") || !strings.Contains(need, "credential cannot be read") {
		t.Fatalf("webhook on 0.0.0.0 without a secret needs: %s", need)
	}
	tr.Webhook.AllowRemote, tr.AuthEnabled = true, true
	tr.Env = func(string) (string, bool) { return "s3cret", true }
	if need := tr.setup(hook); len(need) != 0 {
		t.Fatalf("allowed remote with auth and a secret: %v", need)
	}
	for _, c := range []struct {
		def  config.Trigger
		want string
	}{
		{config.Trigger{Miner: "nope", Type: "schedule", Settings: map[string]any{"every": "1h"}}, `miner "nope": define it`},
		{config.Trigger{Miner: "off", Type: "schedule", Settings: map[string]any{"every": "1h"}}, `miner "off" is disabled`},
		{config.Trigger{Miner: "docs", Type: "watch", Settings: map[string]any{"path": dir + "/missing"}}, "is not a directory that exists"},
		{config.Trigger{Miner: "docs", Type: "poll", Settings: map[string]any{"every": "1h", "max_backoff": "ghp_16C7e42F292c6912E7710c838347Ae178B4a"}}, "reads like a secret"},
	} {
		t.Run(c.def.Miner+" "+c.def.Type, func(t *testing.T) {
			if need := strings.Join(tr.setup(c.def), "\n"); !strings.Contains(need, c.want) {
				t.Errorf("%+v needs %q, want %q", c.def, need, c.want)
			}
		})
	}
	if need := tr.setup(config.Trigger{Miner: "docs", Type: "watch", Settings: map[string]any{"path": dir}}); len(need) != 0 {
		t.Fatalf("a watch of an existing directory: %v", need)
	}
}
