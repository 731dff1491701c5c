package extract

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// What a text holds besides prose: program code (a source file, a
// Markdown code block or `span`, a configuration line), redaction markers,
// hashes, identifiers. The heuristic reads only the prose; the
// identifiers the code uses are remembered so that prose naming them
// ("Reader is the read side", above "type Reader interface") does not
// make them entities.

var (
	// redactionRE is the marker mining writes in place of a secret
	// ([REDACTED:aws_access_key_id], sources.Redact) and its bare form.
	redactionRE = regexp.MustCompile(`(?i)\[REDACTED(?::[^\]\s]*)?\]`)
	// inlineCodeRE is a Markdown code span (it may cross a line break).
	inlineCodeRE = regexp.MustCompile("`[^`]{1,300}`")
	// stringLitRE is a string or rune literal of a line of code.
	stringLitRE = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	// identRE is an identifier of a line of code.
	identRE = regexp.MustCompile(`[\p{L}_][\p{L}\p{N}_]*`)
	// codeRE is what only code has on a line: operators, a call or an
	// index right after a name (not "word(s)"), an assignment, a line
	// opening or ending with a brace, a JSON key, a declaration.
	codeRE = regexp.MustCompile(`:=|==|!=|&&|\|\||<-|=>|\+\+|\+=|-=|::|[{}(\[]\s*$|^[{}\])\[]|^"[^"]*"\s*:|[\p{L}\p{N}_]\((?:[^s]|s[^)]|$)|[\p{L}\p{N}_]\[|\s=\s|^[\p{L}_][\p{L}\p{N}_.\-]*\s*=|^(?:package|import|func|def|fn)\s|^</?[a-zA-Z!]`)
	// literalRE is a run of text with the marks of a path, a URL, an
	// address, a variable or an expression (/ $ = < > @ \ _), or an HTTP
	// request line: literals, not prose.
	literalRE = regexp.MustCompile(`\b(?:GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS)\s+/\S*|[^\s"“”(),;]*[/$=<>@\\_][^\s"“”(),;]*`)
	// listItemRE opens a Markdown list item (indented prose).
	listItemRE = regexp.MustCompile(`^(?:[-*+]|\d+[.)])\s`)
)

// codeLike reports a line of code (codeRE), the expression run only on
// lines with one of the marks it needs.
func codeLike(t string) bool {
	if !strings.ContainsAny(t, "=&|<>+{}[]()\"") && !strings.Contains(t, "::") &&
		!strings.HasPrefix(t, "package ") && !strings.HasPrefix(t, "import ") && !strings.HasPrefix(t, "func ") &&
		!strings.HasPrefix(t, "def ") && !strings.HasPrefix(t, "fn ") {
		return false
	}
	return codeRE.MatchString(t)
}

// commentMarks open a line of comment (prose inside code), longest first;
// "#" is also a Markdown heading, prose too.
var commentMarks = []string{"<!--", "///", "//!", "//", "/**", "/*", "*/", "-->", `"""`, "'''", "--", ";;", "#", "*"}

