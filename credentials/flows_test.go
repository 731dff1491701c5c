package credentials

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loci-dev/loci/fault"
)

// logBuffer is a slog logger writing to a buffer, safe for the flows'
// goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(b)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func newFlows(t *testing.T) (*Flows, *logBuffer) {
	lb := &logBuffer{}
	f := &Flows{Log: slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	t.Cleanup(func() { _ = f.Close() })
	return f, lb
}

// wantFlowFailed fails t unless err is flow_failed saying want.
func wantFlowFailed(t *testing.T, err error, want string) {
	t.Helper()
	if !fault.Is(err, fault.CredentialFlowFailed) || !strings.Contains(fault.As(err).Msg, want) {
		t.Fatalf("want flow_failed saying %q, got %v", want, err)
	}
	if fault.As(err).Help == "" {
		t.Fatalf("flow_failed without help: %v", err)
	}
}

func TestDeviceFlowSignsInHonouringTheInterval(t *testing.T) {
	t.Parallel()
	d := newDeviceServer(t, 1, 60, "authorization_pending", "ok")
	f, logs := newFlows(t)
	p := d.provider()
	st := startFlow(t, f, "github-issues", p, "")
	if st.Kind != FlowDevice || st.UserCode != d.UserCode || st.VerificationURI != d.URL+"/activate" ||
		!strings.Contains(st.VerificationURIComplete, d.UserCode) || st.ID == "" || st.ExpiresIn < 58*time.Second || st.ExpiresIn > 60*time.Second {
		t.Fatalf("started: %+v", st)
	}
	if tok, err := f.Wait(t.Context(), st.ID, 0); tok != nil || err != nil {
		t.Fatalf("at once the flow is pending, got %v %v", tok, err)
	}
	tok, err := f.Wait(t.Context(), st.ID, 10*time.Second)
	if err != nil || tok == nil {
		t.Fatalf("signed in: %v %v", tok, err)
	}
	if tok.Access() != d.Access || tok.Refresh() != d.Refresh || tok.Provider != p.Digest() ||
		strings.Join(tok.Scopes, " ") != "read:user repo" || time.Until(tok.Expiry) < 59*time.Minute {
		t.Fatalf("token: %+v", *tok)
	}
	polls := d.pollTimes()
	if len(polls) != 2 || polls[1].Sub(polls[0]) < 900*time.Millisecond {
		t.Fatalf("polled %d times, %v apart; the interval is 1 s", len(polls), polls)
	}
	_, err = f.Wait(t.Context(), st.ID, time.Second)
	wantFlowFailed(t, err, "already reported")
	secretsIn(t, "the log", logs.String(), d.Access, d.Refresh, d.DeviceCode, d.UserCode)
}

func TestDeviceFlowSlowsDownWhenAsked(t *testing.T) {
	t.Parallel()
	d := newDeviceServer(t, 1, 60, "slow_down", "ok")
	f, _ := newFlows(t)
	st := startFlow(t, f, "k", d.provider(), FlowDevice)
	if _, err := f.Wait(t.Context(), st.ID, 15*time.Second); err != nil {
		t.Fatal(err)
	}
	polls := d.pollTimes()
	// RFC 8628 3.5: slow_down adds 5 s to the interval (1 s).
	if len(polls) != 2 || polls[1].Sub(polls[0]) < 5900*time.Millisecond {
		t.Fatalf("polled %d times, %v apart; after slow_down the interval is 6 s", len(polls), polls)
	}
}

func TestDeviceFlowDeclinedOrExpiredFails(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name      string
		expiresIn int
		answers   []string
		want      string
	}{
		{"declined", 60, []string{"authorization_pending", "access_denied"}, "declined at Device"},
		{"expired at the provider", 60, []string{"expired_token"}, "expired"},
		{"expired here", 2, []string{"authorization_pending"}, "expired before it was approved"},
		{"refused", 60, []string{"invalid_grant"}, "refused the sign-in (invalid_grant)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d := newDeviceServer(t, 1, c.expiresIn, c.answers...)
			f, logs := newFlows(t)
			st := startFlow(t, f, "k", d.provider(), FlowDevice)
			tok, err := f.Wait(t.Context(), st.ID, 10*time.Second)
			if tok != nil {
				t.Fatalf("a token: %v", tok)
			}
			wantFlowFailed(t, err, c.want)
			secretsIn(t, "the error", err.Error(), d.DeviceCode, d.UserCode)
			secretsIn(t, "the log", logs.String(), d.DeviceCode, d.UserCode)
			_, err = f.Wait(t.Context(), st.ID, 0)
			wantFlowFailed(t, err, "already reported")
		})
	}
}

