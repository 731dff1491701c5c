package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/transport/client"
)

// sourceAuthCmd is loci source auth NAME: sign a source (or one of its
// configurations) in to its service through the daemon, which keeps the
// token; the CLI never sees or prints one.
func (a *app) sourceAuthCmd() *cobra.Command {
	var config, kind string
	var noOpen, status bool
	cmd := &cobra.Command{
		Use:   "auth NAME",
		Short: "Sign a source in to its service (OAuth): show the code to enter or open the browser, wait, say where the token went",
		Long: "Sign a source in to the service it reads (its manifest's [oauth] table), through the daemon.\n" +
			"The device flow prints a code and the address to enter it at (on any device); the browser flow opens the\n" +
			"provider's page on this machine (xdg-open or open; --no-open prints the address instead), which sends the\n" +
			"browser back to a one-shot listener of the daemon. The command waits until the sign-in is done, declined or\n" +
			"expired, then says where the daemon keeps the token (credentials.dir, or the desktop keyring). No token is\n" +
			"ever printed. --source-config ID signs in one source configuration of NAME instead of the source (refused\n" +
			"when the configuration reads another source); --status shows the sign-in status without starting one.",
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if config != "" {
				sc, err := a.configOfSource(c.Context(), args[0], config)
				if err != nil {
					return err
				}
				// The status of a configuration reading without an oauth
				// sign-in (or signed in) says so; one that would say "sign
				// in with this command" is checked, as a sign-in is.
				declares := true
				if !status || (!a.jsonOut && sc.Credential != nil && sc.Credential.Kind == "oauth" && !sc.Credential.Available) {
					if declares, err = a.declaresSignIn(c.Context(), args[0]); err != nil {
						return err
					}
				}
				if !declares {
					if status {
						a.printf("%s: the source %s declares no sign-in: neither it nor its configurations sign in\n", safeText(config), safeText(args[0]))
						return nil
					}
					return fault.New(fault.CredentialOAuthUnsupported,
						fmt.Sprintf("the source %s declares no sign-in ([oauth] in its manifest): its configuration %s cannot sign in", safeText(args[0]), safeText(config)),
						"only a source whose manifest declares [oauth] signs in; see loci source show "+safeText(args[0]))
				}
			}
			if status {
				return a.signInStatus(c.Context(), args[0], config)
			}
			return a.signIn(c.Context(), args[0], config, kind, noOpen)
		},
	}
	cmd.Flags().StringVar(&config, "source-config", "", "sign in this source configuration (its id) rather than the source")
	cmd.Flags().StringVar(&kind, "kind", "", "the flow: device or browser (default: the first the source declares)")
	cmd.Flags().BoolVar(&noOpen, "no-open", false, "print the browser flow's address instead of opening it")
	cmd.Flags().BoolVar(&status, "status", false, "show the sign-in status, start nothing")
	return cmd
}

// configOfSource refuses a source configuration that reads another
// source than name: the sign-in would be that source's, not name's.
func (a *app) configOfSource(ctx context.Context, name, config string) (*api.SourceConfig, error) {
	var sc api.SourceConfig
	if _, err := a.call(ctx, http.MethodGet, "/api/source-configs/"+client.Esc(config), nil, &sc); err != nil {
		return nil, err
	}
	if sc.Source != name {
		return nil, fault.New(fault.InputInvalid,
			fmt.Sprintf("the source configuration %s reads the source %s, not %s", safeText(config), safeText(sc.Source), safeText(name)),
			fmt.Sprintf("sign it in with loci source auth %s --source-config %s, or name a configuration of %s", safeText(sc.Source), safeText(config), safeText(name)))
	}
	return &sc, nil
}

// declaresSignIn reports whether the source name declares a sign-in:
// the daemon's show of it has auth only then.
func (a *app) declaresSignIn(ctx context.Context, name string) (bool, error) {
	var p api.SourcePackage
	if _, err := a.call(ctx, http.MethodGet, "/api/source-packages/"+client.Esc(name), nil, &p); err != nil {
		return false, err
	}
	return p.Auth != nil, nil
}

// signInStatus prints the source's sign-in status (the package view's
// auth), or a configuration's credential availability.
func (a *app) signInStatus(ctx context.Context, name, config string) error {
	if config != "" {
		return show(a, ctx, http.MethodGet, "/api/source-configs/"+client.Esc(config), nil, func(c *api.SourceConfig) {
			switch {
			case c.Credential == nil || c.Credential.Kind != "oauth":
				a.printf("%s: the configuration reads without an oauth sign-in\n", c.ID)
			case c.Credential.Available:
				a.printf("%s: signed in (source %s)\n", c.ID, c.Source)
			default:
				a.printf("%s: not signed in (source %s): loci source auth %s --source-config %s\n", c.ID, c.Source, c.Source, c.ID)
			}
		})
	}
	return show(a, ctx, http.MethodGet, "/api/source-packages/"+client.Esc(name), nil, func(p *api.SourcePackage) {
		if p.Auth == nil {
			a.printf("%s: the source does not sign in\n", p.Name)
			return
		}
		a.printf("%s\n", signInLine(p.Name, p.Auth))
	})
}

