package cli

import (
	"bufio"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/sources/pack"
	"github.com/loci-dev/loci/transport/client"
)

// The source registry commands ask the daemon, which fetches and
// verifies: the CLI never reaches a registry itself.

// sourceRegistryCmds are search, updates and update; show and install
// take a registry's source by name (sourcePackageCmds).
func (a *app) sourceRegistryCmds() []*cobra.Command {
	var registry string
	search := &cobra.Command{
		Use:   "search [QUERY]",
		Short: "Search the source registries (mining.registries and the bundled packages) for sources whose name or description holds QUERY",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return show(a, c.Context(), http.MethodGet, "/api/source-registry/search?"+searchQuery(args, registry), nil, func(out *api.RegistrySearch) {
				a.printRegistryWarnings(out.Warnings)
				if len(out.Entries) == 0 {
					a.printf("no source found\n")
					return
				}
				a.printRegistryEntries(out.Entries, "%-24s %-10s %-12s %-8s", "    ")
			})
		},
	}
	search.Flags().StringVar(&registry, "registry", "", "search this registry only")

	updates := &cobra.Command{
		Use:   "updates",
		Short: "List the sources installed from a registry that have a newer version running on this loci",
		Long: "List the sources installed from a registry that have a newer version running on this loci.\n" +
			"A registry that cannot be read is warned about (standard error) and the others are still asked. The exit\n" +
			"code is not zero when no registry a source was installed from could be read (nothing could be checked);\n" +
			"it is zero when at least one could, the warnings saying which could not.",
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			var out api.RegistryUpdates
			if _, err := a.call(c.Context(), http.MethodGet, "/api/source-registry/updates", nil, &out); err != nil {
				return err
			}
			unread, err := a.unreadRegistries(c, out.Warnings)
			if a.jsonOut {
				if oerr := a.out(out); oerr != nil {
					return oerr
				}
				return err
			}
			a.printRegistryWarnings(out.Warnings)
			switch {
			case len(out.Updates) > 0:
			case unread > 0:
				a.printf("no update found; %s could not be read\n", plural(unread, "1 registry", fmt.Sprintf("%d registries", unread)))
			case len(out.Warnings) > 0:
				a.printf("no update found; see the warnings\n")
			default:
				a.printf("every source installed from a registry is current\n")
			}
			for _, u := range out.Updates {
				note := ""
				if u.FromYanked {
					note += " (" + safeText(u.From) + " was withdrawn (yanked) by its publisher: update it)"
				}
				if u.NeedsConsent {
					note += " (asks for more: needs your consent)"
				}
				a.printf("%s %s -> %s from %s%s\n", safeText(u.Name), safeText(u.From), safeText(u.To), registryAt(u.Registry, u.RegistryLocation), note)
			}
			return err
		},
	}

	var consent string
	var yes bool
	update := &cobra.Command{
		Use:   "update [NAME]",
		Short: "Update the sources installed from a registry (or NAME) to their newest version; one asking for more needs consent",
		Long: "Update the sources installed from a registry, each keeping its state (an enabled source stays enabled).\n" +
			"A version asking for more permissions than were consented to is not installed: its permissions and\n" +
			"consent digest are shown; on a terminal (or with --yes) NAME's update is consented to after review,\n" +
			"or pass --consent DIGEST.\n" +
			"The exit code is not zero when an update failed, or when NAME's update did not happen (it needs consent\n" +
			"that was not given, or --consent is not its digest). Updating every source, one needing consent is not a\n" +
			"failure: its line prints the command to run (loci source update NAME --consent DIGEST). --yes needs NAME:\n" +
			"without NAME it is refused, consenting to permissions no one was shown.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			name := ""
			if len(args) == 1 {
				name = args[0]
			}
			if name == "" && yes {
				// --yes consents to permissions the user was shown; a batch shows none first.
				return fault.New(fault.InputInvalid, "--yes consents to one source's new permissions after they are shown: it needs NAME",
					"name the source: loci source update NAME --yes (loci source updates lists them); without NAME, each update needing consent prints its command")
			}
			return a.updateSources(c, name, consent, yes)
		},
	}
	update.Flags().StringVar(&consent, "consent", "", "the consent digest of the new permissions reviewed (for scripts)")
	update.Flags().BoolVarP(&yes, "yes", "y", false, "consent to NAME's new permissions shown without asking")
	return []*cobra.Command{search, updates, update}
}

// printRegistryWarnings prints a search's (or updates') warnings on
// stderr, a line each: the registry named once (a message naming it
// already is printed as it is), the daemon's message, its code.
func (a *app) printRegistryWarnings(ws []api.RegistryWarning) {
	w := a.stderrOrDiscard()
	for _, x := range ws {
		if strings.HasPrefix(x.Message, "the "+x.Registry+" registry") {
			fmt.Fprintf(w, "warning: %s (%s)\n", safeText(x.Message), safeText(x.Code))
			continue
		}
		fmt.Fprintf(w, "warning: the %s registry: %s (%s)\n", safeText(x.Registry), safeText(x.Message), safeText(x.Code))
	}
}

