package sources

import (
	"strings"
	"time"
)

// TurnSpan is one turn of a transcript drawer's content: [Start, End), its
// header line included; Role is "" for the text before the first header
// (a turn begun in the previous chunk), Sub marks a sub-agent's turn, At
// is the header's time (zero: none).
type TurnSpan struct {
	Start, End int
	Role       string
	Sub        bool
	At         time.Time
}

// Turns splits a transcript drawer's content into its turns (nil
// when no header line is found).
func Turns(content string) []TurnSpan {
	var out []TurnSpan
	blank := true // the content's start counts as after a blank line
	for at := 0; at < len(content); {
		end := strings.IndexByte(content[at:], '\n')
		if end < 0 {
			end = len(content)
		} else {
			end += at
		}
		line := strings.TrimRight(content[at:end], "\r")
		if blank {
			if role, when, ok := ParseTurnHeader(line); ok {
				if len(out) == 0 && at > 0 {
					out = append(out, TurnSpan{})
				}
				if len(out) > 0 {
					out[len(out)-1].End = at
				}
				base, sub := strings.CutSuffix(role, " (sub-agent)")
				out = append(out, TurnSpan{Start: at, Role: base, Sub: sub, At: when})
			}
		}
		blank = strings.TrimSpace(line) == ""
		at = end + 1
	}
	if len(out) > 0 {
		out[len(out)-1].End = len(content)
	}
	return out
}
