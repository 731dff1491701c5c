// Package store holds loci's domain types and rules and the interface of
// its persistence: the palace (wings, rooms, drawers), deduplication links
// and the change log that derived indexes follow. The embedded Badger
// backend lives in store/badgerdb; a PostgreSQL backend implements the same
// DB interface later. Palace operations are plain functions over a Tx, so
// the one writer can run many of them in one transaction (group commit).
//
// store imports nothing of loci above it: not transport, actors, net/http or
// cobra.
package store
