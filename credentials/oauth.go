package credentials

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/loci-dev/loci/fault"
)

// Bounds on a provider, which is not ours: each request's time (its
// answers are read up to 1 MiB by golang.org/x/oauth2), and no
// redirects (an endpoint answers where the manifest says).
const (
	// RequestTimeout bounds one request to the provider.
	RequestTimeout = 30 * time.Second
	// maxScopeAnswer bounds the scopes a token answer names.
	maxScopeAnswer = 4096
)

// defaultClient is the HTTP client for providers: bounded in time, no
// redirects followed.
var defaultClient = newClient()

func newClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.ResponseHeaderTimeout = RequestTimeout
	tr.MaxResponseHeaderBytes = 64 << 10
	return &http.Client{
		Transport: tr,
		Timeout:   RequestTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// config is p as golang.org/x/oauth2 takes it: a public client sending
// its id in the request body.
func (p Provider) config(redirect string) *oauth2.Config {
	return &oauth2.Config{
		ClientID: p.ClientID,
		Endpoint: oauth2.Endpoint{AuthURL: p.AuthURL, DeviceAuthURL: p.DeviceAuthURL, TokenURL: p.TokenURL,
			AuthStyle: oauth2.AuthStyleInParams},
		RedirectURL: redirect,
		Scopes:      slices.Clone(p.Scopes),
	}
}

// withClient is ctx carrying client (nil: the bounded default) for
// golang.org/x/oauth2.
func withClient(ctx context.Context, client *http.Client) context.Context {
	if client == nil {
		client = defaultClient
	}
	return context.WithValue(ctx, oauth2.HTTPClient, client)
}

// ProviderError is a provider's answer refusing a request, as far as
// loci repeats it: its RFC 6749 error code (when a short plain word) and
// the HTTP status. It is the cause (errors.As) of a flow_failed or
// refresh_failed the provider answered.
type ProviderError struct {
	// Code is the provider's error code ("" none; "an unreadable error
	// code" for one loci does not repeat).
	Code   string
	Status int
}

// Error says the status and code.
func (e *ProviderError) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("the provider answered HTTP %d without an OAuth error", e.Status)
	}
	return fmt.Sprintf("the provider answered HTTP %d, error %s", e.Status, e.Code)
}

// Refusal reports the provider refused (an OAuth error, or 400/401),
// as opposed to failing (a server error without one).
func (e *ProviderError) Refusal() bool {
	return e.Code != "" || e.Status == http.StatusBadRequest || e.Status == http.StatusUnauthorized
}

// Shown is the code as a message shows it: the code, else the status.
func (e *ProviderError) Shown() string {
	if e.Code != "" {
		return e.Code
	}
	return fmt.Sprintf("HTTP %d", e.Status)
}

// Refused reports err (a refresh_failed or flow_failed) is the provider's
// refusal: an OAuth error answered, so a refresh token refused is dead
// and the source must sign in again. Otherwise (the provider unreachable,
// failing, or its answer unreadable) a later try may succeed.
func Refused(err error) bool {
	var pe *ProviderError
	return errors.As(err, &pe) && pe.Refusal()
}

// errorCodeRE is what a provider's error code may be to be repeated.
var errorCodeRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// providerError is the provider's answer in err, nil when err is not
// one (the network, or an unreadable answer).
func providerError(err error) *ProviderError {
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) {
		return nil
	}
	pe := &ProviderError{}
	if re.Response != nil {
		pe.Status = re.Response.StatusCode
	}
	switch {
	case errorCodeRE.MatchString(re.ErrorCode):
		pe.Code = re.ErrorCode
	case re.ErrorCode != "":
		pe.Code = "an unreadable error code"
	}
	return pe
}

// refusal is the provider's refusal in err (nil: none).
func refusal(err error) *ProviderError {
	if pe := providerError(err); pe != nil && pe.Refusal() {
		return pe
	}
	return nil
}

// cleanCause is err as a cause fit for a log and an error: the
// provider's code and status (a *ProviderError), or the network failure,
// without anything the provider sent (golang.org/x/oauth2's errors
// repeat its answer) or we sent.
func cleanCause(err error) error {
	if err == nil {
		return nil
	}
	if pe := providerError(err); pe != nil {
		return pe
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s %s: %w", ue.Op, redactURL(ue.URL), netCause(ue.Err))
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return err
	}
	return errors.New("the provider's answer could not be read")
}

// netCause keeps a network error's kind, not text a server chose.
func netCause(err error) error {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		return err
	case errors.As(err, &ne) && ne.Timeout():
		return errors.New("timed out")
	case errors.As(err, new(*net.OpError)):
		var oe *net.OpError
		errors.As(err, &oe)
		if oe.Err != nil {
			return errors.New(oe.Op + ": " + oe.Err.Error())
		}
	}
	return errors.New("the request failed")
}

