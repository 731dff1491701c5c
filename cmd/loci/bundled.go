package main

import "github.com/loci-dev/loci/sources/bundled"

// bundledPackages lists the source packages shipped with loci (built from
// this repository and embedded by sources/bundled), installed from the
// start with origin bundled.
var bundledPackages = bundled.Packages
