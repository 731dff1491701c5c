package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/google/uuid"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
)

// JobConfig bounds the job runtime (the jobs.* settings).
type JobConfig struct {
	MaxConcurrency        int
	BackgroundConcurrency int
	LeaseTTL              time.Duration
	DrainTimeout          time.Duration
}

// Handler runs one job. It returns the job's result, ErrStopped when it
// stopped at a unit boundary because r.Stopping() asked it to (its
// checkpoint saved), or another error to fail the job.
type Handler func(ctx context.Context, r *Run) (result any, err error)

// ErrStopped is returned by a handler that stopped on request.
var ErrStopped = errors.New("job stopped on request")

// Stop reasons, in increasing strength: cancel beats drain beats pause.
const (
	stopNone int32 = iota
	stopPause
	stopDrain
	stopCancel
)

// Jobs is the job runtime: submission and control for every interface, and
// the dispatcher actor that claims queued jobs and runs each one as a
// supervised child actor.
type Jobs struct {
	DB     store.DB
	Sys    *System
	Log    *slog.Logger
	Config JobConfig
	Owner  string // lease owner: this daemon
	// Host and Folder name this daemon for jobs that read more than the
	// store (Plan.Local): its machine and its palace folder. Set before
	// Start; Host defaults to the machine's name.
	Host, Folder string
	kinds        map[string]Kind
	order        []string // kind names in registration order

	disp *actor.PID
	// claimMu is held by the dispatcher while it claims and starts a job;
	// Stop takes it once after setting draining.
	claimMu sync.Mutex
	mu      sync.Mutex
	runs    map[string]*Run // local workers by job id
	byPID   map[string]*Run
	// draining: no more claims.
	draining atomic.Bool
	started  atomic.Bool
	// claimed is signalled after each claim (tests and benchmarks).
	claimed chan string
	// reaper recovers expired leases on a shared store (reaper.go).
	reaper *reaper
	// ticking counts the dispatcher's running ticker goroutines; Stop
	// waits for them. tickers is the same count as a number, read by
	// tests (a WaitGroup cannot be read).
	ticking sync.WaitGroup
	tickers atomic.Int32
}

// Run is one running job as its handler sees it.
type Run struct {
	Job  store.Job // as claimed
	jobs *Jobs
	ctx  context.Context
	// abort cancels ctx: force-cancel.
	abort context.CancelFunc
	stop  atomic.Int32
	// stops closes at the first stop request (stopOnce).
	stops    chan struct{}
	stopOnce sync.Once
	pid      *actor.PID
	done     chan struct{}
	// lost is set once the job's lease is found taken (or not renewed
	// before it expired): the worker is aborted and writes nothing more.
	lost atomic.Bool
	// until is the lease's expiry as last written by this daemon (Unix
	// nanoseconds): a worker whose heartbeats fail past it stops.
	until atomic.Int64
	// ending is set when the worker starts recording its end.
	ending atomic.Bool
}

// NewJobs builds the runtime; Register its kinds, then Start recovers and
// starts dispatching.
func NewJobs(db store.DB, sys *System, log *slog.Logger, cfg JobConfig) *Jobs {
	host, _ := os.Hostname()
	j := &Jobs{DB: db, Sys: sys, Log: log.With("component", "jobs"), Config: cfg,
		Owner: fmt.Sprintf("%s/%d/%s", host, os.Getpid(), uuid.NewString()[:8]), Host: host,
		kinds: map[string]Kind{}, runs: map[string]*Run{}, byPID: map[string]*Run{}}
	return j
}

// Start recovers the jobs a previous run left running (embedded store:
// all of them; shared store: those whose lease expired, reaper.go), then
// starts the dispatcher.
func (j *Jobs) Start(ctx context.Context) error {
	n, err := j.recoverAtStart(ctx)
	if err != nil {
		return err
	}
	if n > 0 {
		j.Log.Info("recovered jobs left running", "jobs", n)
	}
	props := actor.PropsFromProducer(func() actor.Actor { return &dispatcher{jobs: j} },
		actor.WithMailbox(actor.UnboundedPriority()),
		actor.WithSupervisor(&workerSupervisor{jobs: j}))
	j.disp = j.Sys.Spawn(props)
	j.started.Store(true)
	j.startReaper()
	j.kick()
	return nil
}

