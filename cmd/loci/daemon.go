package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	_ "net/http/pprof" // served only when LOCI_PPROF is set
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/loci-dev/loci/actors"
	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/assets"
	"github.com/loci-dev/loci/backup"
	"github.com/loci-dev/loci/cli"
	"github.com/loci-dev/loci/config"
	"github.com/loci-dev/loci/dbadmin"
	"github.com/loci-dev/loci/dbadmin/sqlview"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/index/embed"
	"github.com/loci-dev/loci/index/lexical"
	"github.com/loci-dev/loci/search"
	"github.com/loci-dev/loci/services"
	"github.com/loci-dev/loci/services/kinds"
	"github.com/loci-dev/loci/sources"
	"github.com/loci-dev/loci/sources/registry"
	"github.com/loci-dev/loci/sources/sandbox"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/badgerdb"
	"github.com/loci-dev/loci/store/disk"
	_ "github.com/loci-dev/loci/store/postgres" // the shared store: datastore.url postgres://...
	"github.com/loci-dev/loci/transport"
)

// followerWait bounds the wait for the index followers' batch in progress
// at a stop.
const followerWait = 10 * time.Second

// Shutdown budgets: open HTTP requests get httpDrain to finish before
// their connections are closed; running jobs get jobs.drain_timeout_secs
// to checkpoint; the store gets storeWait to commit and close.
const (
	httpDrain = 3 * time.Second
	storeWait = 10 * time.Second
)

// storeDir is where the Badger files live inside the palace.
func storeDir(cfg config.Config) string { return filepath.Join(cfg.Palace.Path, "store") }

// storeLocation is where the palace's store lives, as the backend
// registry reads it (store.Open): the shared store's URL (datastore.url),
// else the embedded store's directory.
func storeLocation(cfg config.Config) string {
	if cfg.Datastore.Shared() {
		return cfg.Datastore.URL
	}
	return storeDir(cfg)
}

// openStore opens the palace's store with the backend its location
// names, creating an embedded store's directory.
func openStore(ctx context.Context, cfg config.Config, log *slog.Logger) (store.DB, error) {
	return openWith(ctx, cfg, store.OpenOptions{Log: log})
}

// openServing opens the palace's store for the daemon: an embedded store
// opens read-only on a full disk (badgerdb.OpenServing).
func openServing(ctx context.Context, cfg config.Config, log *slog.Logger) (store.DB, error) {
	return openWith(ctx, cfg, store.OpenOptions{Log: log, Serving: true})
}

// openWith opens the store at storeLocation with the shared store's
// password (LOCI_DATASTORE_PASSWORD, else datastore.password_file).
func openWith(ctx context.Context, cfg config.Config, o store.OpenOptions) (store.DB, error) {
	o.Location = storeLocation(cfg)
	if cfg.Datastore.Shared() {
		pw, _, err := cfg.Datastore.ReadPassword()
		if err != nil {
			return nil, err
		}
		if w := cfg.Datastore.PasswordFileWarning(); w != "" && o.Log != nil {
			o.Log.Warn(w)
		}
		o.Password = pw
	}
	return store.Open(ctx, o)
}

// storeExists reports whether the palace's store may hold data: a shared
// store always may (it is opened to know); an embedded one when its
// directory exists.
func storeExists(cfg config.Config) bool {
	if cfg.Datastore.Shared() {
		return true
	}
	_, err := os.Stat(storeDir(cfg))
	return !errors.Is(err, os.ErrNotExist)
}

// readOnly reports whether db is an embedded store opened read-only (a
// full disk).
func readOnly(db store.DB) bool {
	e, ok := db.(store.Embedded)
	return ok && e.ReadOnly()
}

// reserve is the free space the daemon keeps on the palace's filesystem:
// store.min_free_bytes, raised to what the store needs to start its next
// files (badgerdb.Headroom).
func reserve(cfg config.Config) int64 { return max(cfg.Store.MinFreeBytes, badgerdb.Headroom) }

// diskState reports the palace's disk: free space, reserve, full.
func diskState(path string, g *disk.Guard, db store.DB) api.Disk {
	free, ro := g.Free(), db != nil && readOnly(db)
	return api.Disk{Path: path, FreeBytes: free, MinFreeBytes: g.Reserve(), Full: ro || (free >= 0 && free < g.Reserve()), ReadOnly: ro}
}

// diskCheck is doctor's look at the palace's disk (its nearest existing
// directory when the palace is not created yet).
func diskCheck(cfg config.Config) api.Disk {
	p := cfg.Palace.Path
	for {
		if _, err := os.Stat(p); err == nil || filepath.Dir(p) == p {
			break
		}
		p = filepath.Dir(p)
	}
	d := diskState(p, disk.New(p, reserve(cfg)), nil)
	d.Path = cfg.Palace.Path
	return d
}

