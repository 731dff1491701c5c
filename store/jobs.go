package store

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/loci-dev/loci/fault"
)

// Job statuses.
const (
	JobQueued    = "queued"
	JobRunning   = "running"
	JobPaused    = "paused"
	JobCompleted = "completed"
	JobFailed    = "failed"
	JobCancelled = "cancelled"
)

// JobStatuses lists every job status.
var JobStatuses = []string{JobQueued, JobRunning, JobPaused, JobCompleted, JobFailed, JobCancelled}

// MaxRecoveryAttempts is the crash budget of a job (spec max_attempts).
const MaxRecoveryAttempts = 3

// Priority orders the job queue: higher first. It is stored as its number
// and shown by name.
type Priority int

// Priorities.
const (
	PriorityBackground Priority = 0
	PriorityLow        Priority = 25
	PriorityNormal     Priority = 50
	PriorityHigh       Priority = 75
	PriorityCritical   Priority = 100
)

var priorityNames = map[Priority]string{PriorityBackground: "background", PriorityLow: "low",
	PriorityNormal: "normal", PriorityHigh: "high", PriorityCritical: "critical"}

// String is the priority's name.
func (p Priority) String() string {
	if n, ok := priorityNames[p]; ok {
		return n
	}
	return fmt.Sprint(int(p))
}

// MarshalJSON shows the priority by name.
func (p Priority) MarshalJSON() ([]byte, error) { return json.Marshal(p.String()) }

