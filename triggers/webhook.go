package triggers

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"strings"
)

// Verify checks a webhook delivery: value is its signature header. With
// hmac-sha256 the header holds Prefix then the HMAC-SHA-256 of the raw body
// keyed with the secret, in Encoding; with token it holds Prefix then the
// secret. Comparisons take constant time; an empty secret verifies nothing.
func (s Settings) Verify(secret, body []byte, value string) bool {
	if len(secret) == 0 || value == "" {
		return false
	}
	switch s.Auth {
	case AuthHMAC:
		if !strings.HasPrefix(value, s.Prefix) {
			return false
		}
		got, err := decode(s.Encoding, strings.TrimPrefix(value, s.Prefix))
		if err != nil {
			return false
		}
		mac := hmac.New(sha256.New, secret)
		mac.Write(body)
		return hmac.Equal(got, mac.Sum(nil))
	case AuthToken:
		want := append([]byte(s.Prefix), secret...)
		return subtle.ConstantTimeCompare([]byte(value), want) == 1
	}
	return false
}

// Sign is the header value a sender computes for body (what Verify
// accepts); for tests and the benchmark.
func (s Settings) Sign(secret, body []byte) string {
	if s.Auth == AuthToken {
		return s.Prefix + string(secret)
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	if s.Encoding == EncBase64 {
		return s.Prefix + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	}
	return s.Prefix + hex.EncodeToString(mac.Sum(nil))
}

func decode(enc, v string) ([]byte, error) {
	if enc == EncBase64 {
		return base64.StdEncoding.DecodeString(v)
	}
	return hex.DecodeString(strings.ToLower(v))
}
