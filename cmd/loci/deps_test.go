package main_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The libraries the rules keep out of the lower layers.
const (
	cobra      = "github.com/spf13/cobra"            // the CLI's
	chi        = "github.com/go-chi/chi/v5"          // the HTTP router's
	protoactor = "github.com/asynkron/protoactor-go" // the actor runtime's
	badger     = "github.com/dgraph-io/badger/v4"    // the embedded backend's
	fsnotify   = "github.com/fsnotify/fsnotify"      // the file watch's
	nethttp    = "net/http"                          // HTTP's
	wazero     = "github.com/tetratelabs/wazero"     // the WebAssembly sandbox's
)

// anyOfOurs in a rule's may allows every package of ours.
const anyOfOurs = "..."

// depRule is what one package (or folder) of ours may depend on.
type depRule struct {
	// pkg is a package path under the module, or dir/... for dir and
	// every package under it that no narrower rule names.
	pkg string
	// may lists the packages of ours pkg may import (dir/... for dir and
	// every package under it; "..." for any): an allowlist, so every
	// direction not listed is forbidden by construction.
	may []string
	// noDeps are libraries pkg may not depend on, even through another
	// package (a prefix: a module path covers its packages).
	noDeps []string
	// noImports are packages pkg may not import itself (a library it
	// uses may pull them in).
	noImports []string
	// why is the reason, printed with every failure.
	why string
}

