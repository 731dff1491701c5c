package main_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal: its terminal side (what a person's
// shell gives a command) and its controller side; skipped where the
// system has none.
func openPTY(t *testing.T) (term, ctl *os.File) {
	t.Helper()
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal on this system (/dev/ptmx: %v)", err)
	}
	ctl = os.NewFile(uintptr(fd), "/dev/ptmx")
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		ctl.Close()
		t.Skipf("cannot unlock the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		ctl.Close()
		t.Skipf("cannot name the pseudo-terminal: %v", err)
	}
	term, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		ctl.Close()
		t.Skipf("cannot open the pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { term.Close(); ctl.Close() })
	return term, ctl
}

// On a terminal, loci source install shows the permissions and asks; no
// installs nothing, y installs.
func TestSourcePackageInstallAsksOnATerminal(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	d := start(t, home, palace)
	_, arc := notesPackage(t, "notes", "1.0.0", notesPerms, guestModule(t))
	file := filepath.Join(t.TempDir(), "notes.tar.gz")
	os.WriteFile(file, arc, 0o600)
	for _, answer := range []string{"n", "y"} {
		term, ctl := openPTY(t)
		go func() {
			// Drain the echo so the terminal never blocks.
			b := make([]byte, 4096)
			for {
				if _, err := ctl.Read(b); err != nil {
					return
				}
			}
		}()
		cmd := exec.Command(bin, "--addr", d.addr, "source", "install", file)
		cmd.Env = env(home)
		cmd.Stdin = term
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		ctl.Write([]byte(answer + "\n"))
		err := cmd.Wait()
		if !strings.Contains(errb.String(), "Install? [y/N]") || !strings.Contains(errb.String(), "read the environment variable NOTES_TOKEN") {
			t.Fatalf("answer %s: no question: %s", answer, errb.String())
		}
		switch answer {
		case "n":
			if err == nil || !strings.Contains(errb.String(), "loci::cli::aborted") {
				t.Fatalf("answered no: %v %s", err, errb.String())
			}
			if r := d.do("GET", "/api/source-packages/notes", nil); r.status != 404 {
				t.Fatalf("installed after a no: %s", r.raw)
			}
		case "y":
			if err != nil || !strings.Contains(out.String(), "installed the notes source 1.0.0") {
				t.Fatalf("answered yes: %v %s %s", err, out.String(), errb.String())
			}
		}
	}
}