// splitCode is a text's prose (its code lines and spans and its redaction
// markers replaced by breaks), the identifiers its code uses, and whether
// it is a program's text: more lines of code and comments than of plain
// prose (Markdown's code blocks and spans do not count).
func splitCode(text string) (string, map[string]bool, bool) {
	if strings.Contains(text, "[") {
		text = redactionRE.ReplaceAllString(text, " , ")
	}
	var idents map[string]bool
	// Lines of code and of comments, and of plain prose: a program's
	// text has more of the former (its prose is in comments).
	codeLines, plain := 0, 0
	add := func(id string) {
		if idents == nil {
			idents = map[string]bool{}
		}
		idents[id] = true
	}
	code := func(s string) {
		for _, id := range identRE.FindAllString(stringLitRE.ReplaceAllStringFunc(s, func(lit string) string {
			// Inside a literal, only names in capitals are code
			// (environment variables, constants: "HOME", "GOMEMLIMIT").
			for _, id := range identRE.FindAllString(lit, -1) {
				if shouted(id) {
					add(id)
				}
			}
			return " "
		}), -1) {
			if utf8.RuneCountInString(id) > 1 && strings.IndexFunc(id, func(r rune) bool { return unicode.IsUpper(r) || r == '_' }) >= 0 {
				add(id)
			}
		}
	}
	if !strings.ContainsAny(text, "`{}()[]=;:\t/#*-\"'<") {
		return text, nil, false
	}
	// Markdown's fenced blocks first, then its spans (which may cross a
	// line break), then line by line.
	lines := strings.Split(text, "\n")
	fence := ""
	for k, line := range lines {
		t := strings.TrimSpace(line)
		if fence != "" || strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			switch {
			case fence == "":
				fence = t[:3]
			case strings.HasPrefix(t, fence):
				fence = ""
			default:
				code(line)
			}
			lines[k] = ""
		}
	}
	text = strings.Join(lines, "\n")
	if strings.Contains(text, "`") {
		text = inlineCodeRE.ReplaceAllStringFunc(text, func(s string) string {
			code(s)
			return " , " + strings.Repeat("\n", strings.Count(s, "\n"))
		})
	}
	var b strings.Builder
	for _, line := range strings.Split(text, "\n") {
		t := strings.TrimSpace(line)
		c, commented := comment(t)
		if commented {
			t, line = c, c
		}
		if line != "" && (line[0] == '\t' || strings.HasPrefix(line, "    ") && !listItemRE.MatchString(t)) {
			code(line)
			codeLines++
			b.WriteString("\n\n")
			continue
		}
		if codeLike(t) {
			code(t)
			codeLines++
			b.WriteString("\n\n")
			continue
		}
		if commented {
			codeLines++
		} else if t != "" {
			plain++
		}
		// A blank line and a list item start a sentence; a table's cells
		// are read apart; other lines continue the one before (wrapped
		// prose: "RFC\n7235" is one name).
		if t == "" || listItemRE.MatchString(t) {
			b.WriteString("\n\n")
		}
		if strings.ContainsAny(line, "/$=<>@\\_") {
			line = literalRE.ReplaceAllString(line, " , ")
		}
		line = strings.ReplaceAll(line, "|", "\n\n")
		b.WriteString(line)
		b.WriteString("\n")
	}
	return b.String(), idents, codeLines > plain
}

// comment is a line of comment without its mark.
func comment(t string) (string, bool) {
	for _, m := range commentMarks {
		if !strings.HasPrefix(t, m) {
			continue
		}
		rest := t[len(m):]
		// "#!" and "#include" are code; "*emphasis*" and "--flag" are not
		// comments.
		if rest != "" && (m == "#" || m == "*" || m == "--") && rest[0] != ' ' && rest[0] != '#' {
			return "", false
		}
		rest = strings.TrimSuffix(strings.TrimSuffix(strings.TrimSpace(rest), "*/"), "-->")
		return strings.TrimLeft(strings.TrimSpace(rest), "#/* "), true
	}
	return "", false
}

// junk reports a capitalised word that is no name however it is used:
// an identifier (snake_case, words joined in camelCase or PascalCase, a
// selector or a file name), a hash or base64, a range or character class
// ("A-Za-z0-9"), a redaction marker, an HTTP header (X-...) or method, or
// a word of text in capitals ("WITHOUT WARRANTY").
func junk(words []word, i int) bool {
	w := words[i].text
	if _, ok := tools[words[i].lower]; ok {
		return false
	}
	if strings.Contains(w, "_") || joined(w) || hashLike(w) || dotted(w) || strings.EqualFold(w, "redacted") ||
		strings.HasPrefix(w, "X-") || httpMethods[w] || httpHeaders[strings.ToLower(w)] {
		return true
	}
	if parts := strings.Split(w, "-"); len(parts) > 1 {
		short := 0
		for _, p := range parts {
			if utf8.RuneCountInString(p) == 1 {
				short++
			}
		}
		// A range ("A-Za-z0-9"), a compound adjective ending in a
		// lower-case word ("Cranfield-trained", "CPU-heavy"), or a key
		// combination ending in one character ("Ctrl-C").
		last := parts[len(parts)-1]
		if short >= 2 || last != "" && unicode.IsLower([]rune(last)[0]) || utf8.RuneCountInString(last) == 1 && unicode.IsLetter([]rune(last)[0]) {
			return true
		}
	}
	if placeholder(w) {
		return true
	}
	if shouted(w) {
		for _, k := range []int{i - 1, i + 1} {
			if k >= 0 && k < len(words) && shouted(words[k].text) {
				return true
			}
		}
	}
	return false
}

