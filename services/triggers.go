package services

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"

	"github.com/loci-dev/loci/actors"
	"github.com/loci-dev/loci/config"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/triggers"
)

// Trigger statuses, computed each time (never stored).
const (
	TriggerDisabled    = "disabled"
	TriggerActive      = "active"
	TriggerFailing     = "failing"
	TriggerUnavailable = "unavailable"
)

// What a signal came to, and the statuses of trigger events.
const (
	OutcomeQueued    = "queued"
	OutcomeCoalesced = "coalesced"
	OutcomeFailed    = "failed"
	OutcomeDuplicate = "duplicate"
	TriggerChanged   = "changed"
)

// ChangeTrigger is the change-log kind of trigger notices
// (store.ChangeTrigger).
const ChangeTrigger = store.ChangeTrigger

// MinerSchedulePrefix names the schedule a miner carries in the
// supervisor and the palace ("miner:<name>"; not a trigger name).
const MinerSchedulePrefix = "miner:"

// DeliveryMemory is how long webhook delivery ids are remembered.
const DeliveryMemory = 7 * 24 * time.Hour

// WebhookListener is the webhook socket: the supervisor opens it when the
// first webhook trigger starts and closes it when the last stops.
type WebhookListener interface {
	Start() error
	Stop()
	// Addr is the bound host:port, "" when not listening.
	Addr() string
}

// Triggers is the trigger supervisor: an actor of the tree that reads the
// configuration file again every few seconds and keeps one child actor
// running per enabled trigger whose prerequisites hold (and per miner
// schedule opted in to), each asking for its miner's runs on its signals;
// and the service behind the trigger routes and the webhook listener.
type Triggers struct {
	Miners *Miners
	DB     store.DB
	Sys    *actors.System
	Log    *slog.Logger
	// Webhook is the listener's configuration; AuthEnabled is auth.enabled
	// (a bind beyond loopback needs it).
	Webhook     config.Webhook
	AuthEnabled bool
	// Env reads the environment (webhook secrets); nil: the process's.
	Env func(string) (string, bool)
	// Listener is the webhook socket (nil: webhook triggers stay
	// unavailable).
	Listener WebhookListener
	// Every is how often the configuration file is read again (default
	// 3 s); Grace the wait before the second recovery of accepted
	// deliveries (default 30 s).
	Every, Grace time.Duration
	// DeliveryDelay holds each delivery between its acceptance and its
	// request (crash-recovery tests only).
	DeliveryDelay time.Duration

	mu      sync.Mutex
	defined map[string]config.Trigger
	file    string
	lastErr string
	running map[string]*triggerRun
	// waiting are the enabled watch triggers found unable to run (their
	// directory missing, say): each asks for a run when it arms.
	waiting   map[string]bool
	listenErr string
	sup       *actor.PID
	quit      chan struct{}
	started   time.Time
	pruned    time.Time
	regraced  bool
}

// triggerRun is a running trigger: its actor and what it runs.
type triggerRun struct {
	def      config.Trigger
	set      triggers.Settings
	pid      *actor.PID
	ctx      context.Context
	cancel   context.CancelFunc
	nextDue  *time.Time
	setupErr string
	// rescan: the watch asks for a run when it arms (every watch does).
	rescan bool
	lock   sync.Mutex // one request at a time
}

// TriggerInfo is a trigger as read: its definition, parsed settings and
// computed status.
type TriggerInfo struct {
	Name    string
	Trigger config.Trigger
	// Settings are the definition's settings as strings.
	Settings map[string]string
	Status   string
	Reason   string
	// Setup is what enabling still needs (empty when nothing).
	Setup   []string
	Running bool
	// Endpoint is a listening webhook's URL.
	Endpoint            string
	CredentialKind      string
	CredentialAvailable bool
	Fired, Coalesced    int64
	Failed, Deliveries  int64
	NextDue             *time.Time
	LastError           string
	LastJob             string
}

