package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// bridgeBench measures what the stdio bridge (`loci mcp`) adds to one
// loci_search call: the same sequential calls, on a palace of n drawers,
// made over HTTP to /mcp directly and through the bridge's standard
// input/output, in alternating rounds (a shared machine drifts between
// blocks). Both clients send the same bytes and read the whole answer.
func bridgeBench(bin, dir string, n int) error {
	d, _, err := start(bin, filepath.Join(dir, "bridge"))
	if err != nil {
		return err
	}
	defer d.stop()
	if _, err := load(d.addr, "/api/wings/bench/rooms/notes/drawers", n, 16, 13); err != nil {
		return err
	}
	queries := make([][]byte, 500)
	r := rand.New(rand.NewPCG(13, 13))
	for i := range queries {
		queries[i], _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
			"params": map[string]any{"name": "loci_search", "arguments": map[string]any{"query": strings.Join(strings.Fields(sentence(r))[:3], " "), "ranking": "lexical"}}})
	}
	session, err := mcpInit(d.addr)
	if err != nil {
		return err
	}
	direct := func(i int) error {
		var out struct {
			Result *struct {
				IsError bool `json:"isError"`
			} `json:"result"`
		}
		if err := mcpPost(d.addr, session, queries[i%len(queries)], &out); err != nil {
			return err
		}
		if out.Result == nil || out.Result.IsError {
			return fmt.Errorf("loci_search over HTTP failed")
		}
		return nil
	}

	cmd := exec.Command(bin, "--addr", d.addr, "mcp")
	cmd.Env = append(os.Environ(), "LOCI_LOG=warn")
	cmd.Stderr = os.Stderr
	in, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { in.Close(); cmd.Wait() }()
	rd := bufio.NewReaderSize(stdout, 64<<10)
	roundTrip := func(msg []byte, answer bool) ([]byte, error) {
		if _, err := in.Write(append(msg, '\n')); err != nil {
			return nil, err
		}
		if !answer {
			return nil, nil
		}
		return rd.ReadBytes('\n')
	}
	if _, err := roundTrip([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"locibench","version":"1"}}}`), true); err != nil {
		return err
	}
	if _, err := roundTrip([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), false); err != nil {
		return err
	}
	viaBridge := func(i int) error {
		line, err := roundTrip(queries[i%len(queries)], true)
		if err != nil {
			return err
		}
		var out struct {
			Result *struct {
				IsError bool `json:"isError"`
			} `json:"result"`
		}
		if err := json.Unmarshal(line, &out); err != nil || out.Result == nil || out.Result.IsError {
			return fmt.Errorf("loci_search through the bridge: %s", line)
		}
		return nil
	}

	const rounds, per = 20, 100
	var lat [2][]time.Duration
	for i := range 200 { // warm both paths (connections, caches)
		if err := direct(i); err != nil {
			return err
		}
		if err := viaBridge(i); err != nil {
			return err
		}
	}
	cpu0, _ := procCPU(cmd.Process.Pid)
	for round := range rounds {
		for k, call := range []func(int) error{direct, viaBridge} {
			for j := range per {
				t0 := time.Now()
				if err := call(round*per + j); err != nil {
					return err
				}
				lat[k] = append(lat[k], time.Since(t0))
			}
		}
	}
	cpu1, _ := procCPU(cmd.Process.Pid)
	p50d, p50b := pct(lat[0], 0.5), pct(lat[1], 0.5)
	p99d, p99b := pct(lat[0], 0.99), pct(lat[1], 0.99)
	fmt.Printf("stdio bridge, loci_search (lexical, %d drawers), %d sequential calls each, alternating rounds: HTTP /mcp p50 %s p99 %s; through `loci mcp` p50 %s p99 %s; overhead p50 %s (target < 1 ms); the bridge's CPU per call %s\n",
		n, rounds*per, p50d.Round(time.Microsecond), p99d.Round(time.Microsecond), p50b.Round(time.Microsecond), p99b.Round(time.Microsecond),
		(p50b - p50d).Round(time.Microsecond), ((cpu1 - cpu0) / time.Duration(rounds*per)).Round(time.Microsecond))
	return nil
}
