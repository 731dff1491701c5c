package credentials

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/loci-dev/loci/fault"
)

// Store keeps tokens by key (a source, or a source configuration),
// outside the palace.
type Store interface {
	// Load is key's token (nil, nil when none).
	Load(key string) (*Token, error)
	// Save keeps t under key, readable by the daemon's user only.
	Save(key string, t *Token) error
	// Delete forgets key's token (none is no error).
	Delete(key string) error
	// Where says where tokens go ("file <dir>" or "keyring").
	Where() string
}

// TokenDir is the directory under credentials.dir the file backend keeps
// tokens in, apart from the credential files a user puts in
// credentials.dir itself.
const TokenDir = "oauth"

// maxTokenFile bounds a token file read back (a token is a few KiB).
const maxTokenFile = 1 << 20

// storeHelp is the help of a store failure about dir.
func storeHelp(dir string) string {
	return "make " + dir + " a directory only the daemon's user owns and can write (chmod 700), or set credentials.dir to one; then sign in again if the token is lost"
}

// storeFailed is loci::credential::store_failed: what failed and where,
// with help; cause is for the log (it names paths, never a token).
func storeFailed(dir string, cause error, format string, args ...any) *fault.Error {
	e := fault.Newf(fault.CredentialStoreFailed, storeHelp(dir), format, args...)
	e.Err = cause
	return e
}

// Open is the store credentials.backend names over dir
// (credentials.dir); loci::credential::store_failed when it cannot be
// used. Backend file keeps one file per key in dir/oauth (TokenDir),
// both directories created 0700 and refused when another user owns them
// or others may write them, each file 0600 and replaced whole (a
// temporary file, fsync, rename). Backend auto is file: loci uses no
// desktop keyring (Where says so).
func Open(dir, backend string) (Store, error) {
	switch backend {
	case BackendFile, BackendAuto, "":
	default:
		return nil, fault.Newf(fault.CredentialStoreFailed, "set credentials.backend to auto or file",
			"credentials.backend %q is not a backend (auto, file)", backend)
	}
	if dir == "" || !filepath.IsAbs(dir) {
		return nil, fault.Newf(fault.CredentialStoreFailed, "set credentials.dir to an absolute directory only the daemon's user can read",
			"credentials.dir %q is not an absolute directory, so sign-in tokens have nowhere to go", dir)
	}
	dir = filepath.Clean(dir)
	tokens := filepath.Join(dir, TokenDir)
	for _, d := range []string{dir, tokens} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, storeFailed(d, err, "cannot create the credentials directory %s: %v", d, pathless(err))
		}
		if err := privateDir(d); err != nil {
			return nil, err
		}
	}
	s := &fileStore{dir: tokens, where: "file " + tokens}
	if backend == BackendAuto || backend == "" {
		s.where += " (credentials.backend auto: loci keeps tokens in files readable by the daemon's user only; it uses no desktop keyring)"
	}
	return s, nil
}

// privateDir refuses d unless it is a directory (not a link) owned by
// this user that no one else may write.
func privateDir(d string) error {
	fi, err := os.Lstat(d)
	if err != nil {
		return storeFailed(d, err, "cannot read the credentials directory %s: %v", d, pathless(err))
	}
	if !fi.IsDir() {
		return storeFailed(d, nil, "the credentials directory %s is not a directory (a link or a file)", d)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return storeFailed(d, nil, "the credentials directory %s may be written by other users (mode %04o); loci keeps no token there", d, fi.Mode().Perm())
	}
	if owner, ok := ownerOf(fi); ok && owner != os.Getuid() {
		return storeFailed(d, nil, "the credentials directory %s belongs to another user (uid %d; the daemon runs as %d); loci keeps no token there", d, owner, os.Getuid())
	}
	return nil
}

// pathless is err without the path an *fs.PathError repeats.
func pathless(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// fileStore is backend file: one JSON file per key.
type fileStore struct {
	dir   string
	where string
}

// Where is "file DIR", with why for backend auto.
func (s *fileStore) Where() string { return s.where }

// fileName is key's file name: letters a-z, digits and '-' as they are,
// every other byte '_' and two hex digits (so distinct keys never share
// a file and no key names a path; "" is "_"), ".json"; a key that would make a name
// over 200 bytes is "_h" and its SHA-256 instead ('h' never follows an
// escape's '_').
func fileName(key string) string {
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "_%02x", c)
		}
	}
	if key == "" {
		b.WriteString("_")
	}
	if b.Len() > 200 {
		sum := sha256.Sum256([]byte(key))
		return "_h" + hex.EncodeToString(sum[:]) + ".json"
	}
	return b.String() + ".json"
}

// tokenFile is a token as the file backend writes it: the one encoding
// that carries its secrets.
type tokenFile struct {
	Format   int       `json:"format"`
	Key      string    `json:"key"`
	Access   string    `json:"access_token"`
	Refresh  string    `json:"refresh_token,omitempty"`
	Expiry   time.Time `json:"expiry,omitzero"`
	Scopes   []string  `json:"scopes,omitempty"`
	Provider string    `json:"provider"`
	Saved    time.Time `json:"saved"`
}