// Start spawns the supervisor in the actor tree, recovers the deliveries
// accepted but not queued before the last stop, and starts what is
// enabled.
func (t *Triggers) Start(ctx context.Context, initial config.Config) error {
	if t.Every <= 0 {
		t.Every = 3 * time.Second
	}
	if t.Grace <= 0 {
		t.Grace = 30 * time.Second
	}
	t.Log = t.Log.With("component", "triggers")
	t.defined, t.file = initial.Triggers, initial.File
	t.running = map[string]*triggerRun{}
	t.waiting = map[string]bool{}
	t.started = time.Now()
	t.quit = make(chan struct{})
	t.sup = t.Sys.Spawn(actor.PropsFromProducer(func() actor.Actor { return &triggerSupervisor{t: t} }))
	if err := t.Sync(ctx); err != nil {
		return err
	}
	// On a shared store another daemon may be queueing a delivery it
	// accepted a moment ago: at the start, only deliveries older than the
	// grace are surely left by a daemon that stopped.
	before := t.started
	if t.DB.Shared() {
		before = before.Add(-t.Grace)
	}
	t.recover(ctx, before, false)
	go func() {
		tick := time.NewTicker(t.Every)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				t.Sys.Send(t.sup, syncTriggers{})
			case <-t.quit:
				return
			}
		}
	}()
	return nil
}

// Stop stops every trigger and the listener; what they remember stays
// (a schedule's next slot fires once after the restart if it passed).
func (t *Triggers) Stop(ctx context.Context) {
	if t.sup == nil {
		return
	}
	close(t.quit)
	_ = t.Sys.Poison(t.sup)
	t.mu.Lock()
	for name, r := range t.running {
		r.cancel()
		delete(t.running, name)
	}
	t.mu.Unlock()
	if t.Listener != nil {
		t.Listener.Stop()
	}
}

// Sync reads the configuration file again and brings the running
// triggers to it now (the supervisor also does every few seconds).
func (t *Triggers) Sync(ctx context.Context) error {
	f := t.Sys.Request(t.sup, syncTriggers{}, 30*time.Second)
	_, err := f.Result()
	return err
}

type syncTriggers struct{}

// triggerSupervisor is the supervisor actor: trigger actors are its
// children.
type triggerSupervisor struct{ t *Triggers }

func (s *triggerSupervisor) Receive(c actor.Context) {
	switch c.Message().(type) {
	case syncTriggers:
		s.t.sync(c)
		if c.Sender() != nil {
			c.Respond(true)
		}
	case *actor.Stopping:
		for _, pid := range c.Children() {
			c.Stop(pid)
		}
	}
}

// triggerActor is one running trigger: it runs the type's loop from its
// start to its stop.
type triggerActor struct {
	t    *Triggers
	name string
	run  *triggerRun
}

func (a *triggerActor) Receive(c actor.Context) {
	switch c.Message().(type) {
	case *actor.Started:
		go a.t.loop(a.name, a.run)
	case *actor.Stopping:
		a.run.cancel()
	}
}

// loop runs a trigger's signals until it stops.
func (t *Triggers) loop(name string, r *triggerRun) {
	ask := func(signal string) error {
		_, _, err := t.ask(r.ctx, name, r, store.ByUnknown)
		return err
	}
	switch r.set.Type {
	case triggers.Schedule:
		var due *time.Time
		_ = t.DB.View(r.ctx, func(rd store.Reader) error {
			if st, err := rd.TriggerState(name); err == nil && st != nil {
				due = st.Due
			}
			return nil
		})
		runSchedule(r.ctx, r.set, due, func() { _ = ask("schedule") }, func(slot *time.Time, next time.Time) (time.Time, bool) {
			next, won := t.claimSlot(r.ctx, name, slot, next)
			t.mu.Lock()
			r.nextDue = &next
			t.mu.Unlock()
			return next, won
		})
	case triggers.Poll:
		// Several daemons poll: one asks per half interval, the first.
		poll := func() error {
			if !t.claimSignal(r.ctx, name, r.set.Every/2) {
				return nil
			}
			return ask("poll")
		}
		runPoll(r.ctx, r.set, poll, func(next time.Time) {
			t.mu.Lock()
			r.nextDue = &next
			t.mu.Unlock()
		})
	case triggers.Watch:
		// Every daemon watching the directory sees a change; the first to
		// claim it asks. The asks of one daemon are a debounce apart at
		// least, those of one change on several daemons much closer.
		change := func() {
			if t.claimSignal(r.ctx, name, r.set.Debounce/2) {
				_ = ask("watch")
			}
		}
		runWatch(r.ctx, r.set, r.rescan, change, func(err error) {
			t.mu.Lock()
			r.setupErr = ""
			if err != nil {
				r.setupErr = "watching " + r.set.Path + " failed: " + err.Error()
			}
			t.mu.Unlock()
			if err != nil {
				t.Log.Warn("a watch could not be set up; trying again", "trigger", name, "err", err)
			}
		})
	}
}

