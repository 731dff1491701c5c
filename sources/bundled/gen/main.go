// Command gen builds the bundled source packages' modules from their
// guests (go generate ./sources/bundled runs it in that folder):
//
//	GOOS=wasip1 GOARCH=wasm go build -trimpath -ldflags=-s -buildvcs=false
//
// for each guest, into modules/<name>/<name>.wasm beside the manifest
// written by hand, and writes modules/toolchain.txt: the go version that
// built them and each module's SHA-256. The same toolchain builds the
// same bytes (the reproducibility test in sources/bundled checks it), so
// the modules are committed and `go build ./cmd/loci` needs no
// WebAssembly toolchain.
package main

import (
	"crypto/sha256"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// guests are the bundled packages' names and the guest each is built from
// (relative to sources/bundled).
var guests = []struct{ name, pkg string }{
	{"directory-wasm", "./guests/dir"},
	{"git-history", "./guests/githistory"},
}

// StampFile is the stamp's name under the output folder.
const StampFile = "toolchain.txt"

func main() {
	out := flag.String("o", "modules", "the folder of the packages (a folder per package)")
	flag.Parse()
	version, err := goVersion()
	if err != nil {
		log.Fatal(err)
	}
	stamp := version + "\n"
	for _, g := range guests {
		dir := filepath.Join(*out, g.name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			log.Fatal(err)
		}
		wasm := filepath.Join(dir, g.name+".wasm")
		abs, err := filepath.Abs(wasm)
		if err != nil {
			log.Fatal(err)
		}
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s", "-buildvcs=false", "-o", abs, g.pkg)
		// Nothing of the caller's environment changes the bytes.
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0", "GOFLAGS=", "GOWASM=", "GOEXPERIMENT=")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			log.Fatalf("building %s: %v", g.name, err)
		}
		b, err := os.ReadFile(wasm)
		if err != nil {
			log.Fatal(err)
		}
		stamp += fmt.Sprintf("%x  %s/%s.wasm\n", sha256.Sum256(b), g.name, g.name)
		log.Printf("%s: %d bytes", wasm, len(b))
	}
	if err := os.WriteFile(filepath.Join(*out, StampFile), []byte(stamp), 0o644); err != nil {
		log.Fatal(err)
	}
}

// goVersion is the go command's toolchain version (go1.26.8).
func goVersion() (string, error) {
	b, err := exec.Command("go", "env", "GOVERSION").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOVERSION: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}
