package export

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"

	"github.com/loci-dev/loci/fault"
)

// Completeness checks, as an export streams past (an io.Writer), that it
// ends with its end record and that the record's count and digest are
// those of the lines before it: a copy cut short or altered is told from
// a complete one without reading the records (memory: one line). The CLI
// checks a download with it before it renames the file into place.
type Completeness struct {
	digest  hash.Hash
	line    []byte // the current line, until its newline
	lines   int64
	last    []byte // the last complete line
	maxLine int
}

// NewCompleteness makes a check; lines longer than DefaultLimits'
// MaxLineBytes are refused.
func NewCompleteness() *Completeness {
	return &Completeness{digest: sha256.New(), maxLine: DefaultLimits().MaxLineBytes}
}

// Write takes the next bytes of the file.
func (c *Completeness) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			c.line = append(c.line, p...)
			if len(c.line) > c.maxLine {
				return 0, fault.Newf(fault.ExportTooLarge, "the daemon sent a line longer than an export's lines are", "line %d is longer than %d bytes", c.lines+1, c.maxLine)
			}
			return n, nil
		}
		c.line = append(c.line, p[:i]...)
		if c.last != nil {
			c.digest.Write(c.last)
			c.digest.Write([]byte{'\n'})
		}
		c.last = append(c.last[:0], c.line...)
		c.line = c.line[:0]
		c.lines++
		p = p[i+1:]
	}
	return n, nil
}

// Done reports whether what was written is a complete export: its last
// line an end record counting the lines before it, with their digest.
// It answers the end record.
func (c *Completeness) Done() (*End, error) {
	cut := func(format string, args ...any) (*End, error) {
		return nil, fault.Newf(fault.ExportTruncated, "the export stopped before its end (the daemon stopped, or the connection broke); nothing was kept: run it again",
			format, args...)
	}
	if len(c.line) > 0 || c.last == nil {
		return cut("the export ended inside line %d, before its end record", c.lines+1)
	}
	var e End
	if json.Unmarshal(c.last, &e) != nil || e.Type != TypeEnd {
		return cut("the export ended after %d lines without its end record", c.lines)
	}
	if e.Records != c.lines-1 {
		return cut("the end record counts %d records, %d came before it", e.Records, c.lines-1)
	}
	if want := "sha256:" + hex.EncodeToString(c.digest.Sum(nil)); e.Digest != want {
		return cut("%s", fmt.Sprintf("the end record's digest is not that of the %d lines before it", c.lines-1))
	}
	return &e, nil
}
