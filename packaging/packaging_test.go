package packaging

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	rpmutils "github.com/sassoftware/go-rpmutils"

	"github.com/loci-dev/loci/service"
)

// testVersion is stamped into the test's binary and package.
const testVersion = "0.0.0-pkgtest"

var (
	hostOnce sync.Once
	hostDir  string
	hostErr  error
)

func testBuild() Build {
	return Build{Repo: "..", Version: testVersion, Commit: "abc1234", MTime: time.Unix(1700000000, 0).UTC()}
}

// host runs the release tool (cmd/locidist, what make dist runs) for the
// host's Linux architecture once per test run, outside the race detector
// (which makes compressing the 30 MB binary slow), and returns its output
// folder: the archive, the .deb, the .rpm and SHA256SUMS.
func host(t *testing.T) string {
	t.Helper()
	hostOnce.Do(func() {
		hostDir, hostErr = os.MkdirTemp("", "loci-pkgtest-")
		if hostErr != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		tool := filepath.Join(hostDir, "locidist")
		for _, args := range [][]string{
			{"go", "build", "-o", tool, "./cmd/locidist"},
			{tool, "-out", filepath.Join(hostDir, "dist"), "-version", testVersion, "-commit", "abc1234", "-platforms", "linux/" + runtime.GOARCH},
		} {
			cmd := exec.CommandContext(ctx, args[0], args[1:]...)
			cmd.Dir = ".."
			if out, err := cmd.CombinedOutput(); err != nil {
				hostErr = fmt.Errorf("%s: %v\n%s", strings.Join(args, " "), err, out)
				return
			}
		}
	})
	if hostErr != nil {
		t.Fatal(hostErr)
	}
	return filepath.Join(hostDir, "dist")
}

// artefact is the one file of the host's output matching pattern.
func artefact(t *testing.T, pattern string) string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(host(t), pattern))
	if err != nil || len(m) != 1 {
		t.Fatalf("%s in the release output: %q, %v", pattern, m, err)
	}
	return m[0]
}

func TestMain(m *testing.M) {
	code := m.Run()
	if hostDir != "" {
		os.RemoveAll(hostDir)
	}
	os.Exit(code)
}

// wantFiles is what a package of format installs, by path.
func wantFiles(t *testing.T, format string) []string {
	t.Helper()
	b := testBuild()
	d, err := b.Generate()
	if err != nil {
		t.Fatal(err)
	}
	fs, err := b.Files(format, nil, d)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range fs {
		out = append(out, f.Dst)
	}
	sort.Strings(out)
	return out
}

func TestGeneratedDocs(t *testing.T) {
	b := testBuild()
	d, err := b.Generate()
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string][]byte{"bash": d.Bash, "zsh": d.Zsh, "fish": d.Fish} {
		if !bytes.Contains(p, []byte("loci")) || len(p) < 500 {
			t.Errorf("%s completion looks empty: %q", name, p)
		}
	}
	for _, page := range []string{"loci.1.gz", "loci-serve.1.gz", "loci-daemon-start.1.gz", "loci-version.1.gz", "loci-completion-bash.1.gz"} {
		if d.Man[page] == nil {
			t.Errorf("no manual page %s (have %d pages)", page, len(d.Man))
		}
	}
	for _, v := range []string{"v1.2.3", "1.2.3", "v0.1.0-5-gabc1234-dirty", "a32a2c2", "dev"} {
		pv := PackageVersion(v)
		if pv[0] < '0' || pv[0] > '9' || strings.Contains(pv, "-") {
			t.Errorf("PackageVersion(%q) = %q: not a dpkg/rpm version", v, pv)
		}
	}
}

