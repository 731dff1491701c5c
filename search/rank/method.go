package rank

// Method is how the auto ranking combines its legs (the configuration's
// search.fusion, validated against Methods).
type Method string

// The fusion methods.
const (
	// MethodScores adds the legs' scores: BM25 over the best BM25 of the
	// candidates, plus semantic_weight times the cosine similarity.
	MethodScores Method = "scores"
	// MethodRRF fuses the legs' ranks by weighted reciprocal rank
	// (WeightedRRF).
	MethodRRF Method = "rrf"
)

// Methods are the fusion methods, in the order the configuration's
// messages name them.
var Methods = []Method{MethodScores, MethodRRF}
