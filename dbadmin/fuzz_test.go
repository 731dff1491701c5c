package dbadmin

import (
	"testing"

	"github.com/fxamacker/cbor/v2"
)

// FuzzRequest: any message, in either encoding, decodes to a request or
// to an error, never a panic, and the answer to it encodes.
func FuzzRequest(f *testing.F) {
	for _, s := range []string{
		`{"id":1,"method":"query","params":["SELECT 1",{"n":1}]}`,
		`{"id":"a","method":"let","params":["x",[1,{"y":2.5e300}]],"session":"s"}`,
		`{"id":1e999,"method":"ping"}`, `[]`, `{`, `null`,
	} {
		f.Add([]byte(s))
		if v, err := decodeJSON([]byte(s)); err == nil {
			if b, err := cbor.Marshal(v); err == nil {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		for _, cd := range codecs {
			v, err := cd.decode(msg)
			if err != nil {
				continue
			}
			req, fl := parse(v)
			var out any = answer{ID: req.id}
			if fl != nil {
				out = fl.wire(req.id)
			} else {
				for _, p := range req.params {
					_, _ = value(p)
				}
			}
			if _, err := cd.encode(out); err != nil {
				t.Fatalf("%s: the answer to %q does not encode: %v", cd.name, msg, err)
			}
		}
	})
}
