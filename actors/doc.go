// Package actors is loci's runtime on protoactor-go, shared by REST, MCP and
// the CLI, and naming no service and no job kind: the actor System (Spawn,
// Send, Request, Poison for the actors others start) with the writer (the
// single actor through which every change passes, batching the writes
// waiting in its mailbox into one synced transaction), the job runtime
// (Jobs: the kinds registry, the dispatcher actor and one supervised worker
// actor per running job; a kind says what follows it in its own Follow, and
// the kinds themselves are in services/kinds), and the change-log followers
// (the lexical Indexer, the Vectors, the event Bus, the late near-duplicate
// judge), each a Follower that owns, recovers and stops its goroutine.
package actors
