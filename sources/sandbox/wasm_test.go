package sandbox

// Hand-made WebAssembly modules: the smallest WASI commands, to measure
// the sandbox's own floor and to reach cases a Go guest cannot (a bare
// trap, a memory larger than the ceiling at start, a module that is no
// command).

func uleb(n uint32) []byte {
	var out []byte
	for {
		b := byte(n & 0x7f)
		n >>= 7
		if n != 0 {
			out = append(out, b|0x80)
			continue
		}
		return append(out, b)
	}
}

func vec(items ...[]byte) []byte {
	out := uleb(uint32(len(items)))
	for _, it := range items {
		out = append(out, it...)
	}
	return out
}

func name(s string) []byte { return append(uleb(uint32(len(s))), s...) }

func section(id byte, payload []byte) []byte {
	return append(append([]byte{id}, uleb(uint32(len(payload)))...), payload...)
}

func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

const (
	i32      = 0x7f
	opConst  = 0x41
	opCall   = 0x10
	opDrop   = 0x1a
	opEnd    = 0x0b
	opUnreac = 0x00
)

// wasmModule is a module importing wasi fd_write (function 0), with one
// memory of memPages pages exported as "memory", a _start (function 1)
// whose body is code, and data segments at offsets.
func wasmModule(memPages uint32, importModule string, code []byte, data map[uint32][]byte) []byte {
	fdWrite := []byte{0x60, 4, i32, i32, i32, i32, 1, i32}
	void := []byte{0x60, 0, 0}
	var segs [][]byte
	for _, off := range []uint32{0, 16} {
		if d, ok := data[off]; ok {
			segs = append(segs, cat([]byte{0, opConst}, sleb(int32(off)), []byte{opEnd}, uleb(uint32(len(d))), d))
		}
	}
	body := cat([]byte{0}, code, []byte{opEnd}) // no locals
	return cat(
		[]byte{0, 'a', 's', 'm', 1, 0, 0, 0},
		section(1, vec(fdWrite, void)),
		section(2, vec(cat(name(importModule), name("fd_write"), []byte{0, 0}))),
		section(3, vec([]byte{1})),
		section(5, vec(cat([]byte{0}, uleb(memPages)))),
		section(7, vec(cat(name("memory"), []byte{2, 0}), cat(name("_start"), []byte{0, 1}))),
		section(10, vec(cat(uleb(uint32(len(body))), body))),
		section(11, vec(segs...)),
	)
}

func sleb(n int32) []byte {
	var out []byte
	for {
		b := byte(n & 0x7f)
		n >>= 7
		if (n == 0 && b&0x40 == 0) || (n == -1 && b&0x40 != 0) {
			return append(out, b)
		}
		out = append(out, b|0x80)
	}
}

// minimalAnswer is the answer the minimal module writes.
const minimalAnswer = `{"identity":{"locator":"minimal"}}`

// minimalModule writes minimalAnswer to standard output with one fd_write
// (the iovec at 0, the text at 16) and returns.
func minimalModule() []byte {
	iov := cat(le32(16), le32(uint32(len(minimalAnswer))))
	code := cat([]byte{opConst}, sleb(1), []byte{opConst}, sleb(0), []byte{opConst}, sleb(1), []byte{opConst}, sleb(8),
		[]byte{opCall, 0, opDrop})
	return wasmModule(1, "wasi_snapshot_preview1", code, map[uint32][]byte{0: iov, 16: []byte(minimalAnswer)})
}

// trapModule's _start is unreachable.
func trapModule() []byte {
	return wasmModule(1, "wasi_snapshot_preview1", []byte{opUnreac}, nil)
}

// bigModule needs pages of memory at start and answers nothing.
func bigModule(pages uint32) []byte {
	return wasmModule(pages, "wasi_snapshot_preview1", nil, nil)
}

// foreignModule imports from a module the sandbox does not give.
func foreignModule() []byte {
	return wasmModule(1, "env", nil, nil)
}

func le32(n uint32) []byte { return []byte{byte(n), byte(n >> 8), byte(n >> 16), byte(n >> 24)} }