// redactURL is u without its query (a flow's request never carries a
// secret in a URL, but a provider's redirect could).
func redactURL(u string) string {
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		return u[:i]
	}
	return u
}

// reachMsg says a provider could not be reached, failed, or answered
// unreadably, for err (not a refusal).
func reachMsg(p Provider, err error) string {
	if pe := providerError(err); pe != nil {
		return fmt.Sprintf("%s failed to answer (HTTP %d)", providerName(p), pe.Status)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Sprintf("could not reach %s: %v", providerName(p), netCause(ue.Err))
	}
	return fmt.Sprintf("%s's answer could not be read", providerName(p))
}

// providerName is p's name for a message.
func providerName(p Provider) string {
	if p.Name == "" {
		return "the provider"
	}
	return fault.Clip(p.Name, 64)
}

// tokenOf is tok as loci keeps it: the scopes granted (the answer's
// scope, else those asked for), under p's digest.
func tokenOf(p Provider, tok *oauth2.Token) (*Token, error) {
	if tok == nil || tok.AccessToken == "" {
		return nil, errors.New("no access token in the answer")
	}
	// A source sends the token as a bearer token (RFC 6750); another
	// kind (a DPoP- or MAC-bound token) would fail at every request.
	if tt := tok.Type(); !strings.EqualFold(tt, "bearer") {
		return nil, fmt.Errorf("a token of type %q, not a bearer token", fault.Clip(tt, 32))
	}
	scopes := slices.Clone(p.Scopes)
	if s, ok := tok.Extra("scope").(string); ok && s != "" && len(s) <= maxScopeAnswer {
		scopes = strings.Fields(s)
	}
	slices.Sort(scopes)
	scopes = slices.Compact(scopes)
	t := NewToken(tok.AccessToken, tok.RefreshToken)
	t.Scopes, t.Provider = scopes, p.Digest()
	if !tok.Expiry.IsZero() {
		t.Expiry = tok.Expiry.UTC().Truncate(time.Second)
	}
	return t, nil
}

// Refresh is t refreshed at the provider;
// loci::credential::refresh_failed when the provider refuses (with its
// error code; Refused tells it apart) or cannot be reached, loci::credential::required when t
// was signed in under another client, endpoints or scopes, or has no
// refresh token. A provider that sends no new refresh token keeps the
// old one valid, so it is kept.
func Refresh(ctx context.Context, p Provider, t *Token) (*Token, error) {
	return refresh(ctx, nil, p, t)
}

// Refresh is Refresh through f's HTTP client.
func (f *Flows) Refresh(ctx context.Context, p Provider, t *Token) (*Token, error) {
	return refresh(ctx, f.HTTPClient, p, t)
}

func refresh(ctx context.Context, client *http.Client, p Provider, t *Token) (*Token, error) {
	again := "sign the source in again (loci source auth)"
	switch {
	case t == nil:
		return nil, fault.New(fault.CredentialRequired, "the source is not signed in", again)
	case !t.SignedInUnder(p):
		return nil, fault.New(fault.CredentialRequired, "the source's sign-in was made for another client, endpoints or scopes (the source changed)", again)
	case t.Refresh() == "":
		return nil, fault.New(fault.CredentialRequired, fmt.Sprintf("%s gave no refresh token, so the sign-in cannot be renewed", providerName(p)), again)
	}
	if err := p.Check(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(withClient(ctx, client), RequestTimeout)
	defer cancel()
	// An expired token makes the source refresh it now.
	src := p.config("").TokenSource(ctx, &oauth2.Token{RefreshToken: t.Refresh(), Expiry: time.Unix(1, 0)})
	tok, err := src.Token()
	if err != nil {
		msg := reachMsg(p, err)
		if pe := refusal(err); pe != nil {
			msg = fmt.Sprintf("%s refused to renew the sign-in (%s)", providerName(p), pe.Shown())
		}
		return nil, fault.Wrap(fault.CredentialRefreshFailed, cleanCause(err), msg,
			"sign the source in again (loci source auth); if "+providerName(p)+" cannot be reached, try later")
	}
	if tok.RefreshToken == "" {
		tok.RefreshToken = t.Refresh()
	}
	nt, err := tokenOf(p, tok)
	if err != nil {
		return nil, fault.Wrap(fault.CredentialRefreshFailed, err, providerName(p)+" renewed the sign-in without a usable access token: "+err.Error(), again)
	}
	return nt, nil
}