// claimSlot is a schedule's claim of its slot (runSchedule): in one write
// transaction, the remembered slot compared with slot and replaced by
// next when equal (writes of all daemons being serial, one daemon wins
// each slot); with slot nil, next is kept unless a slot is remembered.
// It answers the slot to wait for and whether this daemon fires slot. A
// failed write fires nothing (the request would fail the same way) and
// waits for next.
func (t *Triggers) claimSlot(ctx context.Context, name string, slot *time.Time, next time.Time) (time.Time, bool) {
	type claim struct {
		next time.Time
		won  bool
	}
	v, err := t.Sys.Write(ctx, func(tx store.Tx) (any, error) {
		st, err := tx.TriggerState(name)
		if err != nil {
			return nil, err
		}
		if st == nil {
			st = &store.TriggerState{Name: name}
		}
		if st.Due != nil && (slot == nil || !st.Due.Equal(*slot)) {
			return claim{next: *st.Due}, nil
		}
		n := next.UTC()
		st.Due = &n
		return claim{next: n, won: slot != nil}, tx.PutTriggerState(st)
	})
	if err != nil {
		if ctx.Err() == nil {
			t.Log.Error("claiming a schedule's slot failed", "trigger", name, "err", err)
		}
		return next, false
	}
	c := v.(claim)
	return c.next, c.won
}

// claimSignal claims a watch change or a poll for this daemon: false when
// another daemon running the trigger claimed one less than window ago
// (the same change, the same poll), else the claim is remembered and
// true. A failed write answers true: a change is not lost for it (the
// request says what failed).
func (t *Triggers) claimSignal(ctx context.Context, name string, window time.Duration) bool {
	v, err := t.Sys.Write(ctx, func(tx store.Tx) (any, error) {
		st, err := tx.TriggerState(name)
		if err != nil {
			return nil, err
		}
		if st == nil {
			st = &store.TriggerState{Name: name}
		}
		now := tx.Now().UTC()
		if st.Claimed != nil && now.Sub(*st.Claimed).Abs() < window {
			return false, nil
		}
		st.Claimed = &now
		return true, tx.PutTriggerState(st)
	})
	if err != nil {
		return true
	}
	return v.(bool)
}

// ask makes the one request of every signal: a run of the trigger's miner,
// joining a queued one of the same source and settings. It records the
// outcome (counters, last job or error) and announces it.
func (t *Triggers) ask(ctx context.Context, name string, r *triggerRun, by string) (string, *store.Job, error) {
	r.lock.Lock()
	defer r.lock.Unlock()
	job, coalesced, err := t.Miners.Request(ctx, r.def.Miner, MinerRun{RequestedBy: by, Channel: by}, true)
	outcome := OutcomeQueued
	switch {
	case err != nil:
		outcome = OutcomeFailed
	case coalesced:
		outcome = OutcomeCoalesced
	}
	t.updateState(context.WithoutCancel(ctx), name, outcome, func(st *store.TriggerState) {
		now := time.Now().UTC()
		switch outcome {
		case OutcomeFailed:
			st.Failed++
			st.Failures++
			st.LastError = fault.As(err).Msg
		case OutcomeCoalesced:
			st.Coalesced++
		default:
			st.Fired++
		}
		if err == nil {
			st.Failures, st.LastError, st.LastFired, st.LastJob = 0, "", &now, job.ID
		}
	})
	if err != nil {
		t.Log.Warn("a trigger's request failed", "trigger", name, "miner", r.def.Miner, "err", fault.As(err).Msg)
	}
	return outcome, job, err
}

// updateState changes a trigger's remembered state in one write, with a
// trigger notice when event is set.
func (t *Triggers) updateState(ctx context.Context, name, event string, fn func(*store.TriggerState)) {
	_, err := t.Sys.Write(ctx, func(tx store.Tx) (any, error) {
		st, err := tx.TriggerState(name)
		if err != nil {
			return nil, err
		}
		if st == nil {
			st = &store.TriggerState{Name: name}
		}
		fn(st)
		if err := tx.PutTriggerState(st); err != nil {
			return nil, err
		}
		if event != "" {
			return nil, tx.Log(ChangeTrigger, event, name)
		}
		return nil, nil
	})
	if err != nil && ctx.Err() == nil {
		t.Log.Error("saving a trigger's state failed", "trigger", name, "err", err)
	}
}

