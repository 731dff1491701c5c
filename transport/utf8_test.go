package transport

import (
	"testing"

	"github.com/loci-dev/loci/fault"
)

func TestCheckUTF8(t *testing.T) {
	tests := []struct {
		body  string
		field string // "" when accepted
	}{
		{`{"content":"plain"}`, ""},
		{`{"content":"caf\u00e9 \ud83d\ude00 😀"}`, ""},
		{"{\"content\":\"literal \uFFFD and \\ufffd\"}", ""},
		{`{"content":"a \\ud800 is text here"}`, ""},
		{"{\"content\":\"raw bytes \xff\xfe end\"}", "content"},
		{`{"content":"lone \ud800 surrogate"}`, "content"},
		{`{"content":"low \udc00 first"}`, "content"},
		{"{\"name\":\"ok\",\"tags\":[\"a\",\"b\xc3\"]}", "tags"},
		{"{\"payload\":{\"items\":[{\"content\":\"x\xff\"}]}}", "payload.items.content"},
		{"{\"k\xff\":\"v\"}", "body"},
		{"{\"description\":\"\xed\xa0\x80\"}", "description"}, // CESU surrogate bytes
		{"{\"agent\":\"a\",\"n\":1,\"wing\":\"w\xf0\x9f\"}", "wing"},
	}
	for _, tt := range tests {
		t.Run(tt.body, func(t *testing.T) {
			err := checkUTF8([]byte(tt.body))
			if tt.field == "" {
				if err != nil {
					t.Errorf("%q refused: %v", tt.body, err)
				}
				return
			}
			fe := fault.As(err)
			if err == nil || fe.Code != fault.InputInvalid || fe.Msg[:len(tt.field)+1] != tt.field+":" {
				t.Errorf("%q: got %v, want input::invalid naming %s", tt.body, err, tt.field)
			}
		})
	}
}
