package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/loci-dev/loci/fault"
)

// Meta keys of the migration runner.
const (
	metaSchemaHash  = "schema_hash"
	metaDataVersion = "data_version"
	metaLock        = "migrate_lock"
)

// DefaultLockTTL is how long a migration lock lives; a lock left by a
// crashed process expires after it.
const DefaultLockTTL = 2 * time.Minute

// Step is one numbered, immutable data migration. Run must be safe to run
// again after a failure part way (the watermark moves only after it
// succeeds).
type Step struct {
	N    int
	Name string
	Run  func(ctx context.Context, db DB) error
}

// MigrationState is what status reports.
type MigrationState struct {
	SchemaHash  string
	SchemaSync  bool
	DataVersion int
	Latest      int
	Pending     int
	LastRun     string
}

// Migrator is a backend's migration runner, what the daemon, `loci
// migrate` and doctor call (DB.Migrator): the schema sync and the lock
// are the backend's own; the numbered data steps are store's.
type Migrator interface {
	// State reads the migration state without changing anything.
	State(ctx context.Context) (MigrationState, error)
	// Run syncs the schema, takes the migration lock, runs the pending
	// data steps in order, syncs the schema again if one ran and releases
	// the lock, failing closed: it reports the steps that ran.
	Run(ctx context.Context) (ran []int, err error)
}

// Runner is the migration runner a backend builds its Migrator from: sync
// schema, take the lock, run pending steps, sync schema again if a step
// ran, release the lock.
type Runner struct {
	DB      DB
	Schema  string // the backend's declarative schema
	Steps   []Step
	LockTTL time.Duration
	Now     func() time.Time
	// Sync applies the schema; nil for a backend whose schema is its key
	// layout (Badger), where recording the hash is the whole sync.
	Sync func(ctx context.Context) error
	// Lock takes the migration lock and returns its release; nil takes a
	// lease in the operational records (Meta), which a crashed process
	// leaves to expire after LockTTL. A backend with a lock that its
	// holder's crash releases (a database's session lock) sets it; held
	// elsewhere, it answers loci::migrate::locked.
	Lock func(ctx context.Context) (unlock func(context.Context) error, err error)
}

var _ Migrator = (*Runner)(nil)

func (m *Runner) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

// SchemaHash is the content hash of the schema.
func (m *Runner) SchemaHash() string {
	h := sha256.Sum256([]byte(m.Schema))
	return hex.EncodeToString(h[:8])
}

// State reads the migration state without changing anything.
func (m *Runner) State(ctx context.Context) (MigrationState, error) {
	st := MigrationState{SchemaHash: m.SchemaHash(), Latest: m.latest()}
	h, _, err := m.DB.GetMeta(ctx, metaSchemaHash)
	if err != nil {
		return st, err
	}
	st.SchemaSync = h == st.SchemaHash
	if st.DataVersion, err = m.version(ctx); err != nil {
		return st, err
	}
	st.Pending = st.Latest - st.DataVersion
	if st.Pending < 0 {
		st.Pending = 0
	}
	st.LastRun, _, _ = m.DB.GetMeta(ctx, "migrated_at")
	return st, nil
}

func (m *Runner) latest() int {
	n := 0
	for _, s := range m.Steps {
		n = max(n, s.N)
	}
	return n
}

func (m *Runner) version(ctx context.Context) (int, error) {
	v, ok, err := m.DB.GetMeta(ctx, metaDataVersion)
	if err != nil || !ok {
		return 0, err
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fault.Newf(fault.StoreMalformed, "restore a backup", "stored data version %q is not a number", v)
	}
	return n, nil
}

