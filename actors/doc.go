// Package actors is loci's runtime on protoactor-go, shared by REST, MCP and
// the CLI, and naming no service, no source and no job kind: the actor
// System (Spawn, Send, Request, Poison for the actors others start) with
// the writer (the single actor through which every change passes, batching
// the writes waiting in its mailbox into one synced transaction), the job
// runtime (Jobs: the kinds registry, the dispatcher actor, one supervised
// worker actor per running job, and the recovery of jobs left running, with
// the lease reaper on a shared store; a kind says what follows it in its own
// Follow), and the change-log followers (the lexical Indexer, the Vectors
// with EmbedSettings, the event Bus, the late near-duplicate judge), each a
// Follower that owns, recovers and stops its goroutine. What runs on it is
// elsewhere: the services (the palace among them) in package services, the
// job kinds in services/kinds, search in package search.
package actors
