package postgres

import (
	"encoding/json"
	"time"

	"github.com/loci-dev/loci/store"
)

// Jobs: the jobs table (schema/30_jobs.sql) keeps the columns the queue,
// the active list and the listing order by; rec is the job without its
// input, which job_inputs keeps, written once.

// jobRow is a job as stored in rec: without its input, its raw JSON
// fields omitted when empty (so that an absent result reads back absent),
// as the embedded store keeps it. It is not badgerdb's jobRecord on
// purpose: each backend owns its record format (Badger's writes an empty
// checkpoint as null, this one omits it), so either can change without
// migrating the other's stores; store/copy.go moves jobs between them
// through store.Job.
type jobRow struct {
	ID          string     `json:"id"`
	Kind        string     `json:"kind"`
	Status      string     `json:"status"`
	RequestedBy string     `json:"requested_by"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
	StartedAt   *time.Time `json:"started_at,omitempty"`
	FinishedAt  *time.Time `json:"finished_at,omitempty"`
	Progress    struct {
		Current int64  `json:"current"`
		Total   *int64 `json:"total,omitempty"`
		Message string `json:"message,omitempty"`
	} `json:"progress"`
	Attempt          int             `json:"attempt"`
	RecoveryAttempts int             `json:"recovery_attempts"`
	Checkpoint       json.RawMessage `json:"checkpoint,omitempty"`
	Result           json.RawMessage `json:"result,omitempty"`
	Error            string          `json:"error,omitempty"`
	LeaseOwner       string          `json:"lease_owner,omitempty"`
	LeaseExpiresAt   *time.Time      `json:"lease_expires_at,omitempty"`
	PauseRequested   bool            `json:"pause_requested"`
	CancelRequested  bool            `json:"cancel_requested"`
	Priority         int             `json:"priority"`
	Lane             string          `json:"lane,omitempty"`
	Node             string          `json:"node,omitempty"`
}

func jobRowOf(j *store.Job) *jobRow {
	r := &jobRow{ID: j.ID, Kind: j.Kind, Status: j.Status, RequestedBy: j.RequestedBy, CreatedAt: j.CreatedAt,
		UpdatedAt: j.UpdatedAt, StartedAt: j.StartedAt, FinishedAt: j.FinishedAt, Attempt: j.Attempt,
		RecoveryAttempts: j.RecoveryAttempts, Checkpoint: j.Checkpoint, Result: j.Result, Error: j.Error,
		LeaseOwner: j.LeaseOwner, LeaseExpiresAt: j.LeaseExpiresAt, PauseRequested: j.PauseRequested,
		CancelRequested: j.CancelRequested, Priority: int(j.Priority), Lane: j.Lane, Node: j.Node}
	r.Progress.Current, r.Progress.Total, r.Progress.Message = j.Progress.Current, j.Progress.Total, j.Progress.Message
	return r
}

func (r *jobRow) job() *store.Job {
	return &store.Job{ID: r.ID, Kind: r.Kind, Status: r.Status, Priority: store.Priority(r.Priority),
		RequestedBy: r.RequestedBy, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, StartedAt: r.StartedAt,
		FinishedAt: r.FinishedAt, Progress: store.Progress{Current: r.Progress.Current, Total: r.Progress.Total, Message: r.Progress.Message},
		Attempt: r.Attempt, RecoveryAttempts: r.RecoveryAttempts, Checkpoint: r.Checkpoint, Result: r.Result,
		Error: r.Error, LeaseOwner: r.LeaseOwner, LeaseExpiresAt: r.LeaseExpiresAt,
		PauseRequested: r.PauseRequested, CancelRequested: r.CancelRequested, Lane: r.Lane, Node: r.Node}
}

// lockQueue is whether QueuedJobs locks the rows it reads in a write
// transaction (the benchmark compares both).
var lockQueue = true

// queueRank is a job's priority as the queue orders it (0 to 255, as the
// embedded store's queue key clamps it).
func queueRank(p store.Priority) int { return min(max(int(p), 0), 255) }

// Job reads a job; nil when unknown.
func (t *tx) Job(id string) (*store.Job, error) {
	r, err := get[jobRow](t, "SELECT rec FROM jobs WHERE id = $1", id)
	if r == nil || err != nil {
		return nil, err
	}
	return r.job(), nil
}

// JobInput is what the job was submitted with, as given; nil when none.
func (t *tx) JobInput(id string) (json.RawMessage, error) {
	var b []byte
	ok, err := t.row("SELECT input FROM job_inputs WHERE job_id = $1", []any{id}, &b)
	if !ok || err != nil {
		return nil, err
	}
	return b, nil
}

// Jobs visits every job newest first until fn returns false.
func (t *tx) Jobs(fn func(*store.Job) bool) error {
	return t.jobs(func(last []any, limit int) (string, []any) {
		return after("SELECT rec, created_ns, id FROM jobs WHERE true", "(created_ns, id) < ($1, $2)",
			"created_ns DESC, id DESC", nil, last, limit)
	}, 2, fn)
}

// QueuedJobs visits queued jobs in claim order (highest priority, then
// oldest) until fn returns false. In a write transaction it locks the
// rows it reads (FOR UPDATE), skipping rows another transaction holds
// (SKIP LOCKED): a claimer never waits on another's rows. Every Update
// holds the writer lock, so no other writing transaction runs meanwhile
// and nothing is skipped today; the locks keep a claim correct should
// claims ever run outside the writer lock.
func (t *tx) QueuedJobs(fn func(*store.Job) bool) error {
	lock := ""
	if t.write && lockQueue {
		lock = " FOR UPDATE SKIP LOCKED"
	}
	return t.jobs(func(last []any, limit int) (string, []any) {
		sql, args := after("SELECT rec, priority, created_ns, id FROM jobs WHERE status = 'queued'",
			"(priority < $1 OR (priority = $1 AND (created_ns, id) > ($2, $3)))",
			"priority DESC, created_ns, id", nil, last, limit)
		return sql + lock, args
	}, 3, fn)
}

// ActiveJobs visits queued, running and paused jobs, oldest first, until
// fn returns false.
func (t *tx) ActiveJobs(fn func(*store.Job) bool) error {
	return t.jobs(func(last []any, limit int) (string, []any) {
		return after("SELECT rec, created_ns, id FROM jobs WHERE status NOT IN ('completed', 'failed', 'cancelled')",
			"(created_ns, id) > ($1, $2)", "created_ns, id", nil, last, limit)
	}, 2, fn)
}

func (t *tx) jobs(query func(last []any, limit int) (string, []any), nkeys int, fn func(*store.Job) bool) error {
	return pagedRecs(t, nkeys, query, func(r *jobRow) bool { return fn(r.job()) })
}

// upsertJob writes a job's row (its columns and rec), whether it is new or
// not.
const upsertJob = `INSERT INTO jobs (id, kind, status, priority, created_ns, lane, lease_owner, lease_expires_at, rec)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (id) DO UPDATE SET kind = EXCLUDED.kind, status = EXCLUDED.status, priority = EXCLUDED.priority,
created_ns = EXCLUDED.created_ns, lane = EXCLUDED.lane, lease_owner = EXCLUDED.lease_owner,
lease_expires_at = EXCLUDED.lease_expires_at, rec = EXCLUDED.rec`

// PutJob writes a job: one statement. A new job (prev nil) with an input
// writes the input too, in the same statement; a later save writes the
// job's row only (its indexes follow its columns).
func (t *tx) PutJob(j, prev *store.Job) error {
	rec, err := enc(jobRowOf(j))
	if err != nil {
		return err
	}
	args := []any{j.ID, j.Kind, j.Status, queueRank(j.Priority), j.CreatedAt.UnixNano(), j.Lane, j.LeaseOwner, j.LeaseExpiresAt, rec}
	if prev == nil && len(j.Input) > 0 {
		return t.exec(`WITH input AS (INSERT INTO job_inputs (job_id, input) VALUES ($1, $10)
ON CONFLICT (job_id) DO UPDATE SET input = EXCLUDED.input) `+upsertJob, append(args, []byte(j.Input))...)
	}
	return t.exec(upsertJob, args...)
}

// PutJobFact stores a checkpoint item's fact operation as given.
func (t *tx) PutJobFact(jobID string, index int, fact json.RawMessage) error {
	return t.exec(`INSERT INTO job_facts (job_id, idx, fact) VALUES ($1, $2, $3)
ON CONFLICT (job_id, idx) DO UPDATE SET fact = EXCLUDED.fact`, jobID, index, []byte(fact))
}
