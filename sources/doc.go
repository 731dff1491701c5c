// Package sources holds what mining reads: the Adapter interface a source
// implements (discover documents past a cursor, read them, normalise them
// into units), the Registry of adapters a daemon offers, the built-in
// directory source, Chunk, which packs a document's units into drawer
// texts, and ScanFile and Redact, which find the secrets in a document and
// replace them before anything is filed (loci's own rules and gitleaks'
// rule set, embedded as data in rules/gitleaks.toml, behind one keyword
// prefilter). The rest of the pipeline (what a document changes in the
// palace) is store.FileDocument; the mine job kind (actors/kinds/mine.go)
// runs the stages in order. Installed WebAssembly sources will be a second
// Adapter.
package sources
