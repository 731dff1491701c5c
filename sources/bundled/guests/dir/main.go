// Command dir is the WebAssembly directory reference source: a bundled source package's module, built for
// GOOS=wasip1 GOARCH=wasm by go generate in sources/bundled.
package main

import "github.com/loci-dev/loci/sources/contract"

func main() { contract.Serve(nil) }
