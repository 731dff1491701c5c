package services

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/credentials"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/sources/pack"
)

// The longest a sign-in wait holds its request (the spec's max 30 s).
const MaxSignInWait = 30 * time.Second

// RefreshMargin is how close to its expiry an access token is refreshed
// before it is handed to a run: a run of a few minutes starts with a
// token that lasts it.
const RefreshMargin = 5 * time.Minute

// SignIn is the service of source sign-in (OAuth 2.0): flows started and
// waited for per source package or source configuration, tokens kept
// outside the palace (credentials.Store) and refreshed before expiry, a
// fresh access token handed to a run whose miner's credential is oauth.
//
// Tokens are kept by key: SourceKey for a source package (and its
// implicit configuration), ConfigKey for an explicit source
// configuration. Nothing it answers or logs holds a token.
type SignIn struct {
	// Store keeps the tokens (credentials.Open).
	Store credentials.Store
	// Flows runs the flows.
	Flows *credentials.Flows
	// Manifest is the manifest of an installed (or bundled) source by
	// name, nil when there is none (Packages.Manifest).
	Manifest func(source string) *pack.Manifest
	// Configs are the source configurations (nil: none); a configuration
	// signs in for its source.
	Configs *Miners
	Log     *slog.Logger
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Margin is RefreshMargin (0: RefreshMargin).
	Margin time.Duration

	mu sync.Mutex
	// flows are the flows started and not yet reported, by id.
	flows map[string]flowOf
	// failed is, by key, why the provider refused the last refresh: the
	// key is not signed in until it signs in again.
	failed map[string]string
	// refreshing serialises the refreshes (a refresh token may be one
	// use only: two runs at once refresh it once).
	refreshing sync.Mutex
	closed     bool
}

// flowOf is what a started flow signs in: the key and its source.
type flowOf struct{ key, source string }

// SourceKey is the key of a source package's tokens.
func SourceKey(source string) string { return "source:" + source }

// ConfigKey is the key of an explicit source configuration's tokens.
func ConfigKey(id string) string { return "config:" + id }

// DefaultCredentialsDir is credentials.dir when it is set to "": the
// configuration's own default, loci/credentials in the user's
// configuration folder ($XDG_CONFIG_HOME, ~/.config on Linux), outside
// any palace, so that a palace's backup or copy never carries a token.
func DefaultCredentialsDir() (string, error) {
	base, err := os.UserConfigDir()
	if err != nil {
		return "", fault.Wrap(fault.CredentialStoreFailed, err, "no folder to keep sign-in tokens in: "+err.Error(),
			"set credentials.dir to a folder only the daemon's user can read")
	}
	return filepath.Join(base, "loci", "credentials"), nil
}

// TokenDir is the folder of the token store of credentials.dir (dir ""
// : DefaultCredentialsDir): its oauth subfolder, apart from the secret
// files a file credential may name there.
func TokenDir(dir string) (string, error) {
	if dir == "" {
		var err error
		if dir, err = DefaultCredentialsDir(); err != nil {
			return "", err
		}
	}
	return filepath.Join(dir, credentials.TokenDir), nil
}

// OpenSignIn opens the token store of credentials.dir (dir "" :
// DefaultCredentialsDir) and credentials.backend
// (loci::credential::store_failed when it cannot be used) and is the
// service over it.
func OpenSignIn(dir, backend string, log *slog.Logger) (*SignIn, error) {
	if dir == "" {
		var err error
		if dir, err = DefaultCredentialsDir(); err != nil {
			return nil, err
		}
	}
	st, err := credentials.Open(dir, backend)
	if err != nil {
		return nil, err
	}
	return &SignIn{Store: st, Flows: &credentials.Flows{Log: log}, Log: log}, nil
}

func (s *SignIn) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *SignIn) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.New(slog.DiscardHandler)
}

func (s *SignIn) margin() time.Duration {
	if s.Margin > 0 {
		return s.Margin
	}
	return RefreshMargin
}

