// Package conformance is the language-neutral cases every source passes,
// built-in or installed: paging strictly after a cursor, a foreign cursor
// refused, stable revisions and normalisation, nothing after the last
// cursor. Tests run them against the built-in directory source and the
// WebAssembly one; loci source test runs them against a built module.
package conformance