// recover applies the crash-recovery event to running jobs that match at
// the write transaction's time (read and changed in that one transaction:
// on a shared store the writer lock makes it atomic across daemons).
func (j *Jobs) recover(ctx context.Context, match func(job *store.Job, now time.Time) bool) (int, error) {
	v, err := j.Sys.Write(Bookkeeping(ctx), func(tx store.Tx) (any, error) {
		var running []*store.Job
		if err := tx.ActiveJobs(func(job *store.Job) bool {
			if job.Status == store.JobRunning && match(job, tx.Now()) {
				running = append(running, job)
			}
			return true
		}); err != nil {
			return 0, err
		}
		for _, job := range running {
			next, err := store.Apply(*job, store.JobEvent{Kind: store.EvRecover, At: tx.Now()})
			if err != nil {
				return 0, err
			}
			if err := tx.PutJob(&next, job); err != nil {
				return 0, err
			}
			if err := tx.Log(store.ChangeJob, next.Status, next.ID); err != nil {
				return 0, err
			}
		}
		return len(running), nil
	})
	if err != nil {
		return 0, err
	}
	return v.(int), nil
}

// Stop drains: no more claims, running handlers are asked to stop at their
// next unit boundary and go back to queued (a paused request stays
// paused); it waits up to the drain timeout. Jobs still running then stay
// running and are recovered at the next start. Before it returns, every
// goroutine the runtime started has ended: the reaper, the dispatcher's
// ticker and the dispatcher with its workers (protoactor stops a parent
// after its children), unless ctx ends first. Stopping again does
// nothing.
func (j *Jobs) Stop(ctx context.Context) {
	if !j.started.Load() || j.draining.Swap(true) {
		return // not started, or stopped already
	}
	j.stopReaper()
	// A claim in flight when draining was set starts its worker after the
	// runs below would be read: wait for it first (bounded: a claim's
	// write may wait on a store that is away).
	claimed := make(chan struct{})
	go func() { j.claimMu.Lock(); j.claimMu.Unlock(); close(claimed) }()
	select {
	case <-claimed:
	case <-time.After(j.Config.DrainTimeout):
	case <-ctx.Done():
	}
	// The dispatcher (and its ticker) ends once the workers have been
	// waited for, however that wait ends.
	defer func() {
		if err := j.Sys.Poison(j.disp); err != nil {
			j.Log.Warn("stopping the dispatcher", "err", err)
		}
		ended := make(chan struct{})
		go func() { j.ticking.Wait(); close(ended) }()
		select {
		case <-ended:
		case <-ctx.Done():
		}
	}()
	j.mu.Lock()
	runs := make([]*Run, 0, len(j.runs))
	for _, r := range j.runs {
		r.request(stopDrain)
		runs = append(runs, r)
	}
	j.mu.Unlock()
	deadline := time.NewTimer(j.Config.DrainTimeout)
	defer deadline.Stop()
	for _, r := range runs {
		select {
		case <-r.done:
		case <-deadline.C:
			j.Log.Warn("jobs still running at the drain timeout; they are recovered at the next start", "job", r.Job.ID)
			return
		case <-ctx.Done():
			return
		}
	}
}

// Draining reports that the runtime is stopping: it claims no more jobs,
// and a follow-up queued now runs at the next start.
func (j *Jobs) Draining() bool { return j.draining.Load() }

// Kick asks the dispatcher to claim what is queued now (a job another
// daemon on a shared store queued); it never blocks.
func (j *Jobs) Kick() { j.kick() }

func (j *Jobs) kick() {
	if j.disp != nil && !j.draining.Load() {
		j.Sys.Send(j.disp, kick{})
	}
}

// request records the strongest stop reason asked for.
func (r *Run) request(reason int32) {
	if reason != stopNone && r.stops != nil {
		r.stopOnce.Do(func() { close(r.stops) })
	}
	for {
		cur := r.stop.Load()
		if cur >= reason || r.stop.CompareAndSwap(cur, reason) {
			return
		}
	}
}