// lateStart holds what a start on a full disk leaves for later: the job
// runtime and the triggers start once the store is writable again
// (awaitSpace), unless the daemon is stopping by then.
type lateStart struct {
	mu      sync.Mutex
	stopped bool
}

// stop marks the daemon stopping, after any late start in progress.
func (l *lateStart) stop() {
	l.mu.Lock()
	l.stopped = true
	l.mu.Unlock()
}

// awaitSpace waits, for a store opened read-only on a full disk, until the
// reserve is free, opens the store for writing and runs what the start
// left: migrations (none are pending: checked at the start), the job
// runtime, the triggers, the near-duplicate preload. A store that cannot
// be opened again stops the daemon.
func awaitSpace(ctx context.Context, log *slog.Logger, db store.Embedded, g *disk.Guard, late *lateStart, stop func(), then func() error) {
	for {
		if g.Wait(ctx) != nil {
			return
		}
		late.mu.Lock()
		if late.stopped {
			late.mu.Unlock()
			return
		}
		err := db.Reopen()
		if err != nil && db.ReadOnly() {
			late.mu.Unlock()
			log.Warn("space is back but the store could not be opened for writing yet; trying again", "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			continue
		}
		if err == nil {
			err = then()
		}
		late.mu.Unlock()
		if err != nil {
			log.Error("opening the store for writing once space was back failed; stopping", "err", err)
			stop()
			return
		}
		log.Info("space is back on the palace's disk: the store is open for writing again", "free", disk.Bytes(g.Free()))
		return
	}
}

// mustBeMigrated refuses a read-only start (a full disk) of a palace that
// needs a migration: it writes.
func mustBeMigrated(ctx context.Context, mig store.Migrator, g *disk.Guard) error {
	st, err := mig.State(ctx)
	if err != nil {
		return err
	}
	if st.Pending > 0 || !st.SchemaSync {
		return fault.New(fault.StoreDiskFull, "the palace needs a migration, which cannot run on a full disk",
			fmt.Sprintf("%s free at %s: free at least %s there and start again", disk.Bytes(max(g.Free(), 0)), g.Path(), disk.Bytes(g.Reserve())))
	}
	return nil
}

// migrator is the store's migration runner over the data steps.
func migrator(db store.DB) store.Migrator { return db.Migrator(store.Steps()) }

// sharedMigrateWait bounds how long a start on a shared store waits for
// another daemon's migration (its schema sync, its data steps).
var sharedMigrateWait = 2 * time.Minute

// migrateAtStart runs the migrations. On a shared store, daemons started
// together (two machines booting) find the migration lock held by the
// first: a start waits for it, up to sharedMigrateWait, and then finds
// nothing pending; the embedded store's lock held means another process
// holds the palace, refused at once as before.
func migrateAtStart(ctx context.Context, db store.DB, mig store.Migrator, log *slog.Logger) ([]int, error) {
	deadline := time.Now().Add(sharedMigrateWait)
	said := false
	for {
		ran, err := mig.Run(ctx)
		if err == nil || !db.Shared() || !fault.Is(err, fault.MigrateLocked) || time.Now().After(deadline) {
			return ran, err
		}
		if !said {
			log.Info("another daemon is migrating the shared store; waiting for it", "store", db.Location())
			said = true
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// serve runs the daemon: bind, open and migrate the store, start the
// actors, serve, write the registry, and stop gracefully. Each part is
// started in order and recorded in a lifecycle, which stops them in
// reverse, each on a budget of its own, when serving ends or a later start
// fails.
func serve(ctx context.Context, cfg config.Config, log *slog.Logger, level slog.Level) (err error) {
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
		holdHeap(ctx, memoryLimit, func() {
			if err := badgerdb.DropMappedPages(); err != nil {
				log.Debug("could not drop the store's mapped pages at rest", "err", err)
			}
		})
	}
	lc := &lifecycle{log: log}
	defer func() {
		lc.stop(context.WithoutCancel(ctx))
		if err == nil {
			log.Info("loci stopped")
		}
	}()

	// 0. An assets.dir override that names no directory refuses the start
	// (loci::assets::not_found): the hooks and integrations read it.
	if _, err := assets.Open(cfg.Assets.Dir); err != nil {
		return err
	}

	// 1. Bind first: a taken address fails before anything is created.
	ln, err := net.Listen("tcp", cfg.Addr())
	if err != nil {
		return fault.Wrap(fault.ServerBindFailed, err, fmt.Sprintf("cannot listen on %s: %v", cfg.Addr(), err),
			"stop whatever holds the port (is loci already running? `loci status`), or set server.port / LOCI_PORT / --port")
	}
	lc.startedPlain("the listener", time.Second, func() error { _ = ln.Close(); return nil })
	addr := ln.Addr().String()
	caps := connCaps(cfg, log)
	if ip := net.ParseIP(cfg.Server.Bind); ip != nil && !ip.IsLoopback() && !cfg.Auth.Enabled {
		log.Warn("listening beyond loopback with authentication disabled; anyone who can reach this address can read and write memory",
			"address", addr)
	}

	// 2. Store, schema sync and data steps, failing closed. On a full
	// disk the store opens read-only: reads are served, writes refused
	// with loci::store::disk_full, and what writes at a start waits for
	// space (awaitSpace).
	db, err := openServing(ctx, cfg, log)
	if err != nil {
		return err
	}
	lc.startedPlain("the store", storeWait, db.Close)
	// The store holds the password; nothing else may, and the programs the
	// daemon runs (command providers) do not inherit it.
	cfg.Datastore.Forget()
	_ = os.Unsetenv(config.DatastorePasswordEnv)
	if cfg.Store.MinFreeBytes < badgerdb.Headroom {
		log.Warn("store.min_free_bytes is below what the store needs to start its next files; that is kept free instead",
			"min_free_bytes", cfg.Store.MinFreeBytes, "kept", reserve(cfg))
	}
	guard := disk.New(cfg.Palace.Path, reserve(cfg))
	if guard.Full() {
		log.Warn("the palace's disk is full: writes are refused until space is freed; reads and search go on",
			"path", cfg.Palace.Path, "free", disk.Bytes(guard.Free()), "reserve", disk.Bytes(guard.Reserve()))
	}
	pending := &lateStart{}
	stopReq := make(chan struct{}, 1)
	requestStop := func() {
		select {
		case stopReq <- struct{}{}:
		default:
		}
	}
	mig := migrator(db)
	if readOnly(db) {
		if err := mustBeMigrated(ctx, mig, guard); err != nil {
			return err
		}
	} else {
		ran, err := migrateAtStart(ctx, db, mig, log)
		if err != nil {
			return err
		}
		if len(ran) > 0 {
			log.Info("data steps ran", "steps", ran)
		}
		// The palace's identity is given at the first start, so a first
		// backup or export on a full disk needs no write.
		if _, err := store.PalaceID(ctx, db); err != nil {
			return fault.Wrap(fault.StoreBackendFailed, err, "cannot record the palace's identity: "+err.Error(), "see the log; run loci doctor")
		}
	}

	if a, ok := os.LookupEnv("LOCI_PPROF"); ok && a != "" {
		pln, err := pprofListener(a)
		if err != nil {
			return err
		}
		lc.startedPlain("the profiler", time.Second, func() error { _ = pln.Close(); return nil })
		// Profiling for performance work, on a loopback address of its own.
		go func() {
			ps := &http.Server{Handler: transport.LoopbackOnly(http.DefaultServeMux), ReadHeaderTimeout: transport.HeaderTimeout}
			log.Info("pprof listener stopped", "err", ps.Serve(pln))
		}()
		// The block and mutex profiles record nothing unless sampled; they
		// are sampled only while profiling is asked for.
		runtime.SetBlockProfileRate(int(100 * time.Microsecond))
		runtime.SetMutexProfileFraction(10)
		log.Info("pprof enabled", "address", pln.Addr().String())
	}

	// 3. Indexes (derived: rebuilt when missing), the writer, the followers;
	// jobs left running are recovered before dispatching starts.
	lex, err := lexical.Open(filepath.Join(cfg.Palace.Path, "index", "lexical"))
	if err != nil {
		return fault.Wrap(fault.StoreBackendFailed, err, "cannot open the lexical index: "+err.Error(),
			"remove "+filepath.Join(cfg.Palace.Path, "index")+" to rebuild it from the store")
	}
	lc.startedPlain("the lexical index", storeWait, lex.Close)
	// A palace whose searches were served by the built-in profile keeps
	// it while a newly configured default is built (actors.Vectors).
	if prev := actors.PreviousServing(ctx, db); prev == config.StaticProfile && cfg.Embedding.Default != "" {
		if _, ok := cfg.Embedding.Profiles[prev]; !ok {
			if cfg.Embedding.Profiles == nil {
				cfg.Embedding.Profiles = map[string]config.Profile{}
			}
			cfg.Embedding.Profiles[prev] = config.Profile{Provider: config.StaticProvider}
		}
	}
	profiles, err := embed.Open(actors.EmbedSettings(cfg.Embedding))
	if err != nil {
		return err
	}
	sys := actors.Start(db, log, level)
	lc.started("the writer", storeWait, sys.Stop)
	// Every write but the job runtime's own records is refused with
	// loci::store::disk_full while less than the reserve is free, or the
	// store is read-only.
	sys.SetGate(func() error {
		if err := guard.Check(); err != nil {
			return err
		}
		if e, ok := db.(store.Embedded); ok {
			return e.CheckWritable()
		}
		return nil
	})
	// Credentials: the configured secret's hash and the stored digest of a
	// generated token; enabled with neither refuses to serve.
	auth, err := services.NewAuth(ctx, db, sys, cfg.Auth.Token)
	if err != nil {
		return err
	}
	if why := services.SecretWeakness(cfg.Auth.Token); cfg.Auth.Enabled && why != "" {
		log.Warn("the configured secret (LOCI_AUTH_TOKEN or auth.token) is weak: " + why +
			"; refused tokens are throttled per client address, but a short or repetitive secret can still be guessed")
	}
	cfg.Auth.Token = "" // only its hash is kept (in auth)
	if cfg.Auth.Enabled && !auth.Configured() {
		return fault.New(fault.AuthNotConfigured, "authentication is enabled but no credential exists: no configured secret and no generated token",
			"set LOCI_AUTH_TOKEN or auth.token (at least 16 characters); or start with authentication off, run `loci auth generate`, then enable it")
	}

	indexer := actors.NewIndexer(db, lex, log)
	embed.SetDocFreqs(profiles, indexer)
	kicks := []func(){indexer.Kick}
	indexer.Start()
	lc.started("the lexical follower", followerWait, func(ctx context.Context) error { indexer.Stop(ctx); return nil })
	var vectors *actors.Vectors
	if len(profiles) > 0 {
		vectors = actors.NewVectors(db, sys, profiles, cfg.Embedding.Default, log, actors.VectorOptions{
			Dir:       filepath.Join(cfg.Palace.Path, "index", "vectors"),
			SaveEvery: time.Duration(cfg.Embedding.SaveSecs) * time.Second,
		})
		kicks = append(kicks, vectors.Kick)
		if d, ok := os.LookupEnv("LOCI_TEST_EMBED_DELAY"); ok {
			vectors.BatchDelay, _ = time.ParseDuration(d)
		}
	}
	bus := actors.NewBus(db, log)
	bus.Max = caps.subscribers
	if err := bus.Start(ctx); err != nil {
		return fault.Wrap(fault.StoreBackendFailed, err, "cannot read the change log: "+err.Error(), "run loci doctor")
	}
	lc.startedPlain("the event bus", time.Second, func() error { bus.Close(); return nil })
	kicks = append(kicks, bus.Kick)
	sys.OnCommit(func() {
		for _, kick := range kicks {
			kick()
		}
	})
	searcher := &search.Search{DB: db, Indexer: indexer, Vectors: vectors, Log: log, Auto: cfg.Search}
	palace := &services.Palace{DB: db, Sys: sys, Dedup: store.Dedup{Enabled: cfg.Dedup.Enabled, Threshold: cfg.Dedup.NearThreshold,
		EntityFuzzy: cfg.Dedup.EntityFuzzy}}
	// Big rooms' near-duplicate indexes load in the background from now
	// on; writes meanwhile are judged for near copies once loaded.
	// A backend that answers near copies from its own index has no
	// loader.
	preloadNear := func() {}
	if nears, ok := db.(store.NearLoader); ok {
		late := actors.NewLateNear(sys, palace.Dedup, log)
		nears.OnLateNear(late.Add)
		late.Start()
		lc.startedPlain("the late near-duplicate judge", time.Second, func() error { late.Stop(); return nil })
		preloadNear = nears.PreloadNear
	}
	preloadNear()
	drain := time.Duration(cfg.Jobs.DrainTimeoutSecs) * time.Second
	jobs := actors.NewJobs(db, sys, log, actors.JobConfig{
		MaxConcurrency: cfg.Jobs.MaxConcurrency, BackgroundConcurrency: cfg.Jobs.BackgroundConcurrency,
		LeaseTTL: time.Duration(cfg.Jobs.LeaseTTLSecs) * time.Second, DrainTimeout: drain,
	})
	// Jobs that read this daemon's folder (an import's spooled file) are
	// pinned to it on a shared store (Plan.Local).
	jobs.Folder = cfg.Palace.Path
	srcs := sources.NewRegistry(sources.Directory{MaxFileBytes: cfg.Mining.MaxFileBytes},
		sources.ClaudeCode(), sources.Codex(), sources.OpenCode{}, sources.ChatGPTExport(), sources.ClaudeExport())
	// Source packages: the bundled ones recorded, every one loaded into
	// the registry (a module changed on disk is unavailable).
	// Compiled modules are kept under the palace's folder, so a start
	// does not compile the bundled ones again (a second or two each).
	// The database admin listener, made below; while open, its port is
	// the one it opened on (db.port 0, or another asked by POST /api/db).
	var admin atomic.Pointer[dbadmin.Admin]
	// A package granted the network may not call this daemon's own
	// listeners (with authentication off, the API would install packages
	// for it, and the admin listener would read it the palace).
	daemonPorts := func() []int {
		ports := []int{ln.Addr().(*net.TCPAddr).Port}
		for _, p := range []int{cfg.Webhook.Port, cfg.DB.Port, adminPort(admin.Load())} {
			if p > 0 {
				ports = append(ports, p)
			}
		}
		return ports
	}
	wasm, err := sandbox.NewWith(ctx, sandbox.Options{CacheDir: wasmCacheDir(cfg), DaemonPorts: daemonPorts})
	if err != nil {
		log.Warn("the source sandbox's compilation cache is not usable; modules are compiled at each start", "err", err)
		wasm, err = sandbox.NewWith(ctx, sandbox.Options{DaemonPorts: daemonPorts})
	}
	if err != nil {
		return fault.Wrap(fault.ServerFailed, err, "starting the source sandbox failed: "+err.Error(), "see the log")
	}
	lc.started("the source sandbox", time.Second, wasm.Close)
	packages := &services.Packages{DB: db, Registry: srcs, Dir: filepath.Join(cfg.Palace.Path, "sources"), Version: version,
		Timeout: time.Duration(cfg.Mining.SourceTimeoutSecs) * time.Second, Runtime: wasm, Bundled: bundledPackages,
		Log: log.With("component", "source-packages")}
	if err := packages.Start(ctx); err != nil {
		return fault.Wrap(fault.ServerFailed, err, "loading the source packages failed: "+err.Error(), "see the log")
	}
	registries, err := newRegistries(cfg, packages, version, log.With("component", "source-registries"))
	if err != nil {
		return err
	}
	extractor := kinds.Extractor(cfg.Extraction)
	mining := kinds.Mining{Sources: srcs, ChunkChars: cfg.Mining.ChunkChars,
		MaxDocuments: cfg.Mining.MaxDocuments, Secrets: cfg.Mining.Secrets, Log: log}
	// Sign-in (OAuth) of source packages: tokens kept outside the palace
	// (credentials.dir, credentials.backend). A store that cannot be
	// opened leaves sign-in off, said in the log and by its routes; the
	// rest of the daemon serves.
	signIn, err := services.OpenSignIn(cfg.Credentials.Dir, cfg.Credentials.Backend, log.With("component", "sign-in"))
	if err != nil {
		log.Warn("source sign-in is off: its token store cannot be opened", "err", fault.As(err).Msg)
		signIn = nil
	} else {
		signIn.Manifest = packages.Manifest
		packages.SignIns = signIn
		mining.Token = signIn.AccessToken
		lc.startedPlain("source sign-in", time.Second, signIn.Close)
	}
	if d, ok := os.LookupEnv("LOCI_TEST_MINE_DELAY"); ok {
		// Tests that need a mine still running: this long a document.
		mining.DocDelay, _ = time.ParseDuration(d)
	}
	backupKind := kinds.BackupSettings{Dir: cfg.BackupDir(), Keep: cfg.Backup.Keep}
	if d, ok := os.LookupEnv("LOCI_TEST_BACKUP_DELAY"); ok {
		// Tests that kill a backup job mid-body: this long after each
		// frame of the body is written.
		delay, _ := time.ParseDuration(d)
		backupKind.Write = func(ctx context.Context, db store.DB, path string, o backup.Options) (backup.Header, error) {
			progress := o.Progress
			o.Progress = func(bytes, records int64) {
				if progress != nil {
					progress(bytes, records)
				}
				select {
				case <-time.After(delay):
				case <-ctx.Done():
				}
			}
			return backup.WriteFile(ctx, db, path, o)
		}
	}
	importDir := filepath.Join(cfg.Palace.Path, "imports")
	jobs.Register(kinds.All(jobs, kinds.Settings{Dedup: palace.Dedup, Mining: mining, Vectors: vectors, Extractor: extractor,
		Backup: backupKind, Imports: importDir})...)
	palace.Locked = jobs.Busy
	startJobs := func() error {
		if err := jobs.Start(ctx); err != nil {
			return fault.Wrap(fault.StoreBackendFailed, err, "recovering jobs failed: "+err.Error(), "see the log; run loci doctor")
		}
		return nil
	}
	if !readOnly(db) {
		if err := startJobs(); err != nil {
			return err
		}
	}
	lc.started("jobs", drain+time.Second, func(ctx context.Context) error { pending.stop(); jobs.Stop(ctx); return nil })
	if vectors != nil {
		// After the dispatcher: once loaded and caught up, the follower
		// queues an embed job for vectors missing since the last run.
		vectors.Start(func() { kinds.EnsureEmbed(context.Background(), jobs, vectors) })
		lc.started("the vector follower", followerWait, func(ctx context.Context) error { vectors.Stop(ctx); return nil })
	}
	// A shared store: the other daemons' commits wake this one's followers
	// and its dispatcher (a no-op on the embedded store).
	stopWatch := actors.WatchOthers(db, log, kicks, jobs.Kick)
	lc.startedPlain("watching the other daemons' changes", time.Second, func() error { stopWatch(); return nil })

	// Miners and the trigger supervisor: what is enabled in the
	// configuration file starts asking for runs now (recovering webhook
	// deliveries accepted but not queued before the last stop).
	// With no file read (the default file is optional), the first change
	// of a miner, trigger or source configuration creates the default
	// file, the one this daemon reads again and reads at its next start:
	// a file named with --config or LOCI_CONFIG must exist to start.
	miners := &services.Miners{Defined: cfg.Miners, Configs: cfg.SourceConfigs, File: cfg.File, Sources: srcs, Jobs: jobs,
		Load:           func() (config.Config, error) { return config.Load(cfg.File, os.LookupEnv) },
		CredentialsDir: cfg.Credentials.Dir, Log: log.With("component", "miners"),
		Writer: fmt.Sprintf("loci %s, pid %d", version, os.Getpid())}
	if cfg.File == "" {
		miners.NewFile = config.DefaultFile(os.LookupEnv)
	}
	// A removal says which miners it leaves without their source.
	packages.MinersUsing = miners.UsingSource
	if signIn != nil {
		miners.SignIn, signIn.Configs = signIn, miners
	}
	trig := &services.Triggers{Miners: miners, DB: db, Sys: sys, Log: log, Webhook: cfg.Webhook, AuthEnabled: cfg.Auth.Enabled}
	if cfg.Webhook.Enable {
		trig.Listener = &transport.Webhooks{Triggers: trig, Config: cfg.Webhook, Log: log.With("component", "webhooks"),
			MaxConns: caps.webhook, MaxReading: caps.reading}
	}
	if d, ok := os.LookupEnv("LOCI_TEST_DELIVERY_DELAY"); ok {
		// Crash-recovery tests: hold each delivery between its acceptance
		// and its request.
		trig.DeliveryDelay, _ = time.ParseDuration(d)
	}
	startTriggers := func() error {
		if err := trig.Start(ctx, cfg); err != nil {
			return fault.Wrap(fault.ServerFailed, err, "starting the triggers failed: "+err.Error(), "see the log")
		}
		return nil
	}
	if !readOnly(db) {
		if err := startTriggers(); err != nil {
			return err
		}
	}
	lc.started("the triggers", 10*time.Second, func(ctx context.Context) error { pending.stop(); trig.Stop(ctx); return nil })
	// The backup schedule: a backup job into backup.dir at each slot.
	backups := &services.Backups{DB: db, Jobs: jobs, Log: log, Settings: cfg.Backup, Dir: cfg.BackupDir()}
	startBackups := func() error {
		if err := backups.Start(ctx); err != nil {
			return fault.Wrap(fault.ServerFailed, err, "starting the backup schedule failed: "+err.Error(), "see the log")
		}
		return nil
	}
	if !readOnly(db) {
		if err := startBackups(); err != nil {
			return err
		}
	}
	lc.started("the backup schedule", time.Second, func(ctx context.Context) error { backups.Stop(ctx); return nil })
	if readOnly(db) {
		// A start on a full disk: what writes starts once space is back.
		go awaitSpace(ctx, log, db.(store.Embedded), guard, pending, requestStop, func() error {
			if _, err := mig.Run(ctx); err != nil {
				return err
			}
			if err := startJobs(); err != nil {
				return err
			}
			if err := startTriggers(); err != nil {
				return err
			}
			if err := startBackups(); err != nil {
				return err
			}
			preloadNear()
			kinds.EnsureEmbed(context.Background(), jobs, vectors)
			return nil
		})
	}

	// Imports: spooled files no job reads any more are removed at a start.
	imports := &services.Imports{DB: db, Jobs: jobs, Dir: importDir, Gate: sys.Gate, Dedup: palace.Dedup,
		Profile: kinds.ImportProfile(vectors), MaxBytes: cfg.Import.MaxBytes, Log: log.With("component", "imports")}
	if !readOnly(db) {
		imports.Sweep(ctx)
	}

	// 4. Serve. Event streams and MCP sessions end first at a stop, so the
	// HTTP server can drain its other requests.
	started := time.Now()
	srv := &transport.Server{
		Palace: palace, Jobs: jobs, Search: searcher, Sources: &services.Sources{DB: db, Registry: srcs, Packages: packages}, Packages: packages,
		Miners: miners, Triggers: trig, Graph: &services.Graph{DB: db, Sys: sys, Fuzzy: cfg.Dedup.EntityFuzzy}, Config: cfg, Version: version, Started: started, Address: addr,
		Log: log.With("component", "http"), Migrator: mig, Auth: auth, Events: bus, Imports: imports,
		StreamStall: time.Duration(cfg.Server.SlowSubscriberSecs) * time.Second, MCPMax: caps.mcp,
		Reporter: &services.Reporter{Palace: palace, Search: searcher, Migrator: mig, Version: version, Started: started,
			Address: addr, PalacePath: cfg.Palace.Path, AuthEnabled: cfg.Auth.Enabled, Dashboard: cfg.Web.Enable,
			Disk: func() api.Disk { return diskState(cfg.Palace.Path, guard, db) }, Backups: backups},
		Backups:  backups,
		SignIn:   signIn,
		Shutdown: requestStop,
		Store:    db,
	}
	// The database admin listener (embedded store only: a shared store is
	// PostgreSQL's, reached with its own tools), closed until POST
	// /api/db. It stops after the HTTP server (no request can open it
	// again) and before the store, closing its connections. Its refused
	// sign-ins count in the REST API's throttle (srv), per client address.
	if !db.Shared() {
		a := newAdmin(cfg, db, auth, ln.Addr().(*net.TCPAddr).Port, srv, log, daemonTables(miners, trig)...)
		admin.Store(a)
		srv.DBAdmin = a
		lc.startedPlain("the database admin listener", 5*time.Second, func() error { _, err := a.Close(); return err })
	}
	srv.Registries = registries
	// Plugins install their modules through the packages service; their
	// registry and trust are the source registries'.
	srv.Plugins = &services.Plugins{Packages: packages, Log: log.With("component", "plugins"),
		Registry: registries.Client, Trust: func() ([]string, registry.Policy) {
			return cfg.Mining.TrustedKeys, registry.Policy(cfg.Mining.SignaturePolicy)
		}}
	hs := srv.HTTPServer()
	served := make(chan error, 1)
	// Idle and half-open connections give way to new ones at the cap.
	go func() { served <- hs.Serve(transport.LimitConns(hs, ln, caps.main, true)) }()
	lc.started("the HTTP server", httpDrain, func(ctx context.Context) error {
		bus.Close()
		srv.CloseSessions()
		if err := hs.Shutdown(ctx); err != nil {
			log.Info("closing HTTP connections still open after the drain", "drain", httpDrain.String())
			_ = hs.Close()
		}
		return nil
	})

	// 5. Ready: the registry file names this process.
	reg := config.Registry{PID: os.Getpid(), Address: addr, Palace: cfg.Palace.Path, Version: version, StartedAt: srv.Started.UTC().Format(time.RFC3339)}
	if err := config.WriteRegistry(cfg.Palace.Path, reg); err != nil {
		log.Error("cannot write the registry file", "err", err)
	}
	lc.startedPlain("the registry file", time.Second, func() error { config.RemoveRegistry(cfg.Palace.Path, reg.PID); return nil })
	ready := []any{"address", "http://" + addr, "palace", cfg.Palace.Path, "version", version, "pid", reg.PID}
	if cfg.Web.Enable {
		ready = append(ready, "dashboard", "http://"+addr+"/ui/")
	}
	log.Info("loci ready", ready...)

	var serveErr error
	select {
	case <-ctx.Done():
		log.Info("stopping on signal")
	case <-stopReq:
		log.Info("stopping on request")
	case serveErr = <-served:
		log.Error("http server failed", "err", serveErr)
	}
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return fault.Wrap(fault.ServerFailed, serveErr, "the HTTP server failed: "+serveErr.Error(), "see the log and start again")
	}
	return nil
}

// newAdmin builds the database admin listener over the embedded store:
// SQL by sqlview within the db.* limits; an open on the main listener's
// port (serverPort, the one bound) or the webhook listener's is refused;
// a sign-in checks the daemon's current credentials (auth), so a revoked
// or rotated token signs in no more; a refused one counts in the REST
// API's throttle (rest), so a brute force on either port slows both. The
// extra tables are the daemon's own (daemonTables: the miners and the
// trigger definitions).
func newAdmin(cfg config.Config, db store.DB, auth *services.Auth, serverPort int, rest *transport.Server, log *slog.Logger, extras ...sqlview.Extra) *dbadmin.Admin {
	engine := sqlview.New(db, sqlview.Limits{ScanRows: cfg.DB.MaxScanRows, ResultRows: cfg.DB.MaxResultRows,
		Timeout: time.Duration(cfg.DB.QueryTimeoutSecs) * time.Second}, extras...)
	webhookPort := 0
	if cfg.Webhook.Enable {
		webhookPort = cfg.Webhook.Port
	}
	enabled := cfg.Auth.Enabled
	return dbadmin.New(dbadmin.Config{Settings: cfg.DB, ServerPort: serverPort, WebhookPort: webhookPort,
		AuthEnabled: func() bool { return enabled }, CheckToken: auth.Check, Engine: engine, Version: version, Log: log,
		Throttle: restThrottle{rest}})
}

// restThrottle is the REST API's throttle as the admin listener's.
type restThrottle struct{ srv *transport.Server }

func (t restThrottle) Refused(remote string) (time.Duration, int) { return t.srv.RefusedSignIn(remote) }

// adminPort is the port the database admin listener listens on; 0 when
// closed (or none is built).
func adminPort(a *dbadmin.Admin) int {
	if a == nil {
		return 0
	}
	st := a.State()
	if !st.Open {
		return 0
	}
	_, p, err := net.SplitHostPort(st.Address)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(p)
	return n
}

// caps are the daemon's bounds on connections and streams.
type caps struct {
	main             int // the main listener's connections
	webhook, reading int // the webhook listener's, in all and still reading
	subscribers      int // event streams
	mcp              int // MCP sessions (each may hold a stream)
}

// connCaps raises the open-file limit where the Go runtime has not, logs
// it, and sizes the caps against it: the main listener's
// (server.max_connections, or derived when 0) and the webhook listener's.
// A configured cap that leaves the daemon too few descriptors for its own
// files is warned about, and kept. Streams are never closed to make room
// for a connection, so event streams are held to half the main cap and
// MCP sessions to a quarter: they cannot take every connection.
func connCaps(cfg config.Config, log *slog.Logger) caps {
	soft, hard, raised, err := fileLimit()
	if err != nil {
		log.Warn("cannot raise the open-file limit", "err", err, "soft", soft, "hard", hard)
	}
	var c caps
	c.main, c.webhook, c.reading = transport.ConnBudget(soft)
	if cfg.Server.MaxConnections > 0 {
		c.main = cfg.Server.MaxConnections
	}
	c.subscribers = min(cfg.Server.MaxSubscribers, max(c.main/2, 1))
	c.mcp = min(transport.MCPMaxSessions, max(c.main/4, 1))
	if c.subscribers < cfg.Server.MaxSubscribers {
		log.Warn("server.max_subscribers lowered to half of server.max_connections: event streams must not hold every connection",
			"max_subscribers", c.subscribers, "configured", cfg.Server.MaxSubscribers, "max_connections", c.main)
	}
	attrs := []any{"max_connections", c.main, "webhook_connections", c.webhook, "max_subscribers", c.subscribers, "mcp_sessions", c.mcp}
	if soft == 0 {
		log.Info("connection caps", attrs...)
		return c
	}
	log.Info("open files", append([]any{"limit", soft, "hard_limit", hard, "raised", raised}, attrs...)...)
	if uint64(c.main+c.webhook+transport.FileReserve) > soft {
		log.Warn("server.max_connections leaves the daemon too few file descriptors for its own files; lower it, or raise the open-file limit (ulimit -n, systemd LimitNOFILE=)",
			"max_connections", c.main, "webhook_connections", c.webhook, "reserve", transport.FileReserve, "limit", soft)
	}
	return c
}

// pprofListener listens on LOCI_PPROF's address, a loopback one only: the
// profiler reads the process's memory and takes no credential.
func pprofListener(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	ip := net.ParseIP(host)
	if err != nil || (host != "localhost" && (ip == nil || !ip.IsLoopback())) {
		return nil, fault.Newf(fault.ConfigInvalid, "set LOCI_PPROF to a loopback address such as 127.0.0.1:6060, or unset it",
			"LOCI_PPROF: %q is not a loopback host:port; the profiler is served on loopback only", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fault.Wrap(fault.ServerBindFailed, err, fmt.Sprintf("cannot listen on LOCI_PPROF %s: %v", addr, err), "choose a free port")
	}
	return ln, nil
}

// migrate runs the migration sequence on a palace no daemon holds.
func migrate(ctx context.Context, cfg config.Config, log *slog.Logger) (cli.MigrateReport, error) {
	db, err := openStore(ctx, cfg, log)
	if err != nil {
		return cli.MigrateReport{}, err
	}
	defer db.Close()
	m := migrator(db)
	ran, err := m.Run(ctx)
	if err != nil {
		return cli.MigrateReport{Ran: ran}, err
	}
	st, err := m.State(ctx)
	return cli.MigrateReport{Ran: ran, SchemaHash: st.SchemaHash, DataVersion: st.DataVersion, Latest: st.Latest}, err
}

// openCheck opens and closes the store for doctor, creating nothing.
// backupCheck is doctor's backup check without a daemon: the last backup
// in backup.dir and the warning, from a store opened and closed here
// (nothing is written: a palace without an identity has no backup).
func backupCheck(ctx context.Context, cfg config.Config) (api.BackupStatus, error) {
	b := &services.Backups{Settings: cfg.Backup, Dir: cfg.BackupDir()}
	if !storeExists(cfg) {
		return b.StatusOf("", 0)
	}
	db, err := openStore(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		return api.BackupStatus{}, err
	}
	defer db.Close()
	b.DB = db
	return b.Status(ctx)
}

func openCheck(ctx context.Context, cfg config.Config) error {
	if !storeExists(cfg) {
		return nil
	}
	db, err := openStore(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	return db.Close()
}

// wasmCacheDir is where the sandbox keeps compiled guest code: the user's
// cache directory (XDG_CACHE_HOME, else ~/.cache) under loci/wasm, shared by
// every palace of the user as Go's build cache is (compiled code is keyed
// by the module's digest and wazero's version, so palaces never disagree);
// <palace>/cache/wasm where the user has no cache directory.
func wasmCacheDir(cfg config.Config) string {
	if dir, err := os.UserCacheDir(); err == nil && filepath.IsAbs(dir) {
		return filepath.Join(dir, "loci", "wasm")
	}
	return filepath.Join(cfg.Palace.Path, "cache", "wasm")
}
