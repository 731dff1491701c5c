package transport

import (
	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/store"
)

// The answers of REST and MCP as package api shapes them, made from the
// services' values in one place. A job's answer has no input: it may hold
// memory content, and is the job's own business.

func apiJob(j *store.Job) *api.Job {
	if j == nil {
		return nil
	}
	return &api.Job{ID: j.ID, Kind: j.Kind, Status: j.Status, Priority: j.Priority.String(), RequestedBy: j.RequestedBy,
		CreatedAt: j.CreatedAt, UpdatedAt: j.UpdatedAt, StartedAt: j.StartedAt, FinishedAt: j.FinishedAt,
		Progress: api.Progress{Current: j.Progress.Current, Total: j.Progress.Total, Message: j.Progress.Message},
		Attempt:  j.Attempt, RecoveryAttempts: j.RecoveryAttempts, Checkpoint: j.Checkpoint, Result: j.Result,
		Error: j.Error, LeaseOwner: j.LeaseOwner, LeaseExpiresAt: j.LeaseExpiresAt,
		PauseRequested: j.PauseRequested, CancelRequested: j.CancelRequested}
}

func apiJobs(jobs []store.Job) api.JobList {
	out := api.JobList{Jobs: make([]api.Job, len(jobs))}
	for i := range jobs {
		out.Jobs[i] = *apiJob(&jobs[i])
	}
	return out
}