// sync is the supervisor's work: read the file, stop what should not run
// (or runs an old definition), start what should, open or close the
// webhook listener, forget removed triggers, announce definitions that
// changed, recover and prune deliveries.
func (t *Triggers) sync(c actor.Context) {
	ctx := context.Background()
	var changed []string
	if t.Miners.Load != nil {
		cfg, err := t.Miners.Load()
		_, _ = t.Miners.Take(cfg, err)
		t.mu.Lock()
		if err != nil {
			t.lastErr = fault.As(err).Msg
		} else {
			prev := t.defined
			for name, d := range cfg.Triggers {
				if p, ok := prev[name]; !ok || !reflect.DeepEqual(p, d) {
					changed = append(changed, name)
				}
			}
			for name := range prev {
				if _, ok := cfg.Triggers[name]; !ok {
					changed = append(changed, name)
				}
			}
			t.defined, t.file, t.lastErr = cfg.Triggers, cfg.File, ""
		}
		t.mu.Unlock()
	}
	type want struct {
		def config.Trigger
		set triggers.Settings
	}
	desired := map[string]want{}
	t.mu.Lock()
	defined := t.defined
	t.mu.Unlock()
	waiting := map[string]bool{}
	for name, def := range defined {
		if !def.Enabled {
			continue
		}
		if len(t.setupOf(name, def)) > 0 {
			// A watch that cannot run now (its directory removed, say)
			// rescans when it can: files made meanwhile fire nothing.
			if def.Type == triggers.Watch {
				waiting[name] = true
			}
			continue
		}
		if set, err := triggers.Check(def.Type, def.SettingStrings()); err == nil {
			desired[name] = want{def, set}
		}
	}
	miners, _, _ := t.Miners.Snapshot()
	for name, m := range miners {
		s := m.Schedule
		if !m.Enabled || s == nil || !s.Enabled {
			continue
		}
		raw := map[string]string{"every": s.Every}
		if s.At != "" {
			raw["at"] = s.At
		}
		set, err := triggers.Check(triggers.Schedule, raw)
		if err != nil {
			continue
		}
		def := config.Trigger{Miner: name, Type: triggers.Schedule, Enabled: true, Settings: map[string]any{}}
		for k, v := range raw {
			def.Settings[k] = v
		}
		desired[MinerSchedulePrefix+name] = want{def, set}
	}
	t.mu.Lock()
	for name := range t.waiting {
		if d, ok := defined[name]; !ok || !d.Enabled || d.Type != triggers.Watch {
			delete(t.waiting, name)
		}
	}
	for name := range waiting {
		t.waiting[name] = true
	}
	for name, r := range t.running {
		if w, ok := desired[name]; !ok || !reflect.DeepEqual(w.def, r.def) {
			r.cancel()
			c.Stop(r.pid)
			delete(t.running, name)
		}
	}
	for name, w := range desired {
		if _, ok := t.running[name]; ok {
			continue
		}
		rctx, cancel := context.WithCancel(context.Background())
		// A watch rescans whenever it starts, not only after waiting for
		// its directory: at the daemon's start (files changed while it was
		// down or just before a crash fire nothing) and when it is
		// enabled or changed. An incremental mine of an unchanged tree
		// creates nothing and costs a directory walk.
		r := &triggerRun{def: w.def, set: w.set, ctx: rctx, cancel: cancel, rescan: t.waiting[name] || w.def.Type == triggers.Watch}
		delete(t.waiting, name)
		t.running[name] = r
		n := name
		r.pid = c.Spawn(actor.PropsFromProducer(func() actor.Actor { return &triggerActor{t: t, name: n, run: r} }))
	}
	webhooks := 0
	for _, r := range t.running {
		if r.set.Type == triggers.Webhook {
			webhooks++
		}
	}
	running := map[string]bool{}
	for name := range t.running {
		running[name] = true
	}
	t.mu.Unlock()
	t.listen(webhooks > 0)
	// What the palace remembers: a trigger not running keeps no slot (so
	// that enabling it again never fires at once); a removed trigger is
	// forgotten, its deliveries with it.
	// On a shared store another daemon, with a configuration file of its
	// own, may run a trigger this one does not (or does not know): only
	// the triggers whose definition changed here are cleared or forgotten.
	// Read first: most syncs change nothing and write nothing.
	shared := t.DB.Shared()
	mine := map[string]bool{}
	for _, name := range changed {
		mine[name] = true
	}
	stale := func(r store.Reader) (clear, forget []string, err error) {
		err = r.TriggerStates(func(st *store.TriggerState) bool {
			name := st.Name
			_, isTrigger := defined[name]
			_, isMiner := miners[strings.TrimPrefix(name, MinerSchedulePrefix)]
			switch {
			case shared && !mine[name]:
			case !isTrigger && !(strings.HasPrefix(name, MinerSchedulePrefix) && isMiner):
				forget = append(forget, name)
			case st.Due != nil && !running[name]:
				clear = append(clear, name)
			}
			return true
		})
		return clear, forget, err
	}
	var work bool
	_ = t.DB.View(ctx, func(r store.Reader) error {
		clear, forget, err := stale(r)
		work = err != nil || len(clear)+len(forget)+len(changed) > 0
		return nil
	})
	if !work {
		t.afterSync(ctx)
		return
	}
	_, err := t.Sys.Write(ctx, func(tx store.Tx) (any, error) {
		clear, forget, err := stale(tx)
		if err != nil {
			return nil, err
		}
		for _, name := range forget {
			if err := tx.DeleteTriggerState(name); err != nil {
				return nil, err
			}
		}
		for _, name := range clear {
			st, err := tx.TriggerState(name)
			if err != nil || st == nil {
				return nil, err
			}
			st.Due = nil
			if err := tx.PutTriggerState(st); err != nil {
				return nil, err
			}
		}
		sort.Strings(changed)
		for _, name := range changed {
			if _, ok := defined[name]; !ok {
				if err := tx.DeleteTriggerState(name); err != nil {
					return nil, err
				}
			}
			if err := tx.Log(ChangeTrigger, TriggerChanged, name); err != nil {
				return nil, err
			}
		}
		return nil, nil
	})
	if err != nil {
		t.Log.Error("saving the triggers' state failed", "err", err)
	}
	t.afterSync(ctx)
}

