package vector

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

const magic = "LOCIVEC1"

// Save writes the index (vectors, tombstones and graph) with the change-log
// sequence it reflects to path, atomically (a temporary file renamed).
func (x *Index) Save(path string, seq uint64, identity string) error {
	x.mu.RLock()
	defer x.mu.RUnlock()
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
	for s, id := range x.ids {
		str(id)
		dead := uint8(0)
		if x.dead[s] {
			dead = 1
		}
		put(dead, x.vec(int32(s)))
		put(uint8(len(h.links[s])))
		for _, l := range h.links[s] {
			put(uint32(len(l)))
			put(l)
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
	x.vecs = make([]float32, 0, int(n)*int(dim))
	x.dead = make([]bool, 0, n)
	x.graph.links = make([][][]int32, 0, n)
	vec := make([]float32, dim)
	for s := uint32(0); s < n && err2 == nil; s++ {
		id := str()
		var dead, levels uint8
		get(&dead, vec)
		x.vecs = append(x.vecs, vec...)
		get(&levels)
		links := make([][]int32, levels)
		for l := range links {
			var c uint32
			get(&c)
			if err2 != nil || c > 1<<16 {
				err2 = errors.Join(err2, errors.New("bad link count"))
				break
			}
			links[l] = make([]int32, c)
			get(links[l])
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
	return x, seq, nil
}
