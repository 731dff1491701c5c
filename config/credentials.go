package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// CredentialFileInside reports whether file, a credential file named
// through the API, lies inside dir (credentials.dir): both absolute, file
// below dir once cleaned (no ".." out of it), and no symbolic link met on
// the way from dir leading out of it (absolute link targets count as
// leading out). Links are followed with os.Root, which refuses one leading
// out as soon as it meets it, before looking at what it leads to, so the
// answer never depends on whether a file outside dir exists. What inside
// dir does not exist yet is inside (its credential is unavailable until
// the file is put there).
func CredentialFileInside(dir, file string) bool {
	if dir == "" || file == "" || !filepath.IsAbs(dir) || !filepath.IsAbs(file) {
		return false
	}
	dir, file = filepath.Clean(dir), filepath.Clean(file)
	rel, err := filepath.Rel(dir, file)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return false
	}
	root, err := os.OpenRoot(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return true // nothing is inside yet, no link either
	}
	if err != nil {
		return false
	}
	defer root.Close()
	_, err = root.Stat(rel)
	switch {
	case err == nil, errors.Is(err, fs.ErrNotExist), errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.ENOTDIR):
		// Met inside dir: the walk stops at the first link leading out
		// with its own error, before anything beyond it.
		return true
	}
	return false
}

// Read reads the credential the reference names, now: an environment
// variable's value (env: nil reads the process's), or a file's content
// without its trailing line break. An oauth sign-in is not read here but
// from the daemon's sign-in service (services.SignIn). An error
// says what kind of reference could not be read, never its name, path or
// anything read.
func (c *CredentialRef) Read(env func(string) (string, bool)) ([]byte, error) {
	switch c.Kind() {
	case "env":
		if env == nil {
			env = os.LookupEnv
		}
		if v, ok := env(c.Env); ok && v != "" {
			return []byte(v), nil
		}
		return nil, errors.New("the environment variable the credential names is not set")
	case "file":
		b, err := os.ReadFile(c.File)
		if err != nil {
			return nil, errors.New("the file the credential names cannot be read")
		}
		if b = []byte(strings.TrimRight(string(b), "\r\n")); len(b) == 0 {
			return nil, errors.New("the file the credential names is empty")
		}
		return b, nil
	case "oauth":
		return nil, errors.New("an oauth sign-in is read from the daemon's sign-in service, not from here")
	}
	return nil, errors.New("the credential names no place to read it from")
}