// Run performs the whole sequence and fails closed.
func (m *Runner) Run(ctx context.Context) (ran []int, err error) {
	if err := m.syncSchema(ctx); err != nil {
		return nil, err
	}
	lock := m.Lock
	if lock == nil {
		lock = m.metaLock
	}
	unlock, err := lock(ctx)
	if err != nil {
		return nil, err
	}
	defer func() {
		if uerr := unlock(context.WithoutCancel(ctx)); uerr != nil && err == nil {
			err = uerr
		}
	}()
	v, err := m.version(ctx)
	if err != nil {
		return nil, err
	}
	for _, s := range m.Steps {
		if s.N <= v {
			continue
		}
		if err := s.Run(ctx, m.DB); err != nil {
			return ran, fault.Wrap(fault.MigrateFailed, err,
				fmt.Sprintf("data step %d (%s) failed: %v", s.N, s.Name, err),
				"the daemon refuses to serve until it succeeds; fix the cause and run `loci migrate` or start again (it resumes from this step)")
		}
		if err := m.DB.PutMeta(ctx, metaDataVersion, strconv.Itoa(s.N)); err != nil {
			return ran, fault.Wrap(fault.MigrateFailed, err, "cannot record the data version", "check the store")
		}
		ran = append(ran, s.N)
	}
	if len(ran) > 0 {
		if err := m.syncSchema(ctx); err != nil {
			return ran, err
		}
	}
	_ = m.DB.PutMeta(ctx, "migrated_at", m.now().UTC().Format(time.RFC3339))
	return ran, nil
}

func (m *Runner) syncSchema(ctx context.Context) error {
	h := m.SchemaHash()
	cur, _, err := m.DB.GetMeta(ctx, metaSchemaHash)
	if err != nil {
		return fault.Wrap(fault.StoreSchemaSync, err, "cannot read the schema hash", "check the store")
	}
	if cur == h {
		return nil
	}
	if m.Sync != nil {
		if err := m.Sync(ctx); err != nil {
			return fault.Wrap(fault.StoreSchemaSync, err, "applying the bundled schema failed: "+err.Error(), "check the store and the daemon log")
		}
	}
	if err := m.DB.PutMeta(ctx, metaSchemaHash, h); err != nil {
		return fault.Wrap(fault.StoreSchemaSync, err, "cannot record the schema hash", "check the store")
	}
	return nil
}

type lockRecord struct {
	Owner     string    `json:"owner"`
	PID       int       `json:"pid"`
	ExpiresAt time.Time `json:"expires_at"`
}

// metaLock takes the migration lock as a lease in the operational
// records.
func (m *Runner) metaLock(ctx context.Context) (func(context.Context) error, error) {
	owner, err := m.lock(ctx)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) error { return m.unlock(ctx, owner) }, nil
}

func (m *Runner) lock(ctx context.Context) (string, error) {
	ttl := m.LockTTL
	if ttl == 0 {
		ttl = DefaultLockTTL
	}
	mine := lockRecord{Owner: NewID(), PID: os.Getpid(), ExpiresAt: m.now().Add(ttl).UTC()}
	b, _ := json.Marshal(mine)
	for range 3 {
		cur, ok, err := m.DB.GetMeta(ctx, metaLock)
		if err != nil {
			return "", fault.Wrap(fault.MigrateFailed, err, "cannot read the migration lock", "check the store")
		}
		if ok {
			var held lockRecord
			if json.Unmarshal([]byte(cur), &held) == nil && m.now().Before(held.ExpiresAt) {
				return "", fault.Newf(fault.MigrateLocked,
					"another process is migrating this store; wait for it, or if it crashed, the lock expires at "+held.ExpiresAt.Format(time.RFC3339),
					"migration lock held by process %d until %s", held.PID, held.ExpiresAt.Format(time.RFC3339))
			}
		}
		if !ok {
			cur = ""
		}
		swapped, err := m.DB.CompareAndSwapMeta(ctx, metaLock, cur, string(b))
		if err != nil {
			return "", fault.Wrap(fault.MigrateFailed, err, "cannot take the migration lock", "check the store")
		}
		if swapped {
			return string(b), nil
		}
	}
	return "", fault.New(fault.MigrateLocked, "the migration lock kept changing hands", "run again in a moment")
}

func (m *Runner) unlock(ctx context.Context, owner string) error {
	_, err := m.DB.CompareAndSwapMeta(ctx, metaLock, owner, "")
	return err
}