// TestArchiveAndSums checks the host's release archive and SHA256SUMS:
// every artefact's sum, the archive's files, and a static binary that
// prints the stamped version.
func TestArchiveAndSums(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the release is built and checked on Linux")
	}
	dir := host(t)
	sums, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, line := range strings.Split(strings.TrimSpace(string(sums)), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q", line)
		}
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprintf("%x", sha256.Sum256(data)); got != sum {
			t.Errorf("%s: sum %s, file %s", name, sum, got)
		}
		listed = append(listed, name)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != len(listed)+1 || len(listed) != 3 {
		t.Errorf("release output %v, SHA256SUMS lists %q (want the archive, .deb and .rpm)", entries, listed)
	}
	top := testBuild().ArchiveName("linux", runtime.GOARCH) + "/"
	f, err := os.Open(artefact(t, "loci_*_linux_"+runtime.GOARCH+".tar.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	have := map[string]bool{}
	bin := filepath.Join(t.TempDir(), "loci")
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		have[h.Name] = true
		if h.Name == top+"loci" {
			data, _ := io.ReadAll(tr)
			if err := os.WriteFile(bin, data, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, name := range []string{"loci", "README.md", "THIRD_PARTY.md", "completions/loci.bash", "completions/_loci", "completions/loci.fish", "systemd/loci.service", "man/man1/loci.1.gz", "man/man1/loci-serve.1.gz"} {
		if !have[top+name] {
			t.Errorf("archive lacks %s", top+name)
		}
	}
	ef, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ef.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("the release binary is dynamically linked (it has an interpreter): not built with CGO_ENABLED=0")
		}
	}
	ef.Close()
	if out, err := exec.Command(bin, "version").CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "loci "+testVersion+" (commit abc1234)" {
		t.Errorf("archive's loci version: %v: %q", err, out)
	}
}

// TestRPM builds the .rpm (no rpmbuild needed) and reads back its file
// list: the same files as the .deb, with zsh's path of RPM distributions.
func TestRPM(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the packages are built on Linux")
	}
	f, err := os.Open(artefact(t, "loci-*.rpm"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := rpmutils.ReadRpm(f)
	if err != nil {
		t.Fatal(err)
	}
	fis, err := r.Header.GetFiles()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, fi := range fis {
		if fi.Mode()&0o170000 == 0o040000 {
			t.Errorf("rpm owns directory %s: it would be removed from under other packages", fi.Name())
			continue
		}
		got = append(got, fi.Name())
		if fi.Name() == BinPath && fi.Mode()&0o777 != 0o755 {
			t.Errorf("%s mode %o", BinPath, fi.Mode())
		}
	}
	sort.Strings(got)
	want := wantFiles(t, "rpm")
	if !slices.Equal(got, want) {
		t.Errorf("rpm files\n got %q\nwant %q", got, want)
	}
	deb := wantFiles(t, "deb")
	for i := range deb {
		if deb[i] == ZshDebPath {
			deb[i] = ZshRPMPath
		}
	}
	sort.Strings(deb)
	if !slices.Equal(got, deb) {
		t.Errorf("rpm and deb differ beyond zsh's path:\n rpm %q\n deb %q", got, deb)
	}
	for _, tag := range []struct {
		id   int
		want string
	}{{rpmutils.NAME, "loci"}, {rpmutils.VERSION, PackageVersion(testVersion)}, {rpmutils.LICENSE, License}, {rpmutils.URL, Homepage}} {
		v, err := r.Header.GetStrings(tag.id)
		if err != nil || len(v) != 1 || v[0] != tag.want {
			t.Errorf("rpm tag %d = %q, %v; want %q", tag.id, v, err, tag.want)
		}
	}
	arch, _ := r.Header.GetStrings(rpmutils.ARCH)
	if want := map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[runtime.GOARCH]; want != "" && (len(arch) != 1 || arch[0] != want) {
		t.Errorf("rpm arch %q, want %s", arch, want)
	}
}

// TestDebInstall installs the host's .deb into this machine with dpkg -i,
// runs /usr/bin/loci, finds the manual page and completion, verifies the
// systemd user unit, and checks that dpkg -r and --purge leave none of the
// package's files behind. It needs root and dpkg (CI runs as root).
func TestDebInstall(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("SKIP: installing the .deb needs Linux")
	}
	if os.Geteuid() != 0 {
		t.Skip("SKIP: installing the .deb needs root (CI runs as root)")
	}
	if _, err := exec.LookPath("dpkg"); err != nil {
		t.Skip("SKIP: no dpkg on this machine: the .deb install test needs Debian's package manager")
	}
	if out, err := exec.Command("dpkg-query", "-W", "-f=${Status}", "loci").CombinedOutput(); err == nil && strings.Contains(string(out), "installed") {
		t.Skipf("SKIP: a loci package is already installed (%s): not replacing it", out)
	}
	for _, p := range []string{BinPath, UnitPath, BashPath} {
		if _, err := os.Lstat(p); err == nil {
			t.Skipf("SKIP: %s exists and belongs to no loci package: not overwriting it", p)
		}
	}
	deb := artefact(t, "loci_*.deb")
	// The directories the package would create: those must go again.
	existed := map[string]bool{}
	for _, f := range wantFiles(t, "deb") {
		for dir := filepath.Dir(f); dir != "/"; dir = filepath.Dir(dir) {
			_, err := os.Lstat(dir)
			existed[dir] = err == nil
		}
	}
	run := func(name string, args ...string) (string, error) {
		out, err := exec.Command(name, args...).CombinedOutput()
		return string(out), err
	}
	if out, err := run("dpkg", "-i", deb); err != nil {
		t.Fatalf("dpkg -i: %v\n%s", err, out)
	}
	removed := false
	t.Cleanup(func() {
		if !removed {
			if out, err := run("dpkg", "--purge", "loci"); err != nil {
				t.Errorf("cleanup dpkg --purge: %v\n%s", err, out)
			}
		}
	})
	listed, err := run("dpkg", "-L", "loci")
	if err != nil {
		t.Fatalf("dpkg -L: %v\n%s", err, listed)
	}
	paths := strings.Fields(listed)
	for _, want := range wantFiles(t, "deb") {
		if !slices.Contains(paths, want) {
			t.Errorf("dpkg -L lacks %s", want)
		}
	}
	if out, err := run(BinPath, "version"); err != nil || !strings.Contains(out, "loci "+testVersion) || !strings.Contains(out, "abc1234") {
		t.Errorf("%s version: %v: %q, want loci %s (commit abc1234)", BinPath, err, out, testVersion)
	}
	if _, err := exec.LookPath("man"); err != nil {
		t.Log("SKIP part: no man on this machine: not looking the page up with man -w")
	} else if out, err := run("man", "-w", "1", "loci"); err != nil || strings.TrimSpace(out) != ManDir+"/loci.1.gz" {
		t.Errorf("man -w 1 loci: %v: %q", err, out)
	}
	if st, err := os.Stat(BashPath); err != nil || st.Size() == 0 {
		t.Errorf("bash completion %s: %v", BashPath, err)
	}
	// The completion needs bash-completion's functions (Debian's minimal
	// images lack it): the package suggests it.
	if out, err := run("dpkg-query", "-W", "-f=${Suggests}", "loci"); err != nil || strings.TrimSpace(out) != "bash-completion" {
		t.Errorf("Suggests: %v %q, want bash-completion", err, out)
	}
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Log("SKIP part: no systemd-analyze on this machine: the unit is not verified")
	} else {
		// verify checks ExecStart's binary exists (it does: installed).
		out, err := run("systemd-analyze", "verify", UnitPath)
		if err != nil || strings.TrimSpace(out) != "" {
			t.Errorf("systemd-analyze verify %s: %v\n%s", UnitPath, err, out)
		}
	}
	packagedServiceInstall(t)
	removed = true
	if out, err := run("dpkg", "-r", "loci"); err != nil {
		t.Fatalf("dpkg -r: %v\n%s", err, out)
	}
	if out, err := run("dpkg", "--purge", "loci"); err != nil {
		t.Fatalf("dpkg --purge: %v\n%s", err, out)
	}
	for _, p := range paths {
		st, err := os.Lstat(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if !st.IsDir() {
			t.Errorf("%s is left after dpkg -r", p)
			continue
		}
		// A directory stays only when it was there before (/usr/bin).
		if e, known := existed[p]; known && !e {
			t.Errorf("directory %s, made by the install, is left after dpkg -r", p)
		}
	}
	for dir, was := range existed {
		if _, err := os.Lstat(dir); err == nil && !was && !slices.Contains(paths, dir) {
			t.Errorf("directory %s, made by the install, is left after dpkg -r", dir)
		}
	}
	if _, err := os.Stat(DocDir); err == nil {
		t.Errorf("%s is left after dpkg --purge", DocDir)
	}
}

// TestLociLeavesOutReleaseTooling keeps nFPM, cobra/doc and this package
// out of the loci binary: they are the release tool's.
func TestLociLeavesOutReleaseTooling(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "../cmd/loci").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, f := range []string{"github.com/goreleaser/", "github.com/spf13/cobra/doc", "github.com/loci-dev/loci/packaging", "github.com/sassoftware/"} {
			if strings.HasPrefix(dep, f) {
				t.Errorf("cmd/loci depends on %s", dep)
			}
		}
	}
}

