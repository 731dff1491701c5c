package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/format"
	"io"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/sources/contract"
	"github.com/loci-dev/loci/sources/pack"
	"github.com/loci-dev/loci/sources/plugin"
)

// runLoci runs the command line in-process, as cmd/loci does.
func runLoci(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Run(context.Background(), Local{Version: "0.1.0"}, args, &out, &errb)
	return out.String(), errb.String(), code
}

// TestRenderTemplates: each template renders every file it promises with
// no template text left: Go files gofmt-clean, go.mod with the module's
// name and go line and no requirement (the project builds offline), the
// contract copied byte for byte, a manifest loci reads with the
// permissions the template needs (the cli template its program, the
// others only the locator), a Cargo.toml whose binary is the module, and
// at least three sample documents.
func TestRenderTemplates(t *testing.T) {
	samples := []string{"testdata/locator/README.md", "testdata/locator/lease.txt", "testdata/locator/notes/2026-11-02.md", "testdata/locator/notes/2026-11-09.md"}
	goFiles := append([]string{".gitignore", "README.md", "contract/contract.go", "files.go", "go.mod", "loci-source.toml", "main.go", "main_test.go"}, samples...)
	for _, c := range []struct {
		kind     string
		program  string
		files    []string
		programs []string
	}{
		{TemplateGo, "", goFiles, nil},
		{TemplateCLI, "pdftotext", goFiles, []string{"pdftotext"}},
		{TemplateRust, "", append([]string{".gitignore", "Cargo.toml", "README.md", "loci-source.toml", "src/main.rs"}, samples...), nil},
	} {
		t.Run(c.kind, func(t *testing.T) {
			files, err := renderTemplate(c.kind, templateData{Name: "my-notes", Program: c.program, GoVersion: "1.26"})
			if err != nil {
				t.Fatal(err)
			}
			want := slices.Clone(c.files)
			slices.Sort(want)
			if got := sortedPaths(files); !slices.Equal(got, want) {
				t.Fatalf("files %v, want %v", got, want)
			}
			for p, b := range files {
				if bytes.Contains(b, []byte("<no value>")) || bytes.Contains(b, []byte("{{")) {
					t.Errorf("%s has template text left", p)
				}
				if path.Ext(p) == ".go" {
					f, err := format.Source(b)
					if err != nil || !bytes.Equal(f, b) {
						t.Errorf("%s is not gofmt-clean Go: %v", p, err)
					}
				}
			}
			m, err := pack.ParseManifest(files[pack.ManifestFile])
			if err != nil {
				t.Fatal(err)
			}
			if m.Name != "my-notes" || m.Module != "my-notes.wasm" || m.Contract != contract.Version || m.Version != "0.1.0" || m.Compatible("0.1.0") != "" ||
				!slices.Equal(m.Permissions.Read, []string{pack.Locator}) || !slices.Equal(m.Permissions.Programs, c.programs) ||
				len(m.Permissions.Env) > 0 || m.Permissions.Network {
				t.Errorf("manifest %+v", m)
			}
			switch c.kind {
			case TemplateGo, TemplateCLI:
				if got := string(files["go.mod"]); got != "module my-notes\n\ngo 1.26\n" {
					t.Errorf("go.mod %q", got)
				}
				if string(files[contractFile]) != contract.Source || !strings.Contains(contract.Source, "\npackage contract\n") {
					t.Error("contract/contract.go is not sources/contract/contract.go")
				}
				if !bytes.Contains(files["main.go"], []byte(`"my-notes/contract"`)) {
					t.Error("main.go does not import the project's contract package")
				}
				if c.kind == TemplateCLI && !bytes.Contains(files["main.go"], []byte(`const program = "pdftotext"`)) {
					t.Error("main.go does not run the program named")
				}
			case TemplateRust:
				var cargo struct {
					Package      struct{ Name string }
					Bin          []struct{ Name string }
					Dependencies map[string]any
				}
				if err := toml.Unmarshal(files["Cargo.toml"], &cargo); err != nil {
					t.Fatal(err)
				}
				if cargo.Package.Name != "my-notes" || len(cargo.Bin) != 1 || cargo.Bin[0].Name+".wasm" != m.Module || cargo.Dependencies["serde_json"] == nil {
					t.Errorf("Cargo.toml %+v", cargo)
				}
				for _, call := range []string{`"resolve"`, `"discover"`, `"read"`, `"cursor_invalid"`} {
					if !bytes.Contains(files["src/main.rs"], []byte(call)) {
						t.Errorf("main.rs does not answer %s", call)
					}
				}
			}
		})
	}
}