// Provider is source's OAuth declaration: loci::source::not_found for no
// installed source of that name, loci::credential::oauth_unsupported for
// one that declares no sign-in (a built-in source among them).
func (s *SignIn) Provider(source string) (credentials.Provider, error) {
	var m *pack.Manifest
	if s.Manifest != nil {
		m = s.Manifest(source)
	}
	if m == nil {
		return credentials.Provider{}, fault.Newf(fault.CredentialOAuthUnsupported,
			"only an installed source whose manifest declares [oauth] signs in; list them: loci source list",
			"the source %q declares no sign-in (it is not an installed source package)", source)
	}
	p, ok := credentials.FromManifest(m)
	if !ok {
		return credentials.Provider{}, fault.Newf(fault.CredentialOAuthUnsupported,
			"a source signs in only when its manifest declares [oauth]; this one reads without",
			"the source %s declares no sign-in", source)
	}
	return p, nil
}

// ConfigTarget is the key and source of source configuration id: an
// explicit configuration's own key, an implicit one's (the id is a
// source's name) the source's; loci::source::not_found for none.
func (s *SignIn) ConfigTarget(id string) (key, source string, err error) {
	if s.Configs == nil {
		return "", "", fault.Newf(fault.SourceNotFound, "list them (GET /api/source-configs)", "no source configuration has the id %q", id)
	}
	c, err := s.Configs.SourceConfig(id)
	if err != nil {
		return "", "", err
	}
	if c.Implicit {
		return SourceKey(c.Source), c.Source, nil
	}
	return ConfigKey(c.ID), c.Source, nil
}

// Start begins a sign-in flow of kind ("": the provider's first) for key
// (of source): what the user does to finish it. A new flow for a key
// replaces a waiting one.
func (s *SignIn) Start(ctx context.Context, key, source, kind string) (api.SignInStarted, error) {
	p, err := s.Provider(source)
	if err != nil {
		return api.SignInStarted{}, err
	}
	if kind != "" && kind != credentials.FlowDevice && kind != credentials.FlowBrowser {
		return api.SignInStarted{}, fault.Invalid("kind", "is device or browser")
	}
	if kind != "" && !slices.Contains(p.Flows, kind) {
		return api.SignInStarted{}, fault.Newf(fault.CredentialOAuthUnsupported, "use one of the flows it declares: "+strings.Join(p.Flows, ", "),
			"the source %s does not declare the %s flow", source, kind)
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return api.SignInStarted{}, fault.New(fault.ServerFailed, "the daemon is stopping", "start the sign-in again once it runs")
	}
	st, err := s.Flows.Start(ctx, key, p, kind)
	if err != nil {
		return api.SignInStarted{}, err
	}
	s.mu.Lock()
	if s.flows == nil {
		s.flows = map[string]flowOf{}
	}
	for id, f := range s.flows {
		if f.key == key {
			delete(s.flows, id) // replaced
		}
	}
	s.flows[st.ID] = flowOf{key: key, source: source}
	s.mu.Unlock()
	return api.SignInStarted{Flow: st.ID, Kind: st.Kind, UserCode: st.UserCode, VerificationURI: st.VerificationURI,
		URL: st.URL, ExpiresIn: int(st.ExpiresIn.Round(time.Second) / time.Second)}, nil
}

// Wait waits up to timeout (at most MaxSignInWait; 0 looks once) for flow of key:
// pending, then signed_in once the token is stored (reported once);
// loci::credential::flow_failed when the flow was declined, expired,
// replaced, reported already or is not key's.
func (s *SignIn) Wait(ctx context.Context, key, flow string, timeout time.Duration) (api.SignInWaited, error) {
	timeout = min(max(timeout, 0), MaxSignInWait)
	s.mu.Lock()
	f, ok := s.flows[flow]
	s.mu.Unlock()
	if !ok || f.key != key {
		return api.SignInWaited{}, fault.New(fault.CredentialFlowFailed,
			"no sign-in of this source is waiting under that flow id (it was replaced, reported already, or never started)",
			"start the sign-in again: loci source auth NAME")
	}
	tok, err := s.Flows.WaitFor(ctx, key, flow, timeout)
	if err != nil {
		if ctx.Err() == nil {
			s.forgetFlow(flow) // ended; the flows' log says how
		}
		return api.SignInWaited{}, err
	}
	if tok == nil {
		return api.SignInWaited{Status: api.SignInPending, Source: f.source}, nil
	}
	s.forgetFlow(flow)
	if tok.Provider == "" {
		if p, err := s.Provider(f.source); err == nil {
			tok.Provider = p.Digest()
		}
	}
	if err := s.Store.Save(key, tok); err != nil {
		return api.SignInWaited{}, storeFailed(err)
	}
	s.mu.Lock()
	delete(s.failed, key)
	s.mu.Unlock()
	s.log().Info("signed in", "source", f.source, "key", key, "stored_in", s.Store.Where())
	out := api.SignInWaited{Status: api.SignInDone, Source: f.source, SignedIn: true, Scopes: nonNil(tok.Scopes), StoredIn: s.Store.Where()}
	if !tok.Expiry.IsZero() {
		e := tok.Expiry.UTC()
		out.ExpiresAt = &e
	}
	return out, nil
}

