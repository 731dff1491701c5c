package cli

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/export"
	"github.com/loci-dev/loci/fault"
)

// TestErrorsPrintWhole: a fault's message and help are printed whole,
// however long, in both forms (the trial saw a corrupt backup's message
// cut mid-sentence).
func TestErrorsPrintWhole(t *testing.T) {
	msg := "flip.backup: the body's digest is sha256:" + strings.Repeat("e4", 32) + ", the header says sha256:" + strings.Repeat("fd", 32) + " (byte 4096) " + strings.Repeat("and more words ", 80) + "end"
	help := "the file is damaged: use another copy, or take a new backup " + strings.Repeat("then again ", 60) + "end"
	err := fault.New(fault.BackupCorrupt, msg, help)
	for _, js := range []bool{false, true} {
		var stderr bytes.Buffer
		a := &app{stderr: &stderr, stdout: &bytes.Buffer{}, jsonOut: js}
		a.printError(err)
		if js {
			var b fault.Body
			if err := json.Unmarshal(stderr.Bytes(), &b); err != nil || b.Error != msg || b.Help != help || b.Code != string(fault.BackupCorrupt) {
				t.Fatalf("--json: %v %s", err, stderr.String())
			}
			continue
		}
		if !strings.Contains(stderr.String(), msg) || !strings.Contains(stderr.String(), help) {
			t.Fatalf("cut: %s", stderr.String())
		}
	}
}

// TestEmptyPassphraseSaysEmpty: an empty LOCI_EXPORT_PASSPHRASE is
// named empty, not "not set".
func TestEmptyPassphraseSaysEmpty(t *testing.T) {
	dir := t.TempDir()
	a := &app{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, addr: "127.0.0.1:1",
		env: func(k string) (string, bool) {
			v, ok := map[string]string{"HOME": dir, "XDG_CONFIG_HOME": dir, export.PassphraseEnv: ""}[k]
			return v, ok
		}}
	cmd := a.exportCmd()
	cmd.SetArgs([]string{"--passphrase", "--out", filepath.Join(dir, "x.age")})
	cmd.SetIn(strings.NewReader(""))
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.Execute()
	fe := fault.As(err)
	if err == nil || !strings.Contains(fe.Msg, "empty") || strings.Contains(fe.Msg, "not set") {
		t.Fatalf("empty passphrase: %v", err)
	}
}

// TestImportOfABackupNamesRestore: loci import of a loci backup file says
// it is a backup and to use loci restore, before the daemon is asked.
func TestImportOfABackupNamesRestore(t *testing.T) {
	var hits atomic.Int32
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1); http.Error(w, "no", 500) }))
	defer hs.Close()
	dir := t.TempDir()
	h, _ := json.Marshal(api.BackupHeader{Format: "loci-backup", Version: 1, PalaceID: "p"})
	block := append(h, bytes.Repeat([]byte(" "), api.BackupHeaderSize-len(h)-1)...)
	block = append(block, '\n')
	file := filepath.Join(dir, "full.backup")
	if err := os.WriteFile(file, append(block, "body"...), 0o600); err != nil {
		t.Fatal(err)
	}
	a := &app{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, addr: strings.TrimPrefix(hs.URL, "http://"),
		env: func(k string) (string, bool) {
			v, ok := map[string]string{"HOME": dir, "XDG_CONFIG_HOME": dir}[k]
			return v, ok
		}}
	cmd := a.importCmd()
	cmd.SetArgs([]string{file})
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.Execute()
	fe := fault.As(err)
	if err == nil || !strings.Contains(fe.Msg, "backup") || !strings.Contains(fe.Msg+fe.Help, "loci restore") || !strings.Contains(fe.Msg, file) {
		t.Fatalf("import of a backup: %v", err)
	}
	if hits.Load() != 0 {
		t.Fatal("the daemon was asked")
	}
}

// TestBackupAndBackupsNameEachOther: the two commands a letter apart
// each say, in their one-line summary and in their help, what the other
// is and which backups status counts.
func TestBackupAndBackupsNameEachOther(t *testing.T) {
	a := &app{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
	b, bs := a.backupCmd(), a.backupsCmd()
	for _, c := range []struct {
		text, other string
	}{{b.Short, "loci backups"}, {b.Long, "loci backups"}, {bs.Short, "loci backup "}, {bs.Long, "loci backup\""}} {
		if !strings.Contains(c.text, c.other) || !strings.Contains(c.text, "backup.dir") {
			t.Fatalf("%q does not name %s and backup.dir", c.text, c.other)
		}
	}
	if !strings.Contains(bs.Short+bs.Long, "status") || !strings.Contains(b.Long, "status") {
		t.Fatal("neither says which backups status counts")
	}
}
