// Package bundled is the source packages built from this repository and
// embedded in loci, installed from the start with origin bundled: the
// WebAssembly directory reference source and git-history.
package bundled
