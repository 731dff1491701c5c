package cli

import (
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/loci-dev/loci/config"
	"github.com/loci-dev/loci/fault"
)

// MigrateToOptions is what `loci migrate --to` asks of the composition
// root.
type MigrateToOptions struct {
	// To is the target: a postgres:// URL without a password, or an
	// absolute directory (a palace.path).
	To string
	// Password is the target database's password (a secret: never
	// printed, logged or written).
	Password string
	// Progress, when set, is told after each committed batch.
	Progress func(batches int, family string, copied int)
}

// MigrateFamily is one family of records of a copy: counted and digested
// on both sides, equal.
type MigrateFamily struct {
	Family string `json:"family"`
	Count  int    `json:"count"`
	Digest string `json:"digest"`
}

// MigrateToReport says what a copy did.
type MigrateToReport struct {
	// From and To are where the palace was and is (no credentials).
	From string `json:"from"`
	To   string `json:"to"`
	// Source is the copied palace's identity and change-log end.
	Source string `json:"source"`
	// Resumed says this run continued a copy a stopped run began.
	Resumed bool `json:"resumed"`
	// Batches is the transactions this run committed.
	Batches int `json:"batches"`
	// Families is every family's count and digest, verified equal.
	Families []MigrateFamily `json:"families"`
	// Drawers is the copy's current drawers (status's count).
	Drawers int `json:"drawers"`
}

// migrateToFlags are migrate's --to flags.
type migrateToFlags struct {
	to, passwordFile string
}

// migrateTo runs `loci migrate --to`: the target checked and its password
// read here, the copy in the composition root.
func (a *app) migrateTo(c *cobra.Command, cfg config.Config, log *slog.Logger, f migrateToFlags) error {
	if a.local.MigrateTo == nil {
		return fault.New(fault.InputInvalid, "this build cannot move a palace", "use a loci built with the shared store")
	}
	o := MigrateToOptions{To: strings.TrimSpace(f.to)}
	switch {
	case o.To == "":
		return fault.New(fault.InputInvalid, "--to: give a postgres://USER@HOST:PORT/DATABASE URL or an absolute directory",
			"loci migrate --to postgres://loci@db.example:5432/loci, or --to /srv/loci/palace")
	case strings.Contains(o.To, "://"):
		u, err := url.Parse(o.To)
		if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
			return fault.New(fault.InputInvalid, "--to: not a postgres://USER@HOST:PORT/DATABASE URL",
				"write the URL as postgres://USER@HOST:PORT/DATABASE?sslmode=..., or give an absolute directory")
		}
		if _, has := u.User.Password(); has || u.Query().Has("password") {
			return fault.New(fault.InputInvalid, "--to: the URL holds a password; it is refused on the command line (other users see it in the process list)",
				"remove it from the URL and set LOCI_DATASTORE_PASSWORD or pass --password-file FILE")
		}
		pw, err := a.targetPassword(f.passwordFile)
		if err != nil {
			return err
		}
		o.Password = pw
	default:
		if !filepath.IsAbs(o.To) {
			return fault.Newf(fault.InputInvalid, "give the directory as an absolute path (a palace.path)", "--to: %q is not an absolute directory", o.To)
		}
		o.To = filepath.Clean(o.To)
		if f.passwordFile != "" {
			return fault.New(fault.InputInvalid, "--password-file: a directory target takes no password", "drop --password-file, or give a postgres:// URL")
		}
	}
	if !a.jsonOut {
		o.Progress = func(batches int, family string, copied int) {
			if batches%50 == 0 {
				log.Info("copying", "batches", batches, "family", family, "copied", copied)
			}
		}
	}
	rep, err := a.local.MigrateTo(c.Context(), cfg, log, o)
	if err != nil {
		return err
	}
	if a.jsonOut {
		return a.out(rep)
	}
	how := "copied"
	if rep.Resumed {
		how = "copy resumed and finished"
		if rep.Batches == 0 {
			how = "already copied"
		}
	}
	batches := fmt.Sprintf("%d batches", rep.Batches)
	if rep.Batches == 1 {
		batches = "1 batch"
	}
	a.printf("%s: %s -> %s (%s this run)\n", how, rep.From, rep.To, batches)
	a.printf("%-20s %9s  %s\n", "FAMILY", "RECORDS", "SHA-256 (equal on both sides)")
	for _, f := range rep.Families {
		a.printf("%-20s %9d  %s\n", f.Family, f.Count, f.Digest)
	}
	a.printf("verified: every family's count and digest equal; %d current drawers\n", rep.Drawers)
	return nil
}

// targetPassword is the target database's password: --password-file's
// content (its first line), else LOCI_DATASTORE_PASSWORD, else none.
func (a *app) targetPassword(file string) (string, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fault.Newf(fault.InputInvalid, "give a readable file holding the password", "--password-file: cannot read %s", file)
		}
		pw, _, _ := strings.Cut(string(b), "\n")
		return strings.TrimRight(pw, "\r"), nil
	}
	pw, _ := a.env("LOCI_DATASTORE_PASSWORD")
	return pw, nil
}
