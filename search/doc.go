// Package search is loci's search service (Search): it checks a query,
// waits briefly for the change-log followers (the lexical Indexer and the
// Vectors, package actors) to apply what was committed before it began,
// runs the legs against the indexes (package index) inside one read of
// the store, and builds the page: one leg as ranked, reciprocal rank
// fusion for hybrid, or the auto ranking (score fusion, pseudo-relevance
// feedback, the context of a candidate's neighbours, an offered answer),
// then the graph expansion and the hits' names, places and passages.
// What is pure in that (fusion, context, feedback, expansion's order,
// the legs' Keep) is in package search/rank, as functions over candidate
// lists; this package reads and calls them. It stands on the runtime
// (actors), the indexes, the store and api, never on the services.
package search
