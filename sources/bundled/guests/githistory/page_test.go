package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/loci-dev/loci/sources/bundled/guests/internal/wire"
	"github.com/loci-dev/loci/sources/contract"
)

// A page of commits is written as encoding/json writes it, and its
// hand-written cursor and origin read back as what they say.
func TestPageJSON(t *testing.T) {
	var answers []*contract.Answer
	commits, err := parseLog([]byte(strings.Join([]string{strings.Repeat("a", 40), "Ada <x>", "a&b@example.com", "2024-03-01T09:00:00+00:00", "", "subject\n\n" + "tab\tnew\nline\r\x01\x1f" + "bad \xff\xfe utf-8 \xe2\x82" + "\n", "\npath\xff", "", ""}, "\x00")))
	if err != nil || len(commits) != 1 {
		t.Fatalf("%v %d", err, len(commits))
	}
	s := state{Head: strings.Repeat("b", 40), Base: strings.Repeat("c", 40), Total: 3}
	answers = append(answers, &contract.Answer{Items: []contract.Item{s.item(2, commits[0].hash, func(it *contract.Item) { it.Document = commits[0].document() })}, More: true})
	a := answers[0]
	want, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(wire.AppendAnswer(nil, a)); !wire.Fast(a) || got != string(want)+"\n" {
		t.Errorf("a page:\n got %s\nwant %s", got, want)
	}
	// The hand-written cursor and origin read back as what they say.
	it := answers[0].Items[0]
	c, err := parseCursor(it.Cursor)
	if err != nil || *c != (cursor{Base: s.Base, Head: s.Head, Total: 3, N: 2, Commit: commits[0].hash}) {
		t.Errorf("cursor %s: %+v %v", it.Cursor, c, err)
	}
	var o map[string]string
	if err := json.Unmarshal(it.Document.Origin, &o); err != nil || o["author"] != "Ada <x>" || o["email"] != "a&b@example.com" ||
		o["commit"] != commits[0].hash || o["date"] != "2024-03-01T09:00:00+00:00" || len(o) != 4 {
		t.Errorf("origin %s: %v", it.Document.Origin, err)
	}
}
