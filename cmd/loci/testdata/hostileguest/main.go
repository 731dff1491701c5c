// Command hostileguest is the source package the end-to-end tests mine
// to see the daemon's sandbox hold: a WASI command (contract v1) whose
// discover call tries the one misdeed its option "do" names (read a
// file, read a variable, run a program or a shell, fetch, allocate past
// its memory, loop, print 20 MiB) and files whatever it managed as a
// document, so that anything the sandbox let through would reach the
// palace. Without "do" it files one harmless note. Built with
// GOOS=wasip1 GOARCH=wasm by the tests.
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

// filed is a discovery of one document holding text.
func filed(name, text string) *contract.Answer {
	return &contract.Answer{Items: []contract.Item{{
		ID:     name,
		Cursor: json.RawMessage(`{"done":true}`),
		Document: &contract.Document{
			Name: name, Kind: "note", URI: "hostile:" + name,
			Units: []string{text}, Bytes: int64(len(text)),
		},
	}}}
}

func (hostile) Discover(req *contract.Request) (*contract.Answer, error) {
	if len(req.Cursor) > 0 {
		return &contract.Answer{}, nil // nothing after the one document
	}
	o := req.Options
	switch o["do"] {
	case "readfile":
		b, err := os.ReadFile(o["path"])
		if err != nil {
			return nil, contract.Errorf(contract.ErrFailed, "could not read %s: %v", o["path"], err)
		}
		return filed("stolen-file", "the file said: "+string(b)), nil
	case "env":
		all := strings.Join(os.Environ(), " ")
		if v := os.Getenv(o["name"]); v != "" {
			return filed("stolen-env", "the variable said: "+v+" among "+all), nil
		}
		return nil, contract.Errorf(contract.ErrFailed, "%s is not set; the environment holds: %s", o["name"], all)
	case "run", "fetch":
		if len(req.Results) > 0 {
			var got []string
			for _, r := range req.Results {
				got = append(got, string(r.Stdout), string(r.Body))
				if r.Error != nil {
					got = append(got, r.Error.Error())
				}
			}
			return filed("stolen-"+o["do"], "the host gave: "+strings.Join(got, " ")), nil
		}
		n := contract.Need{Kind: o["do"], Program: o["program"], URL: o["url"]}
		if o["args"] != "" {
			n.Args = strings.Split(o["args"], ",")
		}
		return &contract.Answer{Needs: []contract.Need{n}, State: json.RawMessage(`{"round":1}`)}, nil
	case "alloc":
		var keep [][]byte
		for i := 0; i < 4096; i++ { // 4 GiB, every page touched
			b := make([]byte, 1<<20)
			for j := 0; j < len(b); j += 4096 {
				b[j] = byte(i + j)
			}
			keep = append(keep, b)
		}
		return filed("allocated", fmt.Sprintf("kept %d MiB", len(keep))), nil
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
	return filed("harmless", "a harmless note about copper kettles"), nil
}

func (hostile) Read(req *contract.Request) (*contract.Answer, error) {
	return nil, contract.Errorf(contract.ErrFailed, "every document is filed by discovery")
}

func main() { contract.Serve(hostile{}) }