// signInLine is a sign-in status in words.
func signInLine(name string, s *api.SignInStatus) string {
	line := name + ": "
	if s.SignedIn {
		line += "signed in to " + s.Provider
		if s.ExpiresAt != nil {
			line += ", the access token expires " + s.ExpiresAt.Local().Format("2006-01-02 15:04:05 MST") + " (refreshed by the daemon)"
		}
		if len(s.Scopes) > 0 {
			line += "; scopes: " + strings.Join(s.Scopes, " ")
		}
		return line
	}
	line += "not signed in to " + s.Provider
	if s.Reason != "" {
		line += " (" + s.Reason + ")"
	}
	return line + "; flows: " + strings.Join(s.Flows, ", ") + "; sign in: loci source auth " + name
}

// signIn starts a flow, tells the user what to do, and waits for it.
func (a *app) signIn(ctx context.Context, name, config, kind string, noOpen bool) error {
	start := "/api/source-packages/" + client.Esc(name) + "/auth"
	if config != "" {
		start = "/api/source-configs/" + client.Esc(config) + "/auth"
	}
	var body any
	if kind != "" {
		body = map[string]string{"kind": kind}
	}
	var st api.SignInStarted
	if _, err := a.call(ctx, http.MethodPost, start, body, &st); err != nil {
		return err
	}
	// What to do goes to the terminal; with --json, to standard error, so
	// that standard output holds the answer alone.
	say := a.stdoutOrDiscard()
	if a.jsonOut {
		say = a.stderrOrDiscard()
	}
	switch {
	case st.UserCode != "":
		fmt.Fprintf(say, "To sign %s in, open %s and enter the code %s\n", name, safeText(st.VerificationURI), safeText(st.UserCode))
	case st.URL != "":
		if noOpen || !openBrowser(st.URL) {
			fmt.Fprintf(say, "To sign %s in, open this address in a browser on the daemon's machine:\n  %s\n", name, safeText(st.URL))
		} else {
			fmt.Fprintf(say, "The browser opened the sign-in page of %s; finish there.\n", name)
		}
	}
	deadline := time.Now().Add(time.Duration(st.ExpiresIn)*time.Second + time.Minute)
	progress := a.stderrIsTerminal() && !a.jsonOut
	for {
		var w api.SignInWaited
		wait := start + "/" + client.Esc(st.Flow) + "/wait?timeout=30"
		method := http.MethodPost
		if config != "" {
			wait, method = start+"?flow="+url.QueryEscape(st.Flow)+"&seconds=30", http.MethodGet
		}
		if _, err := a.call(ctx, method, wait, nil, &w); err != nil {
			if progress {
				fmt.Fprintln(a.stderr)
			}
			return err
		}
		if w.Status == api.SignInDone {
			if progress {
				fmt.Fprintln(a.stderr)
			}
			if a.jsonOut {
				return a.out(w)
			}
			a.printf("%s is signed in; the daemon keeps its token in %s", w.Source, w.StoredIn)
			if w.ExpiresAt != nil {
				a.printf(" (the access token expires %s; the daemon refreshes it)", w.ExpiresAt.Local().Format("2006-01-02 15:04:05 MST"))
			}
			a.printf("\n")
			return nil
		}
		if time.Now().After(deadline) {
			return fault.New(fault.CredentialFlowFailed, "the sign-in did not finish before it expired", "start it again: loci source auth "+name)
		}
		if progress {
			left := time.Until(deadline.Add(-time.Minute)).Round(time.Second)
			fmt.Fprintf(a.stderr, "\rwaiting for the sign-in to finish (%s left)...   ", max(left, 0))
		}
	}
}

func (a *app) stdoutOrDiscard() io.Writer {
	if a.stdout == nil {
		return io.Discard
	}
	return a.stdout
}

// openBrowser opens u with the desktop's opener (xdg-open, or open on
// macOS), reporting whether one was started.
func openBrowser(u string) bool {
	opener := "xdg-open"
	if runtime.GOOS == "darwin" {
		opener = "open"
	}
	path, err := exec.LookPath(opener)
	if err != nil {
		return false
	}
	cmd := exec.Command(path, u)
	if cmd.Start() != nil {
		return false
	}
	go func() { _ = cmd.Wait() }()
	return true
}