// Stopping reports that the handler should stop at its next unit boundary
// (pause, cancel or shutdown), saving its checkpoint first.
func (r *Run) Stopping() bool { return r.stop.Load() != stopNone || r.ctx.Err() != nil }

// Stops is closed once the job is asked to stop (pause, cancel or
// shutdown): a handler waiting on something long that is safe to abandon
// (a source's discovery, say) selects on it.
func (r *Run) Stops() <-chan struct{} { return r.stops }

// Context is cancelled when the job is force-cancelled.
func (r *Run) Context() context.Context { return r.ctx }

// DB is the store, for handlers that read it.
func (r *Run) DB() store.DB { return r.jobs.DB }

// Save records progress and checkpoint (nil: unchanged) in one write.
func (r *Run) Save(ctx context.Context, checkpoint any, progress store.Progress) error {
	return r.Write(ctx, nil, checkpoint, progress)
}

// Write runs fn and records checkpoint and progress in the same
// transaction, so that records are never ahead of the checkpoint: a
// replay after a crash starts after what was written.
//
// On a full disk (loci::store::disk_full) the job waits: its progress
// says so, and Write tries again once the gate lets writes through, so a
// job pauses instead of failing and nothing is lost or written twice (the
// refused write changed nothing). A stop requested meanwhile (pause,
// cancel, shutdown) ends the wait with ErrStopped: the handler stops at
// its last checkpoint.
func (r *Run) Write(ctx context.Context, fn func(tx store.Tx) error, checkpoint any, progress store.Progress) error {
	waited := false
	for {
		err := r.write(ctx, fn, checkpoint, progress)
		if !fault.Is(err, fault.StoreDiskFull) {
			if waited && err == nil {
				r.jobs.Log.Info("disk space is back; the job goes on", "job", r.Job.ID)
			}
			return err
		}
		if !waited {
			waited = true
			r.jobs.Log.Warn("the disk is full; the job waits for space", "job", r.Job.ID, "err", fault.As(err).Help)
			wait := progress
			wait.Message = "waiting for disk space: " + fault.As(err).Help
			// A small record of the runtime's own, passing the gate.
			if werr := r.write(Bookkeeping(ctx), nil, nil, wait); werr != nil {
				r.jobs.Log.Warn("recording that a job waits for disk space failed", "job", r.Job.ID, "err", werr)
			}
		}
		if !r.awaitSpace(ctx) {
			return ErrStopped
		}
	}
}

// awaitSpace waits at least a tick, then until the write gate lets writes
// through (a commit the store refused for space while the gate passed is
// tried again after the tick): false when the job is asked to stop first.
func (r *Run) awaitSpace(ctx context.Context) bool {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		if r.Stopping() || ctx.Err() != nil {
			return false
		}
		if r.jobs.Sys.Gate() == nil {
			return true
		}
	}
}

func (r *Run) write(ctx context.Context, fn func(tx store.Tx) error, checkpoint any, progress store.Progress) error {
	_, err := r.jobs.Sys.Write(ctx, func(tx store.Tx) (any, error) {
		job, err := tx.Job(r.Job.ID)
		if err != nil || job == nil {
			return nil, jobNotFound(r.Job.ID, err)
		}
		// Checked before fn writes anything, in its transaction: a job no
		// longer held by this run (its lease taken by another daemon, or
		// recovered meanwhile) writes nothing.
		if err := r.held(job); err != nil {
			return nil, err
		}
		// A pause or cancel asked through another daemon is stored only:
		// the run learns of it here (and at each heartbeat).
		r.notice(job)
		if fn != nil {
			if err := fn(tx); err != nil {
				return nil, err
			}
		}
		// fn may have advanced the checkpoint it was given.
		var cp json.RawMessage
		if checkpoint != nil {
			if cp, err = json.Marshal(checkpoint); err != nil {
				return nil, err
			}
		}
		next, err := store.Apply(*job, store.JobEvent{Kind: store.EvSave, At: tx.Now(), Owner: r.jobs.Owner, Checkpoint: cp, Progress: &progress})
		if err != nil {
			return nil, err
		}
		if err := tx.PutJob(&next, job); err != nil {
			return nil, err
		}
		// Progress is announced (events), never its message.
		return nil, tx.Log(store.ChangeJob, "progress", next.ID)
	})
	if fault.Is(err, fault.JobsLeaseLost) {
		r.loseLease()
	}
	return err
}

