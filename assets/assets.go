// Package assets holds what the agent integrations install besides their
// configuration entries: per agent, the instruction snippet, the hook or
// plugin scripts the agent needs and the range of agent versions loci
// supports. They are embedded in the binary; assets.dir (LOCI_ASSETS_DIR)
// replaces them with a directory of the same layout:
//
//	<agent>/versions.json      {"min": "2.1.0", "below": "3.0.0"}
//	<agent>/instructions.md    a text/template of the instructions block
//	opencode/plugin/loci.js    OpenCode's plugin, calling `loci hook opencode`
//
// A missing override directory is loci::assets::not_found (the daemon
// refuses to start); a file absent from the set in use is
// loci::integration::assets_missing.
package assets

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/loci-dev/loci/fault"
)

//go:embed files
var embedded embed.FS

// maxAssetBytes bounds one asset file read from an override directory.
const maxAssetBytes = 1 << 20

// Set is the assets in use: the embedded ones or an override directory.
type Set struct {
	fsys fs.FS
	dir  string
}

// Open returns the embedded assets when dir is "", else the directory dir,
// which must exist (loci::assets::not_found otherwise).
func Open(dir string) (*Set, error) {
	if dir == "" {
		sub, err := fs.Sub(embedded, "files")
		if err != nil {
			return nil, err
		}
		return &Set{fsys: sub}, nil
	}
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		problem := "is not a directory"
		if err != nil {
			problem = "cannot be read: " + err.Error()
			if errors.Is(err, fs.ErrNotExist) {
				problem = "does not exist"
			}
		}
		return nil, fault.Newf(fault.AssetsNotFound,
			"create the directory with the layout of the built-in assets (<agent>/versions.json, <agent>/instructions.md, opencode/plugin/loci.js), or unset assets.dir / LOCI_ASSETS_DIR to use the built-in ones",
			"assets.dir %q %s", dir, problem)
	}
	return &Set{fsys: os.DirFS(dir), dir: dir}, nil
}

// Origin is "built-in" or the override directory.
func (s *Set) Origin() string {
	if s.dir == "" {
		return "built-in"
	}
	return s.dir
}

// Read returns the asset at name (slash-separated, e.g.
// "claude-code/instructions.md"); an absent one is
// loci::integration::assets_missing.
func (s *Set) Read(name string) ([]byte, error) {
	fi, err := fs.Stat(s.fsys, name)
	if err == nil && fi.IsDir() {
		err = fs.ErrNotExist
	}
	if err == nil && fi.Size() > maxAssetBytes {
		return nil, fault.Newf(fault.IntegrationAssetsMissing, "keep asset files under 1 MiB",
			"asset %s in %s is %d bytes, too large", name, s.Origin(), fi.Size())
	}
	var b []byte
	if err == nil {
		b, err = fs.ReadFile(s.fsys, name)
	}
	if err == nil {
		return b, nil
	}
	where := "the built-in assets"
	if s.dir != "" {
		where = "assets.dir " + filepath.Clean(s.dir)
	}
	return nil, fault.Wrap(fault.IntegrationAssetsMissing, err, fmt.Sprintf("asset %s is missing from %s", name, where),
		"add the file (copy it from the built-in assets of this loci version) or unset assets.dir / LOCI_ASSETS_DIR")
}

// Versions is the range of agent versions an integration supports: at or
// above Min and, when Below is set, below it.
type Versions struct {
	Min   string `json:"min"`
	Below string `json:"below,omitempty"`
}

// Versions reads <agent>/versions.json.
func (s *Set) Versions(agent string) (Versions, error) {
	b, err := s.Read(agent + "/versions.json")
	if err != nil {
		return Versions{}, err
	}
	var v Versions
	if err := json.Unmarshal(b, &v); err != nil || v.Min == "" {
		return Versions{}, fault.Newf(fault.IntegrationAssetsMissing, `write {"min": "X.Y.Z", "below": "X.Y.Z"}`,
			"asset %s/versions.json in %s is not a version range", agent, s.Origin())
	}
	return v, nil
}
