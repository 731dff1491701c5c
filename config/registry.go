package config

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"syscall"
)

// Registry is the daemon's registry file: operational metadata only,
// written when the daemon is ready to serve, removed when it stops. A file
// naming a dead process is stale.
type Registry struct {
	PID       int    `json:"pid"`
	Address   string `json:"address"`
	Palace    string `json:"palace"`
	Version   string `json:"version"`
	StartedAt string `json:"started_at"`
}

// RegistryPath is where the registry of the palace lives.
func RegistryPath(palace string) string { return filepath.Join(palace, "daemon.json") }

// WriteRegistry writes the registry atomically, overwriting a stale one.
func WriteRegistry(palace string, r Registry) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	path := RegistryPath(palace)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		// A full disk leaves a partial file: remove it.
		_ = os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}

// ReadRegistry reads the registry; live reports whether its process runs.
func ReadRegistry(palace string) (r Registry, live bool, err error) {
	b, err := os.ReadFile(RegistryPath(palace))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return r, false, nil
		}
		return r, false, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, false, nil // unreadable: treated as stale
	}
	return r, Alive(r.PID), nil
}

// RemoveRegistry removes the registry when it names pid.
func RemoveRegistry(palace string, pid int) {
	if r, _, err := ReadRegistry(palace); err == nil && r.PID == pid {
		_ = os.Remove(RegistryPath(palace))
	}
}

// Alive reports whether a process with pid exists.
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
