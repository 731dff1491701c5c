// Package service writes, starts and removes loci's login service: a
// systemd user unit on Linux, a launchd agent on macOS. It renders the
// unit or property list, and drives systemctl or launchctl through a
// command runner the caller provides. It knows nothing of the daemon
// itself: the command line to run comes in a Spec.
package service

import (
	"bufio"
	"bytes"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/loci-dev/loci/fault"
)

// Manager names a service manager.
type Manager string

// The service managers loci writes for.
const (
	// Systemd is a systemd user unit, driven with systemctl --user.
	Systemd Manager = "systemd"
	// Launchd is a launchd agent in the user's GUI domain, driven with
	// launchctl.
	Launchd Manager = "launchd"
)

// Names of the service.
const (
	// UnitName is the systemd user unit's name.
	UnitName = "loci.service"
	// Label is the launchd agent's label (and its file's name, with
	// .plist).
	Label = "dev.loci.loci"
)

// Marker is the comment line that says loci wrote the file: a unit or
// property list of loci's name without it is someone else's, never
// overwritten or deleted.
const Marker = "Managed by loci: written by `loci service install`, deleted by `loci service remove`."

// madePrefix starts the comment line recording a directory install
// created (remove deletes it again when it is empty).
const madePrefix = "loci made directory: "

// Spec is what the service runs.
type Spec struct {
	// Binary is the absolute path of the loci binary.
	Binary string
	// Args follow the binary: serve and its flags. Never a secret: the
	// file is readable by every user.
	Args []string
	// LogDir is where a launchd agent's output goes (systemd's goes to
	// the journal).
	LogDir string
}

