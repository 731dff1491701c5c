// Package index holds loci's derived search data, each in a subpackage:
// lexical (the Bleve index with loci's own BM25), vector (exact scan and
// the HNSW graph, saved and loaded) and embed (embedding providers and
// profiles). Every index is rebuilt from the store when missing and kept
// current by a change-log follower in package actors. This package itself
// holds what the legs share: Keep, the batched scope check a search asks
// in rank order.
package index
