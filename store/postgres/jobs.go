package postgres

import (
	"encoding/json"
	"github.com/loci-dev/loci/store"
)

// Job is not written yet.
func (t *tx) Job(id string) (*store.Job, error) {
	return nil, errTODO
}

// JobInput is not written yet.
func (t *tx) JobInput(id string) (json.RawMessage, error) {
	return nil, errTODO
}

// Jobs is not written yet.
func (t *tx) Jobs(fn func(*store.Job) bool) error {
	return errTODO
}

// QueuedJobs is not written yet.
func (t *tx) QueuedJobs(fn func(*store.Job) bool) error {
	return errTODO
}

// ActiveJobs is not written yet.
func (t *tx) ActiveJobs(fn func(*store.Job) bool) error {
	return errTODO
}

// PutJob is not written yet.
func (t *tx) PutJob(j, prev *store.Job) error {
	return errTODO
}

// PutJobFact is not written yet.
func (t *tx) PutJobFact(jobID string, index int, fact json.RawMessage) error {
	return errTODO
}
