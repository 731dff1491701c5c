// Package pack is a source package as loci reads and writes it, without
// running it: the manifest (loci-source.toml), the permissions it asks
// for and their consent digest, the compatibility check against this
// daemon, the package archive (a deterministic .tar.gz of the manifest
// and the module), and a static registry's index of archives with their
// ed25519 signatures (index.go, sign.go). Running a package is
// sources/sandbox's; serving it as an adapter is sources/installed's.
package pack

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/pelletier/go-toml/v2"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/sources/contract"
)

// ManifestFile is the manifest's name in a package and a project.
const ManifestFile = "loci-source.toml"

// BaseVersion is the version a daemon compares a manifest's loci
// requirement with when its own version is not a semantic version (a
// development build stamped with a commit).
const BaseVersion = "0.1.0"

// The memory ceiling a package gets when its manifest names none, and the
// most it may ask for.
const (
	DefaultMemoryMiB = 64
	MaxMemoryMiB     = 1024
)

// Locator is the read permission naming the directory the source mines
// (whatever locator the miner gives), not a fixed path.
const Locator = "locator"

// Manifest is a package's loci-source.toml.
type Manifest struct {
	// Contract is the contract version the module was built for
	// (contract.Version).
	Contract int `toml:"contract" json:"contract"`
	// Name is the source's name (lowercase letters, digits and '-').
	Name        string `toml:"name" json:"name"`
	Version     string `toml:"version" json:"version"`
	Description string `toml:"description,omitempty" json:"description,omitempty"`
	// Loci is the loci versions it runs on, a semantic version
	// constraint (">= 0.1.0"); "" any.
	Loci string `toml:"loci,omitempty" json:"loci,omitempty"`
	// Module is the WebAssembly module's file name in the package.
	Module string `toml:"module" json:"module"`

	Source      SourceInfo  `toml:"source" json:"source"`
	Permissions Permissions `toml:"permissions" json:"permissions"`
	// OAuth is how the source signs in to its service (nil: it does
	// not).
	OAuth *OAuth `toml:"oauth,omitempty" json:"oauth,omitempty"`
}

// SourceInfo is what the source declares of itself: what GET
// /api/sources shows of an adapter.
type SourceInfo struct {
	// Options are the option keys it takes.
	Options []string `toml:"options,omitempty" json:"options,omitempty"`
	// Incremental: discovery past a cursor lists only what changed.
	Incremental bool `toml:"incremental,omitempty" json:"incremental,omitempty"`
	// Triggers are the trigger types beyond schedule and poll it supports
	// ("watch").
	Triggers []string `toml:"triggers,omitempty" json:"triggers,omitempty"`
	// DefaultLocator is what an empty locator stands for ("" none).
	DefaultLocator string `toml:"default_locator,omitempty" json:"default_locator,omitempty"`
	// Format is the stated version of the format it reads, if any.
	Format string `toml:"format,omitempty" json:"format,omitempty"`
}

// Permissions are what a package may touch. Nothing is ambient: what is
// not here, the sandbox does not give.
type Permissions struct {
	// Read are the directories it may read, never write: Locator (the
	// directory a miner names) or absolute paths.
	Read []string `toml:"read,omitempty" json:"read,omitempty"`
	// Programs are the programs it may run, by exact name, with
	// arguments and no shell.
	Programs []string `toml:"programs,omitempty" json:"programs,omitempty"`
	// Env are the environment variables it may read.
	Env []string `toml:"env,omitempty" json:"env,omitempty"`
	// Network: it may fetch over the network (all or nothing).
	Network bool `toml:"network,omitempty" json:"network,omitempty"`
	// MemoryMiB is its memory ceiling (0: DefaultMemoryMiB).
	MemoryMiB int `toml:"memory_mib,omitempty" json:"memory_mib"`
}

