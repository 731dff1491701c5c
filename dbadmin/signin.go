package dbadmin

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"strings"
)

// tokenPrefix starts every session token, so that one is told from the
// daemon's token at a glance (and by a secret scanner).
const tokenPrefix = "loci_dbs_"

// tokenGrant is what a session token stands for: the password it was
// issued for, kept (in memory only) to check again at each authenticate
// that the daemon's token is still the current one.
type tokenGrant struct {
	// auth says the password was the daemon's token (auth.enabled at the
	// sign-in); otherwise it was the word "loci".
	auth bool
	// under is the daemon's token the sign-in gave (empty when !auth).
	under string
}

// password says whether pass signs in: the daemon's current token while
// authentication is on, else the word "loci". The grant says what it
// was, for a session token issued on it.
func (a *Admin) password(pass string) (tokenGrant, bool) {
	if a.cfg.AuthEnabled() {
		if pass != "" && a.cfg.CheckToken(pass) {
			return tokenGrant{auth: true, under: pass}, true
		}
		return tokenGrant{}, false
	}
	return tokenGrant{}, subtle.ConstantTimeCompare([]byte(pass), []byte(User)) == 1
}

// valid says whether a grant still signs in: while authentication is on,
// only one issued on the daemon's token, and only while that token is
// still the daemon's (a revoked or rotated one signs in no more); while
// it is off, any.
func (a *Admin) valid(g tokenGrant) bool {
	if !a.cfg.AuthEnabled() {
		return true
	}
	return g.auth && a.cfg.CheckToken(g.under)
}

// issue makes a session token for g; the oldest is forgotten past
// MaxTokens.
func (l *listener) issue(g tokenGrant) string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	tok := tokenPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tokens[tok] = g
	l.tokenOrder = append(l.tokenOrder, tok)
	for len(l.tokenOrder) > MaxTokens {
		delete(l.tokens, l.tokenOrder[0])
		l.tokenOrder = l.tokenOrder[1:]
	}
	return tok
}

// forget drops session tokens (invalidate, reset).
func (l *listener) forget(toks []string) {
	if len(toks) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, t := range toks {
		delete(l.tokens, t)
	}
	l.tokenOrder = removeAll(l.tokenOrder, toks)
}

func removeAll(from, drop []string) []string {
	out := from[:0]
	for _, s := range from {
		keep := true
		for _, d := range drop {
			if s == d {
				keep = false
				break
			}
		}
		if keep {
			out = append(out, s)
		}
	}
	return out
}

// authenticates says whether token signs a session in: a session token of
// this listener whose grant is still valid, or what signin accepts as
// password (the daemon's current token, or "loci" with authentication
// off).
func (l *listener) authenticates(token string) bool {
	if strings.HasPrefix(token, tokenPrefix) {
		l.mu.Lock()
		g, ok := l.tokens[token]
		l.mu.Unlock()
		return ok && l.admin.valid(g)
	}
	_, ok := l.admin.password(token)
	return ok
}