// afterSync runs the second delivery recovery once the grace has passed,
// and prunes old delivery ids hourly.
func (t *Triggers) afterSync(ctx context.Context) {
	now := time.Now()
	if !t.regraced && now.Sub(t.started) >= t.Grace {
		t.regraced = true
		go t.recover(ctx, now.Add(-t.Grace), true)
	}
	if now.Sub(t.pruned) > time.Hour {
		t.pruned = now
		t.prune(ctx, now.Add(-DeliveryMemory))
	}
}

// listen opens the webhook listener while a webhook trigger runs and
// closes it when none does.
func (t *Triggers) listen(on bool) {
	if t.Listener == nil {
		return
	}
	switch {
	case on && t.Listener.Addr() == "":
		err := t.Listener.Start()
		t.mu.Lock()
		t.listenErr = ""
		if err != nil {
			t.listenErr = "the webhook listener cannot listen: " + err.Error()
		}
		t.mu.Unlock()
		if err != nil {
			t.Log.Error("the webhook listener cannot listen", "err", err)
		} else {
			t.Log.Info("webhook listener open", "addr", t.Listener.Addr())
		}
	case !on && t.Listener.Addr() != "":
		t.Listener.Stop()
		t.Log.Info("webhook listener closed")
	}
}

// setupOf is what the trigger of that name needs before it can run: a
// name that can be one (a table written by hand may hold another), and
// its setup.
func (t *Triggers) setupOf(name string, def config.Trigger) []string {
	if p := triggers.Name(name); p != "" {
		return append([]string{"the trigger name " + p + ": rename its table [triggers.<name>] (lowercase letters, digits, - and _)"}, t.setup(def)...)
	}
	return t.setup(def)
}