func TestDeviceAuthorisationRefusedFailsToStart(t *testing.T) {
	t.Parallel()
	d := newDeviceServer(t, 1, 60, "ok")
	d.deviceError = "invalid_scope"
	f, _ := newFlows(t)
	_, err := f.Start(t.Context(), "k", d.provider(), "")
	wantFlowFailed(t, err, "refused to start the sign-in (invalid_scope)")
	secretsIn(t, "the error", err.Error(), d.DeviceCode)
}

func TestDeviceFlowBoundsTheProvider(t *testing.T) {
	t.Parallel()
	t.Run("a verification URI that is not https", func(t *testing.T) {
		t.Parallel()
		d := newDeviceServer(t, 1, 60, "ok")
		d.verificationURI = "javascript:alert(1)"
		f, _ := newFlows(t)
		_, err := f.Start(t.Context(), "k", d.provider(), "")
		wantFlowFailed(t, err, "no usable verification_uri")
	})
	t.Run("an answer over 1 MiB", func(t *testing.T) {
		t.Parallel()
		d := newDeviceServer(t, 1, 60, "ok")
		d.huge = true
		f, _ := newFlows(t)
		_, err := f.Start(t.Context(), "k", d.provider(), "")
		wantFlowFailed(t, err, "answer could not be read")
	})
	t.Run("a poll the network lost", func(t *testing.T) {
		t.Parallel()
		d := newDeviceServer(t, 1, 60, "ok")
		d.drop = 2
		f, logs := newFlows(t)
		st := startFlow(t, f, "k", d.provider(), "")
		if tok, err := f.Wait(t.Context(), st.ID, 15*time.Second); err != nil || tok == nil {
			t.Fatalf("signed in after lost polls: %v %v", tok, err)
		}
		if !strings.Contains(logs.String(), "polling again") {
			t.Fatalf("the lost polls are not logged: %s", logs)
		}
		secretsIn(t, "the log", logs.String(), d.DeviceCode, d.Access)
	})
	t.Run("a token that is not a bearer token", func(t *testing.T) {
		t.Parallel()
		d := newDeviceServer(t, 1, 60, "ok")
		d.tokenType = "DPoP"
		f, _ := newFlows(t)
		st := startFlow(t, f, "k", d.provider(), "")
		_, err := f.Wait(t.Context(), st.ID, 10*time.Second)
		wantFlowFailed(t, err, `gave no usable access token: a token of type "DPoP"`)
		secretsIn(t, "the error", err.Error(), d.Access, d.Refresh)
	})
	t.Run("an interval below zero", func(t *testing.T) {
		t.Parallel()
		// A negative interval would panic a ticker; RFC 8628's default
		// (5 s) is used.
		d := newDeviceServer(t, -3, 60, "ok")
		f, _ := newFlows(t)
		st := startFlow(t, f, "k", d.provider(), "")
		begun := time.Now()
		if tok, err := f.Wait(t.Context(), st.ID, 15*time.Second); err != nil || tok == nil {
			t.Fatalf("signed in: %v %v", tok, err)
		}
		if waited := time.Since(begun); waited < 4500*time.Millisecond {
			t.Fatalf("the first poll came after %v; the default interval is 5 s", waited)
		}
	})
}

func TestStartRefusesAFlowTheProviderDoesNotOffer(t *testing.T) {
	f, _ := newFlows(t)
	d := newDeviceServer(t, 1, 60, "ok")
	_, err := f.Start(t.Context(), "k", d.provider(), FlowBrowser)
	if !fault.Is(err, fault.CredentialOAuthUnsupported) || !strings.Contains(err.Error(), "it offers device") {
		t.Fatalf("browser flow on a device-only provider: %v", err)
	}
	_, err = f.Start(t.Context(), "k", Provider{Name: "x"}, "")
	if !fault.Is(err, fault.CredentialOAuthUnsupported) || !strings.Contains(err.Error(), "client_id") {
		t.Fatalf("a provider without a client: %v", err)
	}
	p := d.provider()
	p.TokenURL = "http://example.com/token"
	_, err = f.Start(t.Context(), "k", p, "")
	if !fault.Is(err, fault.CredentialOAuthUnsupported) || !strings.Contains(err.Error(), "token_url") {
		t.Fatalf("plain http to another machine: %v", err)
	}
}

