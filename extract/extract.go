// Package extract turns a drawer's text into knowledge-graph observations:
// entities mentioned (a name and a kind of graph.Kinds) and simple facts
// (subject, predicate of graph.Predicates, object). Providers implement
// Extractor: Heuristic is built in (rules over English, no model, no
// network). It does no I/O of the palace: the extract job files what it
// returns.
package extract

import "context"

// Entity is a name seen in a text, with its kind and a confidence.
type Entity struct {
	Name       string  `json:"name"`
	Kind       string  `json:"kind"`
	Confidence float64 `json:"confidence"`
}

// Fact is a subject-predicate-object statement seen in a text.
type Fact struct {
	Subject     string  `json:"subject"`
	SubjectKind string  `json:"subject_kind"`
	Predicate   string  `json:"predicate"`
	Object      string  `json:"object"`
	ObjectKind  string  `json:"object_kind"`
	Confidence  float64 `json:"confidence"`
}

// Result is what a provider found in one text.
type Result struct {
	Entities []Entity `json:"entities"`
	Facts    []Fact   `json:"facts"`
}

// Extractor reads texts. Name is its provenance (the extractor of the
// mentions and facts it finds).
type Extractor interface {
	Name() string
	Extract(ctx context.Context, texts []string) ([]Result, error)
}
