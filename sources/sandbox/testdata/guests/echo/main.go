// Command echo is a well-behaved guest for the sandbox's tests and
// benchmarks: resolve answers the locator as it came, discover one item
// per option, read one document per item naming it.
package main

import (
	"encoding/json"
	"slices"

	"github.com/loci-dev/loci/sources/contract"
)

type echo struct{}

func (echo) Resolve(req *contract.Request) (*contract.Answer, error) {
	return &contract.Answer{Identity: &contract.Identity{Account: req.Account, Locator: req.Locator}}, nil
}

func (echo) Discover(req *contract.Request) (*contract.Answer, error) {
	var items []contract.Item
	for _, k := range slices.Sorted(mapsKeys(req.Options)) {
		cur, _ := json.Marshal(map[string]string{"after": k})
		items = append(items, contract.Item{ID: k, Cursor: cur})
	}
	return &contract.Answer{Items: items}, nil
}

func (echo) Read(req *contract.Request) (*contract.Answer, error) {
	var docs []contract.ReadResult
	for _, it := range req.Items {
		docs = append(docs, contract.ReadResult{ID: it.ID, Document: &contract.Document{Name: it.ID, Units: []string{"text of " + it.ID}}})
	}
	return &contract.Answer{Documents: docs}, nil
}

func mapsKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func main() { contract.Serve(echo{}) }
