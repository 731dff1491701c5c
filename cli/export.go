package cli

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/loci-dev/loci/export"
	"github.com/loci-dev/loci/fault"
)

// exportResult is `loci export --out FILE --json`'s answer.
type exportResult struct {
	File      string         `json:"file"`
	Records   int64          `json:"records"`
	Bytes     int64          `json:"bytes"`
	Digest    string         `json:"digest"`
	Counts    map[string]int `json:"counts"`
	Encrypted bool           `json:"encrypted"`
}

func (a *app) exportCmd() *cobra.Command {
	var wings, recipients []string
	var since, out string
	var vectors, passphrase, force bool
	cmd := &cobra.Command{
		Use:   "export [--wing W]... [--since T] [--out FILE] [--vectors] [--encrypt-to RECIPIENT]... [--passphrase]",
		Short: "Export the palace (or some wings) as a portable JSON Lines file, optionally encrypted with age",
		Long: "Export the palace, or the wings named with --wing, in loci's documented export format (JSON Lines,\n" +
			"docs/EXPORT.md): wings, rooms, drawers with their whole supersession chains, mined documents'\n" +
			"identities, entities, facts with both time axes and their decisions, mentions, and with --vectors\n" +
			"the configured profiles' vectors. Never tokens, credentials, jobs or configuration.\n" +
			"--since T (RFC 3339 or YYYY-MM-DD) exports what was created or changed at or after T, with what it\n" +
			"needs to be imported. The file is written beside FILE, synced, checked complete and renamed into\n" +
			"place; an existing FILE is refused unless --force. Without --out it goes to standard output (an\n" +
			"encrypted export only when standard output is not a terminal: redirect it, or give --out).\n" +
			"--encrypt-to RECIPIENT (an age public key, age1...; repeat it for several) or --passphrase (read\n" +
			"from " + export.PassphraseEnv + ", or asked on the terminal; never a flag's value) encrypts it with age.",
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			enc := export.Encryption{Recipients: recipients}
			// Refuse bad encryption before anything is asked or written.
			if len(recipients) > 0 && passphrase {
				return fault.New(fault.InputInvalid, "--passphrase cannot be combined with --encrypt-to (age encrypts to one or the other)",
					"give either --encrypt-to RECIPIENT (one or more) or --passphrase")
			}
			if len(recipients) > 0 {
				if _, err := export.Encrypt(io.Discard, enc); err != nil {
					return err
				}
			}
			toStdout := out == "" || out == "-"
			if (len(recipients) > 0 || passphrase) && toStdout && a.stdoutIsTerminal() {
				// age refuses the same: the binary file would land on
				// the terminal.
				return fault.New(fault.InputInvalid, "an encrypted export is binary and standard output is a terminal; nothing was exported",
					"give --out FILE, or redirect standard output to a file (loci export ... > FILE)")
			}
			if !toStdout {
				if err := refuseExisting(out, force); err != nil {
					return err
				}
			}
			if passphrase {
				p, err := a.exportPassphrase(c, true)
				if err != nil {
					return err
				}
				enc.Passphrase = p
			}
			q := url.Values{}
			for _, w := range wings {
				q.Add("wing", w)
			}
			if since != "" {
				q.Set("since", since)
			}
			if vectors {
				q.Set("vectors", "true")
			}
			path := "/api/export"
			if len(q) > 0 {
				path += "?" + q.Encode()
			}
			cl, err := a.client()
			if err != nil {
				return err
			}
			body, err := cl.Stream(c.Context(), path)
			if err != nil {
				return err
			}
			defer body.Close()
			if toStdout {
				_, err := a.copyExport(a.stdout, body, enc)
				return err
			}
			res, err := a.exportToFile(out, body, enc, force)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.out(res)
			}
			what := "exported"
			if res.Encrypted {
				what = "exported and encrypted"
			}
			fmt.Fprintf(a.stderrOrDiscard(), "%s %d records (%d drawers, %d bytes) to %s\n", what, res.Records, res.Counts[export.TypeDrawer], res.Bytes, safeText(res.File))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&wings, "wing", nil, "export this wing (repeat for several; default every wing)")
	f.StringVar(&since, "since", "", "export what was created or changed at or after this instant (RFC 3339 or YYYY-MM-DD)")
	f.StringVarP(&out, "out", "o", "", "write the export to this file (default standard output)")
	f.BoolVar(&force, "force", false, "replace an existing --out file")
	f.BoolVar(&vectors, "vectors", false, "include the configured embedding profiles' vectors, tagged with their profile identity")
	f.StringArrayVar(&recipients, "encrypt-to", nil, "encrypt to this age recipient (age1...; repeat for several)")
	f.BoolVar(&passphrase, "passphrase", false, "encrypt with a passphrase read from "+export.PassphraseEnv+" or the terminal")
	return cmd
}