func (s *SignIn) forgetFlow(id string) {
	s.mu.Lock()
	delete(s.flows, id)
	s.mu.Unlock()
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return slices.Clone(s)
}

// storeFailed is a store's error as loci::credential::store_failed.
func storeFailed(err error) error {
	if fe := fault.As(err); fe.Code == fault.CredentialStoreFailed {
		return err
	}
	return fault.Wrap(fault.CredentialStoreFailed, err, "the sign-in token store cannot be used: "+err.Error(),
		"check credentials.dir and credentials.backend, then sign in again")
}

// Status is the sign-in status of source as its manifest m declares
// sign-in (nil when it declares none): Packages.SignIns.
func (s *SignIn) Status(source string, m *pack.Manifest) *api.SignInStatus {
	p, ok := credentials.FromManifest(m)
	if !ok {
		return nil
	}
	st := s.status(SourceKey(source), p)
	return &st
}

// StatusOf is key's sign-in status for source (loci::credential::
// oauth_unsupported when the source declares no sign-in).
func (s *SignIn) StatusOf(key, source string) (api.SignInStatus, error) {
	p, err := s.Provider(source)
	if err != nil {
		return api.SignInStatus{}, err
	}
	return s.status(key, p), nil
}

// status is key's status under provider p: signed in when a token is
// stored under p's digest, its last refresh was not refused, and it has
// not expired beyond refreshing.
func (s *SignIn) status(key string, p credentials.Provider) api.SignInStatus {
	st := api.SignInStatus{Provider: p.Name, Flows: nonNil(p.Flows), Scopes: []string{}}
	tok, err := s.Store.Load(key)
	if err != nil {
		st.Reason = "the token store cannot be read: " + fault.As(err).Msg
		return st
	}
	if tok == nil {
		return st
	}
	st.SignedIn, st.Reason = s.usable(key, p, tok)
	if st.SignedIn {
		st.Scopes = nonNil(tok.Scopes)
		if !tok.Expiry.IsZero() {
			e := tok.Expiry.UTC()
			st.ExpiresAt = &e
		}
	}
	return st
}

// usable reports whether tok (key's, under p) can give a run an access
// token, and else why not, ending in "sign in again".
func (s *SignIn) usable(key string, p credentials.Provider, tok *credentials.Token) (bool, string) {
	s.mu.Lock()
	why := s.failed[key]
	s.mu.Unlock()
	switch {
	case why != "":
		return false, why
	case !tok.SignedInUnder(p):
		return false, "the source changed its sign-in client, endpoints or scopes since it signed in: sign in again"
	case tok.Refresh() == "" && !tok.Expiry.IsZero() && !s.now().Before(tok.Expiry):
		return false, "the sign-in expired and cannot be refreshed: sign in again"
	}
	return true, ""
}

// SignedIn reports whether key (of source) can give a run an access
// token now, and else why not (""when it never signed in).
func (s *SignIn) SignedIn(key, source string) (bool, string) {
	p, err := s.Provider(source)
	if err != nil {
		return false, fault.As(err).Msg
	}
	st := s.status(key, p)
	return st.SignedIn, st.Reason
}