// held reports loci::jobs::lease_lost when the stored job is no longer
// this run's: not running, leased by another owner, or claimed again
// since (its attempt moved on: a lease taken and given back to this
// daemon is a new run, not this one). Inside a transaction it only says
// so; the caller marks the run lost once the transaction ended.
func (r *Run) held(job *store.Job) error {
	if job.Status == store.JobRunning && job.LeaseOwner == r.jobs.Owner && job.Attempt == r.Job.Attempt {
		return nil
	}
	by := "recovered: its lease expired"
	if job.Status == store.JobRunning && job.LeaseOwner != "" {
		by = "taken by " + job.LeaseOwner + " after its lease expired"
	}
	return fault.Newf(fault.JobsLeaseLost, "the job goes on where its lease holder takes it; nothing more is written by this run",
		"job %s is no longer this daemon's to run (%s)", r.Job.ID, by)
}

// loseLease marks the run lost and aborts its handler (once).
func (r *Run) loseLease() {
	if r.lost.Swap(true) {
		return
	}
	r.jobs.Log.Warn("lease lost; stopping the local worker", "job", r.Job.ID, "code", string(fault.JobsLeaseLost))
	r.abort()
}

// notice passes a stored pause or cancel request to the run.
func (r *Run) notice(job *store.Job) {
	switch {
	case job.CancelRequested:
		r.request(stopCancel)
	case job.PauseRequested:
		r.request(stopPause)
	}
}

// Lost reports that the job's lease was lost: the run writes nothing more.
func (r *Run) Lost() bool { return r.lost.Load() }

func jobNotFound(id string, err error) error {
	if err != nil {
		return err
	}
	return fault.Newf(fault.JobsNotFound, "list the jobs to see their ids", "no job %s", id)
}

// Messages of the dispatcher. Priorities (0..7, higher first): a finished
// worker frees its slot before new claims are tried.
type kick struct{}
type tick struct{}
type runDone struct{ id string }
type workerFailed struct {
	pid    *actor.PID
	reason any
}

func (runDone) GetPriority() int8      { return 7 }
func (workerFailed) GetPriority() int8 { return 7 }
func (tick) GetPriority() int8         { return 6 }
func (kick) GetPriority() int8         { return 4 }

// dispatcher claims queued jobs in order (highest priority, then oldest)
// within the concurrency limits, heartbeats its leases and reaps expired
// ones.
type dispatcher struct {
	jobs   *Jobs
	ticker *time.Ticker
	quit   chan struct{}
}

func (d *dispatcher) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		every := max(d.jobs.Config.LeaseTTL/3, 10*time.Millisecond)
		d.ticker, d.quit = time.NewTicker(every), make(chan struct{})
		self, root, quit := c.Self(), c.ActorSystem().Root, d.quit
		ticker := d.ticker
		d.jobs.tickerStarted()
		go func() {
			defer d.jobs.tickerEnded()
			for {
				select {
				case <-ticker.C:
					root.Send(self, tick{})
				case <-quit:
					return
				}
			}
		}()
	case *actor.Stopping, *actor.Restarting:
		// A restarted dispatcher is a new value whose Started starts its
		// own ticker: this one ends either way.
		d.ticker.Stop()
		close(d.quit)
	case kick:
		d.claim(c)
	case runDone:
		d.jobs.forget(m.id)
		d.claim(c)
	case workerFailed:
		d.failed(c, m)
		d.claim(c)
	case tick:
		if d.jobs.Draining() {
			return // shutting down: the writer refuses writes
		}
		d.heartbeat()
		d.reap()
		d.claim(c)
	}
}

// limits: background kinds take at most jobs.background_concurrency slots,
// and when there is more than one slot, one stays free for other kinds.
func (d *dispatcher) limits() (total, background int) {
	total = max(d.jobs.Config.MaxConcurrency, 1)
	background = max(d.jobs.Config.BackgroundConcurrency, 1)
	if total > 1 {
		background = min(background, total-1)
	}
	return total, min(background, total)
}

