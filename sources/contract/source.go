package contract

import _ "embed" // Source is contract.go itself

// Source is this package's contract.go, byte for byte: loci source init
// copies it into a new Go source project (its contract/ package), so a
// guest speaks the contract of the loci that made it with nothing to
// download. A guest that imports this package does not link it unless it
// uses it.
//
//go:embed contract.go
var Source string
