package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/triggers"
)

// SetMinerEnabled sets enabled = true or false in the [miners.<name>]
// table of a configuration file, changing that one line (or adding it
// under the table's header) and leaving every other byte, comments and
// formatting included, as it was. The file is replaced atomically (a
// temporary file beside it, synced, then renamed), keeping its mode.
func SetMinerEnabled(file, name string, enabled bool) error {
	if p := MinerName(name); p != "" {
		return fault.Invalid("name", "the miner name "+p)
	}
	return setEnabled(file, "miners", name, enabled)
}

// SetTriggerEnabled sets enabled in a [triggers.<name>] table as
// SetMinerEnabled does in a miner's.
func SetTriggerEnabled(file, name string, enabled bool) error {
	if p := triggers.Name(name); p != "" {
		return fault.New(fault.TriggerInvalid, "name: the trigger name "+p, "name the trigger with lowercase letters, digits, - and _")
	}
	return setEnabled(file, "triggers", name, enabled)
}

func setEnabled(file, section, name string, enabled bool) error {
	if file == "" {
		return fault.New(fault.MinerConfigFile, "no configuration file was read, so there is no file to change",
			"create one with the ["+section+".<name>] table, name it with --config or LOCI_CONFIG, and restart")
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return fault.Wrap(fault.MinerConfigFile, err, "cannot read "+file+": "+err.Error(), "check the file exists and the daemon may read it")
	}
	text := string(b)
	lines := strings.SplitAfter(text, "\n")
	header := regexp.MustCompile(`^\s*\[\s*` + section + `\s*\.\s*"?` + regexp.QuoteMeta(name) + `"?\s*\]\s*(#.*)?$`)
	anyHeader := regexp.MustCompile(`^\s*\[`)
	key := regexp.MustCompile(`^(\s*)enabled(\s*)=(\s*)(true|false)(.*)$`)
	value := fmt.Sprint(enabled)
	start := -1
	for i, l := range lines {
		if header.MatchString(strings.TrimRight(l, "\r\n")) {
			start = i
			break
		}
	}
	if start < 0 {
		return fault.Newf(fault.MinerConfigFile, "each is changed in its own ["+section+".<name>] table; edit the file by hand if it is written otherwise",
			"%s has no [%s.%s] table", file, section, name)
	}
	done := false
	for i := start + 1; i < len(lines) && !anyHeader.MatchString(lines[i]); i++ {
		l := strings.TrimRight(lines[i], "\r\n")
		if m := key.FindStringSubmatch(l); m != nil {
			lines[i] = m[1] + "enabled" + m[2] + "=" + m[3] + value + m[5] + lines[i][len(l):]
			done = true
			break
		}
	}
	if !done {
		nl := "\n"
		if strings.HasSuffix(lines[start], "\r\n") {
			nl = "\r\n"
		} else if !strings.HasSuffix(lines[start], "\n") {
			lines[start] += nl
		}
		rest := append([]string{"enabled = " + value + nl}, lines[start+1:]...)
		lines = append(lines[:start+1], rest...)
	}
	return writeAtomic(file, []byte(strings.Join(lines, "")))
}

// writeAtomic replaces a file by a synced temporary file renamed over it,
// keeping its mode (0600 for a new file), then syncs the directory so
// that the rename survives a crash.
func writeAtomic(file string, data []byte) error {
	mode := os.FileMode(0o600)
	if st, err := os.Stat(file); err == nil {
		mode = st.Mode().Perm()
	}
	tmp, err := tempBeside(file, data, mode)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := os.Rename(tmp, file); err != nil {
		return fault.Wrap(fault.MinerConfigFile, err, "cannot replace "+file+": "+err.Error(), "check the daemon may write the file's directory")
	}
	return syncDir(filepath.Dir(file))
}

// tempBeside writes data to a new temporary file in file's directory,
// synced and with the mode given, and returns its path.
func tempBeside(file string, data []byte, mode os.FileMode) (string, error) {
	tmp, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".*")
	if err != nil {
		return "", fault.Wrap(fault.MinerConfigFile, err, "cannot write beside "+file+": "+err.Error(), "check the daemon may write the file's directory")
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), mode)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return "", fault.Wrap(fault.MinerConfigFile, err, "cannot write "+file+": "+err.Error(), "check the disk")
	}
	return tmp.Name(), nil
}

// syncDir syncs a directory, making the entries renamed or linked into it
// durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err == nil {
		err = d.Sync()
		if cerr := d.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fault.Wrap(fault.MinerConfigFile, err, "cannot sync the directory "+dir+": "+err.Error(), "check the disk")
	}
	return nil
}

