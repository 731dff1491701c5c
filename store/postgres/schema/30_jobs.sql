-- Jobs. One row per job: the columns the queue, the active list and the
-- listing order by, plus rec (the job as JSON, without its input). Keys are
-- COLLATE "C" (byte order, as the embedded store orders ids); created_ns is
-- the creation time in nanoseconds since 1970 (timestamptz keeps
-- microseconds: two jobs a microsecond apart would tie). rec is json, not
-- jsonb: a checkpoint or result reads back byte for byte.
-- fillfactor leaves room in each page so that a progress save or a
-- heartbeat (which changes no indexed column) is a HOT update: no index is
-- written. For the same reason lease_expires_at is not indexed.
CREATE TABLE IF NOT EXISTS jobs (
    id               text COLLATE "C" PRIMARY KEY,
    kind             text NOT NULL,
    status           text NOT NULL,
    priority         int NOT NULL,
    created_ns       bigint NOT NULL,
    lane             text NOT NULL DEFAULT '',
    lease_owner      text NOT NULL DEFAULT '',
    lease_expires_at timestamptz,
    rec              json NOT NULL
) WITH (fillfactor = 80);
-- Every job newest first (scanned backwards).
CREATE INDEX IF NOT EXISTS jobs_by_time ON jobs (created_ns, id);
-- The queue in claim order: highest priority, then oldest.
CREATE INDEX IF NOT EXISTS jobs_queue ON jobs (priority DESC, created_ns, id) WHERE status = 'queued';
-- Queued, running and paused jobs, oldest first (the reaper's and the
-- runtime's scans read these, not every job ever run).
CREATE INDEX IF NOT EXISTS jobs_active ON jobs (created_ns, id) WHERE status NOT IN ('completed', 'failed', 'cancelled');
-- A job's input, written once when it is submitted (it may be large; every
-- save of the job rewrites the job's row, never this one). Bytes as given.
CREATE TABLE IF NOT EXISTS job_inputs (
    job_id text COLLATE "C" PRIMARY KEY,
    input  bytea NOT NULL
);
-- A checkpoint item's fact operation, stored as given.
CREATE TABLE IF NOT EXISTS job_facts (
    job_id text COLLATE "C" NOT NULL,
    idx    int NOT NULL,
    fact   bytea NOT NULL,
    PRIMARY KEY (job_id, idx)
);
