// Package actors is loci's supervisor tree on protoactor-go: the daemon
// root and its children. Today that is the writer, the single actor through
// which every change to the palace passes, batching the writes waiting in
// its mailbox into one synced transaction (group commit). The Palace
// service on top of it is the one service layer shared by REST, MCP and the
// CLI: reads open read transactions directly, writes are messages to the
// writer.
package actors