// exportPassphrase reads the passphrase from the environment, or asks it
// on the terminal (twice when it encrypts: a typo would lock the file).
func (a *app) exportPassphrase(c *cobra.Command, confirm bool) (string, error) {
	p, set := a.env(export.PassphraseEnv)
	if set && p != "" {
		return p, nil
	}
	in, ok := c.InOrStdin().(*os.File)
	if !ok || !term.IsTerminal(int(in.Fd())) {
		if set {
			return "", fault.New(fault.CLIPromptFailed, export.PassphraseEnv+" is set but empty and standard input is not a terminal: no passphrase to encrypt with",
				"put the passphrase in "+export.PassphraseEnv+" (an empty one is never used), or run the command on a terminal to be asked")
		}
		return "", fault.New(fault.CLIPromptFailed, export.PassphraseEnv+" is not set and standard input is not a terminal: no passphrase to encrypt with",
			"set "+export.PassphraseEnv+", or run the command on a terminal to be asked")
	}
	ask := func(prompt string) (string, error) {
		fmt.Fprint(a.stderrOrDiscard(), prompt)
		b, err := term.ReadPassword(int(in.Fd()))
		fmt.Fprintln(a.stderrOrDiscard())
		if err != nil {
			return "", fault.Wrap(fault.CLIPromptFailed, err, "cannot read the passphrase", "set "+export.PassphraseEnv+" instead")
		}
		return string(b), nil
	}
	p, err := ask("passphrase: ")
	if err != nil {
		return "", err
	}
	if p == "" {
		return "", fault.New(fault.InputInvalid, "the passphrase is empty", "type a passphrase")
	}
	if confirm {
		again, err := ask("passphrase again: ")
		if err != nil {
			return "", err
		}
		if again != p {
			return "", fault.New(fault.CLIAborted, "the passphrases differ; nothing was exported", "type the same passphrase twice")
		}
	}
	return p, nil
}

// copyExport copies the daemon's stream to w (encrypted when asked),
// checking that it is complete.
func (a *app) copyExport(w io.Writer, body io.Reader, enc export.Encryption) (exportResult, error) {
	var res exportResult
	dst := w
	var closer io.Closer
	if enc.On() {
		wc, err := export.Encrypt(w, enc)
		if err != nil {
			return res, err
		}
		dst, closer, res.Encrypted = wc, wc, true
	}
	check := export.NewCompleteness()
	n, err := io.Copy(dst, io.TeeReader(body, check))
	if err != nil {
		var fe *fault.Error
		if !errors.As(err, &fe) {
			err = fault.Wrap(fault.ClientRequestFailed, err, "the export stream broke: "+err.Error(), "run the export again")
		}
		return res, err
	}
	end, err := check.Done()
	if err != nil {
		return res, err
	}
	if closer != nil {
		if err := closer.Close(); err != nil {
			return res, fault.Wrap(fault.IOFailed, err, "cannot finish the encrypted file: "+err.Error(), "check the disk")
		}
	}
	res.Records, res.Bytes, res.Digest, res.Counts = end.Records, n, end.Digest, end.Counts
	return res, nil
}

// exportToFile writes the export beside file, synced and checked
// complete, then renames it into place (and syncs the folder): a crash
// or a broken stream never leaves a file at the path that looks
// complete.
func (a *app) exportToFile(file string, body io.Reader, enc export.Encryption, force bool) (exportResult, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return exportResult{}, fault.Wrap(fault.IOFailed, err, "out: "+err.Error(), "give a file path")
	}
	if st, err := os.Stat(abs); err == nil && st.IsDir() {
		return exportResult{}, fault.Invalid("out", abs+" is a folder; give a file's path")
	}
	tmp, err := os.CreateTemp(filepath.Dir(abs), "."+filepath.Base(abs)+".*.part")
	if err != nil {
		return exportResult{}, fault.Wrap(fault.IOFailed, err, "cannot write beside "+abs+": "+err.Error(), "check the folder exists and may be written")
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	res, err := a.copyExport(tmp, body, enc)
	if err != nil {
		return res, err
	}
	if err := tmp.Sync(); err != nil {
		return res, fault.Wrap(fault.IOFailed, err, "cannot sync "+tmp.Name()+": "+err.Error(), "check the disk")
	}
	if err := tmp.Close(); err != nil {
		return res, fault.Wrap(fault.IOFailed, err, "cannot write "+tmp.Name()+": "+err.Error(), "check the disk")
	}
	// A file that appeared at the path while the export ran is kept.
	if err := refuseExisting(abs, force); err != nil {
		return res, err
	}
	if err := os.Rename(tmp.Name(), abs); err != nil {
		return res, fault.Wrap(fault.IOFailed, err, "cannot rename the export into place: "+err.Error(), "check the folder may be written")
	}
	done = true
	if d, err := os.Open(filepath.Dir(abs)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	res.File = abs
	return res, nil
}