// httpMethods are HTTP's methods in capitals (GET /api/graph): protocol
// words, not names.
var httpMethods = map[string]bool{"GET": true, "HEAD": true, "POST": true, "PUT": true, "PATCH": true, "DELETE": true, "OPTIONS": true, "CONNECT": true, "TRACE": true}

// httpHeaders are HTTP's header names of several words: protocol words.
var httpHeaders = map[string]bool{
	"content-type": true, "content-length": true, "content-encoding": true, "content-security-policy": true,
	"user-agent": true, "www-authenticate": true, "retry-after": true, "last-modified": true, "if-none-match": true,
	"cache-control": true, "accept-encoding": true, "accept-language": true, "set-cookie": true, "transfer-encoding": true,
}

// namePrefixes may join a capitalised surname (McDonald, DeShawn, LeBron).
var namePrefixes = []string{"Mc", "Mac", "De", "Di", "Da", "La", "Le", "Van", "Von", "Du"}

// joined reports words joined in one token: a lower-case letter then a
// capital ("ResolveEntity", "iPhone" aside: it is not capitalised), or
// capitals then a capitalised word ("HTTPServer"); a surname prefix
// ("McDonald") is not.
func joined(w string) bool {
	rs := []rune(w)
	humps := 0
	at := 0
	for k := 1; k < len(rs); k++ {
		if unicode.IsLower(rs[k-1]) && unicode.IsUpper(rs[k]) {
			humps++
			at = k
		}
		if k+2 < len(rs) && unicode.IsUpper(rs[k-1]) && unicode.IsUpper(rs[k]) && unicode.IsLower(rs[k+1]) && unicode.IsLower(rs[k+2]) {
			return true
		}
	}
	if humps == 1 {
		for _, p := range namePrefixes {
			if string(rs[:at]) == p {
				return false
			}
		}
	}
	return humps > 0
}

// hashLike reports a hash, key or base64 run: ten characters or more with
// three digits and three letters, or a "+" or "/" inside.
func hashLike(w string) bool {
	if strings.ContainsAny(strings.TrimRight(w, "+#"), "+/") {
		return true
	}
	if len(w) < 10 {
		return false
	}
	digits, letters := 0, 0
	for _, r := range w {
		switch {
		case unicode.IsDigit(r):
			digits++
		case unicode.IsLetter(r):
			letters++
		}
	}
	return digits >= 3 && letters >= 3
}

// shouted reports a word in capitals of two letters or more.
func shouted(w string) bool {
	letters := 0
	for _, r := range w {
		if unicode.IsLower(r) {
			return false
		}
		if unicode.IsLetter(r) {
			letters++
		}
	}
	return letters >= 2
}

// dotted reports a selector, a file or a host name (DB.Update,
// README.md, example.com): a dot between a letter and two letters;
// initials and abbreviations (J.K, U.S) have one letter between dots.
func dotted(w string) bool {
	parts := strings.Split(w, ".")
	for k := 1; k < len(parts); k++ {
		if utf8.RuneCountInString(parts[k]) >= 2 && utf8.RuneCountInString(parts[k-1]) >= 1 {
			return true
		}
	}
	return false
}

// placeholder reports a format's placeholder: capitals repeating one
// letter, joined by hyphens (YYYY-MM-DD, HH).
func placeholder(w string) bool {
	if romanRE.MatchString(w) {
		return false
	}
	for _, p := range strings.Split(w, "-") {
		rs := []rune(p)
		if len(rs) < 2 || !unicode.IsUpper(rs[0]) || strings.Count(p, string(rs[0])) != len(rs) {
			return false
		}
	}
	return true
}
