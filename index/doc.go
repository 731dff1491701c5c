// Package index holds loci's derived search data, each in a subpackage:
// lexical (the Bleve index with loci's own BM25), vector (exact scan and
// the HNSW graph, saved and loaded) and embed (embedding providers and
// profiles). Every index is rebuilt from the store when missing and kept
// current by a change-log follower in package actors. The legs' shared
// scope check (Keep) and the fusion of their lists are the ranking's, in
// package search/rank.
package index
