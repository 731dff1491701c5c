package transport

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/answers.json with the answers rendered now")

// goldenFile holds, by name, the JSON of answers as clients have read them
// since before package api: an answer is pinned here rather than by the
// service or store types it is made from, whose shapes are free to change.
const goldenFile = "testdata/answers.json"

var golden struct {
	sync.Mutex
	answers map[string]json.RawMessage
}

// sameAnswer reports when v renders as other JSON than the golden answer
// of that name (key order aside). With -update it records v instead.
func sameAnswer(t *testing.T, name string, v any) {
	t.Helper()
	golden.Lock()
	defer golden.Unlock()
	if golden.answers == nil {
		golden.answers = map[string]json.RawMessage{}
		if b, err := os.ReadFile(goldenFile); err == nil {
			if err := json.Unmarshal(b, &golden.answers); err != nil {
				t.Fatalf("%s: %v", goldenFile, err)
			}
		}
	}
	got, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if *updateGolden {
		golden.answers[name] = got
		b, _ := json.MarshalIndent(golden.answers, "", "  ")
		if err := os.MkdirAll(filepath.Dir(goldenFile), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(goldenFile, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, ok := golden.answers[name]
	if !ok {
		t.Fatalf("no golden answer %q in %s (run go test ./transport -run %s -update)", name, goldenFile, t.Name())
	}
	var x, y any
	_ = json.Unmarshal(want, &x)
	_ = json.Unmarshal(got, &y)
	if !reflect.DeepEqual(x, y) {
		t.Errorf("%s:\n golden %s\n now    %s", name, want, got)
	}
}