// setup is what a trigger needs before it can run: a definition that can
// be one (a miner name, a credential naming one place), its miner defined,
// enabled and able to run; a source declaring the type (watch, webhook);
// the watched directory; the webhook listener, its bind rule and the
// shared secret.
func (t *Triggers) setup(def config.Trigger) []string {
	var need []string
	if c := def.Credential; c != nil && (c.Kind() != "env" && c.Kind() != "file" || c.Env != "" && c.File != "") {
		need = append(need, "credential: give exactly one of env or file (the webhook's shared secret)")
	}
	mi, err := t.Miners.Get(def.Miner)
	switch {
	case config.MinerName(def.Miner) != "":
		need = append(need, "miner: the miner name "+config.MinerName(def.Miner))
	case err != nil:
		need = append(need, fmt.Sprintf("miner %q: define it ([miners.%s] in the configuration file)", def.Miner, def.Miner))
	case mi.State == MinerDisabled:
		need = append(need, fmt.Sprintf("miner %q is disabled: enable it", def.Miner))
	case mi.State == MinerUnavailable:
		need = append(need, fmt.Sprintf("miner %q cannot run: %s", def.Miner, mi.Reason))
	}
	if k := secretSetting(def.SettingStrings()); k != "" {
		need = append(need, "settings."+k+" reads like a secret: move it to the credential")
	}
	set, err := triggers.Check(def.Type, def.SettingStrings())
	if err != nil {
		return append(need, fault.As(err).Msg)
	}
	if (def.Type == triggers.Watch || def.Type == triggers.Webhook) && mi.Source != "" {
		if a, err := t.Miners.Sources.Adapter(mi.Source); err == nil && !slices.Contains(a.Info().Capabilities.Triggers, def.Type) {
			need = append(need, fmt.Sprintf("source %q does not declare %s triggers", mi.Source, def.Type))
		}
	}
	switch def.Type {
	case triggers.Watch:
		if st, err := os.Stat(set.Path); err != nil || !st.IsDir() {
			need = append(need, fmt.Sprintf("settings.path: %s is not a directory that exists", set.Path))
		}
	case triggers.Webhook:
		switch {
		case t.Listener == nil || !t.Webhook.Enable:
			need = append(need, "the webhook listener: set webhook.enable = true in the configuration file and restart")
		case !loopback(t.Webhook.Bind) && !(t.Webhook.AllowRemote && t.AuthEnabled):
			need = append(need, fmt.Sprintf("webhook.bind %s is beyond loopback: it needs webhook.allow_remote and auth.enabled", t.Webhook.Bind))
		}
		switch {
		case def.Credential == nil:
			need = append(need, "a credential holding the shared secret (credential = { env = \"NAME\" } or { file = \"/path\" })")
		case len(t.secret(def.Credential)) == 0:
			need = append(need, "the credential cannot be read: set the "+def.Credential.Kind()+" it names")
		}
	}
	return need
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// secret reads a webhook's shared secret now ("" when it cannot), as
// every credential is read (config.CredentialRef.Read).
func (t *Triggers) secret(c *config.CredentialRef) []byte {
	b, err := c.Read(t.Env)
	if err != nil {
		return nil
	}
	return b
}

// Snapshot is the triggers as defined now, the configuration file and why
// the last reading of it failed ("" when it did not).
func (t *Triggers) Snapshot() (map[string]config.Trigger, string, string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.defined, t.file, t.lastErr
}

// List is every trigger, by name.
func (t *Triggers) List(ctx context.Context) []TriggerInfo {
	defined, _, _ := t.Snapshot()
	names := make([]string, 0, len(defined))
	for n := range defined {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]TriggerInfo, len(names))
	for i, n := range names {
		out[i] = t.info(ctx, n, defined[n])
	}
	return out
}

// Get is one trigger, or loci::trigger::not_found.
func (t *Triggers) Get(ctx context.Context, name string) (TriggerInfo, error) {
	defined, _, _ := t.Snapshot()
	def, ok := defined[name]
	if !ok {
		return TriggerInfo{}, fault.Newf(fault.TriggerNotFound, "list the triggers (GET /api/triggers, loci trigger list); triggers are defined in the configuration file",
			"no trigger is named %q", name)
	}
	return t.info(ctx, name, def), nil
}

func (t *Triggers) info(ctx context.Context, name string, def config.Trigger) TriggerInfo {
	in := TriggerInfo{Name: name, Trigger: def, Settings: def.SettingStrings(), Setup: t.setupOf(name, def)}
	if def.Credential != nil {
		in.CredentialKind, in.CredentialAvailable = def.Credential.Kind(), len(t.secret(def.Credential)) > 0
	}
	var st *store.TriggerState
	_ = t.DB.View(ctx, func(r store.Reader) error {
		var err error
		st, err = r.TriggerState(name)
		return err
	})
	if st != nil {
		in.Fired, in.Coalesced, in.Failed, in.Deliveries = st.Fired, st.Coalesced, st.Failed, st.Deliveries
		in.LastError, in.LastJob = st.LastError, st.LastJob
	}
	t.mu.Lock()
	r := t.running[name]
	setupErr, listenErr := "", t.listenErr
	if r != nil {
		in.Running, in.NextDue, setupErr = true, r.nextDue, r.setupErr
	}
	t.mu.Unlock()
	if r != nil && def.Type == triggers.Webhook && t.Listener != nil {
		if addr := t.Listener.Addr(); addr != "" {
			in.Endpoint = "http://" + addr + "/hooks/" + name
		}
	}
	switch {
	case !def.Enabled:
		in.Status = TriggerDisabled
	case len(in.Setup) > 0:
		in.Status, in.Reason = TriggerUnavailable, in.Setup[0]
	case r == nil:
		in.Status, in.Reason = TriggerUnavailable, "not started yet: the supervisor starts it within seconds"
	case setupErr != "":
		in.Status, in.Reason, in.LastError = TriggerFailing, setupErr, setupErr
	case def.Type == triggers.Webhook && listenErr != "":
		in.Status, in.Reason = TriggerFailing, listenErr
	case st != nil && st.Failures > 0:
		in.Status, in.Reason = TriggerFailing, st.LastError
	default:
		in.Status = TriggerActive
	}
	return in
}