// unreadRegistries counts the registries updates could not read (its
// warnings of loci::source::registry_unavailable; another warning, a
// release failing its checks, is of a registry read), and fails with
// that code when every registry an installed source came from is among
// them: then nothing was checked. Asks for the installed sources only
// when a registry could not be read.
func (a *app) unreadRegistries(c *cobra.Command, ws []api.RegistryWarning) (int, error) {
	unread := map[string]bool{}
	for _, w := range ws {
		if fault.Code(w.Code) == fault.SourceRegistryUnavailable {
			unread[w.Registry] = true
		}
	}
	if len(unread) == 0 {
		return 0, nil
	}
	var list api.SourcePackageList
	if _, err := a.call(c.Context(), http.MethodGet, "/api/source-packages", nil, &list); err != nil {
		return len(unread), err
	}
	from := map[string]bool{}
	for _, p := range list.Sources {
		if p.Registry != "" {
			from[p.Registry] = true
		}
	}
	for r := range from {
		if !unread[r] {
			return len(unread), nil
		}
	}
	if len(from) == 0 {
		return len(unread), nil
	}
	return len(unread), fault.New(fault.SourceRegistryUnavailable,
		fmt.Sprintf("no registry a source was installed from could be read (%d of %d): no update could be checked", len(from), len(from)),
		"see the warnings above; check mining.registries and the network, then run loci source updates again")
}

// registryAt is a registry's name and, when known, where it is: "NAME at
// LOCATION".
func registryAt(name, location string) string {
	if location == "" || location == name {
		return safeText(name)
	}
	return safeText(name) + " at " + safeText(location)
}

// searchQuery is the query of a registry search: q the optional QUERY
// argument, registry when one is named.
func searchQuery(args []string, registry string) string {
	q := url.Values{}
	if len(args) == 1 {
		q.Set("q", args[0])
	}
	if registry != "" {
		q.Set("registry", registry)
	}
	return q.Encode()
}

// printRegistryEntries prints a registry search's entries, a line each:
// name, version, registry and signed (or unsigned: whether the release
// carries a signature) laid out by format, then the version installed
// when there is one; the description below, after indent.
func (a *app) printRegistryEntries(es []api.RegistryEntry, format, indent string) {
	for _, e := range es {
		signed := "unsigned"
		if e.Signed {
			signed = "signed"
		}
		line := strings.TrimRight(fmt.Sprintf(format, safeText(e.Name), safeText(e.Version), safeText(e.Registry), signed), " ")
		if e.Installed != "" {
			line += " (installed " + safeText(e.Installed) + ")"
		}
		a.printf("%s\n", line)
		if e.Description != "" {
			a.printf("%s%s\n", indent, safeText(e.Description))
		}
	}
}

// registryRef reads NAME[@VERSION]: ok false when arg is not one.
func registryRef(arg string) (name, version string, ok bool) {
	name, version, _ = strings.Cut(arg, "@")
	if !pack.ValidName(name) {
		return "", "", false
	}
	if strings.Contains(arg, "@") && version == "" {
		return "", "", false
	}
	return name, version, true
}

// badRegistryRef is the CLI's refusal of an argument that is not
// NAME[@VERSION] (notes@, an empty version, among them).
func badRegistryRef(arg string) error {
	return fault.New(fault.InputInvalid, fmt.Sprintf("%q is not NAME or NAME@VERSION", safeText(arg)),
		"give the source's name ("+pack.NameRule+"), and after @ a version when you want one: notes or notes@1.2.0")
}

// isRegistryRef reports whether an install's argument names a registry's
// source: NAME[@VERSION] that is not an existing file or folder.
func isRegistryRef(arg string) bool {
	if _, err := os.Stat(arg); err == nil {
		return false
	}
	_, _, ok := registryRef(arg)
	return ok
}