// TestHonestMetadata: without a licence file or a maintainer in the
// repository, the packages invent neither: the licence field is SPDX's
// NOASSERTION, the copyright file and the description say no licence is
// stated, and the maintainer's address is in .invalid (RFC 6761: never
// a mailbox someone else may own) until the owners choose one.
func TestHonestMetadata(t *testing.T) {
	if _, err := os.Stat("../LICENSE"); err == nil {
		t.Skip("the repository has a LICENSE now: set License, copyrightText and Maintainer from it")
	}
	if License != "NOASSERTION" {
		t.Errorf("License %q without a licence file", License)
	}
	if !strings.Contains(string(copyrightText()), "License: NOASSERTION\n The loci repository does not state a licence yet.") {
		t.Errorf("copyright file:\n%s", copyrightText())
	}
	if !strings.Contains(Description, "No licence is stated yet") {
		t.Errorf("the description does not say the licence is unstated:\n%s", Description)
	}
	_, addr, ok := strings.Cut(Maintainer, "<")
	if !ok || !strings.HasSuffix(addr, ".invalid>") || !strings.Contains(Maintainer, "placeholder") {
		t.Errorf("Maintainer %q names a real-looking address nobody chose", Maintainer)
	}
}

// packagedServiceInstall runs the installed /usr/bin/loci's `service
// install`, `status` and `remove` in a temporary HOME with a fake
// systemctl on PATH: the packaged binary enables the packaged unit (one
// unit, not a second in HOME), and remove disables it, leaving HOME and
// the unit as they were.
func packagedServiceInstall(t *testing.T) {
	t.Helper()
	home, fake := t.TempDir(), t.TempDir()
	script := "#!/bin/sh\necho \"$*\" >> " + fake + "/log\ncase \"$*\" in *is-enabled*) echo enabled;; *is-active*) echo active;; esac\nexit 0\n"
	if err := os.WriteFile(filepath.Join(fake, "systemctl"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	unitBefore, err := os.ReadFile(UnitPath)
	if err != nil {
		t.Fatal(err)
	}
	loci := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(BinPath, args...)
		cmd.Env = []string{"HOME=" + home, "PATH=" + fake + ":/usr/bin:/bin"}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("loci %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	if out := loci("service", "install"); !strings.Contains(out, "the packaged unit "+UnitPath) {
		t.Errorf("the packaged loci's service install did not enable the packaged unit:\n%s", out)
	}
	if out := loci("service", "status"); !strings.Contains(out, UnitPath+" (installed: the packaged unit") {
		t.Errorf("status:\n%s", out)
	}
	loci("service", "remove")
	log, _ := os.ReadFile(filepath.Join(fake, "log"))
	want := "--user daemon-reload\n--user enable --now loci.service\n--user is-enabled loci.service\n--user is-active loci.service\n--user disable --now loci.service\n"
	if string(log) != want {
		t.Errorf("systemctl ran\n%s\nwant\n%s", log, want)
	}
	if entries, _ := os.ReadDir(home); len(entries) != 0 {
		t.Errorf("HOME holds %v after service remove", entries)
	}
	if after, _ := os.ReadFile(UnitPath); !bytes.Equal(after, unitBefore) {
		t.Error("service remove changed the packaged unit")
	}
}

// TestUnitIsInstallsUnit: the packaged unit is what `loci service
// install` would write for the packaged binary (one template), so that
// binary's install enables it; the archive carries the same file.
func TestUnitIsInstallsUnit(t *testing.T) {
	spec := service.Spec{Binary: BinPath, Args: []string{"serve"}}
	want, err := service.PackagedUnit(spec)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(Unit, want) || !service.Runs(Unit, spec) || service.Owned(Unit) {
		t.Errorf("the packaged unit is not service's rendering for %s:\n%s", BinPath, Unit)
	}
	d, err := testBuild().Generate()
	if err != nil {
		t.Fatal(err)
	}
	fs, err := testBuild().Files("deb", nil, d)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fs {
		if f.Dst == UnitPath && !bytes.Equal(f.Data, Unit) {
			t.Errorf("the .deb's %s is not Unit", UnitPath)
		}
	}
}

// TestPackageVersion: a tag is the version; anything else (a bare commit
// from git describe --always before the first tag, even one of digits
// only, or dev) sorts below every release, so a later real package
// upgrades it.
func TestPackageVersion(t *testing.T) {
	for in, want := range map[string]string{
		"v1.2.3":                  "1.2.3",
		"1.2.3":                   "1.2.3",
		"v0.1.0-5-gabc1234-dirty": "0.1.0+5+gabc1234+dirty",
		"a32a2c2":                 "0.0.0+a32a2c2",
		"7574787":                 "0.0.0+7574787",
		"7574787-dirty":           "0.0.0+7574787+dirty",
		"dev":                     "0.0.0+dev",
	} {
		if got := PackageVersion(in); got != want {
			t.Errorf("PackageVersion(%q) = %q, want %q", in, got, want)
		}
	}
}