// browse opens u as a browser would: an HTTP client following the
// redirects to the loopback listener. It is the last answer's status and
// page.
func browse(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// listening reports something answers at the browser flow's redirect.
func listening(t *testing.T, authURL string) bool {
	t.Helper()
	u, _ := url.Parse(authURL)
	r, _ := url.Parse(u.Query().Get("redirect_uri"))
	c, err := net.DialTimeout("tcp", r.Host, time.Second)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}

func TestBrowserFlowWithPKCESignsInAndRefreshes(t *testing.T) {
	t.Parallel()
	base := mockOAuth(t, "ok")
	f, logs := newFlows(t)
	p := mockProvider(base)
	st := startFlow(t, f, "cfg:mail", p, "")
	u, _ := url.Parse(st.URL)
	q := u.Query()
	if st.Kind != FlowBrowser || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("state") == "" ||
		!strings.HasPrefix(q.Get("redirect_uri"), "http://127.0.0.1:") || q.Get("client_id") != "loci-test" || st.ExpiresIn != BrowserExpiry {
		t.Fatalf("authorisation URL %s (%+v)", st.URL, st)
	}
	status, body := browse(t, st.URL)
	if status != 200 || !strings.Contains(body, "Signed in") || !strings.Contains(body, "close this tab") {
		t.Fatalf("the redirect answered %d: %s", status, body)
	}
	tok, err := f.Wait(t.Context(), st.ID, 10*time.Second)
	if err != nil || tok == nil || tok.Access() == "" || tok.Refresh() == "" || tok.Provider != p.Digest() || !tok.Expiry.After(time.Now()) {
		t.Fatalf("signed in: %v %v", tok, err)
	}
	if listening(t, st.URL) {
		t.Fatal("the loopback listener is still open after the sign-in")
	}
	secretsIn(t, "the page", body, tok.Access(), tok.Refresh())

	// Refresh before expiry: a new token from the provider.
	if tok.Expired(time.Now(), time.Minute) {
		t.Fatal("a fresh token is not about to expire")
	}
	nt, err := f.Refresh(t.Context(), p, tok)
	if err != nil {
		t.Fatal(err)
	}
	if nt.Access() == "" || nt.Refresh() == "" || nt.Refresh() == tok.Refresh() || nt.Provider != p.Digest() || !nt.Expiry.After(time.Now()) {
		t.Fatalf("refreshed: %v (was %v)", nt, tok)
	}
	secretsIn(t, "the log", logs.String(), tok.Access(), tok.Refresh(), nt.Access(), nt.Refresh(), q.Get("state"))
}

func TestBrowserFlowRefusesAWrongState(t *testing.T) {
	t.Parallel()
	base := mockOAuth(t, "ok")
	f, logs := newFlows(t)
	st := startFlow(t, f, "k", mockProvider(base), FlowBrowser)
	u, _ := url.Parse(st.URL)
	q := u.Query()
	q.Set("state", "forged-"+randomString(8))
	u.RawQuery = q.Encode()
	status, body := browse(t, u.String())
	if status != http.StatusBadRequest || !strings.Contains(body, "does not belong") {
		t.Fatalf("a wrong state answered %d: %s", status, body)
	}
	if tok, err := f.Wait(t.Context(), st.ID, 0); tok != nil || err != nil {
		t.Fatalf("after a wrong state the flow still waits: %v %v", tok, err)
	}
	if !strings.Contains(logs.String(), "state is not the flow's") {
		t.Fatalf("the refusal is not logged: %s", logs)
	}
	// The listener answers its own callback only, under its own address.
	redirect, _ := url.Parse(q.Get("redirect_uri"))
	if status, _ := browse(t, "http://"+redirect.Host+"/favicon.ico"); status != http.StatusNotFound {
		t.Fatalf("another path answered %d", status)
	}
	orig, _ := url.Parse(st.URL)
	req, _ := http.NewRequest("GET", "http://"+redirect.Host+CallbackPath+"?code=x&state="+url.QueryEscape(orig.Query().Get("state")), nil)
	req.Host = "rebound.example:80"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("a request for another host name answered %d", resp.StatusCode)
	}
	if tok, err := f.Wait(t.Context(), st.ID, 0); tok != nil || err != nil {
		t.Fatalf("the flow still waits: %v %v", tok, err)
	}
	if status, body := browse(t, st.URL); status != 200 || !strings.Contains(body, "Signed in") {
		t.Fatalf("the right redirect after a wrong one answered %d: %s", status, body)
	}
	if tok, err := f.Wait(t.Context(), st.ID, 10*time.Second); err != nil || tok == nil {
		t.Fatalf("signed in: %v %v", tok, err)
	}
}

