// Package sources will hold loci's source adapters (the built-in directory
// source), chunking and the WebAssembly sandbox for installed sources. It
// is empty until the mining capability lands.
package sources
