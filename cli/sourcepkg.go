package cli

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/sources/pack"
	"github.com/loci-dev/loci/transport/client"
)

// sourcePackageCmds are the commands that ask the daemon about installed
// source packages: install, show, enable, disable, remove.
func (a *app) sourcePackageCmds() []*cobra.Command {
	var yes, enable bool
	var consent, registry, showRegistry string
	install := &cobra.Command{
		Use:   "install FILE|DIR|NAME[@VERSION]",
		Short: "Install a source package (a .tar.gz, a folder holding loci-source.toml and its module, or a registry's source by name), after consenting to its permissions",
		Long: "Install a source package into the daemon. The permissions it asks for are shown and asked about on a terminal;\n" +
			"--yes consents to them, --consent DIGEST consents to the permissions whose digest was reviewed before.\n" +
			"Without a terminal and without either, nothing is consented to: a package asking for permissions is refused\n" +
			"(loci::source::consent_required) with its permissions and digest shown.\n" +
			"NAME[@VERSION] (not an existing file) installs from the registries (mining.registries): the newest version\n" +
			"that runs on this loci unless VERSION is given; the daemon fetches and verifies it.",
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if isRegistryRef(args[0]) {
				return a.installFromRegistry(c, args[0], registry, yes, consent, enable)
			}
			if _, serr := os.Stat(args[0]); serr != nil && strings.Contains(args[0], "@") {
				return badRegistryRef(args[0])
			}
			return a.installPackage(c, args[0], yes, consent, enable)
		},
	}
	install.Flags().BoolVarP(&yes, "yes", "y", false, "consent to the permissions shown without asking")
	install.Flags().StringVar(&consent, "consent", "", "the consent digest of the permissions reviewed (for scripts)")
	install.Flags().BoolVar(&enable, "enable", false, "enable the source at once")
	install.Flags().StringVar(&registry, "registry", "", "install NAME from this registry")

	showCmd := &cobra.Command{
		Use:   "show NAME[@VERSION]",
		Short: "Show a source: its origin, state, permissions and, when it cannot run, why; a registry's release when NAME@VERSION, --registry or NAME is not installed",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if strings.Contains(args[0], "@") || showRegistry != "" {
				return a.showRegistrySource(c, args[0], showRegistry)
			}
			err := show(a, c.Context(), http.MethodGet, "/api/source-packages/"+client.Esc(args[0]), nil, a.printPackage)
			if err != nil && fault.As(err).Remote == fault.SourceNotFound {
				// Not installed: the release a registry serves, if one does.
				rerr := a.showRegistrySource(c, args[0], "")
				if rerr == nil || fault.As(rerr).Remote != fault.SourceNotInRegistry {
					return rerr
				}
				return a.pluginHint(c, args[0], err)
			}
			return err
		},
	}
	showCmd.Flags().StringVar(&showRegistry, "registry", "", "show the release this registry serves")
	cmds := []*cobra.Command{install, showCmd}
	cmds = append(cmds, a.sourceRegistryCmds()...)
	for _, act := range []struct{ name, short string }{
		{"enable", "Enable an installed or bundled source (idempotent)"},
		{"disable", "Disable an installed or bundled source: miners using it stop (idempotent)"},
	} {
		cmds = append(cmds, &cobra.Command{
			Use: act.name + " NAME", Short: act.short, Args: cobra.ExactArgs(1),
			RunE: func(c *cobra.Command, args []string) error {
				return show(a, c.Context(), http.MethodPost, "/api/source-packages/"+client.Esc(args[0])+"/"+act.name, nil, func(p *api.SourcePackage) {
					a.printf("%s: %s\n", p.Name, packageState(p))
				})
			},
		})
	}
	cmds = append(cmds, &cobra.Command{
		Use: "remove NAME", Short: "Remove an installed source and its files; what it mined stays", Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return show(a, c.Context(), http.MethodDelete, "/api/source-packages/"+client.Esc(args[0]), nil, func(out *api.SourcePackageRemoved) {
				a.printf("removed the %s source; what it mined stays\n", out.Removed)
				if n := len(out.Miners); n > 0 {
					a.printf("warning: %s %s %s the %s source; %s cannot run until a source of that name is installed again: remove %s (loci miner rm NAME) or give %s another source (loci miner set NAME --source SOURCE)\n",
						plural(n, "the miner", "the miners"), strings.Join(out.Miners, ", "), plural(n, "names", "name"), out.Removed,
						plural(n, "it", "they"), plural(n, "it", "them"), plural(n, "it", "them"))
				}
			})
		},
	})
	return cmds
}