// TestRenderTemplateRefuses: a name that is not a source name, a shell
// as the program and an unknown template are loci::input::invalid.
func TestRenderTemplateRefuses(t *testing.T) {
	for _, c := range []struct {
		kind string
		d    templateData
		says string
	}{
		{TemplateGo, templateData{Name: "My Notes"}, "name"},
		{TemplateCLI, templateData{Name: "conv", Program: "bash"}, "programs"},
		{TemplateCLI, templateData{Name: "conv", Program: "/bin/cat"}, "programs"},
		{"python", templateData{Name: "conv"}, "python"},
	} {
		_, err := renderTemplate(c.kind, c.d)
		if !fault.Is(err, fault.InputInvalid) || !strings.Contains(fault.As(err).Msg, c.says) {
			t.Errorf("renderTemplate(%s, %+v) = %v, want invalid saying %s", c.kind, c.d, err, c.says)
		}
	}
}

// TestGoLine: go.mod's go line is the toolchain's major and minor.
func TestGoLine(t *testing.T) {
	for in, want := range map[string]string{"go1.26.8": "1.26", "go1.22.0\n": "1.22", "go1.24rc1": "1.24", "devel go1.27-abc": "1.21", "": "1.21"} {
		if got := goLine(in); got != want {
			t.Errorf("goLine(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestInitCommand: init writes the project into a new folder, refuses a
// folder holding any of its files (writing nothing), takes the source's
// name from the folder unless --name, and takes --program only with the
// cli template.
func TestInitCommand(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "notes")
	if out, errOut, code := runLoci(t, "source", "init", dir); code != 0 || !strings.Contains(out, "loci source build") {
		t.Fatalf("init: %d\n%s%s", code, out, errOut)
	}
	m, err := pack.ReadDir(dir)
	if err == nil || !strings.Contains(err.Error(), "notes.wasm") {
		t.Fatalf("before a build the package reads %v, %v", m, err)
	}

	taken := filepath.Join(root, "taken")
	if err := os.MkdirAll(taken, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(taken, "main.go"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runLoci(t, "source", "init", taken, "--json")
	if code == 0 || !strings.Contains(errOut, "main.go") || !strings.Contains(errOut, "loci::input::invalid") {
		t.Fatalf("init over main.go: %d\n%s", code, errOut)
	}
	entries, _ := os.ReadDir(taken)
	if b, _ := os.ReadFile(filepath.Join(taken, "main.go")); len(entries) != 1 || string(b) != "mine" {
		t.Fatalf("a refused init wrote files: %d entries", len(entries))
	}

	odd := filepath.Join(root, "My Notes")
	if _, errOut, code := runLoci(t, "source", "init", odd); code == 0 || !strings.Contains(errOut, "--name") {
		t.Fatalf("init into %q: %d\n%s", odd, code, errOut)
	}
	if out, errOut, code := runLoci(t, "source", "init", odd, "--name", "my-notes", "--json"); code != 0 || !strings.Contains(out, `"name": "my-notes"`) {
		t.Fatalf("init --name: %d\n%s%s", code, out, errOut)
	}
	if _, errOut, code := runLoci(t, "source", "init", filepath.Join(root, "x"), "--program", "cat"); code == 0 || !strings.Contains(errOut, "cli") {
		t.Fatalf("--program with the go template: %d\n%s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(root, "x")); err == nil {
		t.Fatal("a refused init made its folder")
	}
}

// TestBuildNamesWhatToInstall: without the toolchain on PATH, build is
// loci::source::unavailable saying what to install; a folder that is no
// project says so.
func TestBuildNamesWhatToInstall(t *testing.T) {
	root := t.TempDir()
	goProj, rustProj := filepath.Join(root, "g"), filepath.Join(root, "r")
	for dir, kind := range map[string]string{goProj: TemplateGo, rustProj: TemplateRust} {
		if _, errOut, code := runLoci(t, "source", "init", dir, "--name", "p-"+kind, "--template", kind); code != 0 {
			t.Fatal(errOut)
		}
	}
	t.Setenv("PATH", t.TempDir())
	for dir, help := range map[string]string{goProj: "https://go.dev/dl", rustProj: "rustup target add wasm32-wasip1"} {
		_, errOut, code := runLoci(t, "source", "build", dir, "--json")
		var e struct{ Code, Help string }
		if err := json.Unmarshal([]byte(errOut), &e); err != nil || code == 0 || e.Code != string(fault.SourceUnavailable) || !strings.Contains(e.Help, help) {
			t.Errorf("build %s without its toolchain: %d\n%s", dir, code, errOut)
		}
	}
	if _, errOut, code := runLoci(t, "source", "build", root); code == 0 || !strings.Contains(errOut, "not a source project") {
		t.Errorf("build of a folder that is no project: %d\n%s", code, errOut)
	}
}

// testProject is a project folder with a manifest and a module that is a
// WebAssembly header (package and test read it; nothing runs it).
func testProject(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files, err := renderTemplate(TemplateCLI, templateData{Name: "conv", Program: "cat", GoVersion: "1.26"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, pack.ManifestFile), files[pack.ManifestFile], 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "conv.wasm"), []byte("\x00asm\x01\x00\x00\x00 a module"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "testdata", "locator"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestPackageCommand: package writes NAME-VERSION.tar.gz beside the
// manifest, the same bytes every time, and prints its digest, the
// consent digest and the permissions in words; a project not built says
// to build it.
func TestPackageCommand(t *testing.T) {
	dir := testProject(t)
	out, errOut, code := runLoci(t, "source", "package", dir)
	if code != 0 {
		t.Fatalf("package: %d\n%s", code, errOut)
	}
	archive := filepath.Join(dir, "conv-0.1.0.tar.gz")
	first, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := pack.ParseManifest(mustRead(t, filepath.Join(dir, pack.ManifestFile)))
	for _, want := range []string{archive, pack.Digest(first), pack.ConsentDigest("conv", m.Permissions), "run the program cat as you, with any arguments"} {
		if !strings.Contains(out, want) {
			t.Errorf("package did not print %q:\n%s", want, out)
		}
	}
	other := filepath.Join(t.TempDir(), "other.tar.gz")
	if _, errOut, code := runLoci(t, "source", "package", dir, "--out", other); code != 0 {
		t.Fatal(errOut)
	}
	if !bytes.Equal(first, mustRead(t, other)) {
		t.Fatal("the second archive differs from the first")
	}
	if err := os.WriteFile(filepath.Join(dir, "conv.wasm"), []byte("not wasm"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runLoci(t, "source", "package", dir); code == 0 || !strings.Contains(errOut, "loci source build") {
		t.Fatalf("package of a module that is not WebAssembly: %d\n%s", code, errOut)
	}
}

// TestTestCommand: test hands the project and the locator (default
// DIR/testdata/locator, absolute) to the sandbox's body and fails when it
// does; without a built module it says to build.
func TestTestCommand(t *testing.T) {
	dir := testProject(t)
	var gotDir, gotLocator string
	local := Local{SourceTest: func(_ context.Context, d, l string, out io.Writer) error {
		gotDir, gotLocator = d, l
		_, _ = out.Write([]byte("PASS  a case\n"))
		return nil
	}}
	var out, errb bytes.Buffer
	if code := Run(context.Background(), local, []string{"source", "test", dir}, &out, &errb); code != 0 || gotDir != dir ||
		gotLocator != filepath.Join(dir, "testdata", "locator") || out.String() != "PASS  a case\n" {
		t.Fatalf("test: %d, dir %s, locator %s\n%s%s", code, gotDir, gotLocator, out.String(), errb.String())
	}
	local.SourceTest = func(context.Context, string, string, io.Writer) error {
		return fault.New(fault.SourceFailed, "1 of 4 conformance cases failed", "")
	}
	if code := Run(context.Background(), local, []string{"source", "test", dir, "--locator", t.TempDir()}, &out, &errb); code == 0 {
		t.Fatal("a failed case exited 0")
	}
	errb.Reset()
	if code := Run(context.Background(), local, []string{"source", "test", dir, "--locator", filepath.Join(dir, "nowhere")}, &out, &errb); code == 0 ||
		!strings.Contains(errb.String(), "is not a folder") {
		t.Fatalf("test over a locator that is not a folder: %d\n%s", code, errb.String())
	}
	os.Remove(filepath.Join(dir, "conv.wasm"))
	errb.Reset()
	if code := Run(context.Background(), local, []string{"source", "test", dir}, &out, &errb); code == 0 || !strings.Contains(errb.String(), "loci source build") {
		t.Fatalf("test before a build: %d\n%s", code, errb.String())
	}
}

// TestKeygenCommand: keygen writes PREFIX.key (mode 0600, a key
// pack reads) and PREFIX.pub (the printed public key, one line), never
// over existing files without --force.
func TestKeygenCommand(t *testing.T) {
	prefix := filepath.Join(t.TempDir(), "release")
	out, errOut, code := runLoci(t, "source", "keygen", "--out", prefix)
	if code != 0 {
		t.Fatal(errOut)
	}
	key, err := pack.ParsePrivateKey(mustRead(t, prefix+".key"))
	if err != nil {
		t.Fatal(err)
	}
	pub, err := pack.ParsePublicKey(string(mustRead(t, prefix+".pub")))
	if err != nil || !pub.Equal(key.Public()) || strings.TrimSpace(out) != pack.FormatPublicKey(pub) {
		t.Fatalf("the public key %q does not match the private key: %v", out, err)
	}
	if fi, _ := os.Stat(prefix + ".key"); fi.Mode().Perm() != 0o600 {
		t.Fatalf("the private key's mode is %v", fi.Mode().Perm())
	}
	if _, errOut, code := runLoci(t, "source", "keygen", "--out", prefix); code == 0 || !strings.Contains(errOut, "exists") {
		t.Fatalf("keygen over a key: %d\n%s", code, errOut)
	}
	if k, _ := pack.ParsePrivateKey(mustRead(t, prefix+".key")); !k.Equal(key) {
		t.Fatal("a refused keygen replaced the key")
	}
	if _, errOut, code := runLoci(t, "source", "keygen", "--out", prefix, "--force"); code != 0 {
		t.Fatal(errOut)
	}
	if k, _ := pack.ParsePrivateKey(mustRead(t, prefix+".key")); k.Equal(key) {
		t.Fatal("keygen --force kept the old key")
	}
	if fi, _ := os.Stat(prefix + ".key"); fi.Mode().Perm() != 0o600 {
		t.Fatalf("the replaced private key's mode is %v", fi.Mode().Perm())
	}
	if _, errOut, code := runLoci(t, "source", "keygen"); code == 0 || !strings.Contains(errOut, "--out") {
		t.Fatalf("keygen without --out: %d\n%s", code, errOut)
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// guest is a template's module built for this machine (a Go guest runs
// natively as well as under WASI): calling it is one run with the
// request on stdin, as the sandbox does.
type guest struct {
	t   *testing.T
	bin string
}

func buildGuest(t *testing.T, kind string) (guest, string) {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not on PATH")
	}
	dir := t.TempDir()
	files, err := renderTemplate(kind, templateData{Name: "probe", Program: "cat", GoVersion: goLine(goToolchain(context.Background()))})
	if err != nil {
		t.Fatal(err)
	}
	for p, b := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "probe")
	for _, args := range [][]string{{"vet", "./..."}, {"test", "./..."}, {"build", "-o", bin, "."}} {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local", "GOFLAGS=")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s in the %s template: %v\n%s", strings.Join(args, " "), kind, err, out)
		}
	}
	loc := filepath.Join(dir, "testdata", "locator")
	for name, body := range map[string]string{"crlf.txt": "\uFEFFone\r\ntwo\r\n", "empty.txt": "", "blob.bin": "a\x00b", ".hidden": "secret"} {
		if err := os.WriteFile(filepath.Join(loc, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return guest{t, bin}, loc
}

func (g guest) call(req contract.Request) *contract.Answer {
	g.t.Helper()
	req.Contract = contract.Version
	in, _ := json.Marshal(req)
	cmd := exec.Command(g.bin)
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.Output()
	if err != nil {
		g.t.Fatalf("the guest failed on %s: %v", in, err)
	}
	var a contract.Answer
	if err := json.Unmarshal(out, &a); err != nil {
		g.t.Fatalf("the guest answered %q: %v", out, err)
	}
	return &a
}

// TestTemplateGuests: the go and cli templates vet clean and pass their
// own go test; their guests speak the contract: resolve cleans an absolute locator and refuses a relative
// one; discover pages strictly after the cursor in path order (hidden
// files skipped, empty ones filtered), refuses a foreign cursor and lists
// nothing after the last; read normalises (byte-order mark, CRLF),
// filters binary text and says not_found for a path it does not list. The
// cli guest gets there by asking the host to run cat once per file, and
// files the same documents.
func TestTemplateGuests(t *testing.T) {
	var docs [2][]contract.ReadResult
	for i, kind := range []string{TemplateGo, TemplateCLI} {
		t.Run(kind, func(t *testing.T) {
			g, loc := buildGuest(t, kind)
			if a := g.call(contract.Request{Call: contract.CallResolve, Locator: loc + "/./"}); a.Error != nil || a.Identity.Locator != loc {
				t.Fatalf("resolve: %+v", a)
			}
			if a := g.call(contract.Request{Call: contract.CallResolve, Locator: "testdata"}); a.Error == nil || a.Error.Kind != contract.ErrInvalid {
				t.Fatalf("resolve of a relative locator: %+v", a)
			}
			var ids []string
			var items []contract.Item
			var cursor json.RawMessage
			for pages := 0; ; pages++ {
				a := g.call(contract.Request{Call: contract.CallDiscover, Locator: loc, Cursor: cursor, Limit: 3})
				if a.Error != nil || len(a.Items) > 3 || pages > 5 {
					t.Fatalf("discover: %+v", a)
				}
				for _, it := range a.Items {
					ids = append(ids, it.ID)
					items = append(items, it)
				}
				if !a.More {
					break
				}
				cursor = a.Items[len(a.Items)-1].Cursor
			}
			want := []string{"README.md", "blob.bin", "crlf.txt", "empty.txt", "lease.txt", "notes/2026-11-02.md", "notes/2026-11-09.md"}
			if !slices.Equal(ids, want) {
				t.Fatalf("discovered %v, want %v", ids, want)
			}
			if items[3].Filtered != "empty" || items[0].Filtered != "" {
				t.Errorf("filtered: %+v", items)
			}
			if a := g.call(contract.Request{Call: contract.CallDiscover, Locator: loc, Cursor: items[len(items)-1].Cursor}); a.Error != nil || len(a.Items) != 0 || a.More {
				t.Errorf("discover past the last cursor: %+v", a)
			}
			for _, foreign := range []string{`{"mtime_ns":1,"path":"x"}`, `"x"`, `{"after":"../x"}`, `{"after":"a","b":1}`, `{}`} {
				if a := g.call(contract.Request{Call: contract.CallDiscover, Locator: loc, Cursor: json.RawMessage(foreign)}); a.Error == nil || a.Error.Kind != contract.ErrCursor {
					t.Errorf("discover past %s: %+v", foreign, a)
				}
			}
			read := contract.Request{Call: contract.CallRead, Locator: loc, Items: []contract.Item{{ID: "crlf.txt"}, {ID: "blob.bin"}, {ID: "../etc/passwd"}, {ID: "lease.txt"}, {ID: "gone.txt"}}}
			a := g.call(read)
			if kind == TemplateCLI {
				a = host(t, g, read, a, loc)
			}
			if a.Error != nil || len(a.Documents) != 5 {
				t.Fatalf("read: %+v", a)
			}
			r := a.Documents
			if r[0].Document == nil || !slices.Equal(r[0].Document.Units, []string{"one\ntwo\n"}) || r[0].Document.Kind != "file" {
				t.Errorf("crlf.txt: %+v", r[0])
			}
			if r[1].Error == nil || r[1].Error.Kind != contract.ErrFiltered || r[1].Error.Message != "binary" {
				t.Errorf("blob.bin: %+v", r[1])
			}
			if r[2].Error == nil || r[2].Error.Kind != contract.ErrNotFound || r[4].Error == nil || r[4].Error.Kind != contract.ErrNotFound {
				t.Errorf("paths not listed: %+v %+v", r[2], r[4])
			}
			if r[3].Document == nil || !strings.HasPrefix(r[3].Document.Units[0], "Why the lease timeout") {
				t.Errorf("lease.txt: %+v", r[3])
			}
			for k := range r {
				if r[k].ID != read.Items[k].ID {
					t.Errorf("result %d is %s, want %s", k, r[k].ID, read.Items[k].ID)
				}
				if d := r[k].Document; d != nil {
					d.Meta, d.URI = "", ""
				}
			}
			docs[i] = r
		})
	}
	if a, b := docs[0], docs[1]; a != nil && b != nil {
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if !bytes.Equal(ja, jb) {
			t.Errorf("the cli template filed other documents than the go template:\n%s\n%s", ja, jb)
		}
	}
}

// host does what the sandbox does with a guest's Needs: it runs each
// program (by name, no shell, in the locator) and calls the guest again
// with the results and its state.
func host(t *testing.T, g guest, req contract.Request, a *contract.Answer, loc string) *contract.Answer {
	t.Helper()
	if a.Error != nil || len(a.Needs) != 4 {
		t.Fatalf("the cli guest's first round: %+v", a)
	}
	for _, n := range a.Needs {
		if n.Kind != contract.NeedRun || n.Program != "cat" || n.Dir != "" || len(n.Args) != 1 || !strings.HasPrefix(n.Args[0], "./") {
			t.Fatalf("need %+v", n)
		}
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(n.Program, n.Args...)
		cmd.Dir, cmd.Stdout, cmd.Stderr = loc, &stdout, &stderr
		res := contract.Result{}
		if err := cmd.Run(); err != nil {
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Fatal(err)
			}
			res.Exit = ee.ExitCode()
		}
		res.Stdout, res.Stderr = stdout.Bytes(), stderr.Bytes()
		req.Results = append(req.Results, res)
	}
	req.State = a.State
	return g.call(req)
}

// sourceArchive is the archive of a small source package name@version
// (a WebAssembly header for its module).
func sourceArchive(t *testing.T, name, version string) []byte {
	t.Helper()
	mb := fmt.Sprintf("contract = 1\nname = %q\nversion = %q\nmodule = \"%s.wasm\"\n\n[permissions]\nread = [\"locator\"]\n", name, version, name)
	m, err := pack.ParseManifest([]byte(mb))
	if err != nil {
		t.Fatal(err)
	}
	p := &pack.Package{Manifest: m, ManifestBytes: []byte(mb), Module: []byte("\x00asm\x01\x00\x00\x00" + name + version)}
	var b bytes.Buffer
	if err := p.WriteArchive(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// pluginArchive is the archive of a plugin id@version carrying one
// source module, alpha.
func pluginArchive(t *testing.T, id, version string) []byte {
	t.Helper()
	mb := fmt.Sprintf("id = %q\nversion = %q\ndescription = \"a bundle\"\nloci = \">= 0.1.0\"\n\n[[modules]]\nkind = \"source\"\npath = \"alpha\"\n", id, version)
	m, err := plugin.ParseManifest([]byte(mb))
	if err != nil {
		t.Fatal(err)
	}
	src, err := pack.ReadArchive(bytes.NewReader(sourceArchive(t, "alpha", "0.1.0")))
	if err != nil {
		t.Fatal(err)
	}
	b, err := (&plugin.Plugin{Manifest: m, ManifestBytes: []byte(mb), Sources: []plugin.Source{{Path: "alpha", Package: src}}}).Bytes()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t *testing.T, p string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func readIndex(t *testing.T, dir string) *pack.Index {
	t.Helper()
	ix, err := pack.ParseIndex(mustRead(t, filepath.Join(dir, pack.IndexFile)))
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

// yankedOf is each release's yanked flag by "name@version" (sources and
// plugins).
func yankedOf(ix *pack.Index) map[string]bool {
	out := map[string]bool{}
	for _, s := range ix.Sources {
		for _, r := range s.Versions {
			out[s.Name+"@"+r.Version] = r.Yanked
		}
	}
	for _, p := range ix.Plugins {
		for _, r := range p.Versions {
			out["plugin "+p.ID+"@"+r.Version] = r.Yanked
		}
	}
	return out
}

// TestIndexCommandYank: --yank and --unyank set a release's flag (a
// source's or a plugin's); indexing again after a new release keeps the
// flags already in index.json; an unknown NAME@VERSION is an error naming
// it and the index is left as it was; an unreadable index already there
// is an error rather than a silent un-yank.
func TestIndexCommandYank(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "notes-1.0.0.tar.gz"), sourceArchive(t, "notes", "1.0.0"))
	writeFile(t, filepath.Join(dir, "notes-1.1.0.tar.gz"), sourceArchive(t, "notes", "1.1.0"))
	writeFile(t, filepath.Join(dir, "plugins", "bundle-1.0.0.tar.gz"), pluginArchive(t, "bundle", "1.0.0"))
	if _, errOut, code := runLoci(t, "source", "index", dir, "--yank", "notes@1.0.0", "--yank", "bundle@1.0.0"); code != 0 {
		t.Fatal(errOut)
	}
	want := map[string]bool{"notes@1.0.0": true, "notes@1.1.0": false, "plugin bundle@1.0.0": true}
	if got := yankedOf(readIndex(t, dir)); !maps.Equal(got, want) {
		t.Fatalf("after --yank: %v, want %v", got, want)
	}
	// A new release, indexed again: the yanks stay.
	writeFile(t, filepath.Join(dir, "notes-1.2.0.tar.gz"), sourceArchive(t, "notes", "1.2.0"))
	out, errOut, code := runLoci(t, "source", "index", dir)
	if code != 0 {
		t.Fatal(errOut)
	}
	want["notes@1.2.0"] = false
	if got := yankedOf(readIndex(t, dir)); !maps.Equal(got, want) {
		t.Fatalf("re-indexed: %v, want %v", got, want)
	}
	if !strings.Contains(out, "1.0.0 (yanked)") || !strings.Contains(out, "bundle") {
		t.Fatalf("the summary does not show the yank or the plugin:\n%s", out)
	}
	if _, errOut, code := runLoci(t, "source", "index", dir, "--unyank", "notes@1.0.0"); code != 0 {
		t.Fatal(errOut)
	}
	want["notes@1.0.0"] = false
	if got := yankedOf(readIndex(t, dir)); !maps.Equal(got, want) {
		t.Fatalf("after --unyank: %v, want %v", got, want)
	}
	before := mustRead(t, filepath.Join(dir, pack.IndexFile))
	for _, args := range [][]string{{"--yank", "notes@9.9.9"}, {"--unyank", "ghost@1.0.0"}, {"--yank", "notes"}, {"--yank", "notes@1.1.0", "--unyank", "notes@1.1.0"}} {
		_, errOut, code := runLoci(t, append([]string{"source", "index", dir}, args...)...)
		if code == 0 || !strings.Contains(errOut, args[1]) {
			t.Errorf("index %v: %d\n%s", args, code, errOut)
		}
		if !bytes.Equal(before, mustRead(t, filepath.Join(dir, pack.IndexFile))) {
			t.Fatalf("a refused index %v changed index.json", args)
		}
	}
	writeFile(t, filepath.Join(dir, pack.IndexFile), []byte("{not json"))
	if _, errOut, code := runLoci(t, "source", "index", dir); code == 0 || !strings.Contains(errOut, "yanked") {
		t.Fatalf("over an unreadable index: %d\n%s", code, errOut)
	}
}

// TestIndexCommandPlugins: plugin archives (beside the index or one
// folder down, e.g. plugins/) are indexed under plugins by id with their
// version, path, digest, size, contract, loci and signature; a folder of
// plugins only is a registry; an empty one, or one with an archive that
// is neither, is an error and writes nothing; folders beginning with a
// dot are skipped.
func TestIndexCommandPlugins(t *testing.T) {
	dir := t.TempDir()
	plug := pluginArchive(t, "bundle", "1.0.0")
	writeFile(t, filepath.Join(dir, "plugins", "bundle-1.0.0.tar.gz"), plug)
	writeFile(t, filepath.Join(dir, ".git", "junk.tar.gz"), []byte("junk"))
	keys := filepath.Join(t.TempDir(), "release")
	if _, errOut, code := runLoci(t, "source", "keygen", "--out", keys); code != 0 {
		t.Fatal(errOut)
	}
	out, errOut, code := runLoci(t, "--json", "source", "index", dir, "--sign", keys+".key")
	if code != 0 {
		t.Fatal(errOut)
	}
	if strings.Contains(errOut, "warning") {
		t.Fatalf("a key outside the folder warned: %s", errOut)
	}
	var res IndexResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	ix := readIndex(t, dir)
	if len(ix.Sources) != 0 || len(ix.Plugins) != 1 || res.Archives != 1 || len(res.Plugins) != 1 || res.Key == "" {
		t.Fatalf("index %s\nresult %s", ix.Marshal(), out)
	}
	p, r := ix.Plugins[0], ix.Plugins[0].Versions[0]
	if p.ID != "bundle" || p.Description != "a bundle" || r.Version != "1.0.0" || r.Archive != "plugins/bundle-1.0.0.tar.gz" ||
		r.SHA256 != pack.Digest(plug) || r.Size != int64(len(plug)) || r.Contract != 1 || r.Loci != ">= 0.1.0" || r.Key != res.Key {
		t.Fatalf("plugin entry %+v", p)
	}
	pub, _ := pack.ParsePublicKey(r.Key)
	if err := pack.Verify(pub, plug, r.Signature); err != nil {
		t.Fatal(err)
	}
	// Sources beside it and in a folder of their own are indexed too.
	writeFile(t, filepath.Join(dir, "notes-1.0.0.tar.gz"), sourceArchive(t, "notes", "1.0.0"))
	writeFile(t, filepath.Join(dir, "sources", "todo-0.1.0.tar.gz"), sourceArchive(t, "todo", "0.1.0"))
	if out, errOut, code := runLoci(t, "source", "index", dir); code != 0 || !strings.Contains(out, "indexed 3 archives of 2 sources and 1 plugin into") {
		t.Fatalf("%d\n%s%s", code, out, errOut)
	}
	if ix := readIndex(t, dir); len(ix.Sources) != 2 || ix.Sources[1].Versions[0].Archive != "sources/todo-0.1.0.tar.gz" || len(ix.Plugins) != 1 {
		t.Fatalf("index %s", ix.Marshal())
	}
	before := mustRead(t, filepath.Join(dir, pack.IndexFile))
	writeFile(t, filepath.Join(dir, "plugins", "junk.tar.gz"), []byte("junk"))
	if _, errOut, code := runLoci(t, "source", "index", dir); code == 0 || !strings.Contains(errOut, "plugins/junk.tar.gz is neither a source package") {
		t.Fatalf("junk: %d\n%s", code, errOut)
	}
	if !bytes.Equal(before, mustRead(t, filepath.Join(dir, pack.IndexFile))) {
		t.Fatal("a refused index changed index.json")
	}
	empty := t.TempDir()
	if _, errOut, code := runLoci(t, "source", "index", empty); code == 0 || !strings.Contains(errOut, "no *.tar.gz") {
		t.Fatalf("an empty folder: %d\n%s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(empty, pack.IndexFile)); err == nil {
		t.Fatal("an empty folder got an index")
	}
}

// TestIndexCommandWarnsOfKeyInside: signing with a private key inside
// the registry's folder warns (stderr and the JSON result's warnings)
// and still indexes; the help describes sources, plugins, contract,
// yanking and the key's place.
func TestIndexCommandWarnsOfKeyInside(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "notes-1.0.0.tar.gz"), sourceArchive(t, "notes", "1.0.0"))
	keys := filepath.Join(dir, "keys", "release")
	if _, errOut, code := runLoci(t, "source", "keygen", "--out", keys); code != 0 {
		t.Fatal(errOut)
	}
	out, errOut, code := runLoci(t, "source", "index", dir, "--sign", keys+".key")
	if code != 0 || !strings.Contains(errOut, "warning: the private key "+keys+".key is inside the registry's folder") {
		t.Fatalf("%d\n%s\n%s", code, out, errOut)
	}
	out, _, code = runLoci(t, "--json", "source", "index", dir, "--sign", keys+".key")
	var res IndexResult
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "publishes it") {
		t.Fatalf("json warnings: %d %s", code, out)
	}
	help, _, _ := runLoci(t, "source", "index", "--help")
	for _, w := range []string{`"plugins"`, `"contract"`, `"yanked"`, "--yank", "--unyank", "loci-plugin.toml", "highest of its source modules", "out of DIR", "signature_policy"} {
		if !strings.Contains(help, w) {
			t.Errorf("the help does not mention %s:\n%s", w, help)
		}
	}
}
