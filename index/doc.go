// Package index will hold loci's derived search data: the Bleve lexical
// index, the HNSW vector index, rank fusion and embedding providers. Each
// index follows the store's change log and can be rebuilt from it. It is
// empty until the search capability lands.
package index