// readPackage reads a package archive, or packs a folder in memory: the
// package (for what it asks) and the archive to send.
func readPackage(path string) (*pack.Package, []byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, nil, fault.Wrap(fault.IOFailed, err, "cannot read "+path+": "+err.Error(), "give a .tar.gz source package or a folder holding "+pack.ManifestFile)
	}
	if fi.IsDir() {
		p, err := pack.ReadDir(path)
		if err != nil {
			return nil, nil, err
		}
		var b bytes.Buffer
		if err := p.WriteArchive(&b); err != nil {
			return nil, nil, fault.Wrap(fault.IOFailed, err, "packing "+path+" failed: "+err.Error(), "check the folder")
		}
		return p, b.Bytes(), nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fault.Wrap(fault.IOFailed, err, "cannot read "+path+": "+err.Error(), "give a .tar.gz source package or a folder holding "+pack.ManifestFile)
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, pack.MaxArchiveBytes+1))
	if err != nil {
		return nil, nil, fault.Wrap(fault.IOFailed, err, "cannot read "+path+": "+err.Error(), "check the file")
	}
	if len(raw) > pack.MaxArchiveBytes {
		return nil, nil, fault.Newf(fault.InputTooLarge, "a source package is at most 64 MiB", "%s is larger than %d bytes", path, pack.MaxArchiveBytes)
	}
	p, err := pack.ReadArchive(bytes.NewReader(raw))
	if err != nil {
		return nil, nil, err
	}
	return p, raw, nil
}

// installPackage sends the package: first with the consent given (none
// unless --consent), so that a package asking for nothing, or an update
// within what was consented to, installs without a question; refused for
// consent, it shows the permissions and consents with --yes or a yes on
// the terminal, and never otherwise.
func (a *app) installPackage(c *cobra.Command, path string, yes bool, consent string, enable bool) error {
	p, archive, err := readPackage(path)
	if err != nil {
		return err
	}
	cl, err := a.client()
	if err != nil {
		return err
	}
	send := func(consent string) (*api.SourcePackageInstalled, error) {
		q := url.Values{}
		if consent != "" {
			q.Set("consent", consent)
		}
		if enable {
			q.Set("enable", "true")
		}
		var out api.SourcePackageInstalled
		_, err := cl.Upload(c.Context(), "/api/source-packages?"+q.Encode(), "application/gzip", bytes.NewReader(archive), &out)
		return &out, err
	}
	out, err := send(consent)
	if err != nil && consent == "" && fault.As(err).Remote == fault.SourceConsentRequired {
		digest := pack.ConsentDigest(p.Manifest.Name, p.Manifest.Permissions)
		w := a.stderrOrDiscard()
		fmt.Fprintf(w, "The %s source %s asks to:\n", safeText(p.Manifest.Name), safeText(p.Manifest.Version))
		for _, line := range p.Manifest.Permissions.Words() {
			fmt.Fprintf(w, "  - %s\n", safeText(line))
		}
		fmt.Fprintf(w, "Its consent digest is %s.\n", digest)
		switch {
		case yes:
			fmt.Fprintf(w, "Consenting (--yes).\n")
		case stdinIsTerminal(c):
			fmt.Fprintf(w, "Install? [y/N] ")
			line, rerr := bufio.NewReader(c.InOrStdin()).ReadString('\n')
			if rerr != nil && line == "" {
				return fault.Wrap(fault.CLIPromptFailed, rerr, "cannot read the answer", "pass --yes, or --consent "+digest)
			}
			if ans := strings.ToLower(strings.TrimSpace(line)); ans != "y" && ans != "yes" {
				return fault.New(fault.CLIAborted, "not consented; nothing was installed", "answer y, or pass --yes")
			}
		default:
			// No terminal to ask on: the daemon's refusal stands.
			return err
		}
		out, err = send(digest)
	}
	if err != nil {
		return err
	}
	if a.jsonOut {
		return a.out(out)
	}
	s := out.Source
	a.printf("installed the %s source %s (%s, %s)\n", s.Name, s.Version, s.Origin, packageState(&s))
	switch {
	case out.Downgrade:
		a.printf("it replaced version %s, a newer one: this is a downgrade (install %s again to go back)\n", out.Replaced, out.Replaced)
	case out.Replaced != "":
		a.printf("%s\n", replacedLine(out.Replaced, s.Version))
	}
	a.printInstallWarnings(out.Warnings)
	if s.State == "installed" {
		a.printf("enable it to mine with it: loci source enable %s\n", s.Name)
	}
	return nil
}

