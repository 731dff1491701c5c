package sources

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestChunk(t *testing.T) {
	para := strings.Repeat("word ", 6) + "end."   // 34 characters
	paragraphs := strings.Repeat(para+"\n\n", 10) // 360
	lines := strings.Repeat(para+"\n", 10)        // 350
	for _, c := range []struct {
		name  string
		units []string
		size  int
		want  []string
	}{
		{"fits whole", []string{"short text"}, 100, []string{"short text"}},
		{"units packed whole", []string{"aa\n", "bb\n", "cc\n"}, 6, []string{"aa\nbb\n", "cc\n"}},
		{"a unit exactly the size", []string{"abcd", "ef"}, 4, []string{"abcd", "ef"}},
		{"cut at paragraph breaks", []string{paragraphs}, 100, []string{
			para + "\n\n" + para + "\n\n", para + "\n\n" + para + "\n\n", para + "\n\n" + para + "\n\n",
			para + "\n\n" + para + "\n\n", para + "\n\n" + para + "\n\n"}},
		{"else at line breaks", []string{lines}, 100, []string{
			para + "\n" + para + "\n", para + "\n" + para + "\n", para + "\n" + para + "\n", para + "\n" + para + "\n", para + "\n" + para + "\n"}},
		{"else mid-line", []string{strings.Repeat("x", 250)}, 100, []string{strings.Repeat("x", 100), strings.Repeat("x", 100), strings.Repeat("x", 50)}},
		{"characters, not bytes", []string{strings.Repeat("é", 150)}, 100, []string{strings.Repeat("é", 100), strings.Repeat("é", 50)}},
		{"an oversized unit between small ones", []string{"a\n", strings.Repeat("y", 12), "b\n"}, 10, []string{"a\n", strings.Repeat("y", 10), "yy", "b\n"}},
		{"whitespace alone is dropped", []string{"text", "   \n\n  "}, 4, []string{"text"}},
		{"nothing", nil, 10, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Chunk(c.units, c.size)
			if strings.Join(got, "|") != strings.Join(c.want, "|") || len(got) != len(c.want) {
				t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
			}
			for _, g := range got {
				if n := utf8.RuneCountInString(g); n > c.size {
					t.Errorf("a chunk of %d characters, over %d", n, c.size)
				}
			}
		})
	}
}

// A 20,000-character document with paragraphs and one without a line
// break both come back whole when their chunks are joined.
func TestChunkKeepsEveryCharacter(t *testing.T) {
	var b strings.Builder
	for i := 0; b.Len() < 20000; i++ {
		b.WriteString(strings.Repeat("sentence about the lamp ", 1+i%17))
		if i%3 == 2 {
			b.WriteString("\n\n")
		} else {
			b.WriteString("\n")
		}
	}
	for _, text := range []string{b.String(), strings.Repeat("z", 20000)} {
		t.Run(fmt.Sprint(len(text), " bytes"), func(t *testing.T) {
			got := Chunk([]string{text}, 6000)
			if strings.Join(got, "") != text || len(got) < 4 {
				t.Fatalf("%d chunks do not join into the text", len(got))
			}
		})
	}
}
