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
	"time"

	"github.com/loci-dev/loci/actors"
	"github.com/loci-dev/loci/actors/kinds"
	"github.com/loci-dev/loci/cli"
	"github.com/loci-dev/loci/index/embed"
	"github.com/loci-dev/loci/index/lexical"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/badgerdb"
	"github.com/loci-dev/loci/store/config"
	"github.com/loci-dev/loci/store/fault"
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

// openStore opens the palace's store, creating its directory.
func openStore(cfg config.Config, log *slog.Logger) (*badgerdb.DB, error) {
	if err := os.MkdirAll(storeDir(cfg), 0o700); err != nil {
		return nil, fault.Wrap(fault.StoreBackendFailed, err, "cannot create the palace directory "+cfg.Palace.Path,
			"check palace.path and its permissions")
	}
	return badgerdb.Open(storeDir(cfg), log)
}

func migrator(db *badgerdb.DB) *store.Migrator {
	return &store.Migrator{DB: db, Schema: badgerdb.Schema, Sync: db.SyncSchema, Steps: store.Steps()}
}

// serve runs the daemon: bind, open and migrate the store, start the
// actors, serve, write the registry, and stop gracefully.
func serve(ctx context.Context, cfg config.Config, log *slog.Logger, level slog.Level) error {
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
		holdHeap(ctx, memoryLimit)
	}
	// 1. Bind first: a taken address fails before anything is created.
	ln, err := net.Listen("tcp", cfg.Addr())
	if err != nil {
		return fault.Wrap(fault.ServerBindFailed, err, fmt.Sprintf("cannot listen on %s: %v", cfg.Addr(), err),
			"stop whatever holds the port (is loci already running? `loci status`), or set server.port / LOCI_PORT / --port")
	}
	defer ln.Close()
	addr := ln.Addr().String()
	if ip := net.ParseIP(cfg.Server.Bind); ip != nil && !ip.IsLoopback() && !cfg.Auth.Enabled {
		log.Warn("listening beyond loopback with authentication disabled; anyone who can reach this address can read and write memory",
			"address", addr)
	}

	// 2. Store, schema sync and data steps, failing closed.
	db, err := openStore(cfg, log)
	if err != nil {
		return err
	}
	defer func() {
		if err := db.Close(); err != nil {
			log.Error("closing the store", "err", err)
		}
	}()
	mig := migrator(db)
	ran, err := mig.Run(ctx)
	if err != nil {
		return err
	}
	if len(ran) > 0 {
		log.Info("data steps ran", "steps", ran)
	}
	// Credentials: the configured secret's hash and the stored digest of a
	// generated token; enabled with neither refuses to serve.
	auth, err := actors.NewAuth(ctx, db, cfg.Auth.Token)
	if err != nil {
		return err
	}
	cfg.Auth.Token = "" // only its hash is kept (in auth)
	if cfg.Auth.Enabled && !auth.Configured() {
		return fault.New(fault.AuthNotConfigured, "authentication is enabled but no credential exists: no configured secret and no generated token",
			"set LOCI_AUTH_TOKEN or auth.token (at least 16 characters); or start with authentication off, run `loci auth generate`, then enable it")
	}

	if a, ok := os.LookupEnv("LOCI_PPROF"); ok && a != "" {
		pln, err := pprofListener(a)
		if err != nil {
			return err
		}
		defer pln.Close()
		// Profiling for performance work, on a loopback address of its own.
		go func() {
			ps := &http.Server{Handler: transport.LoopbackOnly(http.DefaultServeMux), ReadHeaderTimeout: transport.HeaderTimeout}
			log.Info("pprof listener stopped", "err", ps.Serve(pln))
		}()
		log.Info("pprof enabled", "address", pln.Addr().String())
	}

	// 3. Indexes (derived: rebuilt when missing), actors; jobs left running
	// are recovered before dispatching starts.
	lex, err := lexical.Open(filepath.Join(cfg.Palace.Path, "index", "lexical"))
	if err != nil {
		return fault.Wrap(fault.StoreBackendFailed, err, "cannot open the lexical index: "+err.Error(),
			"remove "+filepath.Join(cfg.Palace.Path, "index")+" to rebuild it from the store")
	}
	defer lex.Close()
	profiles, err := embed.Open(cfg.Embedding)
	if err != nil {
		return err
	}
	sys := actors.Start(db, log, level)
	auth.Sys = sys
	indexer := actors.NewIndexer(db, lex, log)
	bus := actors.NewBus(db, log)
	if err := bus.Start(ctx); err != nil {
		return fault.Wrap(fault.StoreBackendFailed, err, "cannot read the change log: "+err.Error(), "run loci doctor")
	}
	search := &actors.Search{DB: db, Indexer: indexer, Log: log}
	var vectors *actors.Vectors
	if len(profiles) > 0 {
		vectors = actors.NewVectors(db, sys, profiles, cfg.Embedding.Default, log)
		vectors.Dir = filepath.Join(cfg.Palace.Path, "index", "vectors")
		vectors.SaveEvery = time.Duration(cfg.Embedding.SaveSecs) * time.Second
		search.Vectors = vectors
		sys.OnCommit(func() { indexer.Kick(); vectors.Kick(); bus.Kick() })
	} else {
		sys.OnCommit(func() { indexer.Kick(); bus.Kick() })
	}
	indexer.Start()
	palace := &actors.Palace{DB: db, Sys: sys, Dedup: store.Dedup{Enabled: cfg.Dedup.Enabled, Threshold: cfg.Dedup.NearThreshold}}
	// Big rooms' near-duplicate indexes load in the background from now
	// on; writes meanwhile are judged for near copies once loaded.
	late := actors.NewLateNear(sys, palace.Dedup, log)
	db.OnLateNear(late.Add)
	late.Start()
	db.PreloadNear()
	jobs := actors.NewJobs(db, sys, palace, log, actors.JobConfig{
		MaxConcurrency: cfg.Jobs.MaxConcurrency, BackgroundConcurrency: cfg.Jobs.BackgroundConcurrency,
		LeaseTTL: time.Duration(cfg.Jobs.LeaseTTLSecs) * time.Second, DrainTimeout: time.Duration(cfg.Jobs.DrainTimeoutSecs) * time.Second,
	})
	if vectors != nil {
		jobs.Vectors = vectors
		vectors.OnNewDrawers = func() { jobs.EnsureEmbed(context.Background()) }
	}
	jobs.Register(kinds.All(jobs)...)
	palace.Locked = jobs.Busy
	if err := jobs.Start(ctx); err != nil {
		_ = sys.Stop(context.WithoutCancel(ctx))
		return fault.Wrap(fault.StoreBackendFailed, err, "recovering jobs failed: "+err.Error(), "see the log; run loci doctor")
	}
	if vectors != nil {
		// After the dispatcher: once loaded and caught up, the follower
		// queues an embed job for vectors missing since the last run.
		vectors.Start()
	}

	stopReq := make(chan struct{}, 1)
	srv := &transport.Server{
		Palace: palace, Jobs: jobs, Search: search, Config: cfg, Version: version, Started: time.Now(), Address: addr,
		Log: log.With("component", "http"), Migrator: mig, Auth: auth, Events: bus,
		Shutdown: func() {
			select {
			case stopReq <- struct{}{}:
			default:
			}
		},
	}
	hs := srv.HTTPServer()
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()

	// 4. Ready: the registry file names this process.
	reg := config.Registry{PID: os.Getpid(), Address: addr, Palace: cfg.Palace.Path, Version: version, StartedAt: srv.Started.UTC().Format(time.RFC3339)}
	if err := config.WriteRegistry(cfg.Palace.Path, reg); err != nil {
		log.Error("cannot write the registry file", "err", err)
	}
	log.Info("loci ready", "address", "http://"+addr, "palace", cfg.Palace.Path, "version", version, "pid", reg.PID)

	var serveErr error
	select {
	case <-ctx.Done():
		log.Info("stopping on signal")
	case <-stopReq:
		log.Info("stopping on request")
	case serveErr = <-served:
		log.Error("http server failed", "err", serveErr)
	}

	// 5. Graceful stop in reverse order, each stage on its own budget: a
	// stalled client cannot spend the jobs' drain or the store's close.
	config.RemoveRegistry(cfg.Palace.Path, reg.PID)
	base := context.WithoutCancel(ctx)
	bus.Close()         // event streams end, so the HTTP server can drain
	srv.CloseSessions() // and so do MCP sessions with their streams
	hctx, hcancel := context.WithTimeout(base, httpDrain)
	if err := hs.Shutdown(hctx); err != nil {
		log.Info("closing HTTP connections still open after the drain", "drain", httpDrain.String())
		_ = hs.Close()
	}
	hcancel()
	drain := time.Duration(cfg.Jobs.DrainTimeoutSecs) * time.Second
	jctx, jcancel := context.WithTimeout(base, drain+time.Second)
	jobs.Stop(jctx)
	jcancel()
	late.Stop()
	sctx, scancel := context.WithTimeout(base, storeWait)
	defer scancel()
	if err := sys.Stop(sctx); err != nil {
		log.Warn("actor shutdown", "err", err)
	}
	fctx, fcancel := context.WithTimeout(base, followerWait)
	defer fcancel()
	indexer.Stop(fctx)
	if vectors != nil {
		vectors.Stop(fctx)
	}
	log.Info("loci stopped")
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return fault.Wrap(fault.ServerFailed, serveErr, "the HTTP server failed: "+serveErr.Error(), "see the log and start again")
	}
	return nil
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
	db, err := openStore(cfg, log)
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
func openCheck(ctx context.Context, cfg config.Config) error {
	if _, err := os.Stat(storeDir(cfg)); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	db, err := badgerdb.Open(storeDir(cfg), slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	return db.Close()
}
