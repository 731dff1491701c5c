package sandbox

import (
	"context"
	"slices"
	"testing"
	"time"
)

// BenchmarkCallMinimal is the sandbox's own floor: a fresh instance of the
// hand-made module (one fd_write), called and torn down.
func BenchmarkCallMinimal(b *testing.B) { benchCall(b, minimalModule(), "minimal") }

// BenchmarkCallGoGuest is a call of a Go guest (the echo guest's
// resolve): the Go runtime's start dominates it.
func BenchmarkCallGoGuest(b *testing.B) { benchCall(b, guest(b, "echo"), "echo") }

// benchCall reports each call's p50 and p99 (ns/op is the mean), and on a
// new runtime the compilation and the first call after it.
func benchCall(b *testing.B, wasm []byte, source string) {
	ctx := context.Background()
	req := resolveReq("/bench", nil)
	rt, err := New(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close(ctx)
	start := time.Now()
	m, err := rt.Compile(ctx, digestOf(wasm), wasm)
	if err != nil {
		b.Fatal(err)
	}
	compiled := time.Since(start)
	start = time.Now()
	if _, err := rt.Call(ctx, m, source, Grants{}, limits, req); err != nil {
		b.Fatal(err)
	}
	first := time.Since(start)

	took := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		if _, err := rt.Call(ctx, m, source, Grants{}, limits, req); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(took[len(took)*99/100].Nanoseconds()), "p99-ns")
	b.ReportMetric(float64(first.Nanoseconds()), "first-call-ns")
	b.ReportMetric(float64(compiled.Nanoseconds()), "compile-ns")
}
