package services

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/actors"
	"github.com/loci-dev/loci/config"
	"github.com/loci-dev/loci/sources"
	"github.com/loci-dev/loci/store"
)

// liveHeap is the heap in use after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// Webhook delivery ids (remembered DeliveryMemory for replay protection)
// live in the store, not in the daemon's memory (issue 38: 6-7 KB of
// resident memory a delivery, never given back): the live heap after 1,500
// more distinct deliveries grows by less than 1 KB a delivery, and
// every id is still refused as a duplicate, from the store.
func TestDeliveryIDsCostNoMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 1,800 deliveries")
	}
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
	miners := &Miners{Defined: map[string]config.Miner{"docs": {Locator: t.TempDir(), Enabled: true}},
		Sources: sources.NewRegistry(sources.Directory{MaxFileBytes: 1 << 20}), Jobs: j}
	tr := &Triggers{Miners: miners, DB: j.DB, Sys: j.Sys, Log: slog.New(slog.DiscardHandler),
		Webhook: config.Webhook{Enable: true, Bind: "127.0.0.1"}, Listener: &fakeListener{},
		Env:   func(string) (string, bool) { return "secret", true },
		Every: time.Hour, Grace: time.Hour}
	cfg := config.Config{Triggers: map[string]config.Trigger{"hook": {Miner: "docs", Type: "webhook", Enabled: true,
		Settings:   map[string]any{"delivery_header": "X-Delivery"},
		Credential: &config.CredentialRef{Env: "HOOK"}}}}
	if err := tr.Start(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	defer tr.Stop(context.Background())
	tr.mu.Lock()
	set := tr.running["hook"].set
	tr.mu.Unlock()
	deliver := func(id string) string {
		outcome, _, ok, err := tr.Deliver(context.Background(), "hook", func(h string) string {
			switch h {
			case "x-hub-signature-256":
				return set.Sign([]byte("secret"), []byte("{}"))
			case "X-Delivery", "x-delivery":
				return id
			}
			return ""
		}, []byte("{}"))
		if !ok || err != nil {
			t.Fatalf("delivery %s: %v %v", id, ok, err)
		}
		return outcome
	}
	for i := range 300 {
		deliver(fmt.Sprintf("warm-%d", i))
	}
	before := liveHeap()
	const n = 1500
	for i := range n {
		if o := deliver(fmt.Sprintf("delivery-%06d", i)); o == OutcomeDuplicate {
			t.Fatalf("a fresh delivery id was a duplicate")
		}
	}
	after := liveHeap()
	if grew := int64(after) - int64(before); grew > 1024*n {
		t.Fatalf("the live heap grew by %d bytes over %d deliveries (%d a delivery)", grew, n, grew/n)
	} else {
		t.Logf("the live heap grew by %d bytes over %d deliveries", grew, n)
	}
	stored := 0
	j.DB.View(context.Background(), func(r store.Reader) error {
		return r.Deliveries(func(d *store.Delivery) bool {
			if d.Trigger == "hook" && strings.HasPrefix(d.ID, "delivery-") {
				stored++
			}
			return true
		})
	})
	if stored != n {
		t.Fatalf("%d of %d delivery ids are in the store", stored, n)
	}
	for _, i := range []int{0, n / 2, n - 1} {
		if o := deliver(fmt.Sprintf("delivery-%06d", i)); o != OutcomeDuplicate {
			t.Fatalf("delivery %d sent again: %q, want %q", i, o, OutcomeDuplicate)
		}
	}
}