func TestBrowserFlowDeclined(t *testing.T) {
	t.Parallel()
	base := mockOAuth(t, "decline")
	f, _ := newFlows(t)
	st := startFlow(t, f, "k", mockProvider(base), FlowBrowser)
	status, body := browse(t, st.URL)
	if status != 200 || !strings.Contains(body, "Sign-in failed") || !strings.Contains(body, "declined") {
		t.Fatalf("a declined sign-in answered %d: %s", status, body)
	}
	waitFailedClosed(t, f, st, 10*time.Second, "declined at Mock", "the loopback listener is still open after a declined sign-in")
}

func TestBrowserFlowExpires(t *testing.T) {
	t.Parallel()
	f, _ := newFlows(t)
	f.BrowserExpiry = time.Second
	p := Provider{Name: "Nowhere", ClientID: "c", AuthURL: "https://auth.invalid/authorize", TokenURL: "https://auth.invalid/token", Flows: []string{FlowBrowser}}
	st := startFlow(t, f, "k", p, "")
	if st.ExpiresIn != time.Second || !listening(t, st.URL) {
		t.Fatalf("started %+v; listening %v", st, listening(t, st.URL))
	}
	waitFailedClosed(t, f, st, 10*time.Second, "expired", "the loopback listener is still open after the flow expired")
}

func TestANewFlowReplacesAWaitingOne(t *testing.T) {
	t.Parallel()
	d := newDeviceServer(t, 1, 60, "authorization_pending", "authorization_pending", "ok")
	f, _ := newFlows(t)
	browser := Provider{Name: "B", ClientID: "c", AuthURL: "https://auth.invalid/authorize", TokenURL: "https://auth.invalid/token", Flows: []string{FlowBrowser}}
	first := startFlow(t, f, "k", browser, "")
	other := startFlow(t, f, "other", browser, "")
	second := startFlow(t, f, "k", d.provider(), "")
	waitFailedClosed(t, f, first, 5*time.Second, "replaced", "the replaced flow's listener is still open")
	if tok, err := f.Wait(t.Context(), other.ID, 0); tok != nil || err != nil {
		t.Fatalf("another key's flow is not replaced: %v %v", tok, err)
	}
	// A flow is waited for under its own key only.
	_, err := f.WaitFor(t.Context(), "other", second.ID, 0)
	wantFlowFailed(t, err, "no sign-in is waiting")
	tok, err := f.WaitFor(t.Context(), "k", second.ID, 10*time.Second)
	if err != nil || tok == nil || tok.Access() != d.Access {
		t.Fatalf("the new flow: %v %v", tok, err)
	}
	_, err = f.Wait(t.Context(), "no-such-flow", time.Second)
	wantFlowFailed(t, err, "no sign-in is waiting")
}

func TestCloseEndsEveryFlow(t *testing.T) {
	t.Parallel()
	d := newDeviceServer(t, 1, 60, "authorization_pending")
	f, _ := newFlows(t)
	dev := startFlow(t, f, "a", d.provider(), "")
	br := startFlow(t, f, "b", Provider{Name: "B", ClientID: "c", AuthURL: "https://auth.invalid/a", TokenURL: "https://auth.invalid/t"}, "")
	closed := make(chan error)
	go func() { closed <- f.Close() }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return in 10 s")
	}
	for _, id := range []string{dev.ID, br.ID} {
		_, err := f.Wait(t.Context(), id, time.Second)
		wantFlowFailed(t, err, "stopped")
	}
	if listening(t, br.URL) {
		t.Fatal("a listener is open after Close")
	}
	_, err := f.Start(t.Context(), "a", d.provider(), "")
	wantFlowFailed(t, err, "stopping")
}

