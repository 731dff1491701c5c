package pack

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"io"
)

// TarFile is one file of a deterministic .tar.gz (WriteTarGz).
type TarFile struct {
	Name string
	Body []byte
}

// WriteTarGz writes files, in their order, as a deterministic .tar.gz:
// regular files with fixed times, owners and modes, so that the same
// files are the same bytes wherever and whenever they are written. A
// source package's archive and a plugin's are written by it.
func WriteTarGz(w io.Writer, files []TarFile) error {
	zw, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return err
	}
	zw.ModTime = epoch
	tw := tar.NewWriter(zw)
	for _, f := range files {
		h := &tar.Header{Name: f.Name, Mode: 0o644, Size: int64(len(f.Body)), ModTime: epoch, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(f.Body); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return zw.Close()
}

// ReadTarGz reads a .tar.gz of at most MaxArchiveBytes, compressed and
// unpacked, into its files by name; a source package's archive and a
// plugin's are read by it. entry judges each header: the file's name, or
// skip (a folder), or why it is refused. Every file is named once and
// read in full. Every problem is bad's error: kind names the archive in
// "not a .tar.gz <kind>", unit in "the <unit> unpacks to more than ...".
func ReadTarGz(r io.Reader, kind, unit string, bad func(format string, args ...any) error,
	entry func(h *tar.Header) (name string, skip bool, err error)) (map[string][]byte, error) {
	zr, err := gzip.NewReader(io.LimitReader(r, MaxArchiveBytes+1))
	if err != nil {
		return nil, bad("not a .tar.gz %s: %v", kind, err)
	}
	tr := tar.NewReader(zr)
	files := map[string][]byte{}
	var total int64
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, bad("the archive is damaged: %v", err)
		}
		name, skip, err := entry(h)
		if err != nil {
			return nil, err
		}
		if skip {
			continue
		}
		if _, dup := files[name]; dup {
			return nil, bad("%q appears twice", name)
		}
		if total += h.Size; h.Size < 0 || total > MaxArchiveBytes {
			return nil, bad("the %s unpacks to more than %d MiB", unit, MaxArchiveBytes>>20)
		}
		b, err := io.ReadAll(io.LimitReader(tr, h.Size+1))
		if err != nil || int64(len(b)) != h.Size {
			return nil, bad("%q is truncated", name)
		}
		files[name] = b
	}
	return files, nil
}