// AccessToken is a fresh access token of key (of source) for a run:
// refreshed first at the provider when it expires within the margin.
// loci::credential::required when key is not signed in (or not any
// more), loci::credential::refresh_failed when the provider refuses the
// refresh (the key is then not signed in until it signs in again).
func (s *SignIn) AccessToken(ctx context.Context, key, source string) ([]byte, error) {
	p, err := s.Provider(source)
	if err != nil {
		return nil, err
	}
	s.refreshing.Lock()
	defer s.refreshing.Unlock()
	tok, err := s.Store.Load(key)
	if err != nil {
		return nil, storeFailed(err)
	}
	if tok == nil {
		return nil, required(source, key, "it has not signed in")
	}
	if ok, why := s.usable(key, p, tok); !ok {
		return nil, required(source, key, why)
	}
	if !tok.Expiry.IsZero() && tok.Expiry.Sub(s.now()) < s.margin() && tok.Refresh() != "" {
		next, err := s.Flows.Refresh(ctx, p, tok)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			fe := fault.As(err)
			if fe.Code != fault.CredentialRefreshFailed {
				return nil, err
			}
			if !credentials.Refused(err) {
				// The provider could not be reached: not a refusal; the
				// token may still serve until it expires.
				if s.now().Before(tok.Expiry) {
					s.log().Warn("refreshing a sign-in failed; its token still serves until it expires", "source", source, "key", key, "err", fe.Msg)
					return []byte(tok.Access()), nil
				}
				return nil, err
			}
			s.mu.Lock()
			if s.failed == nil {
				s.failed = map[string]string{}
			}
			s.failed[key] = "the provider refused to refresh the sign-in: sign in again"
			s.mu.Unlock()
			s.log().Warn("the provider refused to refresh a sign-in; the source must sign in again", "source", source, "key", key, "err", fe.Msg)
			return nil, fault.Newf(fault.CredentialRefreshFailed, signInHelp(source, key),
				"the source %s: %s; sign in again", source, fe.Msg)
		}
		if next.Provider == "" {
			next.Provider = tok.Provider
		}
		if err := s.Store.Save(key, next); err != nil {
			return nil, storeFailed(err)
		}
		s.log().Info("sign-in refreshed", "source", source, "key", key)
		tok = next
	}
	if tok.Access() == "" {
		return nil, required(source, key, "its stored sign-in holds no access token")
	}
	return []byte(tok.Access()), nil
}

// required is loci::credential::required for source (key) and why.
func required(source, key, why string) error {
	return fault.Newf(fault.CredentialRequired, signInHelp(source, key),
		"the source %s reads with an oauth sign-in and is not signed in: %s", source, why)
}

// signInHelp says how to sign key (of source) in.
func signInHelp(source, key string) string {
	if id, ok := strings.CutPrefix(key, "config:"); ok {
		return fmt.Sprintf("sign in: loci source auth %s --source-config %s (POST /api/source-configs/%s/auth)", source, id, id)
	}
	return fmt.Sprintf("sign in: loci source auth %s (POST /api/source-packages/%s/auth)", source, source)
}

// Forget removes every token stored for source: its own and those of the
// explicit source configurations reading with it.
func (s *SignIn) Forget(source string) error {
	keys := []string{SourceKey(source)}
	if s.Configs != nil {
		// The configurations as the file defines them, read directly:
		// Forget runs while the packages service holds its lock, which
		// SourceConfigs' availability would ask for again.
		s.Configs.mu.RLock()
		for id, c := range s.Configs.Configs {
			if c.Source == source {
				keys = append(keys, ConfigKey(id))
			}
		}
		s.Configs.mu.RUnlock()
	}
	var first error
	for _, k := range keys {
		if err := s.Store.Delete(k); err != nil && first == nil {
			first = storeFailed(err)
		}
		s.mu.Lock()
		delete(s.failed, k)
		s.mu.Unlock()
	}
	return first
}

// Close ends the service at the daemon's stop: flows still waiting are
// forgotten (their loopback listeners close with the credentials'
// flows).
func (s *SignIn) Close() error {
	s.mu.Lock()
	s.closed = true
	s.flows = nil
	s.mu.Unlock()
	return s.Flows.Close()
}
