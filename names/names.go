// Package names holds the pure naming rules of the palace: what a wing,
// room or drawer may be called. It does no I/O.
package names

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"
)

// Length limits on names, in bytes.
const (
	MaxPlaceName  = 256
	MaxDrawerName = 1024
)

// Problem describes why a name is refused; it is empty for a good name.
type Problem string

// LooksLikeUUID reports whether s would parse as a UUID in any of the
// spellings a UUID parser accepts, so that names and ids never collide.
func LooksLikeUUID(s string) bool {
	_, err := uuid.Parse(s)
	return err == nil
}

// invisible reports format characters (Cf: zero-width spaces and joiners,
// direction overrides, the byte-order mark) and line and paragraph
// separators (Zl, Zp): a name holding one looks like another name, or
// reads differently from how it sorts and compares.
func invisible(r rune) bool {
	return unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp)
}

// common checks the rules shared by every kind of name.
func common(s string, max int) Problem {
	switch {
	case s == "":
		return "is empty"
	case !utf8.ValidString(s):
		return "is not valid UTF-8"
	case len(s) > max:
		return Problem(fmt.Sprintf("is longer than %d bytes", max))
	case strings.TrimSpace(s) == "":
		return "is blank"
	case strings.TrimSpace(s) != s:
		return "has leading or trailing whitespace"
	case strings.IndexFunc(s, unicode.IsControl) >= 0:
		return "contains a control character"
	case strings.IndexFunc(s, invisible) >= 0:
		r, _ := utf8.DecodeRuneInString(s[strings.IndexFunc(s, invisible):])
		return Problem(fmt.Sprintf("contains the invisible or direction-changing character U+%04X", r))
	case LooksLikeUUID(s):
		return "looks like a UUID; UUIDs address things by id, so names may not take that form"
	}
	return ""
}

// Place checks a wing or room name.
func Place(s string) Problem {
	if p := common(s, MaxPlaceName); p != "" {
		return p
	}
	if strings.Contains(s, "/") {
		return "contains '/'; wing and room names are one path segment"
	}
	if s == "." || s == ".." {
		return Problem(fmt.Sprintf("is %q, which reads as a path step", s))
	}
	return ""
}

// Drawer checks a drawer name. It may contain '/', but no segment may be
// empty, "." or "..".
func Drawer(s string) Problem {
	if p := common(s, MaxDrawerName); p != "" {
		return p
	}
	for _, seg := range strings.Split(s, "/") {
		switch seg {
		case "":
			return "has an empty path segment"
		case ".", "..":
			return Problem(fmt.Sprintf("has a %q path segment", seg))
		}
	}
	return ""
}

// Identifier reports what is wrong with the name of a miner, trigger or
// source configuration ("" when nothing): lowercase letters, digits, - and
// _, at most 64; reload is reserved (it names the routes' reload action).
func Identifier(name string) string {
	switch {
	case name == "":
		return "is empty"
	case len(name) > 64:
		return "is longer than 64 characters"
	case name == "reload":
		return "reload is reserved"
	case strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789-_") != "":
		return "may hold only lowercase letters, digits, - and _"
	}
	return ""
}
