package export_test

import (
	"bytes"
	"testing"

	"github.com/loci-dev/loci/export"
	"github.com/loci-dev/loci/fault"
)

// TestCompleteness tells a complete export from one cut or altered,
// whatever the sizes of the writes.
func TestCompleteness(t *testing.T) {
	f := newFixture(t)
	file, sum := writeExport(t, f.db, export.Options{})
	check := func(b []byte, chunk int) (*export.End, error) {
		c := export.NewCompleteness()
		for len(b) > 0 {
			n := min(chunk, len(b))
			if _, err := c.Write(b[:n]); err != nil {
				return nil, err
			}
			b = b[n:]
		}
		return c.Done()
	}
	for _, chunk := range []int{1, 7, 4096, len(file)} {
		end, err := check(file, chunk)
		if err != nil || end.Records != sum.Records || end.Digest != sum.Digest {
			t.Fatalf("chunks of %d: %+v, %v", chunk, end, err)
		}
	}
	ls := lines(file)
	for name, bad := range map[string][]byte{
		"empty":                 nil,
		"no end record":         file[:len(file)-len(ls[len(ls)-1])-1],
		"cut inside a line":     file[:len(file)/2],
		"end without a newline": file[:len(file)-1],
		"a line altered":        bytes.Replace(file, []byte(`"type":"wing"`), []byte(`"type":"wing" `), 1),
	} {
		if _, err := check(bad, 512); fault.As(err) == nil || fault.As(err).Code != fault.ExportTruncated {
			t.Errorf("%s: %v", name, err)
		}
	}
}
