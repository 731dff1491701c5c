package badgerdb

import (
	"encoding/binary"
	"encoding/json"
	"time"

	"github.com/loci-dev/loci/store"
)

// Job keys:
//
//	j/<job>                                  the job
//	jt/<created ns BE>/<job>                 every job, by age (listing newest first)
//	jq/<255-priority>/<created ns BE>/<job>  queued jobs in claim order
//	ji/<job>                                 the job's input, written once (it may be large)
//	jf/<job>/<index BE>                      a checkpoint item's fact op, stored as given
const (
	pJobInput = "ji/"
	pJob      = "j/"
	pJobTime  = "jt/"
	pJobQueue = "jq/"
	// pJobActive holds one key per queued, running or paused job, so that
	// the scans for those (the reaper's, in the writer, every heartbeat)
	// do not read every job ever run.
	pJobActive = "ja/"
	pJobFact   = "jf/"
)

func nanos(t time.Time) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(t.UnixNano()))
	return string(b[:])
}

func jobTimeKey(j *store.Job) []byte { return k(pJobTime, nanos(j.CreatedAt), "/", j.ID) }

func jobActiveKey(j *store.Job) []byte { return k(pJobActive, nanos(j.CreatedAt), "/", j.ID) }

func jobQueueKey(j *store.Job) []byte {
	return k(pJobQueue, string([]byte{byte(255 - min(max(int(j.Priority), 0), 255))}), nanos(j.CreatedAt), "/", j.ID)
}

func (t *tx) Job(id string) (*store.Job, error) {
	var r jobRecord
	ok, err := t.get(k(pJob, id), &r)
	if !ok || err != nil {
		return nil, err
	}
	return r.job(), nil
}

func (t *tx) PutJob(j, prev *store.Job) error {
	if err := t.put(k(pJob, j.ID), jobRec(j)); err != nil {
		return err
	}
	if prev == nil {
		if err := t.set(jobTimeKey(j), nil); err != nil {
			return err
		}
		if len(j.Input) > 0 {
			if err := t.set(k(pJobInput, j.ID), j.Input); err != nil {
				return err
			}
		}
	}
	if active := !j.Finished(); prev == nil || active != !prev.Finished() {
		if active {
			if err := t.set(jobActiveKey(j), nil); err != nil {
				return err
			}
		} else if prev != nil {
			if err := t.del(jobActiveKey(prev)); err != nil {
				return err
			}
		}
	}
	if prev != nil && prev.Status == store.JobQueued && (j.Status != store.JobQueued || prev.Priority != j.Priority) {
		if err := t.del(jobQueueKey(prev)); err != nil {
			return err
		}
	}
	if j.Status == store.JobQueued && (prev == nil || prev.Status != store.JobQueued || prev.Priority != j.Priority) {
		return t.set(jobQueueKey(j), nil)
	}
	return nil
}

func (t *tx) JobInput(id string) (json.RawMessage, error) {
	return t.getRaw(k(pJobInput, id))
}

// Jobs visits every job newest first until fn returns false.
func (t *tx) Jobs(fn func(*store.Job) bool) error {
	return t.jobsUnder(k(pJobTime), true, fn)
}

// QueuedJobs visits queued jobs in claim order: highest priority, then
// oldest.
func (t *tx) QueuedJobs(fn func(*store.Job) bool) error {
	return t.jobsUnder(k(pJobQueue), false, fn)
}

// ActiveJobs visits queued, running and paused jobs, oldest first, until
// fn returns false.
func (t *tx) ActiveJobs(fn func(*store.Job) bool) error {
	return t.jobsUnder(k(pJobActive), false, fn)
}

func (t *tx) jobsUnder(prefix []byte, reverse bool, fn func(*store.Job) bool) error {
	var err error
	if cerr := t.keys(prefix, reverse, func(key []byte, _ valueFn) bool {
		id := string(key[len(key)-36:])
		var j *store.Job
		if j, err = t.Job(id); err != nil {
			return false
		}
		if j == nil {
			return true
		}
		return fn(j)
	}); cerr != nil {
		return cerr
	}
	return err
}

func (t *tx) PutJobFact(jobID string, index int, fact json.RawMessage) error {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], uint32(index))
	return t.set(k(pJobFact, jobID, "/", string(b[:])), fact)
}

func (t *tx) EachDrawer(fn func(*store.Drawer) bool) error {
	var err error
	if cerr := t.keys(k(pDrawer), false, func(_ []byte, val valueFn) bool {
		var d drawerRecord
		if err = withVal(val, func(b []byte) error { return decode(b, &d) }); err != nil {
			return false
		}
		return fn(d.drawer())
	}); cerr != nil {
		return cerr
	}
	return err
}
