# loci — make help lists the targets.
GO      ?= go
BIN     := bin/loci
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse --short HEAD 2>/dev/null)
LDFLAGS := -X main.version=$(VERSION) -X main.commit=$(COMMIT)

.PHONY: help run build dist test browser-note bench bench-quality bench-million bench-backup soak lint fuzz clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

build: ## build bin/loci
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/loci

dist: ## release archives (linux, darwin; amd64, arm64), .deb and .rpm packages and SHA256SUMS into dist/ (cmd/locidist)
	$(GO) run ./cmd/locidist -out dist -version $(VERSION) -commit $(COMMIT)

run: build ## build and run the daemon in the foreground on the default palace, with the dashboard on /ui
	./$(BIN) serve --web

test: ## vet, then every test with the race detector (unit, integration, end-to-end)
	@$(MAKE) --no-print-directory browser-note
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 40m ./...
	@$(MAKE) --no-print-directory browser-note

# browser-note says, visibly, when the dashboard's browser tests or the
# agents' integration tests skip for want of Chromium or the agents' tools
# (go test prints a skip only with -v).
browser-note:
	@if [ -z "$$LOCI_CHROMIUM" ] && ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1 && ! command -v google-chrome >/dev/null 2>&1; then \
		echo "*** NOTE: no Chromium found: the dashboard's browser tests are SKIPPED. Install it with 'apt-get install chromium' (.ci/run does), or set LOCI_CHROMIUM. ***"; fi
	@if [ ! -x .ci/npm/node_modules/.bin/claude ] || [ ! -x .ci/npm/node_modules/.bin/codex ] || [ ! -x .ci/npm/node_modules/.bin/opencode ]; then \
		echo "*** NOTE: the agents' command-line tools are not installed: the integration and bridge tests against Claude Code, Codex, OpenCode and the MCP TypeScript SDK are SKIPPED. Install them with 'npm install --prefix .ci/npm' (.ci/run does; needs Node.js and npm). ***"; fi
	@if [ "$$(id -u)" != 0 ] || ! command -v dpkg >/dev/null 2>&1; then \
		echo "*** NOTE: not root or no dpkg: the .deb install test (packaging, TestDebInstall) is SKIPPED. CI runs it as root on Debian. ***"; \
	elif ! command -v man >/dev/null 2>&1 || ! command -v systemd-analyze >/dev/null 2>&1; then \
		echo "*** NOTE: no man or no systemd-analyze: the .deb install test leaves out 'man -w 1 loci' or 'systemd-analyze verify' (apt-get install man-db systemd). ***"; fi

bench: build ## run the benchmarks (Go benchmarks and load against a real daemon)
	$(GO) test -run '^$$' -bench 'BigRoom|Sequential|ClaimLatency|JobScans|ResolveEntity100k' -benchtime 2000x -count 1 ./store/... ./actors/...
	$(GO) test -run '^$$' -bench StatusAfterWrite -benchtime 500x -count 1 ./services
	$(GO) test -run '^$$' -bench NearIndex -benchtime 3x -count 1 ./store/badgerdb
	$(GO) test -run '^$$' -bench DirectoryUnchanged100k -benchtime 3x -count 1 ./sources
	$(GO) test -run '^$$' -bench ParseClaudeCode -benchtime 30x -count 1 ./sources
	$(GO) test -run '^$$' -bench SuspectLookups -benchtime 3x -count 1 ./store/badgerdb
	$(GO) test -run '^$$' -bench HeuristicLoCoMo -benchtime 3x -count 1 ./extract
	$(GO) test -run '^$$' -bench GraphDepth3 -benchtime 300x -count 1 -timeout 30m ./services
	$(GO) test -run '^$$' -bench Expand100k -benchtime 400x -count 1 -timeout 30m ./search
	$(GO) test -run '^$$' -bench 'Search100k|Indexing' -benchtime 400x -count 1 ./index/lexical
	$(GO) test -run '^$$' -bench HNSW100k -benchtime 1000x -count 1 -timeout 60m ./index/vector
	$(GO) test -run '^$$' -bench SearchWhileInserting -benchtime 5x -count 1 ./index/vector
	$(GO) test -run '^$$' -bench 'BenchmarkExport|BenchmarkRead' -benchtime 3x -count 1 -timeout 60m ./export
	$(GO) test -run '^$$' -bench BenchmarkImport -benchtime 1x -count 1 -timeout 60m ./services/kinds
	$(GO) test -run '^$$' -bench BenchmarkBackup -benchtime 1x -count 1 -timeout 60m ./backup
	$(GO) test -run '^$$' -bench 'BenchmarkCall' -benchtime 2000x -count 1 ./sources/sandbox
	$(GO) test -run '^$$' -bench SQL100k -benchtime 20x -count 1 -timeout 30m ./dbadmin/sqlview
	$(GO) test -run '^$$' -bench GitHistoryNative -benchtime 2x -count 1 ./sources/bundled/guests/githistory
	$(GO) test -run '^$$' -bench GitHistoryWASI -benchtime 1x -count 1 ./sources/bundled
	$(GO) run ./cmd/locibench -bin ./$(BIN)
	$(GO) run ./cmd/locibench -bin ./$(BIN) -only static
	$(GO) run ./cmd/locibench -bin ./$(BIN) -only dashboard
	$(GO) run ./cmd/locibench -bin ./$(BIN) -only rss
	$(GO) run ./cmd/locibench -bin ./$(BIN) -only bridge
	$(GO) run ./cmd/locibench -bin ./$(BIN) -only hook
	$(GO) run ./cmd/locibench -bin ./$(BIN) -only export
	$(GO) run ./cmd/locibench -bin ./$(BIN) -only transcripts
	$(GO) run ./cmd/locibench -bin ./$(BIN) -only sourcepkg
	$(GO) run ./cmd/locibench -bin ./$(BIN) -only registry
	$(GO) run ./cmd/locibench -bin ./$(BIN) -only shared
	$(MAKE) bench-quality
	$(MAKE) bench-million