// Render is the file of the manager for spec; made lists the
// directories install created, recorded in the file for remove.
func Render(m Manager, spec Spec, made []string) ([]byte, error) {
	if !filepath.IsAbs(spec.Binary) {
		return nil, fault.Newf(fault.InputInvalid, "run loci by its absolute path", "the loci binary's path %q is not absolute", spec.Binary)
	}
	for _, a := range append([]string{spec.Binary, spec.LogDir}, append(spec.Args, made...)...) {
		if strings.ContainsAny(a, "\x00\n\r") {
			return nil, fault.Newf(fault.InputInvalid, "use a path without line breaks", "%q cannot be written into a service file", a)
		}
	}
	switch m {
	case Systemd:
		// systemd refuses an executable named with a quote or a
		// backslash ("special characters"), however quoted.
		if strings.ContainsAny(spec.Binary, `"\`) {
			return nil, fault.Newf(fault.InputInvalid, "move the loci binary to a path without quotes or backslashes",
				"systemd cannot run a binary whose path %q holds a quote or a backslash", spec.Binary)
		}
		return unit(spec, made), nil
	case Launchd:
		if !filepath.IsAbs(spec.LogDir) {
			return nil, fault.Newf(fault.InputInvalid, "set HOME to an absolute path", "the log directory %q is not absolute", spec.LogDir)
		}
		return agent(spec, made), nil
	}
	return nil, fault.Newf(fault.InputInvalid, "use systemd or launchd", "%q is not a service manager", string(m))
}

// unit is the systemd user unit loci writes: Marker, the directories
// install made, then body.
func unit(spec Spec, made []string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s\n", Marker)
	for _, d := range made {
		fmt.Fprintf(&b, "# %s%s\n", madePrefix, strconv.Quote(d))
	}
	b.Write(body(spec))
	return b.Bytes()
}

// packagedHeader opens the unit the .deb and .rpm install: no Marker (the
// file is the package's, never loci's to delete).
const packagedHeader = `# loci's systemd user unit, installed by the .deb and .rpm packages.
# Enable it for your user with "loci service install" (or by hand:
# systemctl --user enable --now loci.service); logs: journalctl --user -u loci
`

// PackagedUnit is the systemd user unit the packages install under
// /usr/lib/systemd/user: the same directives `loci service install`
// writes for spec, under a comment of the package's instead of Marker.
func PackagedUnit(spec Spec) ([]byte, error) {
	if _, err := Render(Systemd, spec, nil); err != nil {
		return nil, err
	}
	return append([]byte(packagedHeader), body(spec)...), nil
}

// body is the unit's directives, one template for the unit install writes
// and the packaged one. loci serve logs to standard error, which systemd
// sends to the journal (journalctl --user -u loci); it stops with status 0
// on SIGTERM or `loci daemon stop`, so Restart=on-failure restarts it after
// a crash and never after a clean stop.
func body(spec Spec) []byte {
	var b bytes.Buffer
	b.WriteString(`[Unit]
Description=loci memory daemon for AI agents
Documentation=https://github.com/loci-dev/loci

[Service]
Type=exec
`)
	b.WriteString(execStart(spec) + "\n")
	b.WriteString(`Restart=on-failure
RestartSec=2
TimeoutStopSec=30
StandardOutput=journal
StandardError=journal

[Install]
WantedBy=default.target
`)
	return b.Bytes()
}

// execStart is the unit's ExecStart line for spec.
func execStart(spec Spec) string {
	return "ExecStart=" + execLine(append([]string{spec.Binary}, spec.Args...))
}

// Runs reports whether the systemd unit content runs exactly what spec
// says (its ExecStart line is the one loci would write): enabling it is
// as good as writing loci's own.
func Runs(content []byte, spec Spec) bool {
	want := execStart(spec)
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(content))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "ExecStart=") {
			n++
			if line != want {
				return false
			}
		}
	}
	return n == 1
}

// execLine quotes a command line for ExecStart: words of plain characters
// stay bare, others are double-quoted with C escapes; % is doubled so
// systemd expands no specifier, and $ in the arguments (not the
// executable, which systemd takes literally) so it expands no variable.
func execLine(words []string) string {
	out := make([]string, len(words))
	for i, w := range words {
		w = strings.ReplaceAll(w, "%", "%%")
		if i > 0 {
			w = strings.ReplaceAll(w, "$", "$$")
		}
		if w != "" && strings.IndexFunc(w, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+,:=@%$", r))
		}) < 0 {
			out[i] = w
			continue
		}
		var q strings.Builder
		q.WriteByte('"')
		for _, r := range w {
			switch r {
			case '"', '\\':
				q.WriteByte('\\')
				q.WriteRune(r)
			case '\t':
				q.WriteString(`\t`)
			default:
				q.WriteRune(r)
			}
		}
		q.WriteByte('"')
		out[i] = q.String()
	}
	return strings.Join(out, " ")
}

// agent is the launchd agent: started at login (RunAtLoad) and restarted
// when it exits with a failure (KeepAlive SuccessfulExit=false), its
// output in LogDir.
func agent(spec Spec, made []string) []byte {
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
`)
	fmt.Fprintf(&b, "<!-- %s -->\n", Marker)
	for _, d := range made {
		// An XML comment cannot hold "--": the quoted path escapes '-'.
		fmt.Fprintf(&b, "<!-- %s%s -->\n", madePrefix, strings.ReplaceAll(strconv.Quote(d), "-", `\x2d`))
	}
	b.WriteString("<plist version=\"1.0\">\n<dict>\n")
	key := func(k string) { fmt.Fprintf(&b, "\t<key>%s</key>\n", k) }
	str := func(indent, s string) { fmt.Fprintf(&b, "%s<string>%s</string>\n", indent, xmlText(s)) }
	key("Label")
	str("\t", Label)
	key("ProgramArguments")
	b.WriteString("\t<array>\n")
	for _, a := range append([]string{spec.Binary}, spec.Args...) {
		str("\t\t", a)
	}
	b.WriteString("\t</array>\n")
	key("RunAtLoad")
	b.WriteString("\t<true/>\n")
	key("KeepAlive")
	b.WriteString("\t<dict>\n\t\t<key>SuccessfulExit</key>\n\t\t<false/>\n\t</dict>\n")
	key("ThrottleInterval")
	b.WriteString("\t<integer>10</integer>\n")
	key("StandardOutPath")
	str("\t", filepath.Join(spec.LogDir, "loci.log"))
	key("StandardErrorPath")
	str("\t", filepath.Join(spec.LogDir, "loci.log"))
	b.WriteString("</dict>\n</plist>\n")
	return b.Bytes()
}

// xmlText escapes s for XML character data.
func xmlText(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// Owned reports whether content is a file loci wrote (it holds Marker).
func Owned(content []byte) bool {
	sc := bufio.NewScanner(bytes.NewReader(content))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "# "+Marker || line == "<!-- "+Marker+" -->" {
			return true
		}
	}
	return false
}

// Made lists the directories a file loci wrote records as created by its
// install, in the order they were created (outermost first).
func Made(content []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(content))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		var q string
		switch {
		case strings.HasPrefix(line, "# "+madePrefix):
			q = strings.TrimPrefix(line, "# "+madePrefix)
		case strings.HasPrefix(line, "<!-- "+madePrefix) && strings.HasSuffix(line, " -->"):
			q = strings.TrimSuffix(strings.TrimPrefix(line, "<!-- "+madePrefix), " -->")
		default:
			continue
		}
		if d, err := strconv.Unquote(q); err == nil && filepath.IsAbs(d) {
			out = append(out, d)
		}
	}
	return out
}
