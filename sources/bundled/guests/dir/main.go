// Command dir is the WebAssembly directory reference source: a bundled
// source package's module (directory-wasm), built for GOOS=wasip1
// GOARCH=wasm by go generate in sources/bundled. It mirrors the built-in
// directory source (sources/directory.go) where a WASI guest can: one
// document per regular file under the locator (mounted read-only at its
// own absolute path), named by its slash-separated path under it; hidden
// directories and the built-in's skipped ones (node_modules, target, ...)
// and symlinks left out; discovered in order of change time (the later of
// modification and inode change time) then path; empty files, files over
// max_file_bytes (2 MiB unless the option says) and unnameable paths
// listed as filtered; a read filters what is not UTF-8, holds a NUL byte
// or is blank, drops a byte-order mark and makes line endings \n. WASI
// shows no permission bits, so unlike the built-in a document carries no
// mode as its metadata: a chmod alone does not file it again.
package main

import "github.com/loci-dev/loci/sources/bundled/guests/internal/wire"

// main runs one call: wire.Serve is contract.Serve with the pages and
// reads written without encoding/json's reflection.
func main() { wire.Serve(source{}) }