// CreateFile creates the configuration file the daemon reads at its next
// start when it does not exist yet (the default file is optional, so a
// fresh install has none): missing directories are made private (0700),
// the file private (0600), holding only a header comment naming its
// writer (by) and the moment. It is written as a synced temporary file
// linked into place, so an existing file, even one created at the same
// moment, is never replaced; created says whether this call made it.
func CreateFile(file, by string, at time.Time) (created bool, err error) {
	if _, err := os.Lstat(file); err == nil {
		return false, nil
	}
	dir := filepath.Dir(file)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, fault.Wrap(fault.MinerConfigFile, err, "cannot create the configuration directory "+dir+": "+err.Error(),
			"check the daemon may write there, or name a file that exists with --config or LOCI_CONFIG")
	}
	header := fmt.Sprintf("# loci configuration file, created by the loci daemon (%s) on %s\n"+
		"# when a miner, trigger or source configuration was first saved through its API.\n"+
		"# Settings are described in the README; edit by hand at will: the daemon keeps\n"+
		"# every line outside the [miners.*], [triggers.*] and [source_configs.*] tables\n"+
		"# it changes, and reads the file again within seconds.\n",
		by, at.UTC().Format(time.RFC3339))
	tmp, err := tempBeside(file, []byte(header), 0o600)
	if err != nil {
		return false, err
	}
	defer os.Remove(tmp)
	switch err := os.Link(tmp, file); {
	case err == nil:
	case errors.Is(err, fs.ErrExist):
		return false, nil
	default:
		// A file system without hard links: renamed instead, which would
		// replace a file created in the same instant.
		if _, serr := os.Lstat(file); serr == nil {
			return false, nil
		}
		if err := os.Rename(tmp, file); err != nil {
			return false, fault.Wrap(fault.MinerConfigFile, err, "cannot create "+file+": "+err.Error(), "check the daemon may write the file's directory")
		}
	}
	return true, syncDir(dir)
}

// PutMinerTable writes a miner's table into a configuration file: it
// replaces the [miners.<name>] table's lines (from its header to the next
// table) or, for a new miner, appends the table at the end. Every other
// byte of the file stays as it was. The file is created when missing.
func PutMinerTable(file, name string, m Miner) error {
	return putTable(file, "miners", name, MinerTable(name, m))
}

// PutSourceConfigTable writes a source configuration's table
// ([source_configs.<id>]) as PutMinerTable writes a miner's.
func PutSourceConfigTable(file, id string, sc SourceConfig) error {
	return putTable(file, "source_configs", id, SourceConfigTable(id, sc))
}

// DeleteSourceConfigTable removes a source configuration's table.
func DeleteSourceConfigTable(file, id string) error { return deleteTable(file, "source_configs", id) }

// SourceConfigTable renders a source configuration as its TOML table.
func SourceConfigTable(id string, sc SourceConfig) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[source_configs.%s]\nsource = %s\n", id, tomlString(sc.Source))
	writeOptions(&b, sc.Options)
	writeCredential(&b, sc.Credential)
	return b.String()
}

func putTable(file, section, name, table string) error {
	if file == "" {
		return fault.New(fault.MinerConfigFile, "no configuration file was read, so there is no file to write to",
			"create one (it may be empty), name it with --config or LOCI_CONFIG, and restart")
	}
	b, err := os.ReadFile(file)
	if err != nil && !os.IsNotExist(err) {
		return fault.Wrap(fault.MinerConfigFile, err, "cannot read "+file+": "+err.Error(), "check the daemon may read it")
	}
	lines := strings.SplitAfter(string(b), "\n")
	start, end := tableBlock(lines, section, name)
	if start < 0 {
		text := string(b)
		if text != "" && !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		if text != "" {
			text += "\n"
		}
		return writeAtomic(file, []byte(text+table))
	}
	out := strings.Join(lines[:start], "") + table
	if end < len(lines) && strings.TrimSpace(lines[end]) != "" {
		out += "\n" // keep a blank line before the next table
	}
	out += strings.Join(lines[end:], "")
	return writeAtomic(file, []byte(out))
}

// PutTriggerTable writes a trigger's table ([triggers.<name>]) as
// PutMinerTable writes a miner's.
func PutTriggerTable(file, name string, t Trigger) error {
	return putTable(file, "triggers", name, TriggerTable(name, t))
}

// DeleteTriggerTable removes a trigger's table.
func DeleteTriggerTable(file, name string) error { return deleteTable(file, "triggers", name) }

