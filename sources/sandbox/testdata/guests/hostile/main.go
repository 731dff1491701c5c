// Command hostile is a guest that tries what a source package must not be
// able to do, one thing per call, chosen by the option "do"; what it
// managed comes back as its resolved locator (a JSON object), so a test
// can see exactly what the sandbox let through.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/loci-dev/loci/sources/contract"
)

func main() {
	var req contract.Request
	if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
		fmt.Fprintln(os.Stderr, "reading the request:", err)
		os.Exit(1)
	}
	o := req.Options
	switch o["do"] {
	case "readfile":
		b, err := os.ReadFile(o["path"])
		report(map[string]any{"content": string(b), "error": errString(err)})
	case "listdir":
		es, err := os.ReadDir(o["path"])
		var names []string
		for _, e := range es {
			names = append(names, e.Name())
		}
		report(map[string]any{"names": names, "error": errString(err)})
	case "writefile":
		err := os.WriteFile(o["path"], []byte("written by the guest"), 0o644)
		report(map[string]any{"error": errString(err)})
	case "env":
		report(map[string]any{"value": os.Getenv(o["name"]), "environ": os.Environ(), "args": os.Args})
	case "clock":
		report(map[string]any{"now": time.Now().UTC().Format(time.RFC3339Nano)})
	case "run", "fetch":
		if len(req.Results) > 0 {
			var lens []int
			for i, r := range req.Results {
				lens = append(lens, len(r.Stdout))
				if o["sizes"] != "" { // the sizes only: the output may not fit in an answer
					req.Results[i].Stdout = nil
				}
			}
			report(map[string]any{"results": req.Results, "state": string(req.State), "lens": lens})
			return
		}
		n := contract.Need{Kind: o["do"], Program: o["program"], Dir: o["dir"], URL: o["url"]}
		if o["args"] != "" {
			n.Args = strings.Split(o["args"], " ")
		}
		needs := []contract.Need{n}
		for len(needs) < atoi(o["count"]) {
			needs = append(needs, n)
		}
		answer(contract.Answer{Needs: needs, State: json.RawMessage(`{"round":1}`)})
	case "needs-forever":
		answer(contract.Answer{Needs: []contract.Need{{Kind: "run", Program: "true"}}})
	case "unknown-need":
		answer(contract.Answer{Needs: []contract.Need{{Kind: "teleport"}}})
	case "needs-and-error":
		answer(contract.Answer{Needs: []contract.Need{{Kind: "run", Program: "true"}}, Error: contract.Errorf("failed", "both")})
	case "alloc":
		var keep [][]byte
		for i := 0; i < 4096; i++ {
			b := make([]byte, 1<<20)
			for j := range b {
				b[j] = byte(i + j)
			}
			keep = append(keep, b)
		}
		report(map[string]any{"kept": len(keep)})
	case "loop":
		for {
		}
	case "sleep":
		time.Sleep(time.Hour)
	case "flood":
		chunk := []byte(strings.Repeat("x", 1<<16))
		os.Stdout.WriteString(`{"identity":{"locator":"`)
		for i := 0; i < 20<<4; i++ { // 20 MiB
			if _, err := os.Stdout.Write(chunk); err != nil {
				fmt.Fprintln(os.Stderr, "write failed:", err)
			}
		}
		os.Stdout.WriteString(`"}}`)
	case "malformed":
		os.Stdout.WriteString(`{"identity": {"locator": "x"`)
	case "not-object":
		os.Stdout.WriteString(`null`)
	case "nothing":
	case "neither":
		os.Stdout.WriteString(`{}`)
	case "panic":
		var p *contract.Request
		fmt.Println(p.Locator)
	case "exit":
		fmt.Fprintln(os.Stderr, "giving up with", os.Getenv("TOKEN"))
		os.Exit(3)
	case "guest-error":
		answer(contract.Answer{Error: contract.Errorf(contract.ErrInvalid, "no such thing")})
	default:
		answer(contract.Answer{Identity: &contract.Identity{Locator: req.Locator}})
	}
}

func report(v map[string]any) {
	b, _ := json.Marshal(v)
	answer(contract.Answer{Identity: &contract.Identity{Locator: string(b)}})
}

func answer(a contract.Answer) {
	if err := json.NewEncoder(os.Stdout).Encode(a); err != nil {
		os.Exit(1)
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
