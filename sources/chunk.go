package sources

import (
	"strings"
	"unicode/utf8"
)

// Chunk packs a document's units into drawer texts of at most size
// characters: whole units are packed in order while they fit; a unit
// longer than size is cut into pieces, each at the last paragraph break
// (a blank line) within size characters, else the last line break, else
// at size characters. Pieces keep their separators, so the chunks joined
// are the units joined; a piece of whitespace alone is dropped.
func Chunk(units []string, size int) []string {
	var out []string
	var cur strings.Builder
	curLen := 0
	flush := func() {
		if cur.Len() > 0 {
			if s := cur.String(); strings.TrimSpace(s) != "" {
				out = append(out, s)
			}
			cur.Reset()
			curLen = 0
		}
	}
	for _, u := range units {
		n := utf8.RuneCountInString(u)
		if n > size {
			flush()
			for _, p := range cut(u, size) {
				if strings.TrimSpace(p) != "" {
					out = append(out, p)
				}
			}
			continue
		}
		if curLen+n > size {
			flush()
		}
		cur.WriteString(u)
		curLen += n
	}
	flush()
	return out
}

// cut splits s into pieces of at most size characters, each ending at the
// last paragraph break within it, else the last line break, else at size.
func cut(s string, size int) []string {
	var out []string
	for s != "" {
		// end is the byte offset just past size characters.
		end, n := 0, 0
		for end < len(s) && n < size {
			_, w := utf8.DecodeRuneInString(s[end:])
			end += w
			n++
		}
		if end == len(s) {
			out = append(out, s)
			break
		}
		window := s[:end]
		at := -1
		if i := strings.LastIndex(window, "\n\n"); i > 0 {
			at = i + 2
		} else if i := strings.LastIndexByte(window, '\n'); i > 0 {
			at = i + 1
		}
		if at <= 0 {
			at = end
		}
		out = append(out, s[:at])
		s = s[at:]
	}
	return out
}
