// Package store holds loci's domain types and rules and the interface of
// its persistence: the palace (wings, rooms, drawers), deduplication links
// and the change log that derived indexes follow. The embedded Badger
// backend lives in store/badgerdb; a PostgreSQL backend implements the same
// DB interface later. A backend registers its URL scheme (RegisterBackend)
// and the daemon opens the store by its location (Open), asking for what
// only some backends offer (Embedded, NearLoader, Shared) instead of naming
// one; each backend brings its migration runner (DB.Migrator). Palace
// operations are plain functions over a Tx, so the one writer can run many
// of them in one transaction (group commit).
//
// store imports nothing of loci above it: not transport, actors, net/http or
// cobra.
package store