// printInstallWarnings prints an install answer's warnings on stderr, a
// line each (a version its publisher withdrew, installed because it was
// pinned).
func (a *app) printInstallWarnings(ws []string) {
	w := a.stderrOrDiscard()
	for _, x := range ws {
		fmt.Fprintf(w, "warning: %s\n", safeText(x))
	}
}

func stdinIsTerminal(c *cobra.Command) bool {
	f, ok := c.InOrStdin().(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// packageState is a source's state, with why when it cannot run.
func packageState(p *api.SourcePackage) string {
	if p.Reason != "" {
		return p.State + ": " + p.Reason
	}
	return p.State
}

func (a *app) printPackage(p *api.SourcePackage) {
	a.printf("%s %s\n", p.Name, p.Version)
	if p.Description != "" {
		a.printf("  %s\n", p.Description)
	}
	a.printf("  origin:   %s\n", p.Origin)
	if p.Registry != "" {
		signed := "not vouched for by a trusted key"
		if p.SignedBy != "" {
			signed = "signed by " + safeText(p.SignedBy)
		}
		a.printf("  registry: %s (%s)\n", safeText(p.Registry), signed)
	}
	if p.Plugin != "" {
		a.printf("  plugin:   %s (loci plugin show %s)\n", safeText(p.Plugin), safeText(p.Plugin))
	}
	a.printf("  state:    %s\n", packageState(p))
	opts := "none"
	if len(p.Options) > 0 {
		opts = strings.Join(p.Options, ", ")
	}
	a.printf("  options:  %s\n", opts)
	caps := []string{}
	if p.Capabilities.Incremental {
		caps = append(caps, "incremental")
	}
	if len(p.Capabilities.Triggers) > 0 {
		caps = append(caps, "triggers "+strings.Join(p.Capabilities.Triggers, ", "))
	}
	if len(caps) > 0 {
		a.printf("  can:      %s\n", strings.Join(caps, "; "))
	}
	if p.Auth != nil {
		a.printf("  sign-in:  %s\n", strings.TrimPrefix(signInLine(p.Name, p.Auth), p.Name+": "))
	}
	if p.Permissions == nil {
		a.printf("  permissions: none asked; it is part of loci\n")
		return
	}
	a.printf("  permissions:\n")
	for _, w := range p.PermissionWords {
		a.printf("    - %s\n", w)
	}
	a.printf("  consent digest: %s\n", p.ConsentDigest)
	a.printf("  module sha256:  %s\n", p.ModuleSHA256)
	if p.InstalledAt != nil {
		a.printf("  installed:      %s\n", p.InstalledAt.Format("2006-01-02 15:04:05 MST"))
	}
	if p.Dir != "" {
		a.printf("  files:          %s\n", p.Dir)
	}
}

// pluginHint is a source's not-found refusal err, with a hint when name
// is the id of an installed plugin (GET /api/plugins/{id} answers): the
// user likely meant the plugin. Asked only on the not-found path.
func (a *app) pluginHint(c *cobra.Command, name string, err error) error {
	var p api.Plugin
	if _, perr := a.call(c.Context(), http.MethodGet, "/api/plugins/"+client.Esc(name), nil, &p); perr != nil {
		return err
	}
	fe := *fault.As(err)
	fe.Help = fmt.Sprintf("%s is a plugin, not a source: loci plugin show %s (its sources: loci source list)", safeText(name), safeText(name))
	return &fe
}
