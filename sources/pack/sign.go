package pack

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"strings"

	"github.com/loci-dev/loci/fault"
)

// KeyPrefix begins a public key's text form: "loci-ed25519 <base64>", the
// 32 bytes of an ed25519 public key in standard base64, on one line.
const KeyPrefix = "loci-ed25519"

// pemPrivate is the PEM type of a private key file (PKCS #8, as OpenSSL
// writes an ed25519 key: `openssl pkey -in NAME.key -text` reads it).
const pemPrivate = "PRIVATE KEY"

// GenerateKey is a new ed25519 key pair for signing packages.
func GenerateKey() (ed25519.PublicKey, ed25519.PrivateKey, error) {
	return ed25519.GenerateKey(rand.Reader)
}

// FormatPublicKey is pub's one-line text form ("loci-ed25519 <base64>"):
// what an index names as a signature's key and what a user trusts.
func FormatPublicKey(pub ed25519.PublicKey) string {
	return KeyPrefix + " " + base64.StdEncoding.EncodeToString(pub)
}

// ParsePublicKey reads a public key's text form (surrounding space, a
// trailing newline and a comment after the key are allowed, as in a .pub
// file); anything else is loci::input::invalid.
func ParsePublicKey(s string) (ed25519.PublicKey, error) {
	f := strings.Fields(s)
	if len(f) < 2 || f[0] != KeyPrefix {
		return nil, invalid("key", fmt.Sprintf("not a public key: it reads %q followed by the key in base64", KeyPrefix+" "), pubKeyHelp)
	}
	b, err := base64.StdEncoding.Strict().DecodeString(f[1])
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, invalid("key", fmt.Sprintf("not a public key: %q is not %d bytes in base64", f[1], ed25519.PublicKeySize), pubKeyHelp)
	}
	return ed25519.PublicKey(b), nil
}

// MarshalPrivateKey is key as a private key file: PKCS #8 in PEM.
func MarshalPrivateKey(key ed25519.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: pemPrivate, Bytes: der}), nil
}

// ParsePrivateKey reads a private key file MarshalPrivateKey wrote (or
// OpenSSL's `genpkey -algorithm ed25519`); anything else is
// loci::input::invalid.
func ParsePrivateKey(b []byte) (ed25519.PrivateKey, error) {
	bad := invalid("key", "not an ed25519 private key file (PEM \"PRIVATE KEY\", as loci source keygen writes)", privKeyHelp)
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != pemPrivate {
		return nil, bad
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, bad
	}
	key, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, bad
	}
	return key, nil
}

// Sign is the signature of an archive's bytes by key, in standard base64:
// an index's "signature".
func Sign(key ed25519.PrivateKey, archive []byte) string {
	return base64.StdEncoding.EncodeToString(ed25519.Sign(key, archive))
}

// Verify checks that signature (standard base64) is pub's over archive:
// loci::source::untrusted when it is not (other bytes, another key, a
// signature that is not one).
func Verify(pub ed25519.PublicKey, archive []byte, signature string) error {
	sig, err := base64.StdEncoding.Strict().DecodeString(signature)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return fault.New(fault.SourceUntrusted, "the package's signature is not an ed25519 signature in base64",
			"ask its publisher for a correctly signed index")
	}
	if len(pub) != ed25519.PublicKeySize || !ed25519.Verify(pub, archive, sig) {
		return fault.New(fault.SourceUntrusted, fmt.Sprintf("the package's signature does not match its bytes under the key %s", FormatPublicKey(pub)),
			"the archive or its signature was changed after signing: do not install it; ask its publisher")
	}
	return nil
}