// Fire asks for a run of an enabled trigger's miner now: queued or
// coalesced, with the job. A disabled trigger is loci::trigger::disabled.
func (t *Triggers) Fire(ctx context.Context, name, by string) (string, *store.Job, error) {
	in, err := t.Get(ctx, name)
	if err != nil {
		return "", nil, err
	}
	if in.Status == TriggerDisabled {
		return "", nil, fault.Newf(fault.TriggerDisabled, "enable it first (POST /api/triggers/"+name+"/enable, loci trigger enable "+name+")",
			"trigger %q is disabled", name)
	}
	t.mu.Lock()
	r := t.running[name]
	t.mu.Unlock()
	if r == nil {
		// Enabled but not running (a prerequisite missing, or not started
		// yet): asked the same way, so the answer says why it cannot run.
		r = &triggerRun{def: in.Trigger}
	}
	outcome, job, err := t.ask(ctx, name, r, by)
	if err != nil {
		return "", nil, err
	}
	return outcome, job, nil
}

// Deliver takes a webhook delivery for trigger name: header reads the
// request's headers, body is the raw body (verified, then dropped). ok is
// false for anything wrong with it (unknown, disabled or not running
// trigger, no secret, bad or absent signature): the listener answers the
// same empty 401. A repeated delivery id is a duplicate and not run; a
// delivery that could not be queued is forgotten (err). It is Verify then
// Accept.
func (t *Triggers) Deliver(ctx context.Context, name string, header func(string) string, body []byte) (outcome string, job *store.Job, ok bool, err error) {
	d, ok := t.Verify(name, header, body)
	if !ok {
		return "", nil, false, nil
	}
	outcome, job, err = t.Accept(ctx, d)
	return outcome, job, true, err
}

// VerifiedDelivery is a webhook delivery whose signature checked out, ready
// for Accept.
type VerifiedDelivery struct {
	name, id string
	r        *triggerRun
}

// Verify checks a webhook delivery for trigger name (see Deliver): ok is
// false for anything wrong with it. It reads the trigger's secret and
// writes nothing, so a listener can check a delivery before giving it any
// of the slots it keeps for verified work.
func (t *Triggers) Verify(name string, header func(string) string, body []byte) (VerifiedDelivery, bool) {
	t.mu.Lock()
	r := t.running[name]
	t.mu.Unlock()
	if r == nil || r.set.Type != triggers.Webhook {
		return VerifiedDelivery{}, false
	}
	if !r.set.Verify(t.secret(r.def.Credential), body, header(r.set.Header)) {
		return VerifiedDelivery{}, false
	}
	id := ""
	if r.set.DeliveryHeader != "" {
		id = header(r.set.DeliveryHeader)
	}
	if id == "" {
		id = "generated-" + uuid.NewString()
	}
	return VerifiedDelivery{name: name, id: id, r: r}, true
}

// Accept records a verified delivery and asks for its run: a repeated
// delivery id is a duplicate and not run; a delivery that could not be
// queued is forgotten (err).
func (t *Triggers) Accept(ctx context.Context, d VerifiedDelivery) (outcome string, job *store.Job, err error) {
	if d.r == nil {
		return "", nil, fault.New(fault.ServerFailed, "a webhook delivery was accepted without being verified", "report it")
	}
	name, id, r := d.name, d.id, d.r
	v, err := t.Sys.Write(ctx, func(tx store.Tx) (any, error) {
		if d, err := tx.Delivery(name, id); err != nil || d != nil {
			return d, err
		}
		st, err := tx.TriggerState(name)
		if err != nil {
			return nil, err
		}
		if st == nil {
			st = &store.TriggerState{Name: name}
		}
		st.Deliveries++
		if err := tx.PutTriggerState(st); err != nil {
			return nil, err
		}
		return nil, tx.PutDelivery(&store.Delivery{Trigger: name, ID: id, AcceptedAt: tx.Now()})
	})
	if err != nil {
		return "", nil, err
	}
	if d, _ := v.(*store.Delivery); d != nil {
		if d.Job != "" {
			job, _ = t.Miners.Jobs.Get(ctx, d.Job)
		}
		return OutcomeDuplicate, job, nil
	}
	if t.DeliveryDelay > 0 {
		time.Sleep(t.DeliveryDelay)
	}
	outcome, job, _, err = t.queueDelivery(ctx, name, id, r)
	return outcome, job, err
}

