package service

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"howett.net/plist"
)

// testBinary is an executable that exists: systemd-analyze verify checks
// ExecStart's.
func testBinary(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

func TestUnitRendering(t *testing.T) {
	spec := Spec{Binary: "/opt/loci/bin/loci", Args: []string{"serve", "--config", "/home/u/.config/loci/config.toml", "--palace", "/home/u/my palace/100%$HOME"}}
	got, err := Render(Systemd, spec, []string{"/home/u/.config/systemd", "/home/u/.config/systemd/user"})
	if err != nil {
		t.Fatal(err)
	}
	s := string(got)
	for _, want := range []string{
		"# " + Marker + "\n",
		`ExecStart=/opt/loci/bin/loci serve --config /home/u/.config/loci/config.toml --palace "/home/u/my palace/100%%$$HOME"` + "\n",
		"Restart=on-failure\n",
		"WantedBy=default.target\n",
		"StandardError=journal\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("unit lacks %q:\n%s", want, s)
		}
	}
	if !Owned(got) {
		t.Error("the unit loci wrote is not recognised as loci's")
	}
	if made := Made(got); !slices.Equal(made, []string{"/home/u/.config/systemd", "/home/u/.config/systemd/user"}) {
		t.Errorf("made directories read back as %q", made)
	}
	if Owned([]byte("[Service]\nExecStart=/usr/bin/loci serve\n# Managed by loci\n")) {
		t.Error("a hand-written unit counted as loci's")
	}
	if _, err := Render(Systemd, Spec{Binary: "loci", Args: []string{"serve"}}, nil); err == nil {
		t.Error("a relative binary was accepted")
	}
	if _, err := Render(Systemd, Spec{Binary: `/opt/"x"/loci`, Args: []string{"serve"}}, nil); err == nil {
		t.Error("a binary path systemd refuses was accepted")
	}
	if _, err := Render(Systemd, Spec{Binary: "/bin/loci", Args: []string{"serve", "--palace", "/a\nExecStartPre=/bin/rm"}}, nil); err == nil {
		t.Error("a line break in an argument was accepted (it would add a directive)")
	}
}

// TestUnitVerifies runs systemd-analyze verify on the rendered unit, with
// a path of awkward characters to quote.
func TestUnitVerifies(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed here: the unit is not verified")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, `odd dir 100% $x`, "loci")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(testBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, raw, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string]string{"test binary": testBinary(t), "awkward path": bin} {
		t.Run(name, func(t *testing.T) {
			unit, err := Render(Systemd, Spec{Binary: b, Args: []string{"serve", "--palace", `/tmp/p "a" l\a $HOME 100%Zq`}}, []string{"/x/systemd"})
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(t.TempDir(), UnitName)
			if err := os.WriteFile(file, unit, 0o644); err != nil {
				t.Fatal(err)
			}
			runtime := t.TempDir()
			cmd := exec.Command(analyze, "--user", "verify", file)
			cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+runtime)
			out, err := cmd.CombinedOutput()
			if err != nil || len(bytes.TrimSpace(out)) > 0 {
				t.Errorf("systemd-analyze verify: %v\n%s\n%s", err, out, unit)
			}
		})
	}
}

// TestPlistParses reads the rendered agent back as a property list.
func TestPlistParses(t *testing.T) {
	spec := Spec{Binary: "/Applications/loci & co/loci", Args: []string{"serve", "--palace", "/Users/u/p<a>l--ace"}, LogDir: "/Users/u/Library/Logs/loci"}
	made := []string{"/Users/u/Library/Logs/loci", "/Users/u/odd--dir"}
	raw, err := Render(Launchd, spec, made)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Label             string
		ProgramArguments  []string
		RunAtLoad         bool
		KeepAlive         map[string]bool
		StandardOutPath   string
		StandardErrorPath string
	}
	format, err := plist.Unmarshal(raw, &doc)
	if err != nil {
		t.Fatalf("the agent is not a property list: %v\n%s", err, raw)
	}
	if format != plist.XMLFormat {
		t.Errorf("format %d, want XML", format)
	}
	if doc.Label != Label || !doc.RunAtLoad || doc.KeepAlive["SuccessfulExit"] || len(doc.KeepAlive) != 1 {
		t.Errorf("agent %+v", doc)
	}
	if want := append([]string{spec.Binary}, spec.Args...); !slices.Equal(doc.ProgramArguments, want) {
		t.Errorf("arguments %q, want %q", doc.ProgramArguments, want)
	}
	if doc.StandardOutPath != "/Users/u/Library/Logs/loci/loci.log" || doc.StandardErrorPath != doc.StandardOutPath {
		t.Errorf("log paths %q %q", doc.StandardOutPath, doc.StandardErrorPath)
	}
	if !Owned(raw) || !slices.Equal(Made(raw), made) {
		t.Errorf("owned %v, made %q", Owned(raw), Made(raw))
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if inner, ok := strings.CutPrefix(line, "<!--"); ok && strings.Contains(strings.TrimSuffix(inner, "-->"), "--") {
			t.Errorf("a comment holds \"--\": %s", line)
		}
	}
}

// TestPackagedUnitIsTheInstalledUnit: the unit the packages ship and the
// one install writes are one template: the same directives, only the
// opening comment differs (the package's has no Marker: remove never
// deletes it), and install recognises the packaged unit as running what
// it would.
func TestPackagedUnitIsTheInstalledUnit(t *testing.T) {
	spec := Spec{Binary: "/usr/bin/loci", Args: []string{"serve"}}
	pkg, err := PackagedUnit(spec)
	if err != nil {
		t.Fatal(err)
	}
	own, err := Render(Systemd, spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	directives := func(u []byte) string {
		var keep []string
		for _, l := range strings.Split(string(u), "\n") {
			if !strings.HasPrefix(l, "#") {
				keep = append(keep, l)
			}
		}
		return strings.Join(keep, "\n")
	}
	if directives(pkg) != directives(own) {
		t.Errorf("the packaged unit and install's differ:\n%s\n---\n%s", pkg, own)
	}
	if Owned(pkg) {
		t.Error("the packaged unit carries loci's marker: remove would delete the package's file")
	}
	if !Runs(pkg, spec) || !Runs(own, spec) {
		t.Error("install does not recognise the packaged unit as running /usr/bin/loci serve")
	}
	for _, other := range []Spec{{Binary: "/home/u/go/bin/loci", Args: []string{"serve"}}, {Binary: "/usr/bin/loci", Args: []string{"serve", "--palace", "/p"}}} {
		if Runs(pkg, other) {
			t.Errorf("the packaged unit taken to run %v", other)
		}
	}
	if Runs([]byte("[Service]\nExecStart=/usr/bin/loci serve\nExecStart=/bin/true\n"), spec) {
		t.Error("a unit of two ExecStart lines taken to run loci alone")
	}
	for _, want := range []string{"ExecStart=/usr/bin/loci serve\n", "Type=exec\n", "Restart=on-failure\n", "WantedBy=default.target\n"} {
		if !strings.Contains(string(pkg), want) {
			t.Errorf("packaged unit lacks %q", want)
		}
	}
}

// TestPackagedUnitVerifies runs systemd-analyze verify on the packaged
// unit's rendering (with a binary that exists here).
func TestPackagedUnitVerifies(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed here: the unit is not verified")
	}
	u, err := PackagedUnit(Spec{Binary: testBinary(t), Args: []string{"serve"}})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), UnitName)
	if err := os.WriteFile(file, u, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(analyze, "--user", "verify", file)
	cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s\n%s", err, out, u)
	}
}
