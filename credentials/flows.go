package credentials

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/sources/pack"
)

// Bounds on flows.
const (
	// BrowserExpiry is how long a browser flow waits for its redirect
	// unless Flows.BrowserExpiry says otherwise.
	BrowserExpiry = 10 * time.Minute
	// DeviceExpiry is how long a device flow waits when the provider
	// names no expiry; MaxFlowExpiry is the longest any flow waits,
	// whatever the provider says.
	DeviceExpiry  = 15 * time.Minute
	MaxFlowExpiry = 30 * time.Minute
	// maxInterval bounds the device flow's polling interval a provider
	// asks for (seconds); maxPollRetries the polls in a row the network
	// may lose before the flow fails.
	maxInterval    = 300
	maxPollRetries = 3
	// maxWaiting bounds the flows waiting at once (one per key);
	// maxFlows the flows remembered, waiting or ended.
	maxWaiting = 64
	maxFlows   = 256
	// keepEnded is how long an ended flow is remembered, so that a late
	// wait learns how it ended.
	keepEnded = 10 * time.Minute
)

// Why a flow ends before the provider answers.
var (
	errReplaced = errors.New("replaced by a newer sign-in")
	errClosed   = errors.New("loci is stopping")
)

// Started is a flow begun: what the user does to finish it.
type Started struct {
	ID   string
	Kind string
	// UserCode and VerificationURI (device flow), and
	// VerificationURIComplete when the provider gives one (the URI with
	// the code in it).
	UserCode                string
	VerificationURI         string
	VerificationURIComplete string
	// URL (browser flow): the authorisation URL to open.
	URL       string
	ExpiresIn time.Duration
}

// Flows runs sign-in flows: at most one waiting per key (a new one
// replaces it), each reported once. The zero Flows is ready to use;
// Close ends every flow (the daemon calls it at shutdown). Its fields
// are set before the first Start.
type Flows struct {
	// HTTPClient talks to providers (nil: one bounded in time that
	// follows no redirects).
	HTTPClient *http.Client
	// Log is told how flows start and end, never a token or code (nil:
	// nothing is logged).
	Log *slog.Logger
	// BrowserExpiry is how long a browser flow waits (0: BrowserExpiry).
	BrowserExpiry time.Duration

	mu     sync.Mutex
	base   context.Context
	stop   context.CancelCauseFunc
	closed bool
	flows  map[string]*flow
	byKey  map[string]*flow
	wg     sync.WaitGroup
}

// flow is one sign-in under way or ended.
type flow struct {
	id, key, kind string
	cancel        context.CancelCauseFunc
	done          chan struct{}
	tok           *Token
	err           error
	reported      bool
	ended         time.Time
}

// ended reports fl has its result (f.mu held or not: done is closed once).
func (fl *flow) isDone() bool {
	select {
	case <-fl.done:
		return true
	default:
		return false
	}
}

// init readies f (f.mu held).
func (f *Flows) init() {
	if f.flows == nil {
		f.flows, f.byKey = map[string]*flow{}, map[string]*flow{}
		f.base, f.stop = context.WithCancelCause(context.Background())
	}
}

// log is f's logger (one discarding when none).
func (f *Flows) log() *slog.Logger {
	if f.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return f.Log
}

// flowFailed is loci::credential::flow_failed with help to start again.
func flowFailed(msg string, cause error) *fault.Error {
	return fault.Wrap(fault.CredentialFlowFailed, cause, msg, "start the sign-in again (loci source auth) and finish it before it expires")
}

// run is a started flow's remainder: it waits for the provider and ends
// with the token or why not, when ctx ends at the latest.
type run func(ctx context.Context) (*Token, error)

