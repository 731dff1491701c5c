package config

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/loci-dev/loci/store/fault"
)

// SetMinerEnabled sets enabled = true or false in the [miners.<name>]
// table of a configuration file, changing that one line (or adding it
// under the table's header) and leaving every other byte, comments and
// formatting included, as it was. The file is replaced atomically (a
// temporary file beside it, synced, then renamed), keeping its mode.
func SetMinerEnabled(file, name string, enabled bool) error {
	if file == "" {
		return fault.New(fault.MinerConfigFile, "no configuration file was read, so there is no file to change",
			"create one with the miner's [miners.<name>] table, name it with --config or LOCI_CONFIG, and restart")
	}
	if p := MinerName(name); p != "" {
		return fault.Invalid("name", "the miner name "+p)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return fault.Wrap(fault.MinerConfigFile, err, "cannot read "+file+": "+err.Error(), "check the file exists and the daemon may read it")
	}
	text := string(b)
	lines := strings.SplitAfter(text, "\n")
	header := regexp.MustCompile(`^\s*\[\s*miners\s*\.\s*"?` + regexp.QuoteMeta(name) + `"?\s*\]\s*(#.*)?$`)
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
		return fault.Newf(fault.MinerConfigFile, "miners are changed in their own [miners.<name>] table; edit the file by hand if it is written otherwise",
			"%s has no [miners.%s] table", file, name)
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
// keeping its mode.
func writeAtomic(file string, data []byte) error {
	mode := os.FileMode(0o600)
	if st, err := os.Stat(file); err == nil {
		mode = st.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".*")
	if err != nil {
		return fault.Wrap(fault.MinerConfigFile, err, "cannot write beside "+file+": "+err.Error(), "check the daemon may write the file's directory")
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err == nil {
		err = tmp.Sync()
	}
	if err := tmp.Close(); err != nil {
		return fault.Wrap(fault.MinerConfigFile, err, "cannot write "+file+": "+err.Error(), "check the disk")
	}
	if err := os.Chmod(tmp.Name(), mode); err != nil {
		return fault.Wrap(fault.MinerConfigFile, err, "cannot write "+file+": "+err.Error(), "check the disk")
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return fault.Wrap(fault.MinerConfigFile, err, "cannot replace "+file+": "+err.Error(), "check the daemon may write the file's directory")
	}
	return nil
}