// depRules is the specification of docs/ARCHITECTURE.md's folder rules:
// dependencies point down (cmd > cli > transport > actors > index,
// sources, extract, triggers > store > the leaves: fault, names, api,
// config), and the lower layers never reach the upper ones or their
// libraries. One line per package; a new package needs its line (the test
// fails on a package no rule covers), and a rule or an allowed package
// that no longer exists fails too, so the table cannot rot.
var depRules = []depRule{
	// The leaves every layer may use.
	{pkg: "fault", may: nil, noDeps: []string{nethttp}, why: "the error type is the leaf every layer returns: it imports nothing of ours"},
	{pkg: "names", may: nil, noDeps: []string{nethttp}, why: "the name rules are a leaf shared by the store, the configuration and the CLI"},
	{pkg: "api", may: nil, noDeps: []string{nethttp}, why: "the wire types are a leaf the daemon and its clients share: no layer's code comes with them"},
	{pkg: "config", may: []string{"fault", "names", "triggers", "search/rank", "sources/secret", "extract/provider"}, noDeps: []string{nethttp, cobra, chi, protoactor, badger, fsnotify},
		why: "the configuration is read by the CLI and every layer: it validates against the pure packages that own its enums and rules (trigger rules, fusion methods (search/rank), secret policies, extraction providers) and never imports a layer that does I/O; index → config (the embedder's old direction) is forbidden"},
	{pkg: "config/gen", may: []string{"config"}, why: "the settings table's generator reads the configuration only"},

	// The store: its contract, its pure rules, its backend.
	{pkg: "store", may: []string{"fault", "names", "store/dedup", "store/graph"}, noDeps: []string{nethttp, cobra, chi, protoactor, badger},
		why: "the store's contract (records, reader and writer interfaces) stands on the leaves and its own pure rules: never a backend (a second one implements it without the first), the indexes, sources, triggers or a layer above"},
	{pkg: "store/dedup", may: nil, noDeps: []string{nethttp, cobra, chi, protoactor, badger}, why: "near-duplicate judging is pure text arithmetic"},
	{pkg: "store/graph", may: []string{"store/dedup"}, noDeps: []string{nethttp, cobra, chi, protoactor, badger}, why: "the knowledge graph's rules are pure: no store backend, no layer above (the top-level graph package they left must not come back)"},
	{pkg: "store/disk", may: []string{"fault"}, noDeps: []string{nethttp, cobra, chi, protoactor, badger}, why: "the free-space guard watches a filesystem; it knows no record"},
	{pkg: "store/badgerdb", may: []string{"fault", "store", "store/dedup", "store/disk", "store/graph"}, noDeps: []string{cobra, chi, protoactor}, noImports: []string{nethttp},
		why: "the Badger backend implements the store's contract; HTTP belongs to transport (Badger's expvar pulls net/http in, our code may not import it)"},
	{pkg: "store/postgres", may: []string{"fault", "store", "store/dedup", "store/graph"}, noDeps: []string{cobra, chi, protoactor, badger}, noImports: []string{nethttp},
		why: "the PostgreSQL backend implements the store's contract over pgx; no layer above, no other backend"},
	{pkg: "store/postgres/pgtest", may: nil, noDeps: []string{cobra, chi, protoactor, badger}, why: "the tests' PostgreSQL cluster knows nothing of loci"},
	{pkg: "backup", may: []string{"fault", "store"}, noDeps: []string{cobra, chi, protoactor}, why: "backups are written and read through the store contract and a backend capability: no layer above"},
	{pkg: "export", may: []string{"fault", "names", "store", "store/graph"}, noDeps: []string{cobra, chi, protoactor, badger}, noImports: []string{nethttp},
		why: "the export format is written and read through the store contract and the palace's pure rules: no backend, no layer above"},
	{pkg: "store/storetest", may: []string{"fault", "store", "store/dedup"}, noDeps: []string{nethttp, cobra, chi, protoactor, badger}, why: "the conformance suite tests any backend through the contract alone"},

	// The indexes: derived from the store, told what to index by the actors.
	{pkg: "index", may: nil, noDeps: []string{nethttp, cobra, chi, protoactor, badger}, why: "the index's shared types are a leaf of the index folder: no configuration (index → config is forbidden), no store, no layer above"},
	{pkg: "index/lexical", may: []string{"index", "search/rank"}, noDeps: []string{cobra, chi, protoactor, badger}, why: "the lexical index is Bleve over the index's types and the ranking's scope check (search/rank.Keep, pure): no store backend, no configuration, no layer above"},
	{pkg: "index/vector", may: []string{"index", "search/rank"}, noDeps: []string{nethttp, cobra, chi, protoactor, badger}, why: "the vector index is pure graph code over the index's types and the ranking's scope check (search/rank.Keep, pure): no configuration (index → config is forbidden), no store, no layer above"},
	{pkg: "index/embed", may: []string{"fault", "index/embed/glove"}, noDeps: []string{cobra, chi, protoactor, badger},
		why: "the embedder takes its own settings (embed.Settings) from its caller: index → config is forbidden, so neither drags the other's rules or HTTP along"},
	{pkg: "index/embed/glove", may: nil, noDeps: []string{nethttp, cobra, chi, protoactor, badger}, why: "the built-in word vectors are data and their reader"},
	{pkg: "index/embed/glove/gen", may: nil, why: "the word vectors' generator (go generate) downloads and packs them, nothing of ours"},

	// What reads the outside world: sources, extraction, triggers.
	{pkg: "sources", may: []string{"fault", "names", "store", "sources/secret"}, noDeps: []string{cobra, chi, protoactor, badger},
		why: "sources read documents and hand the store's records up: never the indexes, the actors, triggers or a backend"},
	{pkg: "sources/secret", may: nil, noDeps: []string{nethttp, cobra, chi, protoactor, badger}, why: "the secret policies are a pure enum the configuration validates (sources itself is too heavy for the CLI's configuration to link)"},
	{pkg: "sources/exportgen", may: nil, why: "the export generator makes test corpora, nothing of ours"},
	{pkg: "sources/contract", may: nil, noDeps: []string{nethttp, cobra, chi, protoactor, badger, wazero},
		why: "the source package contract is the standard library only: a guest written in Go copies it into its own module and builds it for wasip1"},
	{pkg: "sources/pack", may: []string{"fault", "sources/contract"}, noDeps: []string{nethttp, cobra, chi, protoactor, badger, wazero},
		why: "a package's manifest, permissions, consent and archive are read without running it: the CLI's local commands link it"},
	{pkg: "sources/registry", may: []string{"api", "fault", "sources/pack"}, noDeps: []string{cobra, chi, protoactor, badger, wazero},
		why: "a registry client fetches indexes and archives and checks them against the trusted keys: it runs nothing and knows no store or layer above"},
	{pkg: "sources/plugin", may: []string{"fault", "sources/contract", "sources/pack"}, noDeps: []string{nethttp, cobra, chi, protoactor, badger, wazero},
		why: "a plugin's manifest, modules and signature are read without running them: the CLI's local commands link it"},
	{pkg: "credentials", may: []string{"api", "fault", "sources/pack"}, noDeps: []string{cobra, chi, protoactor, badger, wazero},
		why: "sign-in speaks OAuth to providers and keeps tokens outside the palace: no store, no source runtime, no layer above"},
	{pkg: "sources/sandbox", may: []string{"fault", "sources/contract"}, noDeps: []string{cobra, chi, protoactor, badger},
		why: "the sandbox runs modules under wazero with the grants it is handed: it knows no adapter, store or layer above"},
	{pkg: "sources/installed", may: []string{"fault", "names", "store", "sources", "sources/contract", "sources/pack", "sources/sandbox"}, noDeps: []string{cobra, chi, protoactor, badger},
		why: "an installed source is an adapter over the sandbox: the sources' contract, never a backend or a layer above"},
	{pkg: "sources/conformance", may: []string{"fault", "store", "sources"}, noDeps: []string{cobra, chi, protoactor, badger},
		why: "the conformance cases drive any adapter through the sources' contract"},
	{pkg: "sources/bundled", may: []string{"fault", "sources/pack"}, noDeps: []string{nethttp, cobra, chi, protoactor, badger, wazero},
		why: "the bundled packages are embedded files read as packages"},
	{pkg: "sources/bundled/gen", may: nil, noDeps: []string{nethttp, cobra, chi, protoactor, badger, wazero},
		why: "the bundled modules' builder (go generate) runs the go command, nothing of ours"},
	{pkg: "sources/bundled/guests/...", may: []string{"sources/contract", "sources/bundled/guests/internal/wire"}, noDeps: []string{nethttp, cobra, chi, protoactor, badger, wazero},
		why: "a bundled package's module is a guest: the contract, the guests' answer writer and the standard library, built for wasip1"},
	{pkg: "extract", may: []string{"store/graph", "extract/provider"}, noDeps: []string{cobra, chi, protoactor, badger},
		why: "extraction reads text into the graph's vocabulary: no store backend, no sources, no layer above"},
	{pkg: "extract/provider", may: nil, noDeps: []string{nethttp, cobra, chi, protoactor, badger}, why: "the extraction providers' names are a pure enum the configuration validates (extract itself speaks HTTP, which the configuration may not)"},
	{pkg: "extract/gen", may: []string{"index/embed/glove"}, why: "the extraction tables' generator reads the word list only"},
	{pkg: "triggers", may: []string{"fault", "names"}, noDeps: []string{nethttp, cobra, chi, protoactor, badger, fsnotify},
		why: "the trigger rules are pure (the configuration validates with them): no file watch, no store, no layer above"},
	{pkg: "triggers/watch", may: []string{"triggers"}, noDeps: []string{cobra, chi, protoactor, badger},
		why: "the file watch takes what to skip from its caller: triggers → sources is forbidden (the watch would link every adapter)"},

	// The runtime and its kinds.
	{pkg: "actors", may: []string{"config", "fault", "index/...", "store"}, noDeps: []string{cobra, chi, badger}, noImports: []string{nethttp},
		why: "the actors are the runtime (the actor system and the writer, the job runtime and its kinds registry, the change-log followers over the store and the indexes): they name no service, no kind, no source and no search (services and search sit on them), HTTP belongs to transport (protoactor pulls net/http in, our code may not import it) and the backend to the composition root"},
	{pkg: "services", may: []string{"actors", "api", "backup", "config", "credentials", "export", "fault", "search", "services/kinds", "sources", "sources/bundled", "sources/contract", "sources/installed", "sources/pack", "sources/plugin", "sources/registry", "sources/sandbox", "store", "store/dedup", "store/graph", "triggers", "triggers/watch"}, noDeps: []string{cobra, chi, badger}, noImports: []string{nethttp},
		why: "the services (the palace and its wake-up, graph, auth, sources, miners, triggers and their supervisor, the reporter) stand on the runtime, search, sources and triggers: never on transport, the CLI or a backend"},
	{pkg: "services/kinds", may: []string{"actors", "api", "backup", "config", "export", "extract", "extract/provider", "fault", "index/embed", "sources", "sources/secret", "store", "store/graph"}, noDeps: []string{cobra, chi, badger}, noImports: []string{nethttp},
		why: "the job kinds run on the runtime with the settings they are handed (kinds.Settings), never a service, transport, a backend or HTTP of their own"},

	// Search: the service over the runtime's followers, its pure ranking below.
	{pkg: "search", may: []string{"actors", "api", "config", "extract", "fault", "index/...", "search/rank", "sources", "store", "store/dedup", "store/graph"}, noDeps: []string{cobra, chi, badger}, noImports: []string{nethttp},
		why: "the search service stands on the runtime (its followers), the indexes and the store, never on the services (which stand above it and may use it) or on what serves them"},
	{pkg: "search/rank", may: nil, noDeps: []string{nethttp, cobra, chi, protoactor, badger}, why: "the ranking is pure functions over candidate lists (fusion, context, feedback, expansion, the scope check) and owns the fusion methods the configuration validates: nothing of ours, so config and the indexes may import it"},

	// The database admin listener: SQL over the store, served over WebSocket.
	{pkg: "dbadmin/sqlview", may: []string{"fault", "store", "store/graph"}, noDeps: []string{cobra, chi, protoactor, badger},
		why: "the SQL engine's tables read the store through its contract only (one view per query): no backend, no runtime, no layer above"},
	{pkg: "dbadmin", may: []string{"api", "config", "dbadmin/sqlview", "fault"}, noDeps: []string{cobra, chi, protoactor, badger},
		why: "the admin listener is its own HTTP server over the SQL engine: the daemon hands it the token check, it never reaches the services or the actors"},

	// The edges: HTTP, the CLI, the composition root.
	{pkg: "transport", may: []string{"actors", "api", "backup", "config", "dbadmin", "export", "fault", "search", "services", "sources", "store", "store/dedup", "transport/client", "ui"}, noDeps: []string{cobra, badger},
		why: "transport serves the actors over HTTP and MCP: never the CLI, never a backend"},
	{pkg: "transport/client", may: []string{"api", "fault"}, noDeps: []string{cobra, chi, protoactor, badger}, why: "the HTTP client is what the CLI links: wire types and errors only"},
	{pkg: "ui", may: nil, noDeps: []string{cobra, chi, protoactor, badger}, why: "the dashboard is embedded files and their handler"},
	{pkg: "cli", may: []string{"transport/client", "api", "fault", "config", "store/disk", "project", "assets", "integration", "service", "export", "sources/contract", "sources/pack", "sources/plugin"}, noDeps: []string{badger, protoactor, chi},
		why: "the CLI is an HTTP client: wire types, the client, the error type and the configuration, never the store's backends, the indexes, sources or the actors (cmd/loci hands it the daemon)"},
	{pkg: "project", may: []string{"fault", "names"}, noDeps: []string{nethttp, cobra, chi, protoactor, badger}, why: "a project's file is read and written by the CLI: leaves only"},
	{pkg: "assets", may: []string{"fault"}, noDeps: []string{nethttp, cobra, chi, protoactor, badger}, why: "the bundled assets are files: leaves only"},
	{pkg: "integration", may: []string{"assets", "fault"}, noDeps: []string{nethttp, cobra, chi, protoactor, badger}, why: "the agent integrations edit files: no daemon, store, transport or HTTP"},
	{pkg: "service", may: []string{"fault"}, noDeps: []string{nethttp, cobra, chi, protoactor, badger}, why: "the login service writes a unit and runs the service manager: no daemon, store or HTTP"},
	{pkg: "packaging", may: []string{"cli", "service"}, noDeps: []string{protoactor, badger}, why: "packaging builds archives and packages from the CLI's pages and the service's units: no daemon"},
	{pkg: "internal/markov", may: nil, why: "the benchmark text generator is pure"},
	{pkg: "cmd/loci", may: []string{anyOfOurs}, why: "the composition root is the one package that imports everything"},
	{pkg: "cmd/locibench", may: []string{"index/embed", "internal/markov", "sources", "sources/exportgen", "store/postgres/pgtest"}, noDeps: []string{cobra, chi, protoactor, badger},
		why: "the benchmark drives a real daemon over HTTP and MCP; of ours it uses only what makes its corpus and query vectors and the throwaway PostgreSQL cluster its shared-store daemons run on, never the store, actors or transport"},
	{pkg: "cmd/locidist", may: []string{"packaging"}, noDeps: []string{protoactor, badger}, why: "the release builder runs packaging only"},
}