// UnmarshalJSON reads a name or a number.
func (p *Priority) UnmarshalJSON(b []byte) error {
	var n int
	if err := json.Unmarshal(b, &n); err == nil {
		*p = Priority(n)
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	for v, name := range priorityNames {
		if name == s {
			*p = v
			return nil
		}
	}
	return fmt.Errorf("unknown priority %q", s)
}

// Progress is how far a job is.
type Progress struct {
	Current int64
	Total   *int64
	Message string
}

// Job is a durable unit of background work.
type Job struct {
	ID               string
	Kind             string
	Status           string
	Priority         Priority
	RequestedBy      string
	CreatedAt        time.Time
	UpdatedAt        time.Time
	StartedAt        *time.Time
	FinishedAt       *time.Time
	Progress         Progress
	Attempt          int
	RecoveryAttempts int
	Checkpoint       json.RawMessage
	Result           json.RawMessage
	Error            string
	LeaseOwner       string
	LeaseExpiresAt   *time.Time
	PauseRequested   bool
	CancelRequested  bool
	// Lane, when set, is a resource the job uses alone: no two jobs of one
	// lane run at once (two mine jobs of one source would race for its
	// cursor). A queued job waits while its lane is busy.
	Lane string
	// Node, when set, is the daemon that must run the job on a shared
	// store: a host name (the job reads that machine's files: a mine) or
	// host:palace (it reads that daemon's own folder: an import's spooled
	// file). Other daemons leave it queued; "" lets any daemon claim it.
	Node string
	// Input is what the job was submitted with (a checkpoint payload, an
	// audit's wing, ...). It is stored apart (Reader.JobInput), never
	// shown in events or job answers.
	Input json.RawMessage
}

// Terminal reports a job that will not run again (failed may be retried).
func (j *Job) Terminal() bool { return j.Status == JobCompleted || j.Status == JobCancelled }

// Finished reports a job that is not queued, running or paused.
func (j *Job) Finished() bool { return j.Terminal() || j.Status == JobFailed }

// JobEventKind names an event of Job.Apply.
type JobEventKind string

// Job events.
const (
	EvSubmit        JobEventKind = "submit"
	EvClaim         JobEventKind = "claim"
	EvHeartbeat     JobEventKind = "heartbeat"
	EvRequestPause  JobEventKind = "request_pause"
	EvRequestCancel JobEventKind = "request_cancel"
	EvSave          JobEventKind = "save" // progress and checkpoint while running
	EvPause         JobEventKind = "pause"
	EvResume        JobEventKind = "resume"
	EvComplete      JobEventKind = "complete"
	EvFail          JobEventKind = "fail"
	EvRecover       JobEventKind = "recover"
	EvDrain         JobEventKind = "drain"
	EvRetry         JobEventKind = "retry"
	EvCancel        JobEventKind = "cancel"
)

// JobEvent moves a job through Apply.
type JobEvent struct {
	Kind JobEventKind
	At   time.Time
	// Owner and TTL set the lease (claim, heartbeat); Owner guards the
	// events a worker sends.
	Owner string
	TTL   time.Duration
	// Checkpoint and Progress are saved by save, pause and drain when set.
	Checkpoint json.RawMessage
	Progress   *Progress
	Result     json.RawMessage
	Error      string
}

// Apply is the job state machine of the spec ("States and transitions:
// Job"), a pure function: it returns the job after ev, or
// loci::jobs::transition_invalid for a pair the table does not list.
func Apply(j Job, ev JobEvent) (Job, error) {
	bad := func(what string) (Job, error) {
		return j, fault.Newf(fault.JobsTransitionInvalid, actionHelp(j.Status),
			"cannot %s a %s job", what, j.Status)
	}
	guard := func() error {
		if ev.Owner != "" && j.LeaseOwner != "" && ev.Owner != j.LeaseOwner {
			return fault.Newf(fault.JobsLeaseLost, "the job is now run by "+j.LeaseOwner,
				"job %s is leased by another daemon", j.ID)
		}
		return nil
	}
	j.UpdatedAt = ev.At
	save := func() {
		if ev.Checkpoint != nil {
			j.Checkpoint = ev.Checkpoint
		}
		if ev.Progress != nil {
			j.Progress = *ev.Progress
		}
	}
	leave := func(status string) {
		j.Status = status
		j.LeaseOwner, j.LeaseExpiresAt = "", nil
		j.PauseRequested, j.CancelRequested = false, false
		if status == JobCompleted || status == JobFailed || status == JobCancelled {
			at := ev.At
			j.FinishedAt = &at
		}
	}
	switch ev.Kind {
	case EvSubmit:
		if j.Status != "" {
			return bad("submit")
		}
		j.Status, j.CreatedAt = JobQueued, ev.At
		if len(j.Checkpoint) == 0 {
			j.Checkpoint = json.RawMessage("{}")
		}
	case EvClaim:
		if j.Status != JobQueued {
			return bad("claim")
		}
		exp := ev.At.Add(ev.TTL)
		j.Status, j.LeaseOwner, j.LeaseExpiresAt = JobRunning, ev.Owner, &exp
		j.Attempt++
		at := ev.At
		j.StartedAt = &at
	case EvHeartbeat, EvSave:
		if j.Status != JobRunning {
			return bad(string(ev.Kind))
		}
		if err := guard(); err != nil {
			return j, err
		}
		if ev.Kind == EvHeartbeat {
			exp := ev.At.Add(ev.TTL)
			j.LeaseExpiresAt = &exp
		}
		save()
	case EvRequestPause:
		if j.Status != JobRunning {
			return bad("pause")
		}
		j.PauseRequested = true
	case EvRequestCancel:
		if j.Status != JobRunning {
			return bad("cancel")
		}
		j.CancelRequested = true
	case EvPause:
		if j.Status != JobRunning {
			return bad("pause")
		}
		if err := guard(); err != nil {
			return j, err
		}
		save()
		leave(JobPaused)
	case EvResume:
		if j.Status != JobPaused {
			return bad("resume")
		}
		j.Status = JobQueued
	case EvComplete:
		if j.Status != JobRunning {
			return bad("complete")
		}
		if err := guard(); err != nil {
			return j, err
		}
		save()
		j.Result = ev.Result
		leave(JobCompleted)
	case EvFail:
		if j.Status != JobRunning {
			return bad("fail")
		}
		if err := guard(); err != nil {
			return j, err
		}
		save()
		j.Error = ev.Error
		leave(JobFailed)
	case EvRecover:
		if j.Status != JobRunning {
			return bad("recover")
		}
		switch {
		case j.CancelRequested:
			leave(JobCancelled)
		case j.PauseRequested:
			leave(JobPaused)
		case j.RecoveryAttempts < MaxRecoveryAttempts:
			j.RecoveryAttempts++
			leave(JobQueued)
		default:
			j.Error = fmt.Sprintf("the daemon stopped while running this job %d times (recovery budget %d exhausted)",
				j.RecoveryAttempts+1, MaxRecoveryAttempts)
			leave(JobFailed)
		}
	case EvDrain:
		if j.Status != JobRunning {
			return bad("drain")
		}
		if err := guard(); err != nil {
			return j, err
		}
		save()
		switch {
		case j.CancelRequested:
			leave(JobCancelled)
		case j.PauseRequested:
			leave(JobPaused)
		default:
			leave(JobQueued)
		}
	case EvRetry:
		if j.Status != JobFailed {
			return bad("retry")
		}
		j.Status, j.Error, j.FinishedAt = JobQueued, "", nil
		j.RecoveryAttempts = 0
	case EvCancel:
		switch j.Status {
		case JobQueued, JobPaused:
		case JobRunning:
			if err := guard(); err != nil {
				return j, err
			}
			save()
		default:
			return bad("cancel")
		}
		leave(JobCancelled)
	default:
		return bad(string(ev.Kind))
	}
	return j, nil
}

func actionHelp(status string) string {
	switch status {
	case JobQueued:
		return "a queued job can be cancelled"
	case JobRunning:
		return "a running job can be paused or cancelled"
	case JobPaused:
		return "a paused job can be resumed or cancelled"
	case JobFailed:
		return "a failed job can be retried"
	default:
		return "a " + status + " job is finished; submit a new one"
	}
}

// CheckJobID checks a job id: a UUID, canonical form returned.
func CheckJobID(id string) (string, error) {
	if c, ok := CanonicalUUID(id); ok {
		return c, nil
	}
	return "", fault.Newf(fault.JobsIDInvalid, "job ids are UUIDs, as the job list shows them",
		"job id %q is not a UUID", id)
}

// CheckJobStatus checks a status filter.
func CheckJobStatus(s string) error {
	for _, v := range JobStatuses {
		if v == s {
			return nil
		}
	}
	return fault.Newf(fault.InputInvalid, "status is one of "+strings.Join(JobStatuses, ", "), "unknown job status %q", s)
}