func TestRefreshRefusedIsRefreshFailedWithoutTheToken(t *testing.T) {
	t.Parallel()
	base := mockOAuth(t, "refuse-refresh")
	f, logs := newFlows(t)
	p := mockProvider(base)
	st := startFlow(t, f, "k", p, "")
	browse(t, st.URL)
	tok, err := f.Wait(t.Context(), st.ID, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	nt, err := Refresh(t.Context(), p, tok)
	if nt != nil || !fault.Is(err, fault.CredentialRefreshFailed) || !strings.Contains(err.Error(), "(invalid_grant)") || fault.As(err).Help == "" {
		t.Fatalf("a refused refresh: %v %v", nt, err)
	}
	if !Refused(err) {
		t.Fatalf("a refusal is not told apart: %v", err)
	}
	// The mock's error_description repeats the refresh token.
	secretsIn(t, "the error", err.Error(), tok.Access(), tok.Refresh())
	b := fault.As(err).Body()
	secretsIn(t, "the error body", b.Error+b.Help, tok.Access(), tok.Refresh())
	slog.New(slog.NewTextHandler(logs, nil)).Error("refresh failed", "err", err, "token", tok)
	secretsIn(t, "the log", logs.String(), tok.Access(), tok.Refresh())

	// A provider changed since the sign-in, or no refresh token: sign in again.
	changed := p
	changed.Scopes = append(changed.Scopes, "write")
	if _, err := Refresh(t.Context(), changed, tok); !fault.Is(err, fault.CredentialRequired) {
		t.Fatalf("refresh under changed scopes: %v", err)
	}
	noRefresh := NewToken(tok.Access(), "")
	noRefresh.Provider = tok.Provider
	if _, err := Refresh(t.Context(), p, noRefresh); !fault.Is(err, fault.CredentialRequired) {
		t.Fatalf("refresh without a refresh token: %v", err)
	}
}

func TestRefreshUnreachableIsRefreshFailed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	p := Provider{Name: "Gone", ClientID: "c", AuthURL: "http://" + addr + "/a", TokenURL: "http://" + addr + "/t", Flows: []string{FlowBrowser}}
	tok := NewToken("at-secret-1", "rt-secret-1")
	tok.Provider = p.Digest()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err = Refresh(ctx, p, tok)
	if !fault.Is(err, fault.CredentialRefreshFailed) || !strings.Contains(err.Error(), "could not reach Gone") || Refused(err) {
		t.Fatalf("unreachable provider: %v", err)
	}
	secretsIn(t, "the error", err.Error(), tok.Access(), tok.Refresh())

	// A provider failing (HTTP 503, no OAuth error) is no refusal either.
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down for maintenance; your refresh token was "+r.PostFormValue("refresh_token"), http.StatusServiceUnavailable)
	}))
	defer failing.Close()
	p.TokenURL = failing.URL + "/t"
	tok.Provider = p.Digest()
	_, err = Refresh(ctx, p, tok)
	if !fault.Is(err, fault.CredentialRefreshFailed) || !strings.Contains(err.Error(), "Gone failed to answer (HTTP 503)") || Refused(err) {
		t.Fatalf("failing provider: %v", err)
	}
	secretsIn(t, "the error", err.Error(), tok.Access(), tok.Refresh())
}

// startFlow starts a flow for key with p (kind "" the first it declares),
// failing the test when it does not start.
func startFlow(t *testing.T, f *Flows, key string, p Provider, kind string) Started {
	t.Helper()
	st, err := f.Start(t.Context(), key, p, kind)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// waitFailedClosed waits up to timeout for the browser flow st: it fails
// (flow_failed saying want), and its loopback listener is closed
// (fatal otherwise: open).
func waitFailedClosed(t *testing.T, f *Flows, st Started, timeout time.Duration, want, open string) {
	t.Helper()
	_, err := f.Wait(t.Context(), st.ID, timeout)
	wantFlowFailed(t, err, want)
	if listening(t, st.URL) {
		t.Fatal(open)
	}
}
