// Package actors is loci's runtime on protoactor-go, shared by REST, MCP and
// the CLI: the writer (the single actor through which every change passes,
// batching the writes waiting in its mailbox into one synced transaction),
// the services on top of it (Palace, Search, Auth, Sources, and Miners,
// which keeps the configuration file's miners and source configurations
// and runs them as mine jobs), the job runtime (Jobs:
// the kinds registry, the dispatcher actor and one supervised worker actor
// per running job; the kinds themselves are in actors/kinds), and the
// change-log followers (the lexical Indexer, the Vectors, the event Bus),
// each a Follower that owns, recovers and stops its goroutine.
package actors