func (d *dispatcher) claim(c actor.Context) {
	j := d.jobs
	// Stop waits for a claim in flight, so that the worker it starts is
	// one Stop asks to drain and waits for (claimMu).
	j.claimMu.Lock()
	defer j.claimMu.Unlock()
	total, bgMax := d.limits()
	for !j.draining.Load() {
		j.mu.Lock()
		n, bg := len(j.runs), 0
		local := map[string]bool{}
		busy := map[string]bool{}
		for id, r := range j.runs {
			local[id] = true
			if j.background(r.Job.Kind) {
				bg++
			}
			if r.Job.Lane != "" {
				busy[r.Job.Lane] = true
			}
		}
		j.mu.Unlock()
		if n >= total {
			return
		}
		v, err := j.Sys.Write(Bookkeeping(context.Background()), func(tx store.Tx) (any, error) {
			// A lane is busy while any daemon runs a job of it: read in the
			// claim's own transaction (writes of all daemons are serial), so
			// two daemons never run one lane at once.
			lanes := maps.Clone(busy)
			if err := tx.ActiveJobs(func(job *store.Job) bool {
				if job.Status == store.JobRunning && job.Lane != "" {
					lanes[job.Lane] = true
				}
				return true
			}); err != nil {
				return nil, err
			}
			var pick *store.Job
			err := tx.QueuedJobs(func(job *store.Job) bool {
				// A job whose earlier run still winds down here (its lease
				// lost) waits for it.
				if j.background(job.Kind) && bg >= bgMax || lanes[job.Lane] || local[job.ID] || !j.mayRun(job) {
					return true
				}
				pick = job
				return false
			})
			if err != nil || pick == nil {
				return nil, err
			}
			next, err := store.Apply(*pick, store.JobEvent{Kind: store.EvClaim, At: tx.Now(), Owner: j.Owner, TTL: j.Config.LeaseTTL})
			if err != nil {
				return nil, err
			}
			if err := tx.PutJob(&next, pick); err != nil {
				return nil, err
			}
			return &next, tx.Log(store.ChangeJob, "claimed", next.ID)
		})
		if err != nil {
			j.Log.Error("claiming a job failed", "err", err)
			return
		}
		job, _ := v.(*store.Job)
		if job == nil {
			return
		}
		d.start(c, job)
	}
}

// background reports a kind bounded by jobs.background_concurrency.
func (j *Jobs) background(kind string) bool { return j.kinds[kind].Background }