// queueDelivery asks for an accepted delivery's run and remembers its job;
// a delivery that could not be queued is forgotten.
func (t *Triggers) queueDelivery(ctx context.Context, name, id string, r *triggerRun) (string, *store.Job, bool, error) {
	outcome, job, err := t.ask(ctx, name, r, store.ByHTTP)
	_, werr := t.Sys.Write(context.WithoutCancel(ctx), func(tx store.Tx) (any, error) {
		if err != nil {
			return nil, tx.DeleteDelivery(name, id)
		}
		return nil, tx.PutDelivery(&store.Delivery{Trigger: name, ID: id, AcceptedAt: tx.Now(), Job: job.ID})
	})
	if err == nil {
		err = werr
	}
	return outcome, job, true, err
}

// recover asks for the runs of deliveries accepted before `before` and
// never queued (the daemon stopped between the two): at start, then once
// more after the grace period, when a trigger not running yet at start
// may be, and a delivery this process accepted and never queued is no
// longer in flight. A delivery whose trigger does not run is forgotten
// only then (final).
func (t *Triggers) recover(ctx context.Context, before time.Time, final bool) {
	var pending []store.Delivery
	_ = t.DB.View(ctx, func(rd store.Reader) error {
		return rd.Deliveries(func(d *store.Delivery) bool {
			if d.Job == "" && d.AcceptedAt.Before(before) {
				pending = append(pending, *d)
			}
			return true
		})
	})
	for _, d := range pending {
		t.mu.Lock()
		r := t.running[d.Trigger]
		t.mu.Unlock()
		if r == nil || r.set.Type != triggers.Webhook {
			if final {
				_, _ = t.Sys.Write(ctx, func(tx store.Tx) (any, error) { return nil, tx.DeleteDelivery(d.Trigger, d.ID) })
			}
			continue
		}
		if !t.claimDelivery(ctx, d, before) {
			continue // another daemon recovers or queued it
		}
		outcome, job, _, err := t.queueDelivery(ctx, d.Trigger, d.ID, r)
		if err != nil {
			t.Log.Warn("an accepted delivery could not be queued; forgotten", "trigger", d.Trigger, "err", err)
			continue
		}
		t.Log.Info("an accepted delivery was recovered", "trigger", d.Trigger, "outcome", outcome, "job", job.ID)
	}
}

// claimDelivery takes an accepted, unqueued delivery for this daemon's
// recovery: in one write, still unqueued and accepted before `before`, it
// is accepted again now, so that no other daemon's recovery takes it
// meanwhile (several daemons recover on a shared store).
func (t *Triggers) claimDelivery(ctx context.Context, d store.Delivery, before time.Time) bool {
	v, err := t.Sys.Write(ctx, func(tx store.Tx) (any, error) {
		cur, err := tx.Delivery(d.Trigger, d.ID)
		if err != nil || cur == nil || cur.Job != "" || !cur.AcceptedAt.Before(before) {
			return false, err
		}
		cur.AcceptedAt = tx.Now().UTC()
		return true, tx.PutDelivery(cur)
	})
	return err == nil && v.(bool)
}

// prune forgets delivery ids older than DeliveryMemory.
func (t *Triggers) prune(ctx context.Context, before time.Time) {
	var old []store.Delivery
	_ = t.DB.View(ctx, func(rd store.Reader) error {
		return rd.Deliveries(func(d *store.Delivery) bool {
			if d.Job != "" && d.AcceptedAt.Before(before) {
				old = append(old, *d)
			}
			return true
		})
	})
	for len(old) > 0 {
		n := min(len(old), 500)
		part := old[:n]
		old = old[n:]
		_, _ = t.Sys.Write(ctx, func(tx store.Tx) (any, error) {
			for _, d := range part {
				if err := tx.DeleteDelivery(d.Trigger, d.ID); err != nil {
					return nil, err
				}
			}
			return nil, nil
		})
	}
}