// TestDependencyDirection checks every package of ours against the rule
// that covers it (the narrowest: an exact path before the longest
// dir/...): the packages of ours it imports are on the rule's allowlist,
// and it links none of the rule's forbidden libraries. A rule that covers
// no package, allows a package that does not exist or forbids a library
// nothing links fails, and so does a package no rule covers.
func TestDependencyDirection(t *testing.T) {
	t.Parallel()
	const mod = "github.com/loci-dev/loci/"
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}\t{{join .Imports \" \"}}\t{{join .Deps \" \"}}", "./...")
	cmd.Dir = "../.."
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	type pkgInfo struct{ imports, deps []string }
	pkgs := map[string]pkgInfo{}
	linked := map[string]bool{} // every package any of ours links
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 3 || !strings.HasPrefix(f[0], mod) {
			t.Fatalf("go list: unexpected line %q", line)
		}
		pkgs[strings.TrimPrefix(f[0], mod)] = pkgInfo{strings.Fields(f[1]), strings.Fields(f[2])}
		for _, d := range strings.Fields(f[2]) {
			linked[d] = true
		}
	}
	ruleOf := func(pkg string) *depRule {
		var best *depRule
		for i := range depRules {
			r := &depRules[i]
			if r.pkg == pkg {
				return r
			}
			if matches(r.pkg, pkg) && (best == nil || len(r.pkg) > len(best.pkg)) {
				best = r
			}
		}
		return best
	}
	exists := func(pattern string) bool {
		for p := range pkgs {
			if matches(pattern, p) {
				return true
			}
		}
		return false
	}
	isLinked := func(lib string) bool {
		for d := range linked {
			if d == lib || strings.HasPrefix(d, lib+"/") {
				return true
			}
		}
		return false
	}
	seen := map[string]bool{}
	for _, r := range depRules {
		t.Run(r.pkg, func(t *testing.T) {
			if seen[r.pkg] {
				t.Fatalf("two rules for %s: keep one", r.pkg)
			}
			seen[r.pkg] = true
			var covered []string
			for p := range pkgs {
				if rp := ruleOf(p); rp != nil && rp.pkg == r.pkg {
					covered = append(covered, p)
				}
			}
			if len(covered) == 0 {
				t.Errorf("the rule for %s covers no package of ours: correct or remove it (it would keep nothing)", r.pkg)
			}
			for _, m := range r.may {
				if m != anyOfOurs && !exists(m) {
					t.Errorf("the rule for %s allows %s, which is no package of ours: correct or remove it", r.pkg, m)
				}
			}
			for _, lib := range append(slices.Clone(r.noDeps), r.noImports...) {
				if !isLinked(lib) {
					t.Errorf("the rule for %s forbids %s, which nothing of ours links any more: correct or remove it", r.pkg, lib)
				}
			}
			slices.Sort(covered)
			for _, p := range covered {
				info := pkgs[p]
				for _, imp := range info.imports {
					ours, ok := strings.CutPrefix(imp, mod)
					if !ok {
						if slices.Contains(r.noImports, imp) {
							t.Errorf("%s imports %s: %s", p, imp, r.why)
						}
						continue
					}
					if !slices.ContainsFunc(r.may, func(m string) bool { return matches(m, ours) }) {
						t.Errorf("%s imports %s, which its rule does not allow: %s", p, ours, r.why)
					}
				}
				for _, dep := range info.deps {
					for _, lib := range r.noDeps {
						if dep == lib || strings.HasPrefix(dep, lib+"/") {
							t.Errorf("%s depends on %s: %s", p, dep, r.why)
						}
					}
				}
			}
		})
	}
	t.Run("every package has a rule", func(t *testing.T) {
		var missing []string
		for p := range pkgs {
			if ruleOf(p) == nil {
				missing = append(missing, p)
			}
		}
		slices.Sort(missing)
		for _, p := range missing {
			t.Errorf("no rule covers %s: add its line to depRules (what of ours it may import, which libraries it may not, and why)", p)
		}
	})
}

// matches reports whether a package path matches a rule's pattern: the
// path itself, dir/... for dir and every package under it, or "..." for
// any.
func matches(pattern, pkg string) bool {
	if pattern == anyOfOurs {
		return true
	}
	if dir, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == dir || strings.HasPrefix(pkg, dir+"/")
	}
	return pattern == pkg
}
