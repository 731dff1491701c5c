package vector

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
)

const magic = "LOCIVEC1"

// Save writes the index (vectors, tombstones and graph) with the change-log
// sequence it reflects to path, atomically (a temporary file renamed).
func (x *Index) Save(path string, seq uint64, identity string) error {
	// The writers' lock, not the read lock: no writer changes the index
	// meanwhile, and searches never queue behind a writer that waits for
	// the save to end.
	x.wmu.Lock()
	defer x.wmu.Unlock()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".vectors-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	w := bufio.NewWriterSize(tmp, 1<<20)
	put := func(vs ...any) {
		for _, v := range vs {
			_ = binary.Write(w, binary.LittleEndian, v)
		}
	}
	str := func(s string) {
		put(uint32(len(s)))
		w.WriteString(s)
	}
	w.WriteString(magic)
	str(identity)
	h := x.graph
	put(seq, uint32(x.dim), uint32(h.m), uint32(h.efConstruction), uint32(len(x.ids)), h.entry, uint32(h.top))
	// Vectors and link lists go through one reused buffer: binary.Write
	// allocates one per slice, which made every save (every save_secs,
	// and at each stop) leave the size of all vectors as garbage.
	var buf []byte
	for s, id := range x.ids {
		str(id)
		dead := uint8(0)
		if x.dead[s] {
			dead = 1
		}
		w.WriteByte(dead)
		buf = appendFloats(buf[:0], x.vec(int32(s)))
		w.Write(buf)
		w.WriteByte(uint8(len(h.links[s])))
		for _, l := range h.links[s] {
			buf = binary.LittleEndian.AppendUint32(buf[:0], uint32(len(l)))
			buf = appendInt32s(buf, l)
			w.Write(buf)
		}
	}
	if err := w.Flush(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// Load reads an index saved by Save. It fails when the file is missing,
// damaged, or was made for another identity (profile provider, model,
// dimension, pipeline).
func Load(path, identity string) (*Index, uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	var err2 error
	get := func(vs ...any) {
		for _, v := range vs {
			if err2 == nil {
				err2 = binary.Read(r, binary.LittleEndian, v)
			}
		}
	}
	str := func() string {
		var n uint32
		get(&n)
		if err2 != nil || n > 1<<20 {
			err2 = errors.Join(err2, errors.New("bad string"))
			return ""
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(r, b); err != nil {
			err2 = err
		}
		return string(b)
	}
	head := make([]byte, len(magic))
	if _, err := io.ReadFull(r, head); err != nil || string(head) != magic {
		return nil, 0, errors.New("not a vector index file")
	}
	if id := str(); err2 != nil || id != identity {
		return nil, 0, fmt.Errorf("the file was made for %q, not %q", id, identity)
	}
	var seq uint64
	var dim, m, efc, n, top uint32
	var entry int32
	get(&seq, &dim, &m, &efc, &n, &entry, &top)
	if err2 != nil || dim == 0 || dim > 1<<16 || m == 0 || n > 1<<28 {
		return nil, 0, errors.New("damaged vector index header")
	}
	x := &Index{dim: int(dim), slot: map[string]int32{}}
	x.graph = newHNSW(x, int(m), int(efc))
	x.graph.entry, x.graph.top = entry, int(top)
	x.ids = make([]string, 0, n)
	// Blocks of exactly the size they will hold, so that loading leaves no
	// spare capacity (the last block grows when the next vector arrives).
	for left := int(n); left > 0; left -= vecBlock {
		x.vecs = append(x.vecs, make([]float32, 0, min(left, vecBlock)*int(dim)))
	}
	x.dead = make([]bool, 0, n)
	x.graph.links = make([][][]int32, 0, n)
	// Vectors and link lists are read through one reused buffer straight
	// into the index (binary.Read allocates a buffer per slice: a second
	// copy of every vector as garbage, which the collector let the heap
	// grow by).
	buf := make([]byte, 4*dim)
	readN := func(n int) []byte {
		if cap(buf) < n {
			buf = make([]byte, n)
		}
		if err2 == nil {
			_, err2 = io.ReadFull(r, buf[:n])
		}
		return buf[:n]
	}
	for s := uint32(0); s < n && err2 == nil; s++ {
		id := str()
		var dead, levels uint8
		get(&dead)
		b := &x.vecs[int(s)/vecBlock]
		*b = appendFloatsFrom(*b, readN(4*int(dim)))
		get(&levels)
		links := make([][]int32, levels)
		for l := range links {
			var c uint32
			get(&c)
			if err2 != nil || c > 1<<16 {
				err2 = errors.Join(err2, errors.New("bad link count"))
				break
			}
			links[l] = int32sFrom(make([]int32, c), readN(4*int(c)))
		}
		x.ids = append(x.ids, id)
		x.dead = append(x.dead, dead == 1)
		x.graph.links = append(x.graph.links, links)
		if dead == 1 {
			x.nDead++
		} else {
			x.slot[id] = int32(s)
		}
	}
	if err2 != nil {
		return nil, 0, fmt.Errorf("damaged vector index: %w", err2)
	}
	for _, ls := range x.graph.links {
		for _, l := range ls {
			for _, t := range l {
				if t < 0 || int(t) >= len(x.ids) {
					return nil, 0, errors.New("damaged vector index: a link points outside")
				}
			}
		}
	}
	if x.graph.entry >= int32(len(x.ids)) {
		return nil, 0, errors.New("damaged vector index: bad entry point")
	}
	// A graph saved by an earlier release may hold vectors no layer-0 link
	// leads to: a walk from the entry point finds them (a few milliseconds
	// at 100,000 vectors) and they are relinked.
	x.healed = x.graph.heal(x.dead)
	return x, seq, nil
}

func appendFloats(b []byte, v []float32) []byte {
	for _, f := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(f))
	}
	return b
}

func appendInt32s(b []byte, v []int32) []byte {
	for _, i := range v {
		b = binary.LittleEndian.AppendUint32(b, uint32(i))
	}
	return b
}

// appendFloatsFrom appends the little-endian float32s of b to v.
func appendFloatsFrom(v []float32, b []byte) []float32 {
	for i := 0; i+4 <= len(b); i += 4 {
		v = append(v, math.Float32frombits(binary.LittleEndian.Uint32(b[i:])))
	}
	return v
}

// int32sFrom fills v with the little-endian int32s of b.
func int32sFrom(v []int32, b []byte) []int32 {
	for i := range v {
		v[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}
