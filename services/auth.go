package services

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/loci-dev/loci/actors"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
)

// TokenPrefix starts every generated token.
const TokenPrefix = "loci_"

// Auth holds the credentials a request may present: the configured shared
// secret and the generated token, each as a SHA-256 digest only. Both are
// checked in constant time on every request, so a rotation or revocation
// acts at the next one.
type Auth struct {
	DB  store.DB
	Sys *actors.System
	// Rand is the random source of generated tokens (crypto/rand).
	Rand io.Reader

	configured *[32]byte

	mu        sync.RWMutex
	generated *[32]byte
	changed   chan struct{} // closed and replaced when the token changes
}

// Changed is closed at the next generation or revocation of the token:
// holders of a stream re-check the credential it was opened with.
func (a *Auth) Changed() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.changed == nil {
		a.changed = make(chan struct{})
	}
	return a.changed
}

// setGenerated replaces the generated token's digest and announces it.
func (a *Auth) setGenerated(sum *[32]byte) {
	a.mu.Lock()
	a.generated = sum
	if a.changed != nil {
		close(a.changed)
		a.changed = nil
	}
	a.mu.Unlock()
}

// Digest is what a credential is remembered by: its SHA-256.
func Digest(token string) [32]byte { return sha256.Sum256([]byte(token)) }

// NewAuth reads the stored digest of the generated token; secret is the
// configured shared secret ("" when none).
func NewAuth(ctx context.Context, db store.DB, sys *actors.System, secret string) (*Auth, error) {
	a := &Auth{DB: db, Sys: sys, Rand: rand.Reader}
	if secret != "" {
		sum := sha256.Sum256([]byte(secret))
		a.configured = &sum
	}
	err := db.View(ctx, func(r store.Reader) error {
		st, err := r.AuthState()
		if err != nil || st == nil {
			return err
		}
		d, err := hex.DecodeString(st.Digest)
		if err != nil || len(d) != sha256.Size {
			return fault.New(fault.StoreMalformed, "the stored token digest is malformed", "generate a new token")
		}
		a.generated = (*[32]byte)(d)
		return nil
	})
	return a, err
}

// Weak-secret thresholds: a configured secret may be 16 characters (the
// spec's floor), but a human-chosen one that short can be guessed.
const (
	SecretMinChars   = 32
	SecretMinBitsPer = 3.0
)

// SecretWeakness says why a configured secret is weak ("" when it is not):
// fewer than SecretMinChars characters, or fewer than SecretMinBitsPer
// bits per character by the frequency of its characters (Shannon). The
// reason never quotes the secret.
func SecretWeakness(secret string) string {
	n := utf8.RuneCountInString(secret)
	if n == 0 {
		return ""
	}
	freq := map[rune]int{}
	for _, r := range secret {
		freq[r]++
	}
	bits := 0.0
	for _, c := range freq {
		p := float64(c) / float64(n)
		bits -= p * math.Log2(p)
	}
	switch {
	case n < SecretMinChars:
		return fmt.Sprintf("it is %d characters long; use at least %d random ones (or `loci auth generate`)", n, SecretMinChars)
	case bits < SecretMinBitsPer:
		return fmt.Sprintf("its characters carry %.1f bits each (at least %.0f wanted): it repeats a few; use random ones (or `loci auth generate`)", bits, SecretMinBitsPer)
	}
	return ""
}

// SecretConfigured reports that a shared secret was configured.
func (a *Auth) SecretConfigured() bool { return a.configured != nil }

// Configured reports that some credential exists.
func (a *Auth) Configured() bool {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.configured != nil || a.generated != nil
}

// Check reports whether token is a valid credential. Both digests are
// always compared, in constant time.
func (a *Auth) Check(token string) bool { return a.Holds(Digest(token)) }

// Holds reports whether the credential with this digest is still valid,
// comparing in constant time.
func (a *Auth) Holds(sum [32]byte) bool {
	a.mu.RLock()
	gen := a.generated
	a.mu.RUnlock()
	ok := 0
	var zero [32]byte
	for _, d := range []*[32]byte{a.configured, gen} {
		want, present := &zero, 0
		if d != nil {
			want, present = d, 1
		}
		ok |= subtle.ConstantTimeCompare(sum[:], want[:]) & present
	}
	return ok == 1
}

// GeneratedToken is the answer of a token generation: the token, shown
// once.
type GeneratedToken struct {
	Token     string
	Algorithm string
	Version   int
	CreatedAt time.Time
}

// Generate makes a new token (256 bits from the system's random source),
// stores its digest in place of any previous one and returns it.
func (a *Auth) Generate(ctx context.Context) (*GeneratedToken, error) {
	var raw [32]byte
	if _, err := io.ReadFull(a.Rand, raw[:]); err != nil {
		return nil, fault.Wrap(fault.AuthEntropyUnavailable, err, "the system's random source failed; no token was made",
			"check the system's entropy source (/dev/urandom) and retry")
	}
	token := TokenPrefix + hex.EncodeToString(raw[:])
	sum := sha256.Sum256([]byte(token))
	var out *GeneratedToken
	_, err := a.Sys.Write(ctx, func(tx store.Tx) (any, error) {
		st := &store.AuthState{Digest: hex.EncodeToString(sum[:]), Algorithm: "sha256", Version: 1, CreatedAt: tx.Now()}
		out = &GeneratedToken{Token: token, Algorithm: st.Algorithm, Version: st.Version, CreatedAt: st.CreatedAt}
		return nil, tx.PutAuthState(st)
	})
	if err != nil {
		return nil, err
	}
	a.setGenerated(&sum)
	return out, nil
}

// Revoke removes the generated token's digest; a configured secret stays.
func (a *Auth) Revoke(ctx context.Context) error {
	_, err := a.Sys.Write(ctx, func(tx store.Tx) (any, error) { return nil, tx.PutAuthState(nil) })
	if err != nil {
		return err
	}
	a.setGenerated(nil)
	return nil
}