func (d *dispatcher) start(c actor.Context, job *store.Job) {
	j := d.jobs
	if err := j.DB.View(context.Background(), func(rd store.Reader) error {
		var err error
		job.Input, err = rd.JobInput(job.ID)
		return err
	}); err != nil {
		j.Log.Error("reading a job's input failed", "job", job.ID, "err", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Run{Job: *job, jobs: j, ctx: ctx, abort: cancel, stops: make(chan struct{}), done: make(chan struct{})}
	if job.LeaseExpiresAt != nil {
		r.until.Store(job.LeaseExpiresAt.UnixNano())
	}
	j.mu.Lock()
	j.runs[job.ID] = r
	j.mu.Unlock()
	// A pause or cancel written between the claim and the line above found
	// no run to signal: take it from the store now.
	_ = j.DB.View(context.Background(), func(rd store.Reader) error {
		if cur, err := rd.Job(job.ID); err == nil && cur != nil {
			r.notice(cur)
		}
		return nil
	})
	pid := c.Spawn(actor.PropsFromProducer(func() actor.Actor { return &worker{run: r} }))
	j.mu.Lock()
	r.pid = pid
	j.byPID[pid.String()] = r
	j.mu.Unlock()
	if j.claimed != nil {
		select {
		case j.claimed <- job.ID:
		default:
		}
	}
}

func (j *Jobs) forget(id string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if r := j.runs[id]; r != nil {
		delete(j.runs, id)
		if r.pid != nil {
			delete(j.byPID, r.pid.String())
		}
	}
}

// failed handles a worker whose handler panicked: the job fails, the
// daemon goes on.
func (d *dispatcher) failed(c actor.Context, m workerFailed) {
	j := d.jobs
	j.mu.Lock()
	r := j.byPID[m.pid.String()]
	j.mu.Unlock()
	c.Stop(m.pid)
	if r == nil {
		return
	}
	msg := fmt.Sprintf("the job's handler failed: %v", m.reason)
	j.Log.Error("job handler panicked", "job", r.Job.ID, "kind", r.Job.Kind, "reason", fmt.Sprint(m.reason))
	r.finish(store.JobEvent{Kind: store.EvFail, Error: msg})
	j.forget(r.Job.ID)
}

// heartbeat extends the leases of the jobs this daemon runs.
func (d *dispatcher) heartbeat() {
	j := d.jobs
	j.mu.Lock()
	runs := make([]*Run, 0, len(j.runs))
	for _, r := range j.runs {
		if !r.lost.Load() {
			runs = append(runs, r)
		}
	}
	j.mu.Unlock()
	if len(runs) == 0 {
		return
	}
	type renewal struct {
		run   *Run
		until time.Time
		job   store.Job
	}
	v, err := j.Sys.Write(Bookkeeping(context.Background()), func(tx store.Tx) (any, error) {
		var out []renewal
		for _, r := range runs {
			job, err := tx.Job(r.Job.ID)
			if err != nil {
				return nil, err
			}
			if job == nil || r.ending.Load() {
				continue // the worker records its end: nothing to renew
			}
			if job.Status != store.JobRunning || job.LeaseOwner != j.Owner || job.Attempt != r.Job.Attempt {
				out = append(out, renewal{run: r, job: *job}) // lost
				continue
			}
			next, err := store.Apply(*job, store.JobEvent{Kind: store.EvHeartbeat, At: tx.Now(), Owner: j.Owner, TTL: j.Config.LeaseTTL})
			if err != nil {
				return nil, err
			}
			if err := tx.PutJob(&next, job); err != nil {
				return nil, err
			}
			out = append(out, renewal{run: r, until: *next.LeaseExpiresAt, job: next})
		}
		return out, nil
	})
	if err != nil {
		j.Log.Warn("heartbeat failed", "err", err)
		// A worker whose lease expired without being renewed may have
		// lost it to another daemon's reaper: it stops, writing nothing
		// more; whoever holds the job next resumes it from its checkpoint.
		now := time.Now()
		for _, r := range runs {
			if until := r.until.Load(); until != 0 && now.UnixNano() > until {
				r.loseLease()
			}
		}
		return
	}
	renewed, _ := v.([]renewal)
	for _, w := range renewed {
		if w.until.IsZero() {
			w.run.loseLease()
			continue
		}
		w.run.until.Store(w.until.UnixNano())
		w.run.notice(&w.job)
	}
}

// tickerStarted and tickerEnded count the dispatcher's ticker goroutines,
// which Stop waits for.
func (j *Jobs) tickerStarted() { j.tickers.Add(1); j.ticking.Add(1) }

func (j *Jobs) tickerEnded() { j.tickers.Add(-1); j.ticking.Done() }

// workerFailure tells the dispatcher that a worker panicked.
func (j *Jobs) workerFailure(pid *actor.PID, reason any) {
	j.Sys.Send(j.disp, workerFailed{pid: pid, reason: reason})
}

// registered is the kind registered under name (the zero Kind: none).
func (j *Jobs) registered(name string) Kind { return j.kinds[name] }

// workerSupervisor is the dispatcher's supervision strategy: a worker that
// panics is stopped and its job failed, never restarted.
type workerSupervisor struct{ jobs *Jobs }

func (s *workerSupervisor) HandleFailure(_ *actor.ActorSystem, supervisor actor.Supervisor, child *actor.PID, _ *actor.RestartStatistics, reason interface{}, _ interface{}) {
	s.jobs.workerFailure(child, reason)
}

// worker runs one job's handler in its own actor.
type worker struct{ run *Run }

func (w *worker) Receive(c actor.Context) {
	if _, ok := c.Message().(*actor.Started); !ok {
		return
	}
	r := w.run
	h := r.jobs.registered(r.Job.Kind).Run
	var result any
	var err error = fault.Newf(fault.InputInvalid, "this kind of job arrives with a later version", "no handler for %s jobs", r.Job.Kind)
	if h != nil {
		result, err = h(r.ctx, r)
	}
	r.conclude(result, err)
	c.Send(c.Parent(), runDone{id: r.Job.ID})
	c.Stop(c.Self())
}

// conclude records how the handler ended.
func (r *Run) conclude(result any, err error) {
	switch {
	case r.lost.Load():
		// Another daemon holds the job (or will, after recovery): this
		// run's end is no end of the job, nothing follows it.
		r.finish(store.JobEvent{Kind: store.EvFail})
	case err == nil:
		b, merr := json.Marshal(result)
		if merr != nil || result == nil {
			b = nil
		}
		// What follows a completed job follows only a completion recorded:
		// a run whose lease was lost meanwhile (or whose end could not be
		// written) is run again, and its follow-ups come after that run.
		if !r.finish(store.JobEvent{Kind: store.EvComplete, Result: b}) {
			return
		}
		job := r.Job
		job.Status = store.JobCompleted
		r.jobs.completed(Completed{Job: job, Kind: r.jobs.registered(r.Job.Kind), Result: result})
	case errors.Is(err, ErrStopped) || r.ctx.Err() != nil:
		ev := store.EvPause
		switch r.stop.Load() {
		case stopCancel:
			ev = store.EvCancel
		case stopDrain:
			ev = store.EvDrain
		}
		if r.ctx.Err() != nil {
			ev = store.EvCancel
		}
		r.finish(store.JobEvent{Kind: ev})
	default:
		// A failure is said in the log too (the job's error is what its
		// answer shows: a source's failure names the source).
		fe := fault.As(err)
		r.jobs.Log.Warn("job failed", "job", r.Job.ID, "kind", r.Job.Kind, "code", string(fe.Code), "err", fe.Msg)
		r.finish(store.JobEvent{Kind: store.EvFail, Error: fe.Msg})
	}
}

// finish applies the worker's last event; a cancel request recorded on the
// job wins over pause and drain.
//
// A run whose lease was lost records nothing: the job is its new
// holder's (or the reaper's, which counts the recovery). It reports
// whether the end was recorded.
func (r *Run) finish(ev store.JobEvent) bool {
	defer close(r.done)
	r.ending.Store(true)
	if r.lost.Load() {
		r.jobs.Log.Warn("the job's lease was lost; its end here is not recorded", "job", r.Job.ID, "code", string(fault.JobsLeaseLost))
		return false
	}
	ev.Owner = r.jobs.Owner
	_, err := r.jobs.Sys.Write(Bookkeeping(context.Background()), func(tx store.Tx) (any, error) {
		job, err := tx.Job(r.Job.ID)
		if err != nil || job == nil {
			return nil, jobNotFound(r.Job.ID, err)
		}
		if err := r.held(job); err != nil {
			return nil, err
		}
		e := ev
		e.At = tx.Now()
		if job.CancelRequested && (e.Kind == store.EvPause || e.Kind == store.EvDrain) {
			e.Kind = store.EvCancel
		}
		next, err := store.Apply(*job, e)
		if err != nil {
			return nil, err
		}
		if err := tx.PutJob(&next, job); err != nil {
			return nil, err
		}
		return nil, tx.Log(store.ChangeJob, next.Status, next.ID)
	})
	switch {
	case fault.Is(err, fault.JobsLeaseLost):
		r.jobs.Log.Warn("the job's lease was lost; its end here is not recorded", "job", r.Job.ID, "code", string(fault.JobsLeaseLost))
	case err != nil:
		r.jobs.Log.Error("recording the end of a job failed", "job", r.Job.ID, "err", err)
	}
	return err == nil
}

// node is the store.Job.Node of a job of locality l submitted here: ""
// on the embedded store (one daemon holds it) and for jobs any daemon can
// run.
func (j *Jobs) node(l Locality) string {
	if !j.DB.Shared() {
		return ""
	}
	switch l {
	case ThisHost:
		return j.Host
	case ThisDaemon:
		return j.Host + ":" + j.Folder
	}
	return ""
}

// mayRun reports whether this daemon may claim a job: one pinned to a node
// (it reads that machine's or daemon's files) waits for it.
func (j *Jobs) mayRun(job *store.Job) bool {
	return job.Node == "" || job.Node == j.Host || job.Node == j.Host+":"+j.Folder
}