// Start begins a flow of kind ("" the provider's first) for key;
// loci::credential::oauth_unsupported when the provider does not declare
// it, loci::credential::flow_failed when the provider refuses to start.
// A flow already waiting for key is replaced (its wait fails, saying
// so). ctx bounds starting only: the flow runs until it ends, expires or
// f closes.
func (f *Flows) Start(ctx context.Context, key string, p Provider, kind string) (Started, error) {
	p, err := p.normalised()
	if err != nil {
		return Started{}, err
	}
	if kind == "" {
		kind = p.Flows[0]
	}
	if !slices.Contains(p.Flows, kind) {
		return Started{}, fault.Newf(fault.CredentialOAuthUnsupported, "ask for one of the flows it offers, or leave kind out for "+p.Flows[0],
			"the source does not offer the %q sign-in flow (it offers %s)", kind, strings.Join(p.Flows, ", "))
	}
	f.mu.Lock()
	f.init()
	f.prune(time.Now())
	if f.closed {
		f.mu.Unlock()
		return Started{}, flowFailed("loci is stopping; no sign-in starts now", errClosed)
	}
	waiting := 0
	for _, fl := range f.flows {
		if !fl.isDone() {
			waiting++
		}
	}
	if waiting >= maxWaiting {
		f.mu.Unlock()
		return Started{}, flowFailed(fmt.Sprintf("%d sign-ins are waiting already; finish or let them expire first", waiting), nil)
	}
	fctx, cancel := context.WithCancelCause(f.base)
	f.mu.Unlock()

	var (
		st Started
		r  run
	)
	switch kind {
	case FlowDevice:
		st, r, err = f.startDevice(ctx, p)
	default:
		st, r, err = f.startBrowser(p, key)
	}
	if err != nil {
		cancel(nil)
		return Started{}, err
	}
	st.ID, st.Kind = newID(), kind
	fl := &flow{id: st.ID, key: key, kind: kind, cancel: cancel, done: make(chan struct{})}

	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		cancel(errClosed)
		_, _ = r(fctx) // ends at once, releasing what it holds
		return Started{}, flowFailed("loci is stopping; no sign-in starts now", errClosed)
	}
	if old := f.byKey[key]; old != nil && !old.isDone() {
		old.cancel(errReplaced)
	}
	f.byKey[key], f.flows[fl.id] = fl, fl
	f.wg.Add(1)
	f.mu.Unlock()
	f.log().Info("sign-in started", "key", key, "kind", kind, "flow", fl.id, "provider", p.Name)

	go func() {
		defer f.wg.Done()
		var (
			tok *Token
			err error
		)
		func() {
			defer func() {
				if v := recover(); v != nil {
					err = flowFailed("the sign-in failed inside loci", fmt.Errorf("panic: %v", v))
				}
			}()
			tok, err = r(fctx)
		}()
		cancel(nil)
		f.finish(fl, p, tok, err)
	}()
	return st, nil
}

// finish records fl's result (the error as flow_failed) and logs it.
func (f *Flows) finish(fl *flow, p Provider, tok *Token, err error) {
	if err == nil && tok == nil {
		err = flowFailed("the sign-in ended without a token", nil)
	}
	if err != nil {
		tok = nil
		if !fault.Is(err, fault.CredentialFlowFailed) {
			err = flowFailed("the sign-in failed", err)
		}
	}
	f.mu.Lock()
	fl.tok, fl.err, fl.ended = tok, err, time.Now()
	close(fl.done)
	if f.byKey[fl.key] == fl {
		delete(f.byKey, fl.key)
	}
	f.mu.Unlock()
	if err != nil {
		f.log().Info("sign-in ended", "key", fl.key, "kind", fl.kind, "flow", fl.id, "provider", p.Name, "outcome", fault.As(err).Msg)
		return
	}
	f.log().Info("sign-in ended", "key", fl.key, "kind", fl.kind, "flow", fl.id, "provider", p.Name, "outcome", "signed in", "expires", tok.Expiry)
}

// prune forgets flows ended long ago, and the oldest ended ones beyond
// maxFlows (f.mu held).
func (f *Flows) prune(now time.Time) {
	var ended []*flow
	for id, fl := range f.flows {
		if !fl.isDone() {
			continue
		}
		if now.Sub(fl.ended) > keepEnded {
			delete(f.flows, id)
			continue
		}
		ended = append(ended, fl)
	}
	if over := len(f.flows) - maxFlows; over > 0 {
		slices.SortFunc(ended, func(a, b *flow) int { return a.ended.Compare(b.ended) })
		for _, fl := range ended[:min(over, len(ended))] {
			delete(f.flows, fl.id)
		}
	}
}

// Wait waits up to timeout for flow id: (nil, nil) while pending; the
// token once signed in (reported once: a second wait is flow_failed);
// loci::credential::flow_failed when declined, expired, refused,
// replaced or unknown. The token is the caller's to keep (Store.Save).
func (f *Flows) Wait(ctx context.Context, id string, timeout time.Duration) (*Token, error) {
	return f.wait(ctx, "", id, timeout)
}

// WaitFor is Wait for a flow started for key: a flow of another key is
// unknown (a route naming one source never finishes another's sign-in).
func (f *Flows) WaitFor(ctx context.Context, key, id string, timeout time.Duration) (*Token, error) {
	if key == "" {
		return nil, flowFailed("no sign-in is waiting under that flow id for this source (unknown, ended long ago, or already reported)", nil)
	}
	return f.wait(ctx, key, id, timeout)
}