func registryQuery(version, registry string) string {
	q := url.Values{}
	if version != "" {
		q.Set("version", version)
	}
	if registry != "" {
		q.Set("registry", registry)
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}

// showRegistrySource is `loci source show NAME@VERSION` (or NAME not
// installed, or --registry): the release an install would take, fetched
// and verified by the daemon.
func (a *app) showRegistrySource(c *cobra.Command, arg, registry string) error {
	name, version, ok := registryRef(arg)
	if !ok {
		return badRegistryRef(arg)
	}
	return show(a, c.Context(), http.MethodGet, "/api/source-registry/sources/"+client.Esc(name)+registryQuery(version, registry), nil, a.printRegistrySource)
}

func (a *app) printRegistrySource(s *api.RegistrySource) {
	a.printf("%s %s (from the %s registry)\n", safeText(s.Name), safeText(s.Version), safeText(s.Registry))
	if s.Description != "" {
		a.printf("  %s\n", safeText(s.Description))
	}
	if s.Yanked {
		a.printf("  yanked: its publisher withdrew this version (it is offered because it was named)\n")
	}
	a.printf("  registry:       %s\n", registryAt(s.Registry, s.RegistryLocation))
	signed := "not signed by a trusted key"
	if s.SignedBy != "" {
		signed = s.SignedBy
	}
	a.printf("  signed by:      %s\n", safeText(signed))
	a.printf("  archive sha256: %s\n", s.ArchiveDigest)
	if len(s.PermissionWords) == 0 {
		a.printf("  permissions:    none\n")
	} else {
		a.printf("  permissions:\n")
		for _, w := range s.PermissionWords {
			a.printf("    - %s\n", safeText(w))
		}
	}
	a.printf("  consent digest: %s\n", s.ConsentDigest)
	if !s.Installable && s.Refusal != nil {
		a.printf("  installable:    no: %s (%s)\n", safeText(s.Refusal.Message), safeText(s.Refusal.Code))
		a.printf("                  %s\n", safeText(s.Refusal.Help))
	}
	if s.Replaces != "" {
		a.printf("  installing it replaces version %s\n", safeText(s.Replaces))
	}
}

// installFromRegistry installs NAME[@VERSION] from a registry: the
// daemon shows the release (fetched and verified), then installs exactly
// that archive (its digest), first with the consent given; refused for
// consent, the permissions shown are consented to with --yes or a yes on
// the terminal, never otherwise (as a file install).
func (a *app) installFromRegistry(c *cobra.Command, arg, registry string, yes bool, consent string, enable bool) error {
	name, version, _ := registryRef(arg)
	var s api.RegistrySource
	if _, err := a.call(c.Context(), http.MethodGet, "/api/source-registry/sources/"+client.Esc(name)+registryQuery(version, registry), nil, &s); err != nil {
		return err
	}
	send := func(consent string) (*api.SourcePackageInstalled, error) {
		var out api.SourcePackageInstalled
		_, err := a.call(c.Context(), http.MethodPost, "/api/source-registry/install", api.RegistryInstall{Name: s.Name, Version: s.Version,
			Registry: s.Registry, ArchiveDigest: s.ArchiveDigest, Consent: consent, Enable: enable}, &out)
		return &out, err
	}
	out, err := send(consent)
	if err != nil && consent == "" && fault.As(err).Remote == fault.SourceConsentRequired {
		w := a.stderrOrDiscard()
		fmt.Fprintf(w, "The %s source %s (from the %s registry", safeText(s.Name), safeText(s.Version), safeText(s.Registry))
		if s.RegistryLocation != "" && s.RegistryLocation != s.Registry {
			fmt.Fprintf(w, " at %s", safeText(s.RegistryLocation))
		}
		if s.SignedBy != "" {
			fmt.Fprintf(w, ", signed by %s", safeText(s.SignedBy))
		}
		fmt.Fprintf(w, ") asks to:\n")
		for _, line := range s.PermissionWords {
			fmt.Fprintf(w, "  - %s\n", safeText(line))
		}
		if s.Yanked {
			fmt.Fprintf(w, "Note: its publisher withdrew (yanked) this version; it is offered because %s was named.\n", safeText(s.Version))
		}
		fmt.Fprintf(w, "Its consent digest is %s.\n", s.ConsentDigest)
		if ok, aerr := a.askConsent(c, yes, s.ConsentDigest, "Install"); !ok {
			if aerr != nil {
				return aerr
			}
			return err
		}
		out, err = send(s.ConsentDigest)
	}
	if err != nil {
		return err
	}
	if a.jsonOut {
		return a.out(out)
	}
	src := out.Source
	a.printf("installed the %s source %s from the %s registry (%s)\n", safeText(src.Name), safeText(src.Version), safeText(s.Registry), safeText(packageState(&src)))
	switch {
	case out.Downgrade:
		a.printf("it replaced version %s, a newer one: this is a downgrade\n", safeText(out.Replaced))
	case out.Replaced != "":
		a.printf("%s\n", replacedLine(out.Replaced, src.Version))
	}
	a.printInstallWarnings(out.Warnings)
	if src.State == "installed" {
		a.printf("enable it to mine with it: loci source enable %s\n", src.Name)
	}
	return nil
}

// askConsent asks on a terminal (or takes --yes): ok true to consent;
// false with no error when there is no terminal to ask on (the daemon's
// refusal stands); an error when the user says no.
func (a *app) askConsent(c *cobra.Command, yes bool, digest, verb string) (bool, error) {
	w := a.stderrOrDiscard()
	switch {
	case yes:
		fmt.Fprintf(w, "Consenting (--yes).\n")
		return true, nil
	case stdinIsTerminal(c):
		fmt.Fprintf(w, "%s? [y/N] ", verb)
		line, rerr := bufio.NewReader(c.InOrStdin()).ReadString('\n')
		if rerr != nil && line == "" {
			return false, fault.Wrap(fault.CLIPromptFailed, rerr, "cannot read the answer", "pass --yes, or --consent "+digest)
		}
		if ans := strings.ToLower(strings.TrimSpace(line)); ans != "y" && ans != "yes" {
			return false, fault.New(fault.CLIAborted, "not consented; nothing was installed", "answer y, or pass --yes")
		}
		return true, nil
	}
	return false, nil
}

// updateSources is `loci source update [NAME]`: each source's outcome;
// NAME's update needing consent is asked about (or --yes) and sent again
// with its digest.
func (a *app) updateSources(c *cobra.Command, name, consent string, yes bool) error {
	var out []api.RegistryUpdateResult
	if _, err := a.call(c.Context(), http.MethodPost, "/api/source-registry/update", api.RegistryUpdate{Name: name, Consent: consent}, &out); err != nil {
		return err
	}
	if name != "" && consent == "" && len(out) == 1 && out[0].Status == api.UpdateNeedsConsent {
		r := out[0]
		w := a.stderrOrDiscard()
		fmt.Fprintf(w, "The %s source %s asks for more than %s was consented to. All it asks to:\n", safeText(r.Name), safeText(r.To), safeText(r.From))
		for _, line := range r.PermissionWords {
			fmt.Fprintf(w, "  - %s\n", safeText(line))
		}
		fmt.Fprintf(w, "Its consent digest is %s.\n", r.ConsentDigest)
		ok, err := a.askConsent(c, yes, r.ConsentDigest, "Update")
		if err != nil {
			return err
		}
		if ok {
			out = nil
			if _, err := a.call(c.Context(), http.MethodPost, "/api/source-registry/update", api.RegistryUpdate{Name: name, Consent: r.ConsentDigest}, &out); err != nil {
				return err
			}
		}
	}
	if a.jsonOut {
		if err := a.out(out); err != nil {
			return err
		}
		return updateOutcome(name, out)
	}
	if len(out) == 0 {
		a.printf("no source was installed from a registry\n")
	}
	for _, r := range out {
		switch r.Status {
		case api.UpdateUpdated:
			a.printf("%s: updated %s -> %s\n", safeText(r.Name), safeText(r.From), safeText(r.To))
		case api.UpdateCurrent:
			a.printf("%s: current (%s)\n", safeText(r.Name), safeText(r.From))
		case api.UpdateNeedsConsent:
			a.printf("%s: %s -> %s needs your consent (%s): %s\n", safeText(r.Name), safeText(r.From), safeText(r.To),
				safeText(r.Message), consentCommand(r))
		default:
			a.printf("%s: failed: %s (%s)\n", safeText(r.Name), safeText(r.Message), safeText(r.Code))
		}
	}
	return updateOutcome(name, out)
}

func consentCommand(r api.RegistryUpdateResult) string {
	return "loci source update " + safeText(r.Name) + " --consent " + safeText(r.ConsentDigest)
}

// updateOutcome is the command's failure: when an update failed (the
// first one's code, so that a script sees it), or when NAME was named
// and its update needs consent (a batch's update needing consent is not
// a failure: its line says the command to run). The daemon's messages
// are the user's own daemon's: whole, with control characters escaped.
func updateOutcome(name string, out []api.RegistryUpdateResult) error {
	var failed []api.RegistryUpdateResult
	for _, r := range out {
		if r.Status == api.UpdateFailed {
			failed = append(failed, r)
		}
	}
	if len(failed) > 0 {
		f := failed[0]
		code := fault.Code(f.Code)
		if code == "" {
			code = fault.SourceFailed
		}
		return fault.New(code, fmt.Sprintf("%d of %d updates failed (first: %s: %s)", len(failed), len(out), safeText(f.Name), safeText(f.Message)),
			"see each source's message; the other sources were updated or are current")
	}
	if name == "" {
		return nil
	}
	for _, r := range out {
		if r.Status == api.UpdateNeedsConsent {
			return fault.New(fault.SourceConsentRequired,
				fmt.Sprintf("%s was not updated: %s %s asks for more than was consented to (%s)", safeText(r.Name), safeText(r.Name), safeText(r.To), safeText(r.Message)),
				"review its permissions above, then: "+consentCommand(r))
		}
	}
	return nil
}

// replacedLine says what an install replaced: the version before, or
// that it reinstalled the same version.
func replacedLine(replaced, installed string) string {
	if replaced == installed {
		return "it reinstalled version " + safeText(replaced)
	}
	return "it replaced version " + safeText(replaced)
}
