package installed

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"testing"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/sources"
	"github.com/loci-dev/loci/sources/contract"
	"github.com/loci-dev/loci/sources/sandbox"
	"github.com/loci-dev/loci/store"
)

// Whatever a package answers, the adapter neither panics nor hands the
// mine job what breaks its rules: a discovery's ids are unique and its
// cursors JSON objects the adapter's ParseCursor accepts; a read has one
// result per ref, each a document or an error, and any error that is
// not filtered or gone is a fault naming the source.
func FuzzAnswers(f *testing.F) {
	for _, seed := range []string{
		`{"items":[{"id":"a","cursor":{"n":1}},{"id":"b","cursor":{"n":2},"document":{"name":"b","units":["x"]}}],"more":false}`,
		`{"items":[{"id":"a","cursor":{"n":1}}],"more":true}`,
		`{"items":[{"id":"a","cursor":{"n":1}},{"id":"a","cursor":{"n":2}}]}`,
		`{"documents":[{"id":"a","document":{"name":"a","room":"r","units":["x"],"origin":{"k":1}}},{"id":"b","error":{"kind":"filtered","message":"m"}}]}`,
		`{"documents":[{"id":"b","error":{"kind":"exploded","message":"\u001b[2J"}}]}`,
		`{"error":{"kind":"cursor_invalid","message":"no"}}`,
		`{"identity":{"locator":"x","account":"y"}}`,
		`{"needs":[{"kind":"run","program":"git"}]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var ans contract.Answer
		if json.Unmarshal(raw, &ans) != nil {
			return
		}
		calls := 0
		call := func(ctx context.Context, _ sandbox.Grants, req *contract.Request) (*contract.Answer, error) {
			if calls++; calls > 50 {
				return &contract.Answer{}, nil // the fuzzer's answer forever would only test the cap
			}
			a := ans
			return &a, nil
		}
		a := &adapter{m: *manifest(t, "").Manifest, call: call, o: Options{Getenv: func(string) (string, bool) { return "", false }},
			page: 10, maxRefs: 100, maxBytes: 1 << 20}
		run := sources.Run{ID: store.SourceIdentity{Adapter: "notes", Locator: "x"}}
		refs, err := a.Discover(t.Context(), run, nil)
		if err == nil {
			seen := map[string]bool{}
			for _, r := range refs {
				if r.ID == "" || seen[r.ID] || a.ParseCursor(r.Cursor) != nil || len(r.Cursor) == 0 {
					t.Fatalf("discovery handed the job %+v", r)
				}
				seen[r.ID] = true
			}
		} else if fe := fault.As(err); fe.Code == fault.ServerFailed {
			t.Fatalf("an error that is no fault: %v", err)
		}
		calls = 0
		asked := []sources.Ref{{ID: "a", Cursor: json.RawMessage(`{"n":1}`)}, {ID: "b", Cursor: json.RawMessage(`{"n":2}`)}}
		res := a.ReadBatch(t.Context(), run, asked)
		if len(res) != len(asked) {
			t.Fatalf("%d results for %d refs", len(res), len(asked))
		}
		for _, r := range res {
			if (r.Doc == nil) == (r.Err == nil) {
				t.Fatalf("a result with a document and an error, or neither: %+v", r)
			}
			_, filtered := sources.IsFiltered(r.Err)
			if r.Err != nil && !filtered && !errors.Is(r.Err, fs.ErrNotExist) && fault.As(r.Err).Code == fault.ServerFailed {
				t.Fatalf("a read error that is no fault: %v", r.Err)
			}
			if r.Doc != nil && (r.Doc.Room == "" || r.Doc.Name == "") {
				t.Fatalf("a document without its name or room: %+v", r.Doc)
			}
		}
		_, _ = a.Resolve("x", nil)
	})
}
