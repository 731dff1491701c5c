// Command githistory is the git-history source: a bundled source
// package's module, built for GOOS=wasip1 GOARCH=wasm by go generate in
// sources/bundled. Its locator is a git work tree; it runs git (the one
// program its manifest names, through the host, no shell) and files one
// document per commit: the hash, author, date, the whole message and the
// paths it changed, so that an agent searching why something changed
// finds the commit that says. Discovery is incremental by commit and
// carries each document whole, so nothing needs reading after it; read
// still answers for listed commits.
//
// The listing: without a cursor, every commit reachable from HEAD,
// oldest first (the reverse of git log's order), paged by Limit. Each
// item's cursor records the range it belongs to (base..head, both
// hashes), the range's size and the commit's position in it, so the next
// page asks git for exactly the commits after it. Once a range is done,
// discovery past its cursor lists head..HEAD: the commits HEAD reaches
// that the last listing's head did not. After a rewritten history (a
// rebase, an amended commit) those are the rewritten commits, listed as
// new ones; if the last listing's head is gone from the repository
// (rewritten and pruned), the cursor is cursor_invalid and the miner
// says to mine again with full, which reads everything again without
// duplicating. A listing's output over the host's cap is asked for again
// in halves; a single commit over it is listed as filtered (too_large).
package main

import "github.com/loci-dev/loci/sources/bundled/guests/internal/wire"

func main() { wire.Serve(source{}) }
