package main

import (
	"bytes"
	"os"
	"testing"
)

// ../common.go is what the generator writes from the embedded table: an
// edited list or a changed table fails here (go generate ./extract).
func TestCommonWordsAreGenerated(t *testing.T) {
	want, err := generate(3000)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../common.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("extract/common.go differs from what the generator writes: run go generate ./extract")
	}
}
