package sources

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"time"

	"github.com/loci-dev/loci/store"
)

// SessionAge is a session a Guarded source holds now: its document id and
// when it last changed.
type SessionAge struct {
	ID      string
	Changed time.Time
}

// Guarded is a transcript source whose agent keeps its sessions for a
// while only: the retention guard (GET /api/sources, loci status) compares
// what the agent holds with what was mined, and warns of sessions about
// to be deleted unmined and of mined sessions the agent has deleted.
type Guarded interface {
	// Sessions lists every session the source holds now with its last
	// change; complete is false when part of it could not be listed.
	Sessions(ctx context.Context, id store.SourceIdentity) (sessions []SessionAge, complete bool, err error)
	// Retention is how long the agent keeps a session before deleting it
	// and the setting that says so; 0 when it deletes none.
	Retention() (period time.Duration, setting string)
}

// Sessions lists the session files under the identity's root (whatever
// the cursor, dir and since say) with their modification times.
func (f SessionFiles) Sessions(ctx context.Context, id store.SourceIdentity) ([]SessionAge, bool, error) {
	d, _ := dirID(id)
	if _, err := os.Stat(rootOf(d)); os.IsNotExist(err) {
		return nil, true, nil
	}
	var out []SessionAge
	_, complete, err := f.dir().walk(ctx, d, nil, -1, func(fd found) bool {
		out = append(out, SessionAge{ID: fd.rel, Changed: time.Unix(0, fd.mtime)})
		return false
	})
	return out, complete, err
}

// Retention is the format's (SessionFormat.Retention), read under the
// daemon user's home.
func (f SessionFiles) Retention() (time.Duration, string) {
	if f.Format.Retention == nil {
		return 0, ""
	}
	home, err := f.home()
	if err != nil {
		return 0, ""
	}
	return f.Format.Retention(home)
}

// ClaudeCodeCleanupDays is Claude Code's default cleanupPeriodDays: it
// deletes session files older than this at its start.
const ClaudeCodeCleanupDays = 30

// ClaudeCodeRetention reads cleanupPeriodDays from Claude Code's user
// settings (~/.claude/settings.json; CLAUDE_CONFIG_DIR is not followed:
// the daemon reads its own user's home), 30 days when absent or unreadable.
func ClaudeCodeRetention(home string) (time.Duration, string) {
	days := ClaudeCodeCleanupDays
	if b, err := os.ReadFile(filepath.Join(home, ".claude", "settings.json")); err == nil && len(b) < 1<<20 {
		var s struct {
			CleanupPeriodDays *float64 `json:"cleanupPeriodDays"`
		}
		if json.Unmarshal(b, &s) == nil && s.CleanupPeriodDays != nil && *s.CleanupPeriodDays > 0 && *s.CleanupPeriodDays < 1e5 {
			days = int(*s.CleanupPeriodDays)
		}
	}
	return time.Duration(days) * 24 * time.Hour, "cleanupPeriodDays"
}
