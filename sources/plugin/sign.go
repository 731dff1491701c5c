package plugin

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/sources/pack"
)

// Signature is a plugin's signature file: the public key (pack's
// "loci-ed25519 <base64>" form) and its ed25519 signature over Digest, in
// standard base64.
type Signature struct {
	Key       string `json:"key"`
	Signature string `json:"signature"`
}

// digestVersion begins the text Digest hashes: another layout of that
// text is another version.
const digestVersion = "loci-plugin-digest 1\n"

// Digest is the plugin's canonical content digest, SHA-256 in hex over
// each file but the signature (the manifest and every module's files) as
// a line "<sha256 of the file> <path>", sorted by path: the archive's
// compression, order and times do not change it, and neither does
// signing, which adds only the signature file.
func (p *Plugin) Digest() string {
	files := p.files()
	var b strings.Builder
	b.WriteString(digestVersion)
	for _, n := range sortedPaths(files) {
		fmt.Fprintf(&b, "%s %s\n", pack.Digest(files[n]), n)
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:])
}

// Sign signs the plugin's Digest with key: p carries the signature (one
// it had is replaced).
func (p *Plugin) Sign(key ed25519.PrivateKey) {
	pub := key.Public().(ed25519.PublicKey)
	p.Signature = &Signature{Key: pack.FormatPublicKey(pub), Signature: pack.Sign(key, []byte(p.Digest()))}
}

// CheckSignature checks the signature against the key it names, whoever
// that is: the key when it holds ("" when the plugin is unsigned),
// loci::source::untrusted when the key cannot be read or the signature
// does not match the content.
func (p *Plugin) CheckSignature() (string, error) {
	if p.Signature == nil {
		return "", nil
	}
	pub, err := pack.ParsePublicKey(p.Signature.Key)
	if err != nil {
		return "", fault.New(fault.SourceUntrusted, "the plugin's signature names a key that is not one: "+fault.As(err).Msg,
			"ask the plugin's publisher for a correctly signed plugin")
	}
	if err := pack.Verify(pub, []byte(p.Digest()), p.Signature.Signature); err != nil {
		return "", fault.New(fault.SourceUntrusted, "the plugin's signature does not match its content under the key "+pack.FormatPublicKey(pub),
			"the plugin was changed after signing: do not install it; ask its publisher")
	}
	return pack.FormatPublicKey(pub), nil
}

// Verify judges the signature under the trusted keys (pack's public key
// form) and the policy, answering the trusted key that vouched ("" none).
// A signature by a trusted key that does not match the content is
// tampering (loci::source::integrity, as for a registry's archive) under
// either policy; a signature
// by a key not trusted counts as none. With required, a plugin no
// trusted key vouched for is loci::source::untrusted.
func (p *Plugin) Verify(trusted []string, required bool) (string, error) {
	var by string
	if p.Signature != nil {
		if pub, err := pack.ParsePublicKey(p.Signature.Key); err == nil && isTrusted(pub, trusted) {
			key, err := p.CheckSignature()
			if err != nil {
				// A trusted key's signature that does not hold is
				// tampering, as a registry archive's is.
				fe := fault.As(err)
				return "", fault.New(fault.SourceIntegrity, fe.Msg, fe.Help)
			}
			by = key
		}
	}
	if by == "" && required {
		why := "it is not signed"
		if p.Signature != nil {
			why = "it is signed by " + p.Signature.Key + ", which is not a trusted key"
		}
		return "", fault.New(fault.SourceUntrusted, fmt.Sprintf("the plugin %s %s is not signed by a trusted key: %s", p.Manifest.ID, p.Manifest.Version, why),
			"trust its publisher's key (mining.trusted_keys) if you trust the publisher, or get the plugin from one you trust")
	}
	return by, nil
}

// isTrusted reports whether pub is among the trusted keys.
func isTrusted(pub ed25519.PublicKey, trusted []string) bool {
	for _, t := range trusted {
		if k, err := pack.ParsePublicKey(t); err == nil && k.Equal(pub) {
			return true
		}
	}
	return false
}