var (
	nameRE    = regexp.MustCompile(`^[a-z][a-z0-9-]{0,62}$`)
	envRE     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	programRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]*$`)
	optionRE  = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
)

// NameRule says what a source name may be.
const NameRule = "lowercase letters, digits and '-', starting with a letter, at most 63"

// ValidName reports whether s is a source name (NameRule).
func ValidName(s string) bool { return nameRE.MatchString(s) }

// shells are the programs a package may never name: a shell runs
// anything, which is the one permission a list of programs must not give.
var shells = []string{"sh", "bash", "dash", "zsh", "ksh", "csh", "tcsh", "fish", "ash", "busybox", "env", "sudo", "su", "doas", "xargs", "nohup", "setsid", "timeout", "nice", "exec", "cmd", "cmd.exe", "powershell", "pwsh", "python", "python3", "perl", "ruby", "node"}

// ManifestHelp is the help every manifest error carries: the manifest is
// a file its author edits, not a request.
const ManifestHelp = "correct " + ManifestFile + " (see loci source init for a working one)"

// manifestError is loci::input::invalid about the manifest: where (the
// file, its line when known) and what, in the author's words.
func manifestError(line int, problem string) *fault.Error {
	where := "manifest " + ManifestFile
	if line > 0 {
		where = fmt.Sprintf("%s line %d", where, line)
	}
	return fault.New(fault.InputInvalid, where+": "+fault.Clip(problem, fault.MaxMsg-64), ManifestHelp)
}

// invalid is loci::input::invalid naming the field, as fault.Invalid,
// with help that fits the file at fault (a local command's input is a
// file, not a request to send again).
func invalid(field, problem, help string) *fault.Error {
	return fault.New(fault.InputInvalid, fault.Clip(field, fault.MaxQuoted)+": "+fault.Clip(problem, fault.MaxMsg/2), help)
}

// The help of the errors about each kind of file.
const (
	archiveHelp = "this is not a source package as loci source package writes it: package its project again, or ask its author for the package"
	indexHelp   = "this is not a source registry index loci reads: write it again with loci source index, or ask the registry's keeper"
	pubKeyHelp  = "give the public key as loci source keygen wrote it (PREFIX.pub, one line: " + KeyPrefix + " <base64>)"
	privKeyHelp = "give the private key file loci source keygen wrote (PREFIX.key)"
)

// ParseManifest reads and checks a manifest: every problem is
// loci::input::invalid naming the key (and its line when the TOML is at
// fault), with help saying to correct the file. The permissions come
// back normalised.
func ParseManifest(b []byte) (*Manifest, error) {
	var m Manifest
	d := toml.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&m); err != nil {
		return nil, decodeError(err)
	}
	if err := m.Check(); err != nil {
		return nil, err
	}
	return &m, nil
}

// decodeError says what go-toml found wrong in user terms: an unknown
// key with the keys its table has, a value of the wrong type with the
// type it must be, or the TOML syntax error, each with its line.
func decodeError(err error) *fault.Error {
	var strict *toml.StrictMissingError
	if errors.As(err, &strict) && len(strict.Errors) > 0 {
		for _, e := range strict.Errors {
			if k := []string(e.Key()); len(k) == 2 && k[0] == "oauth" && k[1] == "client_secret" {
				line, _ := e.Position()
				return manifestError(line, "oauth.client_secret: a source signs in as a public client, without a secret "+
					"(a secret shipped in a package is no secret): remove client_secret; the browser flow uses PKCE instead")
			}
		}
		e := strict.Errors[0]
		line, _ := e.Position()
		key := []string(e.Key())
		table, known := keysOf(reflect.TypeOf(Manifest{}), key[:len(key)-1])
		problem := "unknown key " + strings.Join(key, ".")
		if len(known) > 0 {
			what := "the keys are "
			if table != "" {
				what = "the " + table + " keys are "
				if table == "permissions" {
					what = "the permissions are "
				}
			}
			problem += " (" + what + strings.Join(known, ", ") + ")"
		}
		if n := len(strict.Errors) - 1; n > 0 {
			problem += fmt.Sprintf("; and %d more unknown key%s", n, plural(n))
		}
		return manifestError(line, problem)
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		line, _ := de.Position()
		key := []string(de.Key())
		if len(key) > 0 && strings.Contains(de.Error(), "cannot decode") {
			if t := typeAt(reflect.TypeOf(Manifest{}), key); t != nil {
				return manifestError(line, strings.Join(key, ".")+" must be "+tomlType(t))
			}
		}
		return manifestError(line, "not valid TOML: "+strings.TrimPrefix(de.Error(), "toml: "))
	}
	return manifestError(0, "not valid TOML: "+strings.TrimPrefix(err.Error(), "toml: "))
}

// plural is "s" unless n is 1.
func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// tomlKey is a struct field's TOML key ("" when it has none).
func tomlKey(f reflect.StructField) string {
	k, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
	if k == "-" {
		return ""
	}
	return k
}

// keysOf is the keys the table at path has (tables in brackets) and the
// table's name ("" the top level).
func keysOf(t reflect.Type, path []string) (string, []string) {
	t = typeAt(t, path)
	if t == nil || t.Kind() != reflect.Struct {
		return strings.Join(path, "."), nil
	}
	var keys []string
	for i := range t.NumField() {
		f := t.Field(i)
		k := tomlKey(f)
		if k == "" {
			continue
		}
		if ft := f.Type; ft.Kind() == reflect.Struct || ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Struct {
			k = "[" + strings.Join(append(slices.Clone(path), k), ".") + "]"
		}
		keys = append(keys, k)
	}
	return strings.Join(path, "."), keys
}

// typeAt is the Go type of the key at path in t (nil when there is none).
func typeAt(t reflect.Type, path []string) reflect.Type {
	for _, k := range path {
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return nil
		}
		var next reflect.Type
		for i := range t.NumField() {
			if tomlKey(t.Field(i)) == k {
				next = t.Field(i).Type
				break
			}
		}
		if next == nil {
			return nil
		}
		t = next
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// tomlType names a Go type as the TOML a manifest writes for it.
func tomlType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string in quotes"
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint, reflect.Uint64, reflect.Uint32:
		return "a whole number"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.String {
			return `a list of strings (["a", "b"])`
		}
		return "a list of values of one type"
	case reflect.Struct:
		return "a table"
	}
	return "a value of another type"
}

// Check checks a manifest's fields (not its compatibility: Compatible)
// and normalises its permissions.
func (m *Manifest) Check() error {
	bad := func(field, problem string) error { return manifestError(0, field+": "+problem) }
	if !ValidName(m.Name) {
		return bad("name", fmt.Sprintf("%q is not a source name (%s)", m.Name, NameRule))
	}
	if m.Contract <= 0 {
		return bad("contract", "the contract version the module was built for is required (this loci speaks "+fmt.Sprint(contract.Version)+")")
	}
	if _, err := semver.StrictNewVersion(m.Version); err != nil {
		return bad("version", fmt.Sprintf("%q is not a semantic version (1.2.3)", m.Version))
	}
	if m.Loci != "" {
		if _, err := semver.NewConstraint(m.Loci); err != nil {
			return bad("loci", fmt.Sprintf("%q is not a version constraint (\">= 0.1.0\"): %v", m.Loci, err))
		}
	}
	if m.Module == "" || m.Module != filepath.Base(m.Module) || !strings.HasSuffix(m.Module, ".wasm") || strings.HasPrefix(m.Module, ".") {
		return bad("module", fmt.Sprintf("%q is not a module file name (a name ending .wasm, beside the manifest)", m.Module))
	}
	for _, o := range m.Source.Options {
		if !optionRE.MatchString(o) {
			return bad("source.options", fmt.Sprintf("%q is not an option key (lowercase letters, digits and '_')", o))
		}
	}
	for _, t := range m.Source.Triggers {
		if t != "watch" && t != "webhook" {
			return bad("source.triggers", fmt.Sprintf("%q is not a trigger type a source declares (watch, webhook)", t))
		}
	}
	p, err := m.Permissions.Normalised()
	if err != nil {
		return err
	}
	m.Permissions = p
	if m.OAuth != nil {
		if err := m.OAuth.Check(); err != nil {
			return err
		}
	}
	return nil
}

// Normalised is the permissions checked, each list sorted without
// repeats and paths cleaned, the memory ceiling filled in: two spellings
// of the same permissions are equal, so their consent digests are.
func (p Permissions) Normalised() (Permissions, error) {
	bad := func(field, problem string) (Permissions, error) {
		return Permissions{}, manifestError(0, "permissions."+field+": "+problem)
	}
	var out Permissions
	for _, d := range p.Read {
		if d == Locator {
			out.Read = append(out.Read, d)
			continue
		}
		if !filepath.IsAbs(d) {
			return bad("read", fmt.Sprintf("%q is neither %q nor an absolute path", d, Locator))
		}
		out.Read = append(out.Read, filepath.Clean(d))
	}
	for _, prog := range p.Programs {
		if !programRE.MatchString(prog) {
			return bad("programs", fmt.Sprintf("%q is not a program name (a name found on PATH, no path, no arguments)", prog))
		}
		if slices.Contains(shells, strings.ToLower(prog)) {
			return bad("programs", fmt.Sprintf("%q runs other programs (a shell or launcher); a package names the programs it runs", prog))
		}
		out.Programs = append(out.Programs, prog)
	}
	for _, e := range p.Env {
		if !envRE.MatchString(e) {
			return bad("env", fmt.Sprintf("%q is not an environment variable name", e))
		}
		if strings.HasPrefix(strings.ToUpper(e), "LOCI_") {
			return bad("env", fmt.Sprintf("%q is loci's own setting (a LOCI_ variable, such as the daemon's token); a package may not read one", e))
		}
		out.Env = append(out.Env, e)
	}
	out.Network = p.Network
	switch {
	case p.MemoryMiB == 0:
		out.MemoryMiB = DefaultMemoryMiB
	case p.MemoryMiB < 0 || p.MemoryMiB > MaxMemoryMiB:
		return bad("memory_mib", fmt.Sprintf("%d is not between 1 and %d", p.MemoryMiB, MaxMemoryMiB))
	default:
		out.MemoryMiB = p.MemoryMiB
	}
	for _, l := range []*[]string{&out.Read, &out.Programs, &out.Env} {
		slices.Sort(*l)
		*l = slices.Compact(*l)
	}
	return out, nil
}

// None reports a package that asks for nothing beyond its own memory: no
// directory, program, variable or network. It needs no consent.
func (p Permissions) None() bool {
	return len(p.Read) == 0 && len(p.Programs) == 0 && len(p.Env) == 0 && !p.Network
}

// Within reports whether p asks for nothing beyond q (both normalised):
// an update whose permissions are within those consented to needs no new
// consent.
func (p Permissions) Within(q Permissions) bool {
	subset := func(a, b []string) bool {
		for _, x := range a {
			if !slices.Contains(b, x) {
				return false
			}
		}
		return true
	}
	return subset(p.Read, q.Read) && subset(p.Programs, q.Programs) && subset(p.Env, q.Env) &&
		(!p.Network || q.Network) && p.MemoryMiB <= q.MemoryMiB
}

// ConsentDigest is the digest a user consents to: SHA-256 over the
// source's name and its normalised permissions, in hex. The daemon
// recomputes it from the package it is given, so a digest shown for one
// package never installs another.
func ConsentDigest(name string, p Permissions) string {
	b, _ := json.Marshal(struct {
		Contract    int         `json:"contract"`
		Name        string      `json:"name"`
		Permissions Permissions `json:"permissions"`
	}{1, name, p})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Words are the permissions in human words, one line each, for the
// consent question and the dashboard.
func (p Permissions) Words() []string {
	var out []string
	for _, d := range p.Read {
		if d == Locator {
			out = append(out, "read the folder a miner points it at, without changing it")
		} else {
			out = append(out, "read "+d+", without changing it")
		}
	}
	for _, prog := range p.Programs {
		out = append(out, "run the program "+prog+" as you, with any arguments it chooses (no shell, but whatever "+prog+" can do, such as run other programs or use the network, the package can ask of it)")
	}
	for _, e := range p.Env {
		out = append(out, "read the environment variable "+e)
	}
	if p.Network {
		out = append(out, "use the network (any address)")
	}
	mem := p.MemoryMiB
	if mem == 0 {
		mem = DefaultMemoryMiB
	}
	return append(out, fmt.Sprintf("use up to %d MiB of memory", mem))
}

// CompareVersions compares two package versions as semantic versions:
// -1 when a is older than b, 1 when newer, 0 when the same or when
// either cannot be read.
func CompareVersions(a, b string) int {
	va, err := semver.NewVersion(a)
	if err != nil {
		return 0
	}
	vb, err := semver.NewVersion(b)
	if err != nil {
		return 0
	}
	return va.Compare(vb)
}

// WordsBeyond is what p asks for that q does not give (both normalised),
// in human words (Words): an update's new permissions.
func (p Permissions) WordsBeyond(q Permissions) []string {
	extra := func(a, b []string) []string {
		var x []string
		for _, s := range a {
			if !slices.Contains(b, s) {
				x = append(x, s)
			}
		}
		return x
	}
	more := Permissions{Read: extra(p.Read, q.Read), Programs: extra(p.Programs, q.Programs), Env: extra(p.Env, q.Env),
		Network: p.Network && !q.Network, MemoryMiB: p.MemoryMiB}
	words := more.Words()
	if p.MemoryMiB <= q.MemoryMiB {
		// The memory line comes last; it is not new.
		words = words[:len(words)-1]
	}
	return words
}

// Compatible is "" when this daemon (its version lociVersion) can run the
// package, else why not: the reason an incompatible package shows.
func (m *Manifest) Compatible(lociVersion string) string {
	if m.Contract != contract.Version {
		return fmt.Sprintf("built for source contract %d; this loci speaks contract %d (rebuild it against this loci)", m.Contract, contract.Version)
	}
	if m.Loci == "" {
		return ""
	}
	c, err := semver.NewConstraint(m.Loci)
	if err != nil {
		return fmt.Sprintf("its loci requirement %q cannot be read: %v", m.Loci, err)
	}
	v, err := semver.NewVersion(strings.TrimPrefix(lociVersion, "v"))
	if err != nil {
		v = semver.MustParse(BaseVersion)
	}
	// A pre-release of this loci (0.1.0-dev) meets a requirement its
	// release meets.
	if v.Prerelease() != "" {
		rel, _ := v.SetPrerelease("")
		v = &rel
	}
	if !c.Check(v) {
		return fmt.Sprintf("needs loci %s; this is %s", m.Loci, v)
	}
	return ""
}
