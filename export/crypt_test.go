package export_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"filippo.io/age"
	"filippo.io/age/armor"

	"github.com/loci-dev/loci/export"
	"github.com/loci-dev/loci/fault"
)

func encrypt(t *testing.T, plain []byte, e export.Encryption) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := export.Encrypt(&buf, e)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(plain); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// readDecrypted decrypts a file and reads it with the Reader.
func readDecrypted(file []byte, identity string, pass func() (string, error)) ([]export.Record, error) {
	r, err := export.Decrypt(bytes.NewReader(file), identity, pass)
	if err != nil {
		return nil, err
	}
	rd := export.NewReader(r, export.ReaderOptions{})
	var out []export.Record
	for {
		rec, err := rd.Next()
		if err != nil {
			if err.Error() == "EOF" {
				return out, nil
			}
			return out, err
		}
		out = append(out, rec)
	}
}

func wantCode(t *testing.T, err error, code fault.Code) {
	t.Helper()
	if fe := fault.As(err); fe == nil || fe.Code != code {
		t.Fatalf("got %v, want %s", err, code)
	}
}

// TestAgeRoundTrip encrypts a real export to a recipient and with a
// passphrase, reads both back, and refuses a tampered file, a wrong key
// and a missing one.
func TestAgeRoundTrip(t *testing.T) {
	f := newFixture(t)
	plain, _ := writeExport(t, f.db, export.Options{})
	n := len(lines(plain))
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	other, _ := age.GenerateX25519Identity()
	dir := t.TempDir()
	idFile, otherFile := filepath.Join(dir, "key.txt"), filepath.Join(dir, "other.txt")
	if err := os.WriteFile(idFile, []byte("# created: now\n"+id.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(otherFile, []byte(other.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	enc := encrypt(t, plain, export.Encryption{Recipients: []string{other.Recipient().String(), id.Recipient().String()}})
	if bytes.Contains(enc, []byte("loci-export")) || !export.IsEncrypted(enc) {
		t.Fatal("the encrypted file shows its content or no age header")
	}
	recs, err := readDecrypted(enc, idFile, nil)
	if err != nil || len(recs) != n {
		t.Fatalf("recipient round trip: %d records, %v", len(recs), err)
	}
	_, err = readDecrypted(enc, "", nil)
	wantCode(t, err, fault.ExportEncrypted)
	// An armored file, as age -a writes it, reads the same.
	var arm bytes.Buffer
	aw := armor.NewWriter(&arm)
	ew, err := age.Encrypt(aw, id.Recipient())
	if err != nil {
		t.Fatal(err)
	}
	_, _ = ew.Write(plain)
	_ = ew.Close()
	_ = aw.Close()
	if recs, err := readDecrypted(arm.Bytes(), idFile, nil); err != nil || len(recs) != n {
		t.Fatalf("armored: %d records, %v", len(recs), err)
	}
	stranger, _ := age.GenerateX25519Identity()
	strangerFile := filepath.Join(dir, "stranger.txt")
	_ = os.WriteFile(strangerFile, []byte(stranger.String()+"\n"), 0o600)
	_, err = readDecrypted(enc, strangerFile, nil)
	wantCode(t, err, fault.ExportDecryptFailed)

	// Tampered: a byte of the body flipped is found while reading; one of
	// the header, when decrypting.
	for _, at := range []int{len(enc) - 100, len(enc) / 2, 40} {
		bad := append([]byte{}, enc...)
		bad[at] ^= 0x01
		_, err = readDecrypted(bad, idFile, nil)
		wantCode(t, err, fault.ExportDecryptFailed)
	}
	// Cut short after encryption.
	_, err = readDecrypted(enc[:len(enc)-30], idFile, nil)
	wantCode(t, err, fault.ExportDecryptFailed)

	// A passphrase: asked only for a passphrase file.
	encP := encrypt(t, plain, export.Encryption{Passphrase: "correct horse battery staple"})
	asked := 0
	recs, err = readDecrypted(encP, "", func() (string, error) { asked++; return "correct horse battery staple", nil })
	if err != nil || len(recs) != n || asked != 1 {
		t.Fatalf("passphrase round trip: %d records, asked %d, %v", len(recs), asked, err)
	}
	_, err = readDecrypted(encP, "", func() (string, error) { return "wrong horse", nil })
	wantCode(t, err, fault.ExportDecryptFailed)
	_, err = readDecrypted(encP, idFile, nil)
	wantCode(t, err, fault.ExportEncrypted)
	boom := errors.New("no terminal")
	if _, err = readDecrypted(encP, "", func() (string, error) { return "", boom }); !errors.Is(err, boom) {
		t.Fatalf("prompt failure: %v", err)
	}

	// A plain file passes through; an identity for it is not needed.
	if recs, err = readDecrypted(plain, idFile, nil); err != nil || len(recs) != n {
		t.Fatalf("plain through Decrypt: %d, %v", len(recs), err)
	}

	// Bad encryption requests.
	for _, e := range []export.Encryption{
		{Recipients: []string{"age1notakey"}},
		{Recipients: []string{id.String()}}, // a secret key is not a recipient
		{Recipients: []string{id.Recipient().String()}, Passphrase: "p"},
		{},
	} {
		_, err := export.Encrypt(&bytes.Buffer{}, e)
		wantCode(t, err, fault.InputInvalid)
		if fe := fault.As(err); bytes.Contains([]byte(fe.Msg+fe.Help+fe.Error()), []byte(id.String())) {
			t.Fatalf("the refusal repeats the secret key: %v", err)
		}
	}
}
