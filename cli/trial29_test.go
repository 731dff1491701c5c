package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTrial29InitSaysWhatANameMayBe: --name "Bad Name" is refused naming
// the flag, what a source name may be and one close to it; nothing is
// written, and the manifest is not blamed (init writes it).
func TestTrial29InitSaysWhatANameMayBe(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p")
	_, errOut, code := runLoci(t, "source", "init", dir, "--name", "Bad Name")
	if code == 0 || !strings.Contains(errOut, `--name "Bad Name" is not a source name`) ||
		!strings.Contains(errOut, "lowercase letters, digits and '-'") || !strings.Contains(errOut, `"bad-name"`) ||
		strings.Contains(errOut, "manifest") || strings.Contains(errOut, `correct "`) {
		t.Fatalf("init --name \"Bad Name\": %d\n%s", code, errOut)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Fatal("a refused init made its folder")
	}
}

// TestTrial29ManifestHelpNamesTheFile: a bad manifest in a project says
// the key and line and, as help, to correct loci-source.toml, never the
// generic `correct "manifest" and send the request again`.
func TestTrial29ManifestHelpNamesTheFile(t *testing.T) {
	dir := testProject(t)
	mf := filepath.Join(dir, "loci-source.toml")
	b := mustRead(t, mf)
	if err := os.WriteFile(mf, append(b, []byte("write = [\"/tmp\"]\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runLoci(t, "source", "package", dir)
	if code == 0 || !strings.Contains(errOut, "unknown key permissions.write") || !strings.Contains(errOut, "correct loci-source.toml") ||
		strings.Contains(errOut, "send the request again") || strings.Contains(errOut, "strict mode") {
		t.Fatalf("package with an unknown permission: %d\n%s", code, errOut)
	}
}

// TestTrial29KeygenMakesItsFolder: keygen --out keys/reg with no keys/
// makes keys/ (mode 0700) and says so; package --out into a folder that
// does not exist says the folder does not exist, not open's error on a
// temporary name.
func TestTrial29KeygenMakesItsFolder(t *testing.T) {
	root := t.TempDir()
	prefix := filepath.Join(root, "keys", "reg")
	_, errOut, code := runLoci(t, "source", "keygen", "--out", prefix)
	if code != 0 || !strings.Contains(errOut, "made the folder "+filepath.Join(root, "keys")) {
		t.Fatalf("keygen into a missing folder: %d\n%s", code, errOut)
	}
	fi, err := os.Stat(filepath.Join(root, "keys"))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("the keys folder: %v %v", fi, err)
	}
	mustRead(t, prefix+".key")
	mustRead(t, prefix+".pub")

	dir := testProject(t)
	out := filepath.Join(root, "nowhere", "x.tar.gz")
	_, errOut, code = runLoci(t, "source", "package", dir, "--out", out)
	if code == 0 || !strings.Contains(errOut, "the folder "+filepath.Join(root, "nowhere")+" does not exist") || strings.Contains(errOut, ".tmp-") {
		t.Fatalf("package into a missing folder: %d\n%s", code, errOut)
	}
}

// TestTrial29IndexCountsInWords: one archive is "1 archive of 1 source".
func TestTrial29IndexCountsInWords(t *testing.T) {
	dir := testProject(t)
	reg := t.TempDir()
	if _, errOut, code := runLoci(t, "source", "package", dir, "--out", filepath.Join(reg, "conv-0.1.0.tar.gz")); code != 0 {
		t.Fatal(errOut)
	}
	out, errOut, code := runLoci(t, "source", "index", reg)
	if code != 0 || !strings.Contains(out, "indexed 1 archive of 1 source into") {
		t.Fatalf("index: %d\n%s%s", code, out, errOut)
	}
}
