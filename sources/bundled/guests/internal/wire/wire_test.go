package wire

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/loci-dev/loci/sources/contract"
)

// odd are strings encoding/json escapes: quotes, backslashes, control
// characters, HTML's <>&, U+2028 and U+2029, invalid UTF-8, emoji.
var odd = []string{"", "plain", `"quoted" \back\`, "tab\tnew\nline\r\x00\x01\x1f\x7f", "<b>&amp;</b>", "line\u2028para\u2029",
	"bad \xff\xfe utf-8 \xe2\x82", "日本語 🚀 — “quotes”", strings.Repeat("long ", 1000)}

// The hand-written answers are byte for byte what encoding/json writes.
func TestAppendAnswerIsEncodingJSON(t *testing.T) {
	var answers []*contract.Answer
	for i, s := range odd {
		doc := &contract.Document{Name: s, Room: s, Kind: s, URI: s, Meta: s, Units: []string{s, s + "2"}, Bytes: int64(i),
			Origin: json.RawMessage(`{"a":1}`)}
		answers = append(answers,
			&contract.Answer{Items: []contract.Item{{ID: s, Cursor: json.RawMessage(`{"n":1}`), Size: int64(i), Filtered: s, Document: doc},
				{ID: "x", Cursor: json.RawMessage(`{}`)}}, More: i%2 == 0},
			&contract.Answer{Documents: []contract.ReadResult{{ID: s, Document: doc}, {ID: s, Error: contract.Errorf(s, "%s", s)}}})
	}
	answers = append(answers, &contract.Answer{Items: []contract.Item{}}, &contract.Answer{Documents: []contract.ReadResult{}},
		&contract.Answer{Items: []contract.Item{{ID: "a", Document: &contract.Document{}}}},
		&contract.Answer{Items: []contract.Item{{ID: "a", Document: &contract.Document{Units: []string{}}}}})
	for i, a := range answers {
		if !Fast(a) {
			t.Fatalf("answer %d is not one appendAnswer writes", i)
		}
		want, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(AppendAnswer(nil, a)); got != string(want)+"\n" {
			t.Errorf("answer %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

// Answers without documents go through encoding/json.
func TestOtherAnswersAreNotFast(t *testing.T) {
	for _, a := range []*contract.Answer{{}, {Error: contract.Errorf("x", "y")}, {Needs: []contract.Need{{Kind: "run"}}},
		{Identity: &contract.Identity{Locator: "/x"}}, {Items: []contract.Item{}, State: json.RawMessage(`{}`)}} {
		if Fast(a) {
			t.Errorf("%+v taken as a page", a)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range odd {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := AppendString(nil, s); string(got) != string(want) {
			t.Fatalf("%q: got %s want %s", s, got, want)
		}
	})
}
