package export

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"filippo.io/age"
	"filippo.io/age/armor"

	"github.com/loci-dev/loci/fault"
)

// PassphraseEnv is the environment variable a passphrase is read from
// (never a flag: a flag's value shows in the process list and the shell's
// history).
const PassphraseEnv = "LOCI_EXPORT_PASSPHRASE"

// Encryption is how an export is encrypted: to age recipients (public
// keys, age1…) or with a passphrase (scrypt), never both (age refuses
// mixing a passphrase with other recipients).
type Encryption struct {
	Recipients []string
	Passphrase string
}

// On reports whether anything is to be encrypted.
func (e Encryption) On() bool { return len(e.Recipients) > 0 || e.Passphrase != "" }

// Encrypt wraps w so that what is written to the result is encrypted
// with age; Close finishes the file (and does not close w).
func Encrypt(w io.Writer, e Encryption) (io.WriteCloser, error) {
	var rs []age.Recipient
	switch {
	case len(e.Recipients) > 0 && e.Passphrase != "":
		return nil, fault.New(fault.InputInvalid, "encrypt: a passphrase cannot be combined with recipients",
			"give either --encrypt-to RECIPIENT (one or more) or --passphrase")
	case e.Passphrase != "":
		r, err := age.NewScryptRecipient(e.Passphrase)
		if err != nil {
			return nil, fault.Wrap(fault.InputInvalid, err, "encrypt: the passphrase is not usable", "give a non-empty passphrase")
		}
		rs = append(rs, r)
	default:
		for _, s := range e.Recipients {
			if strings.HasPrefix(strings.ToUpper(strings.TrimSpace(s)), "AGE-SECRET-KEY-") {
				// Never repeat a secret key in a message.
				return nil, fault.New(fault.InputInvalid, "encrypt-to: a secret key was given, not a recipient",
					"give the public key (age1…) that age-keygen -y prints for it, and keep the secret key to yourself")
			}
			parsed, err := age.ParseRecipients(strings.NewReader(strings.TrimSpace(s)))
			if err != nil || len(parsed) != 1 || strings.TrimSpace(s) == "" || strings.ContainsAny(strings.TrimSpace(s), "\n#") {
				return nil, fault.Newf(fault.InputInvalid, "give an age public key (age1…), as age-keygen prints it",
					"encrypt-to: %q is not an age recipient", fault.Clip(s, 80))
			}
			rs = append(rs, parsed...)
		}
	}
	if len(rs) == 0 {
		return nil, fault.New(fault.InputInvalid, "encrypt: no recipient or passphrase", "give --encrypt-to RECIPIENT or --passphrase")
	}
	wc, err := age.Encrypt(w, rs...)
	if err != nil {
		return nil, fault.Wrap(fault.InputInvalid, err, "encrypt: "+err.Error(), "check the recipients")
	}
	return wc, nil
}

// IsEncrypted reports whether a file's first bytes are an age header
// (binary or armored).
func IsEncrypted(head []byte) bool {
	for _, h := range ageHeaders {
		if bytes.HasPrefix(head, h) {
			return true
		}
	}
	return false
}

// Decrypt gives what Reader reads: r itself when it is not age-encrypted,
// or its decryption with the identities of identityFile (age's identity
// file format, e.g. age-keygen's output) or, for a file encrypted with a
// passphrase, the passphrase that passphrase returns (called only then).
// An encrypted file with neither is refused with loci::export::encrypted;
// a wrong key, a wrong passphrase or a file altered after it was
// encrypted, with loci::export::decrypt_failed (an alteration of the body
// is found while reading: the reader's Read returns that error).
func Decrypt(r io.Reader, identityFile string, passphrase func() (string, error)) (io.Reader, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(64)
	if !IsEncrypted(head) {
		return br, nil
	}
	var src io.Reader = br
	if bytes.HasPrefix(head, []byte(armor.Header)) {
		src = armor.NewReader(br)
	}
	// The header is text up to the "---" line: its stanzas say whether
	// it takes a passphrase.
	hb := bufio.NewReaderSize(src, 64<<10)
	peek, _ := hb.Peek(32 << 10)
	scrypt := bytes.Contains(peek, []byte("\n-> scrypt "))
	var ids []age.Identity
	switch {
	case scrypt:
		if passphrase == nil {
			return nil, fault.New(fault.ExportEncrypted, "the file is encrypted with a passphrase",
				"give the passphrase in "+PassphraseEnv+" or at the prompt")
		}
		p, err := passphrase()
		if err != nil {
			return nil, err
		}
		id, err := age.NewScryptIdentity(p)
		if err != nil {
			return nil, fault.Wrap(fault.ExportDecryptFailed, err, "the passphrase is not usable", "give the passphrase the file was encrypted with")
		}
		ids = append(ids, id)
	case identityFile == "":
		return nil, fault.New(fault.ExportEncrypted, "the file is encrypted to age recipients and no identity was given",
			"give the identity file whose public key it was encrypted to (--identity FILE)")
	default:
		f, err := os.Open(identityFile)
		if err != nil {
			return nil, fault.Wrap(fault.IOFailed, err, fmt.Sprintf("identity: %s cannot be read", identityFile), "give a readable identity file (age-keygen -o FILE)")
		}
		defer f.Close()
		parsed, err := age.ParseIdentities(io.LimitReader(f, 1<<20))
		if err != nil {
			return nil, fault.Wrap(fault.InputInvalid, err, fmt.Sprintf("identity: %s holds no age identity", identityFile), "give an identity file as age-keygen writes it (AGE-SECRET-KEY-1…)")
		}
		ids = parsed
	}
	out, err := age.Decrypt(hb, ids...)
	if err != nil {
		var nomatch *age.NoIdentityMatchError
		help := "the file may have been altered after it was encrypted; get an intact copy"
		msg := "the file cannot be decrypted: " + err.Error()
		if errors.As(err, &nomatch) {
			msg = "the file cannot be decrypted with the identity or passphrase given"
			help = "give the identity file (or the passphrase) the file was encrypted to"
		}
		return nil, fault.Wrap(fault.ExportDecryptFailed, err, msg, help)
	}
	return &decrypting{r: out}, nil
}

// decrypting turns a failure of age's authenticated body into
// loci::export::decrypt_failed.
type decrypting struct{ r io.Reader }

// Read reads the decryption, naming a failure of its authentication.
func (d *decrypting) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	if err != nil && err != io.EOF {
		var fe *fault.Error
		if !errors.As(err, &fe) {
			err = fault.Wrap(fault.ExportDecryptFailed, err, "the encrypted file was altered or cut short after it was encrypted: "+err.Error(),
				"get an intact copy of the file; nothing of it may be imported")
		}
	}
	return n, err
}
