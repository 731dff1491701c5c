package integration

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Manifest records one install: what loci wrote where, so update rewrites
// only loci's parts and remove restores the files.
type Manifest struct {
	Agent     string `json:"agent"`
	Scope     string `json:"scope"`
	Transport string `json:"transport"`
	URL       string `json:"url"`
	Loci      string `json:"loci"`
	// AgentVersion is the agent's version at the last install or update.
	AgentVersion string       `json:"agent_version"`
	Files        []FileRecord `json:"files"`
	// Dirs are the directories loci created, to remove when empty.
	Dirs []string `json:"dirs,omitempty"`
}

// FileRecord is one file loci wrote.
type FileRecord struct {
	Path   string `json:"path"`
	Format Format `json:"format"`
	// Created: the file did not exist before loci wrote it.
	Created bool `json:"created"`
	// Backup is the copy of the file as it was before loci's first change.
	Backup string `json:"backup,omitempty"`
	// SHA256 is the digest of the file as loci last wrote it.
	SHA256 string `json:"sha256"`
	Parts  []Part `json:"parts"`
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// manifestID names one install's manifest and backups.
func manifestID(agent, project string) string {
	if project == "" {
		return agent + "-user"
	}
	return agent + "-project-" + digest([]byte(project))[:12]
}

func (e *Env) manifestPath(agent, project string) string {
	return filepath.Join(e.StateDir, manifestID(agent, project)+".json")
}

func (e *Env) backupDir(agent, project string) string {
	return filepath.Join(e.StateDir, "backups", manifestID(agent, project))
}

// readManifest reads an install's manifest; none is errNotInstalled.
func (e *Env) readManifest(agent, project string) (*Manifest, error) {
	b, err := os.ReadFile(e.manifestPath(agent, project))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errNotInstalled
	}
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, errInvalid(e.manifestPath(agent, project), err)
	}
	return &m, nil
}

// manifests lists the installs of agent, any scope.
func (e *Env) manifests(agent string) []Manifest {
	var out []Manifest
	paths, _ := filepath.Glob(filepath.Join(e.StateDir, agent+"-*.json"))
	sort.Strings(paths)
	for _, p := range paths {
		b, err := os.ReadFile(p)
		var m Manifest
		if err == nil && json.Unmarshal(b, &m) == nil && m.Agent == agent {
			out = append(out, m)
		}
	}
	return out
}

// record returns the manifest's record of path.
func (m *Manifest) record(path string) *FileRecord {
	if m == nil {
		return nil
	}
	for i := range m.Files {
		if m.Files[i].Path == path {
			return &m.Files[i]
		}
	}
	return nil
}

// mkdirs creates dir and its missing parents, returning those it created,
// parents first.
func mkdirs(dir string, perm fs.FileMode) ([]string, error) {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			break
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if err := os.MkdirAll(dir, perm); err != nil {
		return nil, err
	}
	for i, j := 0, len(missing)-1; i < j; i, j = i+1, j-1 {
		missing[i], missing[j] = missing[j], missing[i]
	}
	return missing, nil
}

// removeDirs removes the directories loci created when they are empty,
// deepest first.
func removeDirs(dirs []string) {
	sorted := append([]string(nil), dirs...)
	sort.Slice(sorted, func(i, j int) bool {
		return strings.Count(sorted[i], string(filepath.Separator)) > strings.Count(sorted[j], string(filepath.Separator))
	})
	for _, d := range sorted {
		_ = os.Remove(d) // fails when not empty: then it stays
	}
}

// writeFile replaces path's content atomically (a temporary file renamed
// over it), keeping its mode (a new file is 0600: agents' configuration
// files hold what only their owner should read); a symbolic link is
// followed, so the file it points to is written and the link stays.
func writeFile(path string, data []byte) error {
	target := path
	if t, err := filepath.EvalSymlinks(path); err == nil {
		target = t
	}
	mode := fs.FileMode(0o600)
	if fi, err := os.Stat(target); err == nil {
		mode = fi.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".loci-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
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
	return os.Rename(tmp.Name(), target)
}