func (f *Flows) wait(ctx context.Context, key, id string, timeout time.Duration) (*Token, error) {
	f.mu.Lock()
	f.init()
	f.prune(time.Now())
	fl := f.flows[id]
	f.mu.Unlock()
	if fl == nil || (key != "" && fl.key != key) {
		return nil, flowFailed("no sign-in is waiting under that flow id for this source (unknown, ended long ago, or already reported)", nil)
	}
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		select {
		case <-fl.done:
		case <-t.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if !fl.isDone() {
		return nil, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if fl.reported {
		return nil, flowFailed("that sign-in was already reported; each flow is reported once", nil)
	}
	fl.reported = true
	return fl.tok, fl.err
}

// Close ends every flow (their waits fail, saying loci is stopping),
// closes every loopback listener, and returns once all have ended; no
// flow starts after it.
func (f *Flows) Close() error {
	f.mu.Lock()
	f.init()
	f.closed = true
	f.stop(errClosed)
	f.mu.Unlock()
	f.wg.Wait()
	return nil
}

// newID is a flow id: 128 random bits in hex.
func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// endErr is why flow ctx ended, as flow_failed, or err from the provider.
func endErr(ctx context.Context, p Provider, err error) error {
	if ctx.Err() != nil {
		switch cause := context.Cause(ctx); {
		case errors.Is(cause, errReplaced):
			return flowFailed("the sign-in was replaced by a newer one for the same source; finish that one", cause)
		case errors.Is(cause, errClosed):
			return flowFailed("loci stopped before the sign-in finished", cause)
		case errors.Is(cause, context.DeadlineExceeded):
			return flowFailed("the sign-in expired before it was approved", cause)
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return flowFailed("the sign-in expired before it was approved", context.DeadlineExceeded)
	}
	pe := refusal(err)
	if pe == nil {
		return flowFailed("the sign-in failed: "+reachMsg(p, err), cleanCause(err))
	}
	switch code := pe.Shown(); code {
	case "access_denied":
		return flowFailed("the sign-in was declined at "+providerName(p), cleanCause(err))
	case "expired_token":
		return flowFailed("the sign-in expired before it was approved (the code expired at "+providerName(p)+")", cleanCause(err))
	default:
		return flowFailed(fmt.Sprintf("%s refused the sign-in (%s)", providerName(p), code), cleanCause(err))
	}
}

// startDevice asks the provider for a device code (RFC 8628 3.1) and
// returns the polling of its token endpoint (3.4, 3.5: the interval
// honoured, slow_down adding 5 s, authorization_pending waiting).
func (f *Flows) startDevice(ctx context.Context, p Provider) (Started, run, error) {
	cfg := p.config("")
	rctx, cancel := context.WithTimeout(withClient(ctx, f.HTTPClient), RequestTimeout)
	defer cancel()
	da, err := cfg.DeviceAuth(rctx)
	if err != nil {
		msg := "could not start the sign-in: " + reachMsg(p, err)
		if pe := refusal(err); pe != nil {
			msg = fmt.Sprintf("%s refused to start the sign-in (%s)", providerName(p), pe.Shown())
		}
		return Started{}, nil, flowFailed(msg, cleanCause(err))
	}
	bad := func(what string) (Started, run, error) {
		return Started{}, nil, flowFailed(providerName(p)+"'s device authorisation answer "+what, nil)
	}
	switch {
	case da.DeviceCode == "" || len(da.DeviceCode) > 4096:
		return bad("has no usable device_code")
	case da.UserCode == "" || len(da.UserCode) > 64 || !printableASCII(da.UserCode):
		return bad("has no usable user_code")
	case da.VerificationURI == "" || pack.CheckOAuthURL(da.VerificationURI) != "":
		return bad("has no usable verification_uri (an https URL)")
	}
	complete := da.VerificationURIComplete
	if complete != "" && pack.CheckOAuthURL(complete) != "" {
		complete = ""
	}
	life := DeviceExpiry
	if !da.Expiry.IsZero() {
		life = time.Until(da.Expiry)
	}
	if life <= 0 {
		return bad("says its code has expired already")
	}
	life = min(life, MaxFlowExpiry)
	switch {
	case da.Interval <= 0:
		da.Interval = 5 // RFC 8628 3.2: "If no value is provided, clients MUST use 5"
	case da.Interval > maxInterval:
		da.Interval = maxInterval
	}
	expiry := time.Now().Add(life)
	da.Expiry = expiry
	st := Started{UserCode: da.UserCode, VerificationURI: da.VerificationURI, VerificationURIComplete: complete,
		ExpiresIn: life.Round(time.Second)}
	return st, func(fctx context.Context) (*Token, error) {
		ctx, cancel := context.WithDeadlineCause(withClient(fctx, f.HTTPClient), expiry, context.DeadlineExceeded)
		defer cancel()
		tok, err := cfg.DeviceAccessToken(ctx, da)
		// A poll the network lost is polled again after the interval,
		// a few times: a provider's hiccup does not end a sign-in the
		// user is finishing.
		for retries := 0; err != nil && retries < maxPollRetries && ctx.Err() == nil && refusal(err) == nil; retries++ {
			f.log().Warn("sign-in poll failed; polling again", "provider", p.Name, "err", cleanCause(err))
			tok, err = cfg.DeviceAccessToken(ctx, da)
		}
		if err != nil {
			return nil, endErr(ctx, p, err)
		}
		t, err := tokenOf(p, tok)
		if err != nil {
			return nil, flowFailed(providerName(p)+" gave no usable access token: "+err.Error(), err)
		}
		return t, nil
	}, nil
}

// printableASCII reports s is printable ASCII (spaces allowed).
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// asFault is err as a *fault.Error (nil when it is not one).
func asFault(err error) *fault.Error {
	var fe *fault.Error
	if errors.As(err, &fe) {
		return fe
	}
	return nil
}
