package credentials

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"html/template"
	"log"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/oauth2"
)

// CallbackPath is the browser flow's redirect path on its loopback
// listener (http://127.0.0.1:PORT/callback).
const CallbackPath = "/callback"

// page is what the redirect answers in the browser.
var page = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>loci sign-in</title></head>
<body style="font-family: sans-serif; max-width: 40em; margin: 4em auto">
<h1>{{.Title}}</h1>
<p>{{.Text}}</p>
</body></html>
`))

// result is a browser flow's outcome, sent once by its callback.
type result struct {
	tok *Token
	err error
}

// startBrowser opens the flow's one-shot loopback listener on
// 127.0.0.1:0 and returns the authorisation URL (a code with PKCE S256
// and a random state) and the wait for the redirect: the listener
// answers the first callback whose state matches (a mismatched one is
// refused and the flow keeps waiting), exchanges its code with the
// verifier, and closes, as it does at expiry.
func (f *Flows) startBrowser(p Provider, key string) (Started, run, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return Started{}, nil, flowFailed("cannot open a loopback listener for the browser's redirect", err)
	}
	addr := ln.Addr().String()
	cfg := p.config("http://" + addr + CallbackPath)
	state := randomString(32)
	verifier := oauth2.GenerateVerifier()
	authURL := cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier))
	life := f.BrowserExpiry
	if life <= 0 {
		life = BrowserExpiry
	}
	life = min(life, MaxFlowExpiry)
	expiry := time.Now().Add(life)

	results := make(chan result, 1)
	var claimed atomic.Bool
	// The handler's exchange runs under the flow's context, set by run
	// before the listener serves.
	var flowCtx context.Context
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		answer := func(status int, title, text string) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Header().Set("Cache-Control", "no-store")
			w.Header().Set("Referrer-Policy", "no-referrer")
			w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
			w.Header().Set("X-Frame-Options", "DENY")
			w.WriteHeader(status)
			_ = page.Execute(w, struct{ Title, Text string }{title, text})
		}
		if r.Method != http.MethodGet || r.URL.Path != CallbackPath {
			answer(http.StatusNotFound, "Not found", "This is loci's sign-in listener; it answers only the provider's redirect.")
			return
		}
		if r.Host != addr {
			// A page on another name resolving here (DNS rebinding).
			answer(http.StatusBadRequest, "Refused", "This listener answers only "+addr+".")
			return
		}
		q := r.URL.Query()
		if subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(state)) != 1 {
			f.log().Warn("sign-in redirect refused: its state is not the flow's", "key", key, "provider", p.Name)
			answer(http.StatusBadRequest, "Sign-in refused", "This redirect does not belong to the sign-in loci is waiting for (its state differs). Start the sign-in from loci again if this was you.")
			return
		}
		if !claimed.CompareAndSwap(false, true) {
			answer(http.StatusConflict, "Already finished", "This sign-in has already been answered. You can close this tab.")
			return
		}
		var res result
		if e := q.Get("error"); e != "" {
			code := e
			if !errorCodeRE.MatchString(code) {
				code = "an unreadable error code"
			}
			res.err = endErr(context.Background(), p, &oauth2.RetrieveError{ErrorCode: code})
		} else if code := q.Get("code"); code == "" || len(code) > 4096 {
			res.err = flowFailed(providerName(p)+"'s redirect carried no usable authorisation code", nil)
		} else {
			xctx, cancel := context.WithTimeout(withClient(flowCtx, f.HTTPClient), RequestTimeout)
			tok, err := cfg.Exchange(xctx, code, oauth2.VerifierOption(verifier))
			cancel()
			if err != nil {
				res.err = endErr(flowCtx, p, err)
			} else if res.tok, err = tokenOf(p, tok); err != nil {
				res.err = flowFailed(providerName(p)+" gave no usable access token: "+err.Error(), err)
			}
		}
		results <- res
		if res.err != nil {
			answer(http.StatusOK, "Sign-in failed", flowMsg(res.err)+". You can close this tab.")
			return
		}
		answer(http.StatusOK, "Signed in", "loci is signed in to "+providerName(p)+". You can close this tab.")
	})
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: RequestTimeout + 10*time.Second, IdleTimeout: 10 * time.Second, MaxHeaderBytes: 16 << 10,
		ErrorLog: log.New(discard{}, "", 0)}
	st := Started{URL: authURL, ExpiresIn: life.Round(time.Second)}
	return st, func(fctx context.Context) (*Token, error) {
		flowCtx = fctx
		served := make(chan struct{})
		go func() {
			defer close(served)
			_ = srv.Serve(ln)
		}()
		ctx, cancel := context.WithDeadlineCause(fctx, expiry, context.DeadlineExceeded)
		defer cancel()
		var res result
		select {
		case res = <-results:
		case <-ctx.Done():
			res.err = endErr(ctx, p, ctx.Err())
			if fctx.Err() == nil && claimed.Load() {
				// Expiry met a redirect being exchanged: its answer
				// (bounded by RequestTimeout) decides, as its page will.
				t := time.NewTimer(RequestTimeout + 5*time.Second)
				select {
				case res = <-results:
				case <-fctx.Done():
					res.err = endErr(fctx, p, fctx.Err())
				case <-t.C:
				}
				t.Stop()
			}
		}
		// Let the page reach the browser, then close the listener.
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer scancel()
		_ = srv.Shutdown(sctx)
		_ = srv.Close()
		<-served
		return res.tok, res.err
	}, nil
}

// flowMsg is a flow error's message for the browser page.
func flowMsg(err error) string {
	if e := asFault(err); e != nil {
		return strings.TrimSuffix(e.Msg, ".")
	}
	return "the sign-in failed"
}

// randomString is n random bytes, base64url without padding.
func randomString(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// discard is the listener's error log: a browser's broken connection is
// no news.
type discard struct{}

func (discard) Write(b []byte) (int, error) { return len(b), nil }
