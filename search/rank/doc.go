// Package rank is the pure part of a search: functions over candidate
// lists, ids best first, that read nothing and write nothing. It holds
// the fusion of the legs' lists (reciprocal rank fusion, one leg's order,
// the auto ranking's score fusion), the context a candidate's neighbours
// lend it, pseudo-relevance feedback's terms and merge, the graph
// expansion's order, and Keep, the batched scope check a leg asks its
// caller in rank order. It imports only the standard library, so the
// indexes (which ask Keep) and the configuration (which validates the
// fusion's names) may use it; package search runs the legs against the
// indexes and the store and calls these.
package rank
