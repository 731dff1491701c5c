package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/loci-dev/loci/api"
)

func writeJSONTo(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// out prints v as JSON with --json; commands print their human form
// themselves otherwise.
func (a *app) out(v any) error {
	writeJSONTo(a.stdout, v)
	return nil
}

// printf prints the human form: the format is ours, the arguments are
// data (stored content, names, messages), so their control characters are
// shown escaped and never reach the terminal as commands.
func (a *app) printf(format string, args ...any) {
	fmt.Fprintf(a.stdout, format, safeArgs(args)...)
}

// safeArgs escapes the string arguments of a human-output line.
func safeArgs(args []any) []any {
	out := args
	for i, v := range args {
		var s string
		switch x := v.(type) {
		case string:
			s = x
		case fmt.Stringer:
			s = x.String()
		default:
			continue
		}
		if t := safeText(s); t != s {
			if &out[0] == &args[0] {
				out = append([]any(nil), args...)
			}
			out[i] = t
		}
	}
	return out
}

// safeText shows s for a terminal: line breaks and tabs stay; other
// control characters (escape sequences, carriage returns, C1 controls)
// and direction overrides are written as visible escapes (\x1b, \u202e).
func safeText(s string) string {
	clean := true
	for _, r := range s {
		if unsafeRune(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case !unsafeRune(r):
			b.WriteRune(r)
		case r < 0x80:
			fmt.Fprintf(&b, "\\x%02x", r)
		default:
			fmt.Fprintf(&b, "\\u%04x", r)
		}
	}
	return b.String()
}

func unsafeRune(r rune) bool {
	if r == '\n' || r == '\t' {
		return false
	}
	return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == utf8.RuneError
}

func ago(t time.Time) string {
	return t.Local().Format("2006-01-02 15:04:05")
}

func (a *app) printDrawer(d *api.Drawer) {
	a.printf("id:         %s\n", d.ID)
	if d.Name != "" {
		a.printf("name:       %s\n", d.Name)
	}
	if len(d.Tags) > 0 {
		a.printf("tags:       %s\n", strings.Join(d.Tags, ", "))
	}
	src := d.Source.Kind
	if d.Source.URI != "" {
		src += " " + d.Source.URI
	}
	if d.Source.Agent != "" {
		src += " (agent " + d.Source.Agent + ")"
	}
	a.printf("source:     %s, requested by %s\n", src, d.Provenance.RequestedBy)
	valid := "from " + ago(d.ValidFrom)
	if d.ValidTo != nil {
		valid += " to " + ago(*d.ValidTo)
	} else {
		valid += ", current"
	}
	a.printf("valid:      %s\n", valid)
	if d.Supersedes != "" {
		a.printf("supersedes: %s\n", d.Supersedes)
	}
	if d.SupersededBy != "" {
		a.printf("superseded: by %s\n", d.SupersededBy)
	}
	a.printf("\n%s\n", d.Content)
}

func (a *app) printWrite(res *api.WriteResult, status int) {
	if res.Created {
		a.printf("stored drawer %s\n", res.Drawer.ID)
	} else {
		a.printf("already stored as drawer %s (nothing written)\n", res.Drawer.ID)
	}
	for _, s := range res.Similar {
		a.printf("  similar (%s, %.2f) to %s\n", s.Kind, s.Similarity, s.Drawer)
	}
}

// show fetches one answer from the daemon and prints it: as JSON with
// --json, else through human.
func show[T any](a *app, ctx context.Context, method, path string, body any, human func(*T)) error {
	var out T
	if _, err := a.call(ctx, method, path, body, &out); err != nil {
		return err
	}
	if a.jsonOut {
		return a.out(out)
	}
	human(&out)
	return nil
}
