package extract

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loci-dev/loci/sources"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/graph"
)

// judged is an entity of a labelled sample: its name and kind as
// extracted, and whether a reader would file it (right: the proper name
// of a person, organisation, place, tool, product, standard, algorithm,
// dataset, language, event, work or date, of that kind or "other";
// wrong: an identifier or literal, a fragment, a common word, a label, a
// misspelled example, or a wrong kind).
type judged struct {
	Name  string `json:"name"`
	Kind  string `json:"kind"`
	Right bool   `json:"right"`
}

func readJudged(t *testing.T, path string) []judged {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []judged
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var j judged
		if err := json.Unmarshal(sc.Bytes(), &j); err != nil {
			t.Fatal(err)
		}
		out = append(out, j)
	}
	return out
}

// extracted is the entities read in texts, by key, with their kinds.
type extracted map[string]map[string]bool

func extractAll(t *testing.T, texts []string) extracted {
	t.Helper()
	out := extracted{}
	for i := 0; i < len(texts); i += 32 {
		res, err := Heuristic{}.Extract(context.Background(), texts[i:min(i+32, len(texts))])
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			for _, e := range r.Entities {
				k := graph.Key(e.Name)
				if out[k] == nil {
					out[k] = map[string]bool{}
				}
				out[k][e.Kind] = true
			}
		}
	}
	return out
}

// has reports the judged entity among those extracted: the same key, of
// its kind, or either "other" (the palace resolves them to one entity).
func (x extracted) has(j judged) bool {
	kinds := x[graph.Key(j.Name)]
	return kinds[j.Kind] || len(kinds) > 0 && (j.Kind == graph.KindOther || kinds[graph.KindOther])
}

// score checks a labelled sample against what the heuristic extracts now:
// precision over the judged entities it still extracts at least least, at
// least 80 % of them still extracted, and at most most entities in all.
func score(t *testing.T, sample []judged, x extracted, least float64, most int) {
	t.Helper()
	found, right := 0, 0
	for _, j := range sample {
		if !x.has(j) {
			t.Logf("no longer extracted: %s/%s (right %v)", j.Name, j.Kind, j.Right)
			continue
		}
		found++
		if j.Right {
			right++
		}
	}
	all := 0
	for _, kinds := range x {
		all += len(kinds)
	}
	precision := float64(right) / float64(max(found, 1))
	t.Logf("%d of %d judged entities still extracted, precision %.2f; %d entities in all", found, len(sample), precision, all)
	if found*5 < len(sample)*4 {
		t.Fatalf("only %d of the %d judged entities are still extracted: label a new sample", found, len(sample))
	}
	if precision < least {
		t.Fatalf("precision %.2f, below %.2f", precision, least)
	}
	if all > most {
		t.Fatalf("%d entities, more than %d: what is new is likely junk", all, most)
	}
}

// TestPrecisionOnThisRepository mines this repository's tree as the
// daemon would (the directory source, secrets redacted, 6,000-character
// chunks, lockfiles and generated files unread) and scores the heuristic
// against every entity it extracted from it when the rules were last
// changed, each judged by hand (testdata/repo-entities.jsonl: 93 entities,
// 82 right, 0.88 when judged; 0.92 since lone common words, verbal nouns
// and common words in capitals are no names, 79 right of the 86 still
// extracted).
func TestPrecisionOnThisRepository(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := sources.Directory{MaxFileBytes: 2 << 20}
	id := store.SourceIdentity{Adapter: sources.DirectoryName, Locator: root}
	refs, err := dir.Discover(context.Background(), sources.Run{ID: id}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, ref := range refs {
		// third_party holds other projects' code and notices (a patched
		// ristretto since issue 38), sources/testdata/transcripts the
		// sessions other agents' tools wrote (issue 27): their names are
		// not this project's text, which the sample was judged on.
		if rel := filepath.ToSlash(ref.ID); ref.Filtered != "" || strings.HasPrefix(rel, "third_party/") ||
			strings.HasPrefix(rel, "sources/testdata/transcripts/") {
			continue
		}
		doc, err := dir.Read(context.Background(), sources.Run{ID: id}, ref)
		if err != nil {
			continue
		}
		units := make([]string, len(doc.Units))
		for i, u := range doc.Units {
			units[i], _ = sources.Redact(u, sources.ScanFile(doc.Name, u))
		}
		chunks := sources.Chunk(units, 6000)
		if len(chunks) == 0 || Unread(doc.Name, chunks[0]) != "" {
			continue
		}
		texts = append(texts, chunks...)
	}
	if len(texts) < 100 {
		t.Fatalf("only %d chunks read from %s", len(texts), root)
	}
	x := extractAll(t, texts)
	if os.Getenv("LOCI_LIST_ENTITIES") != "" { // every entity, to judge a new sample by
		for k, kinds := range x {
			t.Logf("ENTITY %s %v", k, kinds)
		}
	}
	// The bound on all entities is a count over this repository's own
	// text, so it moves when the text grows with the rules unchanged:
	// issue 29 (source packages, ~15,000 lines of code and docs) added 19
	// and dropped 3 with the heuristic as it was (right: Extism, Extism
	// Go, PDK, PEM, PKCS, Rust, WASI and three dates; wrong: ABI, SDKs,
	// PDKs, PDFs, notice, name, "Bad Name", "CommandName", Discover as a
	// person, "Discover/Read"), 289 → 306; the bound went from 300 to 320
	// with them. Issue 31 (the PostgreSQL shared store, ~9,000 lines of
	// code and docs) added 21 with the rules unchanged, 320 → 339 (right:
	// CTE, EXPLAIN, GOMAXPROCS, HOT, IndexOnlyScan, MD5, MergeAppend,
	// NOTIFY, NTP, SCRAM, TCP; wrong: backups, distinct, "durable" as a
	// person, listens, restore, update, "WherePostgreSQL",
	// ServiceUnavailable, the date 0001-01-01); the bound went to 340. A
	// change of the rules is still judged against 340.
	score(t, readJudged(t, "testdata/repo-entities.jsonl"), x, 0.91, 340)
}

// TestPrecisionOnLoCoMo scores the heuristic on the turns of the LoCoMo
// public file (../shared/bench, never committed; skipped when absent),
// read as the benchmark files them ("speaker: text [shares caption]"),
// against 100 of the entities it extracted when the rules were last
// changed, sampled at random and judged by hand
// (testdata/locomo-entities.jsonl holds only names, kinds and labels: 90
// right).
func TestPrecisionOnLoCoMo(t *testing.T) {
	texts := locomoTurns(t, true)
	score(t, readJudged(t, "testdata/locomo-entities.jsonl"), extractAll(t, texts), 0.9, 250)
}
