package pack

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/loci-dev/loci/fault"
)

const goodManifest = `
contract = 1
name = "notes-app"
version = "1.2.0"
description = "A notes app's folder"
loci = ">= 0.1.0"
module = "notes.wasm"

[source]
options = ["since"]
incremental = true

[permissions]
read = ["locator", "/srv/notes/../notes", "/srv/notes"]
programs = ["git", "git"]
env = ["NOTES_TOKEN"]
`

func TestParseManifestNormalisesPermissions(t *testing.T) {
	m, err := ParseManifest([]byte(goodManifest))
	if err != nil {
		t.Fatal(err)
	}
	p := m.Permissions
	if strings.Join(p.Read, ",") != "/srv/notes,locator" || strings.Join(p.Programs, ",") != "git" ||
		strings.Join(p.Env, ",") != "NOTES_TOKEN" || p.Network || p.MemoryMiB != DefaultMemoryMiB {
		t.Fatalf("normalised permissions: %+v", p)
	}
	if p.None() {
		t.Fatal("a package reading folders asks for something")
	}
}

func TestParseManifestRefusesEachBadField(t *testing.T) {
	for name, edit := range map[string][2]string{
		"unknown field":      {`module = "notes.wasm"`, "module = \"notes.wasm\"\nsurprise = 1"},
		"bad name":           {`name = "notes-app"`, `name = "Notes App"`},
		"no contract":        {`contract = 1`, ``},
		"bad version":        {`version = "1.2.0"`, `version = "one"`},
		"bad loci":           {`loci = ">= 0.1.0"`, `loci = "soon"`},
		"module in a folder": {`module = "notes.wasm"`, `module = "../notes.wasm"`},
		"module not wasm":    {`module = "notes.wasm"`, `module = "notes.exe"`},
		"relative read":      {`"/srv/notes"]`, `"notes"]`},
		"a shell":            {`programs = ["git", "git"]`, `programs = ["sh"]`},
		"a path as program":  {`programs = ["git", "git"]`, `programs = ["/usr/bin/git"]`},
		"bad env":            {`env = ["NOTES_TOKEN"]`, `env = ["NOTES TOKEN"]`},
		"too much memory":    {`env = ["NOTES_TOKEN"]`, "env = []\nmemory_mib = 4096"},
		"bad option key":     {`options = ["since"]`, `options = ["Since!"]`},
		"bad trigger":        {`incremental = true`, "incremental = true\ntriggers = [\"cron\"]"},
	} {
		t.Run(name, func(t *testing.T) {
			text := strings.Replace(goodManifest, edit[0], edit[1], 1)
			if text == goodManifest {
				t.Fatalf("the edit %q did not apply", edit[0])
			}
			_, err := ParseManifest([]byte(text))
			if !fault.Is(err, fault.InputInvalid) {
				t.Fatalf("want loci::input::invalid, got %v", err)
			}
		})
	}
}

func TestConsentDigestFollowsNameAndPermissionsOnly(t *testing.T) {
	a, _ := Permissions{Read: []string{"locator"}, Programs: []string{"git"}}.Normalised()
	b, _ := Permissions{Programs: []string{"git", "git"}, Read: []string{"locator"}}.Normalised()
	if ConsentDigest("x", a) != ConsentDigest("x", b) {
		t.Fatal("two spellings of the same permissions differ")
	}
	if ConsentDigest("x", a) == ConsentDigest("y", a) {
		t.Fatal("the digest does not bind the name")
	}
	c := a
	c.Network = true
	if ConsentDigest("x", a) == ConsentDigest("x", c) {
		t.Fatal("the digest does not bind the network")
	}
	if len(ConsentDigest("x", a)) != 64 {
		t.Fatal("not a SHA-256 in hex")
	}
}

func TestWithin(t *testing.T) {
	base, _ := Permissions{Read: []string{"locator"}, Programs: []string{"git"}, MemoryMiB: 128}.Normalised()
	less, _ := Permissions{Read: []string{"locator"}, MemoryMiB: 64}.Normalised()
	more, _ := Permissions{Read: []string{"locator"}, Programs: []string{"git", "hg"}, MemoryMiB: 128}.Normalised()
	net := base
	net.Network = true
	mem := base
	mem.MemoryMiB = 256
	if !less.Within(base) || !base.Within(base) {
		t.Fatal("asking for less or the same is within")
	}
	for name, p := range map[string]Permissions{"another program": more, "the network": net, "more memory": mem} {
		if p.Within(base) {
			t.Errorf("%s is within", name)
		}
	}
}

