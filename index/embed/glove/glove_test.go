package glove

import (
	"crypto/sha256"
	"fmt"
	"math"
	"testing"
)

// The embedded table is the one the generator wrote: a damaged or
// replaced table.bin fails here, at build time, not in a user's daemon.
func TestTableIsIntact(t *testing.T) {
	if got := fmt.Sprintf("%x", sha256.Sum256(table)); got != tableSum {
		t.Fatalf("table.bin sha256 %s, the generator wrote %s: rebuild it with go run ./index/embed/glove/gen", got, tableSum)
	}
	tb, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if tb.Dim != 100 || tb.Len() != 50000 {
		t.Fatalf("table of %d words × %d, want 50,000 × 100", tb.Len(), tb.Dim)
	}
	if tb.Index("the") != 0 || tb.Index("automobile") < 0 || tb.Index("Automobile") != -1 {
		t.Fatalf("ranks: the %d, automobile %d", tb.Index("the"), tb.Index("automobile"))
	}
	// Word vectors carry meaning: car is nearer automobile than banana.
	cos := func(a, b string) float64 {
		x, y := make([]float32, tb.Dim), make([]float32, tb.Dim)
		tb.AddTo(x, tb.Index(a), 1)
		tb.AddTo(y, tb.Index(b), 1)
		var d, nx, ny float64
		for i := range x {
			d += float64(x[i] * y[i])
			nx += float64(x[i] * x[i])
			ny += float64(y[i] * y[i])
		}
		return d / math.Sqrt(nx*ny)
	}
	if c1, c2 := cos("car", "automobile"), cos("car", "banana"); c1 < 0.6 || c1 <= c2 {
		t.Fatalf("cos(car, automobile) %.2f, cos(car, banana) %.2f", c1, c2)
	}
}

// Decode refuses damaged tables rather than reading past them.
func TestDecodeRefusesDamage(t *testing.T) {
	for name, b := range map[string][]byte{
		"empty":     nil,
		"magic":     append([]byte("XXXXWV01"), table[8:]...),
		"truncated": table[:len(table)-1],
		"header":    table[:16],
		"words":     table[:1000],
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Decode(b); err == nil {
				t.Errorf("%s: decoded", name)
			}
		})
	}
}
