package main_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestDependencyDirection keeps the folder rules of docs/ARCHITECTURE.md:
// dependencies point down (cmd > cli > transport > actors > index, sources >
// store), and the lower layers never reach the upper ones or their
// libraries.
func TestDependencyDirection(t *testing.T) {
	const mod = "github.com/loci-dev/loci/"
	rules := []struct {
		pkg       string
		forbidden []string
	}{
		{"store/...", []string{mod + "transport", mod + "actors", mod + "cli", mod + "index", mod + "sources", mod + "cmd", "github.com/spf13/cobra", "github.com/asynkron/protoactor-go", "github.com/go-chi/chi/v5"}},
		{"index/...", []string{mod + "transport", mod + "actors", mod + "cli", mod + "sources", "github.com/spf13/cobra"}},
		{"sources/...", []string{mod + "transport", mod + "actors", mod + "cli", mod + "index", "github.com/spf13/cobra"}},
		{"extract", []string{mod + "transport", mod + "actors", mod + "cli", mod + "index", mod + "sources", mod + "store/badgerdb", "github.com/spf13/cobra"}},
		{"store/graph", []string{mod + "transport", mod + "actors", mod + "cli", mod + "index", mod + "sources", "github.com/spf13/cobra", "github.com/dgraph-io/badger/v4"}},
		{"triggers", []string{mod + "transport", mod + "actors", mod + "cli", mod + "index", mod + "sources", "github.com/fsnotify/fsnotify", "github.com/spf13/cobra"}},
		{"triggers/...", []string{mod + "transport", mod + "actors", mod + "cli", mod + "index", "github.com/spf13/cobra"}},
		// protoactor itself pulls in net/http; actors' own imports may not
		// (checked below).
		{"actors/...", []string{mod + "transport", mod + "cli", "github.com/spf13/cobra", "github.com/go-chi/chi/v5"}},
		// The runtime names no service and no kind; the services and
		// their kinds sit on it, below the interfaces.
		{"actors/...", []string{mod + "services"}},
		{"services/...", []string{mod + "transport", mod + "cli", mod + "cmd", "github.com/spf13/cobra", "github.com/go-chi/chi/v5"}},
		{"transport/...", []string{mod + "cli", mod + "cmd", "github.com/spf13/cobra"}},
		// The API's types are a leaf every layer may use.
		{"api/...", []string{mod + "store", mod + "actors", mod + "transport", mod + "cli", mod + "index", mod + "sources", mod + "cmd"}},
		// The CLI is an HTTP client: wire types, the client, the error type
		// and the configuration, never the store's backends or the actors.
		// The agent integrations edit files: no daemon, store or transport.
		{"integration", []string{mod + "transport", mod + "actors", mod + "cli", mod + "index", mod + "sources", mod + "store/badgerdb", "github.com/spf13/cobra", "net/http"}},
		{"assets", []string{mod + "transport", mod + "actors", mod + "cli", mod + "index", mod + "sources", mod + "store/badgerdb", mod + "integration", "github.com/spf13/cobra"}},
		// The login service writes a unit and runs the service manager: no
		// daemon, store or HTTP.
		{"service", []string{mod + "transport", mod + "actors", mod + "cli", mod + "index", mod + "sources", mod + "store/badgerdb", mod + "integration", "github.com/spf13/cobra", "net/http"}},
		{"cli/...", []string{mod + "actors", mod + "store/badgerdb", mod + "index", mod + "sources", "github.com/dgraph-io/badger/v4", "github.com/asynkron/protoactor-go", mod + "cmd"}},
	}
	for _, r := range rules {
		out, err := exec.Command("go", "list", "-deps", "-test=false", "../../"+r.pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", r.pkg, err, out)
		}
		deps := strings.Fields(string(out))
		for _, dep := range deps {
			for _, f := range r.forbidden {
				if dep == f || strings.HasPrefix(dep, f+"/") {
					t.Errorf("%s depends on %s", r.pkg, dep)
				}
			}
		}
	}
	// Badger (expvar) and protoactor pull in net/http themselves; our own
	// store and actors packages may not import it.
	for _, pkg := range []string{"../../store/...", "../../actors/..."} {
		out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}: {{join .Imports " "}}`, pkg).CombinedOutput()
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if slices.Contains(strings.Fields(line), "net/http") {
				t.Errorf("%s imports net/http: HTTP belongs to transport", strings.Split(line, ":")[0])
			}
		}
	}
	// The transport-facing CLI may import only these packages of ours.
	out, err := exec.Command("go", "list", "-f", `{{join .Imports "\n"}}`, "../../cli").CombinedOutput()
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range strings.Fields(string(out)) {
		if strings.HasPrefix(imp, mod) {
			switch strings.TrimPrefix(imp, mod) {
			case "transport/client", "api", "fault", "config", "store/disk", "project", "assets", "integration", "service":
			default:
				t.Errorf("cli imports %s", imp)
			}
		}
	}
}