func TestWordsSayEveryPermission(t *testing.T) {
	p, _ := Permissions{Read: []string{"locator", "/etc/x"}, Programs: []string{"git"}, Env: []string{"TOKEN"}, Network: true}.Normalised()
	w := strings.Join(p.Words(), "\n")
	for _, want := range []string{"folder a miner points it at", "read /etc/x", "run the program git", "environment variable TOKEN", "network", "64 MiB"} {
		if !strings.Contains(w, want) {
			t.Errorf("the words lack %q:\n%s", want, w)
		}
	}
}

func TestCompatible(t *testing.T) {
	m, err := ParseManifest([]byte(goodManifest))
	if err != nil {
		t.Fatal(err)
	}
	for v, ok := range map[string]bool{"0.1.0": true, "0.1.0-dev": true, "v0.2.0": true, "9a8b7c6": true, "0.0.9": false} {
		if got := m.Compatible(v) == ""; got != ok {
			t.Errorf("loci %s: compatible %v, want %v (%s)", v, got, ok, m.Compatible(v))
		}
	}
	m.Contract = 2
	if r := m.Compatible("0.1.0"); !strings.Contains(r, "contract 2") {
		t.Fatalf("another contract: %q", r)
	}
}

func TestArchiveIsDeterministicAndReadsBack(t *testing.T) {
	m, _ := ParseManifest([]byte(goodManifest))
	p := &Package{Manifest: m, ManifestBytes: []byte(goodManifest), Module: []byte("\x00asm\x01\x00\x00\x00")}
	var a, b bytes.Buffer
	if err := p.WriteArchive(&a); err != nil {
		t.Fatal(err)
	}
	if err := p.WriteArchive(&b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("two archives of one package differ")
	}
	got, err := ReadArchive(bytes.NewReader(a.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if got.Manifest.Name != "notes-app" || !bytes.Equal(got.Module, p.Module) || got.ModuleDigest() != p.ModuleDigest() {
		t.Fatalf("read back: %+v", got.Manifest)
	}
}

// TestManifestRefusesLociVariables: a package never reads loci's own
// settings (LOCI_AUTH_TOKEN is the daemon's token), in any case.
func TestManifestRefusesLociVariables(t *testing.T) {
	for _, env := range []string{"LOCI_AUTH_TOKEN", "loci_palace", "Loci_Anything"} {
		text := strings.Replace(goodManifest, `env = ["NOTES_TOKEN"]`, `env = ["NOTES_TOKEN", "`+env+`"]`, 1)
		_, err := ParseManifest([]byte(text))
		var f *fault.Error
		if !errors.As(err, &f) || f.Code != fault.InputInvalid || !strings.Contains(f.Msg, "permissions.env") ||
			!strings.Contains(f.Msg, env) || !strings.Contains(f.Msg, "may not read") {
			t.Fatalf("%s: %v, want the LOCI_ variable refused by name", env, err)
		}
	}
	if _, err := (Permissions{Env: []string{"NOTES_LOCI_X", "XLOCI_"}}).Normalised(); err != nil {
		t.Fatalf("a variable merely containing LOCI_ is refused: %v", err)
	}
}

// TestManifestErrorsSpeakTheAuthorsTerms: a decode error names the key,
// its line and what it must be, an unknown key names the keys its table
// has; no Go type or struct name shows; the help names the file.
func TestManifestErrorsSpeakTheAuthorsTerms(t *testing.T) {
	for name, c := range map[string]struct{ from, to, want string }{
		"network as a list":  {`env = ["NOTES_TOKEN"]`, "env = [\"NOTES_TOKEN\"]\nnetwork = [\"example.org\"]", "manifest loci-source.toml line 17: permissions.network must be true or false"},
		"unknown permission": {`env = ["NOTES_TOKEN"]`, "env = [\"NOTES_TOKEN\"]\nwrite = [\"/tmp\"]", "manifest loci-source.toml line 17: unknown key permissions.write (the permissions are read, programs, env, network, memory_mib)"},
		"unknown top key":    {`module = "notes.wasm"`, "module = \"notes.wasm\"\nsurprise = 1", "manifest loci-source.toml line 8: unknown key surprise (the keys are contract, name, version, description, loci, module, [source], [permissions], [oauth])"},
		"unknown source key": {`incremental = true`, "incremental = true\nwatch = true", "manifest loci-source.toml line 12: unknown key source.watch (the source keys are options, incremental, triggers, default_locator, format)"},
		"contract as text":   {`contract = 1`, `contract = "1"`, "manifest loci-source.toml line 2: contract must be a whole number"},
		"options of numbers": {`options = ["since"]`, `options = [1]`, `manifest loci-source.toml line 10: source.options must be a list of strings (["a", "b"])`},
		"not toml":           {`name = "notes-app"`, `name = `, "manifest loci-source.toml line 3: not valid TOML: "},
		"a bad name":         {`name = "notes-app"`, `name = "Notes App"`, `manifest loci-source.toml: name: "Notes App" is not a source name`},
	} {
		t.Run(name, func(t *testing.T) {
			text := strings.Replace(goodManifest, c.from, c.to, 1)
			if text == goodManifest {
				t.Fatalf("the edit %q did not apply", c.from)
			}
			_, err := ParseManifest([]byte(text))
			var f *fault.Error
			if !errors.As(err, &f) || f.Code != fault.InputInvalid {
				t.Fatalf("want loci::input::invalid, got %v", err)
			}
			if !strings.HasPrefix(f.Msg, c.want) {
				t.Fatalf("message %q, want it to start %q", f.Msg, c.want)
			}
			for _, internal := range []string{"pack.", "struct", "strict mode", "Go ", "TOML array", "TOML integer"} {
				if strings.Contains(f.Msg, internal) {
					t.Fatalf("message %q shows %q", f.Msg, internal)
				}
			}
			if f.Help != "correct loci-source.toml (see loci source init for a working one)" {
				t.Fatalf("help %q", f.Help)
			}
		})
	}
}

// TestWordsBeyondSaysOnlyWhatIsNew: an update's new permissions in words,
// nothing it already had.
func TestWordsBeyondSaysOnlyWhatIsNew(t *testing.T) {
	old, _ := Permissions{Read: []string{"locator"}, Env: []string{"A"}}.Normalised()
	more, _ := Permissions{Read: []string{"locator", "/srv"}, Env: []string{"A", "B"}, Network: true, MemoryMiB: 128}.Normalised()
	got := strings.Join(more.WordsBeyond(old), "; ")
	want := "read /srv, without changing it; read the environment variable B; use the network (any address); use up to 128 MiB of memory"
	if got != want {
		t.Fatalf("beyond: %q, want %q", got, want)
	}
	if w := old.WordsBeyond(more); len(w) != 0 {
		t.Fatalf("less than consented to says %q", w)
	}
	if CompareVersions("0.2.0", "0.4.0") != -1 || CompareVersions("1.0.0", "0.9.9") != 1 || CompareVersions("x", "1.0.0") != 0 {
		t.Fatal("CompareVersions")
	}
}

// TestPackErrorsHelpWithTheFile: no error of pack says to "send the
// request again" (fault.Invalid's help for a request): each says what to
// do with the file at fault.
func TestPackErrorsHelpWithTheFile(t *testing.T) {
	dir := t.TempDir()
	_, errDir := ReadDir(dir)
	_, errArc := ReadArchive(strings.NewReader("not gzip"))
	_, errIx := ParseIndex([]byte(`{"version": 9}`))
	_, errPub := ParsePublicKey("nope")
	_, errKey := ParsePrivateKey([]byte("nope"))
	for name, c := range map[string]struct {
		err  error
		help string
	}{
		"a folder with no manifest":  {errDir, "loci source init"},
		"not an archive":             {errArc, "loci source package"},
		"an index of another format": {errIx, "loci source index"},
		"not a public key":           {errPub, "loci source keygen"},
		"not a private key":          {errKey, "loci source keygen"},
	} {
		var f *fault.Error
		if !errors.As(c.err, &f) || f.Code != fault.InputInvalid || strings.Contains(f.Help, "send the request again") || !strings.Contains(f.Help, c.help) {
			t.Errorf("%s: %v (help %q), want help naming %q", name, c.err, f.Help, c.help)
		}
	}
}
