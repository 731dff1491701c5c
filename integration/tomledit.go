package integration

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// The TOML edits work on whole tables: loci's entry is the table
// [mcp_servers.loci] (with its sub-tables), found by its header line and
// ending where the next table's header (and the comments and blank lines
// just before it) begins. Everything else, comments included, stays byte
// for byte: go-toml/v2 does not keep comments when it writes, and no
// maintained Go library edits TOML keeping them, so the file is only
// parsed (to validate it and to find an entry written some other way) and
// never re-encoded.

// tomlHeader matches a table header line: [a.b] or [[a.b]], with an
// optional comment.
var tomlHeader = regexp.MustCompile(`^\s*\[\[?\s*([^\[\]]+?)\s*\]\]?\s*(#.*)?$`)

// parseTOML checks that src is a TOML document and returns it decoded.
func parseTOML(src []byte) (map[string]any, error) {
	var v map[string]any
	if err := toml.Unmarshal(src, &v); err != nil {
		return nil, fmt.Errorf("not valid TOML: %v", err)
	}
	return v, nil
}

// tomlKey splits a dotted key into its parts, unquoting quoted ones.
func tomlKey(s string) []string {
	var parts []string
	var cur strings.Builder
	quote := byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote == '"' && c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
		case quote != 0:
			cur.WriteByte(c)
		case c == '"' || c == '\'':
			quote = c
		case c == '.':
			parts = append(parts, strings.TrimSpace(cur.String()))
			cur.Reset()
		case c == ' ' || c == '\t':
		default:
			cur.WriteByte(c)
		}
	}
	return append(parts, strings.TrimSpace(cur.String()))
}

// hasPrefix says whether key starts with prefix.
func hasPrefix(key, prefix []string) bool {
	if len(key) < len(prefix) {
		return false
	}
	for i := range prefix {
		if key[i] != prefix[i] {
			return false
		}
	}
	return true
}

// tomlLine is a line of the document with its offsets.
type tomlLine struct {
	start, end int      // end includes the newline
	header     []string // the table key when the line is a header
	blank      bool     // blank or only a comment
}

func tomlLines(src string) []tomlLine {
	var out []tomlLine
	inMulti := ""
	for start := 0; start < len(src); {
		end := strings.IndexByte(src[start:], '\n')
		if end < 0 {
			end = len(src)
		} else {
			end += start + 1
		}
		text := src[start:end]
		l := tomlLine{start: start, end: end}
		trimmed := strings.TrimSpace(text)
		if inMulti == "" {
			if m := tomlHeader.FindStringSubmatch(strings.TrimRight(text, "\r\n")); m != nil {
				l.header = tomlKey(m[1])
			}
			l.blank = trimmed == "" || strings.HasPrefix(trimmed, "#")
		}
		// Track multi-line strings, in which a line is never a header.
		for _, q := range []string{`"""`, `'''`} {
			if n := strings.Count(text, q); n%2 == 1 {
				if inMulti == "" {
					inMulti = q
				} else if inMulti == q {
					inMulti = ""
				}
			}
		}
		out = append(out, l)
		start = end
	}
	return out
}

// tomlTable finds the table key (and its sub-tables) in src: the byte span
// from its header to the start of what follows it, and whether it is
// there as a header at all.
func tomlTable(src string, key []string) (from, to int, ok bool) {
	lines := tomlLines(src)
	i := 0
	for ; i < len(lines); i++ {
		if h := lines[i].header; h != nil && len(h) == len(key) && hasPrefix(h, key) {
			break
		}
	}
	if i == len(lines) {
		return 0, 0, false
	}
	from = lines[i].start
	j := i + 1
	for ; j < len(lines); j++ {
		if h := lines[j].header; h != nil && !hasPrefix(h, key) {
			break
		}
	}
	// Comments and blank lines right before the next table belong to it.
	k := j
	for k > i+1 && lines[k-1].blank {
		k--
	}
	if k == len(lines) {
		return from, len(src), true
	}
	return from, lines[k].start, true
}

// tomlSetTable writes the table text (header line included, ending in a
// newline) in place of the table key, or at the end of the document.
func tomlSetTable(src string, key []string, text string) string {
	if from, to, ok := tomlTable(src, key); ok {
		return src[:from] + text + src[to:]
	}
	switch {
	case src == "":
		return text
	case strings.HasSuffix(src, "\n"):
		return src + "\n" + text
	default:
		return src + "\n\n" + text
	}
}

// tomlRemoveTable deletes the table key and the blank line set before it.
func tomlRemoveTable(src string, key []string) string {
	from, to, ok := tomlTable(src, key)
	if !ok {
		return src
	}
	if to == len(src) && strings.HasSuffix(src[:from], "\n\n") {
		from--
	}
	return src[:from] + src[to:]
}

// tomlString is s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// tomlStrings is a TOML array of basic strings.
func tomlStrings(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = tomlString(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// tomlGet returns the value at path in a decoded document.
func tomlGet(doc map[string]any, path []string) (any, bool) {
	var cur any = doc
	for _, k := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[k]; !ok {
			return nil, false
		}
	}
	return cur, true
}
