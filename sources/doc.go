// Package sources holds what mining reads: the Adapter interface a source
// implements (discover documents past a cursor, read them, normalise them
// into units; each call given a Run: the source's identity, the run's
// options and its Credential, read at run time and never shown), the
// Registry of adapters a daemon offers (added, replaced and removed while
// it runs, each with its state and origin), Guard and Go, through which
// every call into an adapter's code runs (a panic fails a document or a
// job, naming the source, never the daemon), and the built-in
// sources: the directory source; the agents' session histories
// (claude-code and codex through SessionFiles, opencode from its SQLite
// store), whose documents are conversations of turns (transcript.go: turn
// headers, compact tool markers, never reasoning or tool output) and whose
// agents' cleanup the retention guard watches (Guarded); and the chat
// exports (chatgpt-export, claude-export), read one conversation at a time
// from its byte offset. Chunk packs a document's units into drawer texts;
// ScanFile and Redact find the secrets in a document and replace them
// before anything is filed (loci's own rules and gitleaks' rule set,
// embedded as data in rules/gitleaks.toml, behind one keyword prefilter).
// The rest of the pipeline (what a document changes in the palace) is
// store.FileDocument; the mine job kind (services/kinds/mine.go) runs the
// stages in order. Installed WebAssembly sources will be another Adapter.
package sources