soak: ## 100 kill -9 trials under mixed load against the real binary (SOAK_TRIALS; make test runs 5); 20,000 unsigned webhook requests beside signed ones (SOAK_WEBHOOK_FLOOD; make test sends 2,000); a generated 128 MiB ChatGPT export read in bounded memory; a week in an hour: one daemon under every load at once, killed -9 every 60-90 s, its filesystem filled and freed (SOAK_WEEK, default 10m; SOAK_WEEK_FILL=0 leaves out the fill; make test runs 30s)
	LOCI_SOAK_TRIALS=$${SOAK_TRIALS:-100} $(GO) test -run '^TestSoakKill9$$' -count=1 -timeout 120m -v ./cmd/loci
	LOCI_SOAK_WEBHOOK_FLOOD=$${SOAK_WEBHOOK_FLOOD:-20000} $(GO) test -run '^TestWebhookStalledAndUnsigned$$' -count=1 -timeout 10m -v ./cmd/loci
	LOCI_EXPORT_128=1 $(GO) test -run '^TestExportBoundedMemory$$' -count=1 -timeout 20m -v ./sources
	LOCI_SOAK_WEEK=$${SOAK_WEEK:-10m} LOCI_SOAK_WEEK_FILL=$${SOAK_WEEK_FILL:-1} $(GO) test -run '^TestWeekInAnHour$$' -count=1 -timeout 0 -v ./cmd/loci

bench-million: build ## the 1,000,000-drawer run (about 20 minutes; KEEP=dir reuses a filled palace)
	$(GO) run ./cmd/locibench -bin ./$(BIN) -only million -fill 1000000 $${KEEP:+-keep $$KEEP}

bench-backup: build ## backup, restore and reindex, export and import on 1,000,000 drawers (reuses bench-million's palace with KEEP=dir)
	$(GO) run ./cmd/locibench -bin ./$(BIN) -only backup -fill 1000000 $${KEEP:+-keep $$KEEP}

BENCH_DATA ?= ../shared/bench

bench-quality: build ## retrieval quality on LoCoMo and Cranfield (BENCH_DATA, default ../shared/bench)
	./$(BIN) bench locomo --data $(BENCH_DATA)/locomo/locomo-public.json --expand
	./$(BIN) bench cranfield --dir $(BENCH_DATA)/cranfield

lint: ## gofmt and vet
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)
	$(GO) vet ./...

fuzz: ## run each fuzz target for a while (FUZZTIME, default 30s)
	$(GO) test -run '^$$' -fuzz FuzzNames -fuzztime $${FUZZTIME:-30s} ./names
	$(GO) test -run '^$$' -fuzz FuzzJSONSplice -fuzztime $${FUZZTIME:-30s} ./integration
	$(GO) test -run '^$$' -fuzz FuzzTOMLSplice -fuzztime $${FUZZTIME:-30s} ./integration
	$(GO) test -run '^$$' -fuzz FuzzOSA -fuzztime $${FUZZTIME:-30s} ./store/dedup
	$(GO) test -run '^$$' -fuzz FuzzAnswers -fuzztime $${FUZZTIME:-30s} ./sources/installed
	$(GO) test -run '^$$' -fuzz FuzzExportParse -fuzztime $${FUZZTIME:-30s} -fuzzminimizetime 2s ./sources
	$(GO) test -run '^$$' -fuzz FuzzNormalizeCompare -fuzztime $${FUZZTIME:-30s} ./store/dedup
	$(GO) test -run '^$$' -fuzz FuzzDecodeArgs -fuzztime $${FUZZTIME:-30s} ./transport
	$(GO) test -run '^$$' -fuzz FuzzSearchBody -fuzztime $${FUZZTIME:-30s} ./transport
	$(GO) test -run '^$$' -fuzz FuzzReader -fuzztime $${FUZZTIME:-30s} -fuzzminimizetime 2s ./export
	$(GO) test -run '^$$' -fuzz FuzzWriteBodies -fuzztime $${FUZZTIME:-30s} ./transport
	$(GO) test -run '^$$' -fuzz FuzzJobBody -fuzztime $${FUZZTIME:-30s} ./transport
	$(GO) test -run '^$$' -fuzz FuzzReadQueries -fuzztime $${FUZZTIME:-30s} ./transport
	$(GO) test -run '^$$' -fuzz FuzzMCPTools -fuzztime $${FUZZTIME:-30s} ./transport
	$(GO) test -run '^$$' -fuzz FuzzPathSegments -fuzztime $${FUZZTIME:-30s} ./transport
	$(GO) test -run '^$$' -fuzz FuzzBagBound -fuzztime $${FUZZTIME:-30s} ./store/dedup
	$(GO) test -run '^$$' -fuzz FuzzFileName -fuzztime $${FUZZTIME:-30s} ./credentials
	$(GO) test -run '^$$' -fuzz FuzzParseIndex -fuzztime $${FUZZTIME:-30s} ./sources/pack
	$(GO) test -run '^$$' -fuzz FuzzParsePublicKey -fuzztime $${FUZZTIME:-30s} ./sources/pack

clean: ## remove build output
	rm -rf bin dist
