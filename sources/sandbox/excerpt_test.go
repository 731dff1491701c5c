package sandbox

import (
	"strings"
	"testing"

	"github.com/loci-dev/loci/fault"
)

// TestExcerptCutsGoTraces: a guest's Go panic or fatal error is its
// message and its first frame of its own code, without addresses or the
// goroutine dump; lines before it stay; other standard error is kept as
// it was (its first lines).
func TestExcerptCutsGoTraces(t *testing.T) {
	for name, c := range map[string]struct{ stderr, want string }{
		"panic": {"reading notes\npanic: runtime error: invalid memory address or nil pointer dereference\n[signal 0xb code=0x0 addr=0x0 pc=0x0]\n\ngoroutine 1 [running]:\nmain.read(0x1, {0x2, 0x3})\n\t/home/dev/notes/main.go:103 +0x50\nmain.main()\n\t/home/dev/notes/main.go:20 +0x10\n",
			"reading notes | panic: runtime error: invalid memory address or nil pointer dereference | at main.read (notes/main.go:103)"},
		"out of memory": {"runtime: out of memory: cannot allocate 1048576-byte block (29753344 in use)\nfatal error: out of memory\n\ngoroutine 1 gp=0x2821c0 m=0 mp=0x1aa080 [running]:\nruntime.throw({0x38041, 0xd})\n\t/usr/local/go/src/runtime/panic.go:1229 +0x3 fp=0x295a88 sp=0x295a60 pc=0x15540003\nruntime.(*mcache).allocLarge(0x1d0108, 0x100000, 0x1)\n\t/usr/local/go/src/runtime/mcache.go:236 +0x5 fp=0x1 sp=0x2 pc=0x3\nmain.grow(...)\n\t/src/hostile/main.go:60\nmain.main()\n\t/src/hostile/main.go:90 +0x2\n",
			"runtime: out of memory: cannot allocate 1048576-byte block (29753344 in use) | fatal error: out of memory | at main.grow (hostile/main.go:60)"},
		"runtime stack": {"fatal error: stack overflow\n\nruntime stack:\nruntime.throw({0x1, 0x2})\n\t/go/src/runtime/panic.go:1 +0x1\n\ngoroutine 1 [running]:\nmain.deep()\n\t/x/y/main.go:5 +0x1\n",
			"fatal error: stack overflow | at main.deep (y/main.go:5)"},
		"only runtime": {"fatal error: all goroutines are asleep - deadlock!\n\ngoroutine 1 [chan receive]:\nruntime.gopark(0x1)\n\t/go/src/runtime/proc.go:1 +0x1\n",
			"fatal error: all goroutines are asleep - deadlock! | at runtime.gopark (runtime/proc.go:1)"},
		"plain": {"one\n\ntwo\nthree\nfour\nfive\nsix\nseven\n", "one | two | three | four | five | six"},
	} {
		t.Run(name, func(t *testing.T) {
			got := (&call{stderr: []byte(c.stderr)}).excerpt()
			if got != c.want {
				t.Fatalf("excerpt:\n got %q\nwant %q", got, c.want)
			}
		})
	}
}

// TestHostileTracesAreCut: the hostile guest's real out-of-memory and
// panic errors keep what failed and drop the goroutine dump.
func TestHostileTracesAreCut(t *testing.T) {
	rt, m := hostile(t)
	for _, tc := range []struct {
		do    string
		g     Grants
		parts []string
	}{
		{"alloc", Grants{MemoryMiB: 32}, []string{"ran out of memory (its ceiling is 32 MiB)", "fatal error: out of memory", "at main."}},
		{"panic", Grants{}, []string{"panic: runtime error: invalid memory address or nil pointer dereference", "at main.main (hostile/main.go:"}},
	} {
		_, err := rt.Call(t.Context(), m, "hostile", tc.g, limits, resolveReq("/x", map[string]string{"do": tc.do}))
		fe := wantFault(t, err, fault.SourceFailed, tc.parts...)
		for _, bad := range []string{"goroutine", "+0x", "fp=", "[signal", "runtime.throw"} {
			if strings.Contains(fe.Msg, bad) {
				t.Fatalf("%s: the message keeps %q: %s", tc.do, bad, fe.Msg)
			}
		}
	}
}