// TriggerTable renders a trigger as its TOML table (settings inline, so
// that the table is one block).
func TriggerTable(name string, t Trigger) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[triggers.%s]\nminer = %s\ntype = %s\nenabled = %v\n", name, tomlString(t.Miner), tomlString(t.Type), t.Enabled)
	if len(t.Settings) > 0 {
		keys := make([]string, 0, len(t.Settings))
		for k := range t.Settings {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			v := fmt.Sprint(t.Settings[k])
			if bv, ok := t.Settings[k].(bool); ok {
				parts[i] = tomlString(k) + " = " + fmt.Sprint(bv)
			} else {
				parts[i] = tomlString(k) + " = " + tomlString(v)
			}
		}
		fmt.Fprintf(&b, "settings = { %s }\n", strings.Join(parts, ", "))
	}
	writeCredential(&b, t.Credential)
	return b.String()
}

// DeleteMinerTable removes a miner's table from a configuration file.
func DeleteMinerTable(file, name string) error { return deleteTable(file, "miners", name) }

func deleteTable(file, section, name string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return fault.Wrap(fault.MinerConfigFile, err, "cannot read "+file+": "+err.Error(), "check the daemon may read it")
	}
	lines := strings.SplitAfter(string(b), "\n")
	start, end := tableBlock(lines, section, name)
	if start < 0 {
		return fault.Newf(fault.MinerConfigFile, "each is changed in its own ["+section+".<name>] table; edit the file by hand if it is written otherwise",
			"%s has no [%s.%s] table", file, section, name)
	}
	rest := lines[end:]
	if start > 0 && strings.TrimSpace(lines[start-1]) == "" && len(rest) > 0 && strings.TrimSpace(rest[0]) == "" {
		rest = rest[1:] // one blank line between the tables left, not two
	}
	return writeAtomic(file, []byte(strings.Join(lines[:start], "")+strings.Join(rest, "")))
}

// minerBlock is the lines [start, end) of a miner's table: its header to
// the next table header (blank lines and comments just before that header
// belong to the next table); -1 when the file has none.
func tableBlock(lines []string, section, name string) (start, end int) {
	header := regexp.MustCompile(`^\s*\[\s*` + regexp.QuoteMeta(section) + `\s*\.\s*"?` + regexp.QuoteMeta(name) + `"?\s*\]\s*(#.*)?$`)
	anyHeader := regexp.MustCompile(`^\s*\[`)
	start = -1
	for i, l := range lines {
		if header.MatchString(strings.TrimRight(l, "\r\n")) {
			start = i
			break
		}
	}
	if start < 0 {
		return -1, -1
	}
	end = len(lines)
	for i := start + 1; i < len(lines); i++ {
		if anyHeader.MatchString(lines[i]) {
			end = i
			break
		}
	}
	for end > start+1 {
		t := strings.TrimSpace(lines[end-1])
		if t != "" && !strings.HasPrefix(t, "#") {
			break
		}
		end--
	}
	return start, end
}

// MinerTable renders a miner as its TOML table.
func MinerTable(name string, m Miner) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[miners.%s]\n", name)
	if m.Source != "" {
		fmt.Fprintf(&b, "source = %s\n", tomlString(m.Source))
	}
	fmt.Fprintf(&b, "locator = %s\n", tomlString(m.Locator))
	if m.Wing != "" {
		fmt.Fprintf(&b, "wing = %s\n", tomlString(m.Wing))
	}
	fmt.Fprintf(&b, "enabled = %v\n", m.Enabled)
	if m.MaxDocuments != nil {
		fmt.Fprintf(&b, "max_documents = %d\n", *m.MaxDocuments)
	}
	writeOptions(&b, m.Options)
	writeCredential(&b, m.Credential)
	if s := m.Schedule; s != nil {
		fmt.Fprintf(&b, "schedule = { every = %s", tomlString(s.Every))
		if s.At != "" {
			fmt.Fprintf(&b, ", at = %s", tomlString(s.At))
		}
		if s.Enabled {
			b.WriteString(", enabled = true")
		}
		b.WriteString(" }\n")
	}
	return b.String()
}

func writeOptions(b *strings.Builder, opts map[string]string) {
	if len(opts) == 0 {
		return
	}
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = tomlString(k) + " = " + tomlString(opts[k])
	}
	fmt.Fprintf(b, "options = { %s }\n", strings.Join(parts, ", "))
}

func writeCredential(b *strings.Builder, c *CredentialRef) {
	switch c.Kind() {
	case "env":
		fmt.Fprintf(b, "credential = { env = %s }\n", tomlString(c.Env))
	case "file":
		fmt.Fprintf(b, "credential = { file = %s }\n", tomlString(c.File))
	case "oauth":
		b.WriteString("credential = { oauth = true }\n")
	}
}

// tomlString is s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\u%04X", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