// checkKey refuses an empty key (a caller's mistake).
func checkKey(dir, key string) error {
	if key == "" {
		return storeFailed(dir, nil, "a token needs a key (a source or a source configuration)")
	}
	return nil
}

// Load reads key's file; a file another user could read, or not a plain
// file, is refused rather than trusted.
func (s *fileStore) Load(key string) (*Token, error) {
	if err := checkKey(s.dir, key); err != nil {
		return nil, err
	}
	name := fileName(key)
	path := filepath.Join(s.dir, name)
	root, err := os.OpenRoot(s.dir)
	if err != nil {
		return nil, storeFailed(s.dir, err, "cannot open the token directory %s: %v", s.dir, pathless(err))
	}
	defer root.Close()
	fi, err := root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, storeFailed(s.dir, err, "cannot read the token file %s: %v", path, pathless(err))
	}
	if !fi.Mode().IsRegular() {
		return nil, storeFailed(s.dir, nil, "the token file %s is not a plain file (a link or another kind); loci reads no token from it", path)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fault.Newf(fault.CredentialStoreFailed, "chmod 600 "+path+" if no one else has read it, or delete it and sign in again",
			"the token file %s may be read by other users (mode %04o); loci does not use it", path, fi.Mode().Perm())
	}
	if owner, ok := ownerOf(fi); ok && owner != os.Getuid() {
		return nil, storeFailed(s.dir, nil, "the token file %s belongs to another user (uid %d)", path, owner)
	}
	f, err := root.Open(name)
	if err != nil {
		return nil, storeFailed(s.dir, err, "cannot read the token file %s: %v", path, pathless(err))
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
	if err != nil {
		return nil, storeFailed(s.dir, err, "cannot read the token file %s: %v", path, pathless(err))
	}
	var tf tokenFile
	d := json.NewDecoder(bytes.NewReader(b))
	if len(b) > maxTokenFile || d.Decode(&tf) != nil || tf.Format != 1 || tf.Key != key || tf.Access == "" {
		// The decoder's error may quote the file: it is not repeated.
		return nil, fault.Newf(fault.CredentialStoreFailed, "delete "+path+" and sign in again",
			"the token file %s is not one loci wrote for %q", path, key)
	}
	t := NewToken(tf.Access, tf.Refresh)
	t.Expiry, t.Scopes, t.Provider = tf.Expiry, tf.Scopes, tf.Provider
	return t, nil
}

// Save writes key's file whole: a temporary file (0600) beside it,
// written and synced, renamed over it, the directory synced.
func (s *fileStore) Save(key string, t *Token) error {
	if err := checkKey(s.dir, key); err != nil {
		return err
	}
	if t.Access() == "" {
		return storeFailed(s.dir, nil, "no token to keep for %q", key)
	}
	b, err := json.Marshal(tokenFile{Format: 1, Key: key, Access: t.Access(), Refresh: t.Refresh(), Expiry: t.Expiry,
		Scopes: t.Scopes, Provider: t.Provider, Saved: time.Now().UTC()})
	if err != nil {
		return storeFailed(s.dir, nil, "cannot encode the token for %q", key)
	}
	if err := privateDir(s.dir); err != nil {
		return err
	}
	path := filepath.Join(s.dir, fileName(key))
	tmp, err := os.CreateTemp(s.dir, ".tmp-*")
	if err != nil {
		return storeFailed(s.dir, err, "cannot write a token file in %s: %v", s.dir, pathless(err))
	}
	done := false
	defer func() {
		if !done {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(0o600); err != nil {
		return storeFailed(s.dir, err, "cannot make the token file private in %s: %v", s.dir, pathless(err))
	}
	if _, err := tmp.Write(b); err != nil {
		return storeFailed(s.dir, err, "cannot write the token file %s: %v", path, pathless(err))
	}
	if err := tmp.Sync(); err != nil {
		return storeFailed(s.dir, err, "cannot write the token file %s to disk: %v", path, pathless(err))
	}
	if err := tmp.Close(); err != nil {
		return storeFailed(s.dir, err, "cannot write the token file %s: %v", path, pathless(err))
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return storeFailed(s.dir, err, "cannot put the token file %s in place: %v", path, pathless(err))
	}
	done = true
	return syncDir(s.dir)
}

// Delete removes key's file and syncs the directory.
func (s *fileStore) Delete(key string) error {
	if err := checkKey(s.dir, key); err != nil {
		return err
	}
	path := filepath.Join(s.dir, fileName(key))
	if err := os.Remove(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return storeFailed(s.dir, err, "cannot delete the token file %s: %v", path, pathless(err))
	}
	return syncDir(s.dir)
}

// syncDir makes a rename or removal in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return storeFailed(dir, err, "cannot open %s to make the change durable: %v", dir, pathless(err))
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return storeFailed(dir, err, "cannot make the change in %s durable: %v", dir, pathless(err))
	}
	return nil
}
