// Command hostileguest is the source package the end-to-end tests mine
// to see the daemon's sandbox hold: a WASI command (contract v1) that
// tries the one misdeed its option "do" names (read a file, read a
// variable, run a program or a shell, fetch, allocate past its memory,
// loop, print 20 MiB) and files whatever it managed as a document, so
// that anything the sandbox let through would reach the palace. The
// misdeed is done in its discover call, or with the option at=read in
// the read call of one item (discovery lists it beside a harmless note).
// Without "do" it files one harmless note. Built with GOOS=wasip1
// GOARCH=wasm by the tests.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/loci-dev/loci/sources/contract"
)

type hostile struct{}

func (hostile) Resolve(req *contract.Request) (*contract.Answer, error) {
	return &contract.Answer{Identity: &contract.Identity{Locator: filepath.Clean(req.Locator)}}, nil
}

const harmlessText = "a harmless note about copper kettles"

func doc(name, text string) *contract.Document {
	return &contract.Document{Name: name, Kind: "note", URI: "hostile:" + name, Units: []string{text}, Bytes: int64(len(text))}
}

// item is an item past cursor n, carrying d (nil: read it).
func item(id string, n int, d *contract.Document) contract.Item {
	return contract.Item{ID: id, Cursor: json.RawMessage(fmt.Sprintf(`{"n":%d}`, n)), Document: d}
}

func (hostile) Discover(req *contract.Request) (*contract.Answer, error) {
	if len(req.Cursor) > 0 {
		return &contract.Answer{}, nil // nothing after the last document
	}
	if req.Options["do"] == "" {
		return &contract.Answer{Items: []contract.Item{item("harmless", 1, doc("harmless", harmlessText))}}, nil
	}
	if req.Options["at"] == "read" {
		return &contract.Answer{Items: []contract.Item{item("harmless", 1, doc("harmless", harmlessText)), item("misdeed", 2, nil)}}, nil
	}
	text, needs, err := misdeed(req)
	if needs != nil || err != nil {
		return needs, err
	}
	return &contract.Answer{Items: []contract.Item{item("stolen", 1, doc("stolen", text))}}, nil
}

func (hostile) Read(req *contract.Request) (*contract.Answer, error) {
	var a contract.Answer
	for _, it := range req.Items {
		if it.ID != "misdeed" {
			a.Documents = append(a.Documents, contract.ReadResult{ID: it.ID, Document: doc(it.ID, harmlessText)})
			continue
		}
		text, needs, err := misdeed(req)
		switch {
		case needs != nil:
			return needs, nil
		case err != nil:
			e, ok := err.(*contract.Error)
			if !ok {
				e = contract.Errorf(contract.ErrFailed, "%v", err)
			}
			a.Documents = append(a.Documents, contract.ReadResult{ID: it.ID, Error: e})
		default:
			a.Documents = append(a.Documents, contract.ReadResult{ID: it.ID, Document: doc("stolen", text)})
		}
	}
	return &a, nil
}

// misdeed does what the option do names: the text it got, or the needs
// to ask the host for, or its error.
func misdeed(req *contract.Request) (string, *contract.Answer, error) {
	o := req.Options
	switch o["do"] {
	case "readfile":
		b, err := os.ReadFile(o["path"])
		if err != nil {
			return "", nil, contract.Errorf(contract.ErrFailed, "could not read %s: %v", o["path"], err)
		}
		return "the file said: " + string(b), nil, nil
	case "env":
		all := strings.Join(os.Environ(), " ")
		if v := os.Getenv(o["name"]); v != "" {
			return "the variable said: " + v + " among " + all, nil, nil
		}
		return "", nil, contract.Errorf(contract.ErrFailed, "%s is not set; the environment holds: %s", o["name"], all)
	case "run", "fetch":
		if len(req.Results) > 0 {
			var got []string
			for _, r := range req.Results {
				got = append(got, string(r.Stdout), string(r.Body))
				if r.Error != nil {
					got = append(got, r.Error.Error())
				}
			}
			return "the host gave: " + strings.Join(got, " "), nil, nil
		}
		n := contract.Need{Kind: o["do"], Program: o["program"], URL: o["url"]}
		if o["args"] != "" {
			n.Args = strings.Split(o["args"], ",")
		}
		return "", &contract.Answer{Needs: []contract.Need{n}, State: json.RawMessage(`{"round":1}`)}, nil
	case "alloc":
		var keep [][]byte
		for i := 0; i < 4096; i++ { // 4 GiB, every page touched
			b := make([]byte, 1<<20)
			for j := 0; j < len(b); j += 4096 {
				b[j] = byte(i + j)
			}
			keep = append(keep, b)
		}
		return fmt.Sprintf("kept %d MiB", len(keep)), nil, nil
	case "loop":
		for {
		}
	case "flood":
		chunk := strings.Repeat("x", 1<<16)
		os.Stdout.WriteString(`{"items":[{"id":"flood","cursor":{},"document":{"name":"flood","units":["`)
		for i := 0; i < 20<<4; i++ { // 20 MiB
			os.Stdout.WriteString(chunk)
		}
		os.Stdout.WriteString(`"]}}]}`)
		os.Exit(0)
	}
	return "", nil, contract.Errorf(contract.ErrInvalid, "no misdeed called %q", o["do"])
}

func main() { contract.Serve(hostile{}) }
