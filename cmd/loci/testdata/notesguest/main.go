// Command notesguest is the source package the end-to-end tests install:
// a WASI command (contract v1) filing each .txt file of the folder a
// miner names, discovered past a cursor of file names, the documents
// inline. Built with GOOS=wasip1 GOARCH=wasm by the tests. Handed a
// token (a miner's credential, an OAuth sign-in's access token), it also
// files a note "received-token" holding the token's SHA-256 and length,
// never the token.
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/loci-dev/loci/sources/contract"
)

type notes struct{}

type cursor struct {
	Name string `json:"name"`
}

func (notes) Resolve(req *contract.Request) (*contract.Answer, error) {
	if !filepath.IsAbs(req.Locator) {
		return nil, contract.Errorf(contract.ErrInvalid, "the locator %q is not an absolute path", req.Locator)
	}
	return &contract.Answer{Identity: &contract.Identity{Locator: filepath.Clean(req.Locator)}}, nil
}

func (notes) Discover(req *contract.Request) (*contract.Answer, error) {
	var after cursor
	if len(req.Cursor) > 0 {
		if err := json.Unmarshal(req.Cursor, &after); err != nil {
			return nil, contract.Errorf(contract.ErrCursor, "not a notes cursor")
		}
	}
	ents, err := os.ReadDir(req.Locator)
	if err != nil {
		return nil, contract.Errorf(contract.ErrFailed, "reading %s: %v", req.Locator, err)
	}
	var names []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".txt") && e.Name() > after.Name {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	a := &contract.Answer{Items: []contract.Item{}}
	if req.Token != "" && len(req.Cursor) == 0 {
		sum := sha256.Sum256([]byte(req.Token))
		text := fmt.Sprintf("received a token of %d bytes, sha256 %s", len(req.Token), hex.EncodeToString(sum[:]))
		a.Items = append(a.Items, contract.Item{ID: "received-token", Cursor: json.RawMessage(`{"name":""}`), Size: int64(len(text)),
			Document: &contract.Document{Name: "received-token", Kind: "note", Units: []string{text}, Bytes: int64(len(text))}})
	}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(req.Locator, n))
		if err != nil {
			return nil, contract.Errorf(contract.ErrFailed, "reading %s: %v", n, err)
		}
		c, _ := json.Marshal(cursor{Name: n})
		a.Items = append(a.Items, contract.Item{ID: n, Cursor: c, Size: int64(len(b)),
			Document: &contract.Document{Name: strings.TrimSuffix(n, ".txt"), Kind: "note", Units: []string{string(b)}, Bytes: int64(len(b))}})
	}
	return a, nil
}

func (notes) Read(req *contract.Request) (*contract.Answer, error) {
	a := &contract.Answer{}
	for _, it := range req.Items {
		b, err := os.ReadFile(filepath.Join(req.Locator, it.ID))
		if err != nil {
			a.Documents = append(a.Documents, contract.ReadResult{ID: it.ID, Error: contract.Errorf(contract.ErrNotFound, "%v", err)})
			continue
		}
		a.Documents = append(a.Documents, contract.ReadResult{ID: it.ID,
			Document: &contract.Document{Name: strings.TrimSuffix(it.ID, ".txt"), Kind: "note", Units: []string{string(b)}, Bytes: int64(len(b))}})
	}
	return a, nil
}

func main() { contract.Serve(notes{}) }
