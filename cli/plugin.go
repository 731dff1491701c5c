package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/sources/pack"
	"github.com/loci-dev/loci/sources/plugin"
	"github.com/loci-dev/loci/transport/client"
)

// pluginCmd is loci plugin: the local commands for making a plugin
// (package, inspect, sign, test; no daemon) and the daemon's (list,
// show, preview, install, remove, search).
func (a *app) pluginCmd() *cobra.Command {
	p := &cobra.Command{Use: "plugin", Short: "Plugins: archives carrying several source modules, made, signed and installed as one"}
	p.AddCommand(a.pluginPackageCmd(), a.pluginInspectCmd(), a.pluginSignCmd(), a.pluginTestCmd())
	p.AddCommand(a.pluginDaemonCmds()...)
	return p
}

// PluginModuleReport is one module as loci plugin inspect shows it.
type PluginModuleReport struct {
	Kind            string           `json:"kind"`
	Path            string           `json:"path"`
	Name            string           `json:"name"`
	Version         string           `json:"version"`
	ModuleSHA256    string           `json:"module_sha256"`
	Permissions     pack.Permissions `json:"permissions"`
	PermissionWords []string         `json:"permission_words"`
	ConsentDigest   string           `json:"consent_digest"`
	Incompatible    string           `json:"incompatible,omitempty"`
}

// PluginReport is what loci plugin inspect, package and sign answer.
type PluginReport struct {
	// Archive, Size and SHA256 are the archive's (package, sign, inspect
	// of a file).
	Archive     string               `json:"archive,omitempty"`
	Size        int64                `json:"size,omitempty"`
	SHA256      string               `json:"sha256,omitempty"`
	ID          string               `json:"id"`
	Version     string               `json:"version"`
	Description string               `json:"description,omitempty"`
	Loci        string               `json:"loci,omitempty"`
	Digest      string               `json:"digest"`
	Modules     []PluginModuleReport `json:"modules"`
	// Signed: the plugin carries a signature; SignedBy its key when the
	// signature holds, SignatureError why not when it does not.
	Signed         bool   `json:"signed"`
	SignedBy       string `json:"signed_by,omitempty"`
	SignatureError string `json:"signature_error,omitempty"`
	Incompatible   string `json:"incompatible,omitempty"`
}

// readPlugin reads a plugin archive, or a plugin folder packed in
// memory: the plugin and its archive.
func readPlugin(path string) (*plugin.Plugin, []byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, nil, fault.Wrap(fault.IOFailed, err, "cannot read "+path+": "+err.Error(), "give a plugin .tar.gz or a folder holding "+plugin.ManifestFile)
	}
	if fi.IsDir() {
		p, err := plugin.ReadDir(path)
		if err != nil {
			return nil, nil, err
		}
		b, err := p.Bytes()
		if err != nil {
			return nil, nil, fault.Wrap(fault.IOFailed, err, "packing "+path+" failed: "+err.Error(), "check the folder")
		}
		return p, b, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fault.Wrap(fault.IOFailed, err, "cannot read "+path+": "+err.Error(), "give a plugin .tar.gz or a folder holding "+plugin.ManifestFile)
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, plugin.MaxArchiveBytes+1))
	if err != nil {
		return nil, nil, fault.Wrap(fault.IOFailed, err, "cannot read "+path+": "+err.Error(), "check the file")
	}
	if len(raw) > plugin.MaxArchiveBytes {
		return nil, nil, fault.Newf(fault.InputTooLarge, "a plugin is at most 64 MiB", "%s is larger than %d bytes", path, plugin.MaxArchiveBytes)
	}
	p, err := plugin.Read(bytes.NewReader(raw))
	if err != nil {
		return nil, nil, err
	}
	return p, raw, nil
}

// report is what a plugin is, for inspect, package and sign.
func (a *app) report(p *plugin.Plugin, archive string, raw []byte) PluginReport {
	m := p.Manifest
	r := PluginReport{Archive: archive, ID: m.ID, Version: m.Version, Description: m.Description, Loci: m.Loci, Digest: p.Digest(),
		Modules: []PluginModuleReport{}, Signed: p.Signature != nil, Incompatible: p.Compatible(a.local.Version)}
	if raw != nil {
		r.Size, r.SHA256 = int64(len(raw)), pack.Digest(raw)
	}
	for _, s := range p.Sources {
		sm := s.Package.Manifest
		r.Modules = append(r.Modules, PluginModuleReport{Kind: plugin.KindSource, Path: s.Path, Name: sm.Name, Version: sm.Version,
			ModuleSHA256: s.Package.ModuleDigest(), Permissions: sm.Permissions, PermissionWords: sm.Permissions.Words(),
			ConsentDigest: pack.ConsentDigest(sm.Name, sm.Permissions), Incompatible: sm.Compatible(a.local.Version)})
	}
	if key, err := p.CheckSignature(); err != nil {
		r.SignatureError = fault.As(err).Msg
	} else {
		r.SignedBy = key
	}
	return r
}

func (a *app) printReport(r PluginReport) {
	a.printf("plugin %s %s\n", safeText(r.ID), safeText(r.Version))
	if r.Description != "" {
		a.printf("  %s\n", safeText(r.Description))
	}
	if r.Archive != "" {
		a.printf("  archive         %s (%d bytes, sha256 %s)\n", r.Archive, r.Size, r.SHA256)
	}
	if r.Loci != "" {
		a.printf("  needs loci      %s\n", safeText(r.Loci))
	}
	a.printf("  content digest  %s\n", r.Digest)
	switch {
	case !r.Signed:
		a.printf("  signature       none\n")
	case r.SignatureError != "":
		a.printf("  signature       BAD: %s\n", safeText(r.SignatureError))
	default:
		a.printf("  signature       good, by %s\n", r.SignedBy)
	}
	a.printf("  modules:\n")
	for _, m := range r.Modules {
		a.printf("    %s %s %s (in %s, module sha256 %s)\n", m.Kind, safeText(m.Name), safeText(m.Version), safeText(m.Path), m.ModuleSHA256)
		a.printf("      it may:\n")
		for _, w := range m.PermissionWords {
			a.printf("        - %s\n", safeText(w))
		}
		if m.Permissions.None() {
			a.printf("      (it asks for nothing: installing it needs no consent)\n")
		} else {
			a.printf("      consent digest %s\n", m.ConsentDigest)
		}
	}
	if r.Incompatible != "" {
		fmt.Fprintf(a.stderrOrDiscard(), "warning: this loci (%s) cannot run it: %s\n", a.local.Version, safeText(r.Incompatible))
	}
}

func (a *app) pluginPackageCmd() *cobra.Command {
	var out string
	c := &cobra.Command{
		Use:   "package DIR",
		Short: "Pack a plugin folder (loci-plugin.toml and a built source package per module folder) into ID-VERSION.tar.gz",
		Long: `Pack the plugin in DIR into a deterministic .tar.gz: its ` + plugin.ManifestFile + `
(id, version, description, loci, and a [[modules]] table per module with
kind = "source" and path = its folder) and, in each module's folder, a
built source package (loci-source.toml and the module it names; loci source
build makes one). A signature beside the manifest (` + plugin.SignatureFile + `) is
kept. The archive is --out, default DIR/ID-VERSION.tar.gz (replaced if
there). Prints what loci plugin inspect prints.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			p, err := plugin.ReadDir(args[0])
			if err != nil {
				return err
			}
			raw, err := p.Bytes()
			if err != nil {
				return fault.Wrap(fault.IOFailed, err, "cannot pack the plugin: "+err.Error(), "check the disk")
			}
			if out == "" {
				out = filepath.Join(args[0], p.Manifest.ID+"-"+p.Manifest.Version+".tar.gz")
			}
			if out, err = filepath.Abs(out); err != nil {
				return fault.Newf(fault.InputInvalid, "give --out a file path", "--out: %v", err)
			}
			if fi, err := os.Stat(out); err == nil && fi.IsDir() {
				return fault.Newf(fault.InputInvalid, "give --out a file path", "--out %s is a folder", out)
			}
			if err := writeFileAtomic(out, raw, 0o644); err != nil {
				return err
			}
			r := a.report(p, out, raw)
			if a.jsonOut {
				return a.out(r)
			}
			a.printf("packed %s %s into %s\n", r.ID, r.Version, out)
			a.printReport(r)
			return nil
		},
	}
	c.Flags().StringVar(&out, "out", "", "the archive to write (default DIR/ID-VERSION.tar.gz)")
	return c
}

func (a *app) pluginInspectCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "inspect FILE|DIR",
		Short: "Show a plugin: its manifest, modules, permissions in words, consent digests, content digest and signature",
		Long: `Read and check a plugin archive (or folder) without installing it: its
manifest, each module with the permissions it asks for in words and the
consent digest an install asks for, the content digest a signature covers,
and whether its signature holds and under which key. Whether that key is
trusted is the daemon's setting (mining.trusted_keys).`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			p, raw, err := readPlugin(args[0])
			if err != nil {
				return err
			}
			archive := ""
			if fi, _ := os.Stat(args[0]); fi != nil && !fi.IsDir() {
				archive, _ = filepath.Abs(args[0])
			} else {
				raw = nil
			}
			r := a.report(p, archive, raw)
			if a.jsonOut {
				return a.out(r)
			}
			a.printReport(r)
			return nil
		},
	}
}

func (a *app) pluginSignCmd() *cobra.Command {
	var keyFile, out string
	c := &cobra.Command{
		Use:   "sign FILE --key KEYFILE",
		Short: "Sign a plugin archive with an ed25519 key (loci source keygen): the signature goes inside it",
		Long: `Sign the plugin archive FILE with the private key KEYFILE (loci source keygen's
PREFIX.key): an ed25519 signature over the plugin's content digest, written
into the archive as ` + plugin.SignatureFile + ` (a signature it had is replaced).
Signing does not change the content digest. The archive is written back to
FILE, or to --out.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if keyFile == "" {
				return fault.New(fault.InputInvalid, "--key: the private key file is required", "give the private key file loci source keygen wrote (PREFIX.key)")
			}
			if fi, err := os.Stat(args[0]); err == nil && fi.IsDir() {
				return fault.Newf(fault.InputInvalid, "pack it first (loci plugin package DIR), then sign the archive", "%s is a folder; sign a plugin archive", args[0])
			}
			p, _, err := readPlugin(args[0])
			if err != nil {
				return err
			}
			kb, err := os.ReadFile(keyFile)
			if err != nil {
				return fault.Wrap(fault.IOFailed, err, "cannot read "+keyFile+": "+err.Error(), "give the private key file loci source keygen wrote (PREFIX.key)")
			}
			key, err := pack.ParsePrivateKey(kb)
			if err != nil {
				return fault.Newf(fault.InputInvalid, "give the private key file loci source keygen wrote (PREFIX.key)", "--key %s: %s", keyFile, fault.As(err).Msg)
			}
			p.Sign(key)
			raw, err := p.Bytes()
			if err != nil {
				return fault.Wrap(fault.IOFailed, err, "cannot pack the plugin: "+err.Error(), "check the disk")
			}
			if out == "" {
				out = args[0]
			}
			if out, err = filepath.Abs(out); err != nil {
				return fault.Newf(fault.InputInvalid, "give --out a file path", "--out: %v", err)
			}
			if err := writeFileAtomic(out, raw, 0o644); err != nil {
				return err
			}
			r := a.report(p, out, raw)
			if a.jsonOut {
				return a.out(r)
			}
			a.printf("signed %s %s (content digest %s) with %s into %s\n", r.ID, r.Version, r.Digest, r.SignedBy, out)
			return nil
		},
	}
	c.Flags().StringVar(&keyFile, "key", "", "the private key file (loci source keygen's PREFIX.key)")
	c.Flags().StringVar(&out, "out", "", "the archive to write (default: FILE itself)")
	return c
}

func (a *app) pluginTestCmd() *cobra.Command {
	var locator string
	c := &cobra.Command{
		Use:   "test FILE|DIR",
		Short: "Run the conformance cases against each source module of a plugin in the sandbox",
		Long: `Run the source conformance cases (as loci source test does) against each
source module of the plugin archive FILE or folder DIR, in loci's real
WebAssembly sandbox with exactly the permissions each module's manifest asks
for. The locator mined is --locator, or for a folder each module's
testdata/locator. One line per case; the exit code is not zero when a case
of any module fails.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if a.local.SourceTest == nil {
				return fault.New(fault.SourceUnavailable, "this loci binary was built without the source sandbox", "use a release build of loci")
			}
			// The sandbox mounts absolute folders only: a relative
			// folder (and each module's testdata/locator in it) is made
			// absolute, as loci source test does.
			src, err := filepath.Abs(args[0])
			if err != nil {
				return fault.Newf(fault.InputInvalid, "give a plugin .tar.gz or a folder holding "+plugin.ManifestFile, "%s: %v", args[0], err)
			}
			p, _, err := readPlugin(src)
			if err != nil {
				return err
			}
			fi, _ := os.Stat(src)
			isDir := fi != nil && fi.IsDir()
			if locator != "" {
				if locator, err = filepath.Abs(locator); err != nil {
					return fault.Newf(fault.InputInvalid, "give a folder", "--locator: %v", err)
				}
			}
			// Each module is unpacked below one temporary folder, removed
			// when the test ends however it ends, and each module's own
			// folder as soon as its cases ran.
			tmp, err := os.MkdirTemp("", "loci-plugin-test-")
			if err != nil {
				return fault.Wrap(fault.IOFailed, err, "cannot make a temporary folder: "+err.Error(), "check the disk")
			}
			defer os.RemoveAll(tmp)
			var failed []string
			for i, s := range p.Sources {
				loc := locator
				if loc == "" && isDir {
					loc = filepath.Join(src, filepath.FromSlash(s.Path), "testdata", "locator")
				}
				if loc == "" {
					return fault.New(fault.InputInvalid, "--locator: a folder to mine is required to test a plugin archive",
						"give --locator a folder of at least three documents, or test the plugin's folder")
				}
				if fi, err := os.Stat(loc); err != nil || !fi.IsDir() {
					return fault.Newf(fault.InputInvalid, "give --locator a folder of at least three documents",
						"the locator %s for the %s module is not a folder", loc, s.Name())
				}
				dir := filepath.Join(tmp, strconv.Itoa(i))
				if err := os.Mkdir(dir, 0o700); err != nil {
					return fault.Wrap(fault.IOFailed, err, "cannot make a temporary folder: "+err.Error(), "check the disk")
				}
				if err := os.WriteFile(filepath.Join(dir, pack.ManifestFile), s.Package.ManifestBytes, 0o600); err != nil {
					return fault.Wrap(fault.IOFailed, err, "cannot write a temporary file: "+err.Error(), "check the disk")
				}
				if err := os.WriteFile(filepath.Join(dir, s.Package.Manifest.Module), s.Package.Module, 0o600); err != nil {
					return fault.Wrap(fault.IOFailed, err, "cannot write a temporary file: "+err.Error(), "check the disk")
				}
				a.printf("module %s (%s)\n", s.Name(), s.Path)
				err := a.local.SourceTest(c.Context(), dir, loc, a.stdout)
				os.RemoveAll(dir)
				if err != nil {
					a.printf("module %s: %s\n", s.Name(), safeText(fault.As(err).Msg))
					failed = append(failed, s.Name())
				}
			}
			if len(failed) > 0 {
				return fault.New(fault.SourceFailed, fmt.Sprintf("the plugin %s: %d of %d modules failed: %s", p.Manifest.ID, len(failed), len(p.Sources), strings.Join(failed, ", ")),
					"read each FAIL line above, correct the module, rebuild it, then loci plugin test again")
			}
			a.printf("all %d modules of %s passed\n", len(p.Sources), p.Manifest.ID)
			return nil
		},
	}
	c.Flags().StringVar(&locator, "locator", "", "the folder to mine (default, for a folder: each module's testdata/locator)")
	return c
}

// pluginDaemonCmds are the commands that ask the daemon: list, show,
// preview, install, remove, search.
func (a *app) pluginDaemonCmds() []*cobra.Command {
	list := &cobra.Command{
		Use: "list", Short: "List the installed plugins and their modules", Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return show(a, c.Context(), http.MethodGet, "/api/plugins", nil, func(out *api.PluginList) {
				if len(out.Plugins) == 0 {
					a.printf("no plugin installed (loci plugin install FILE)\n")
				}
				for _, p := range out.Plugins {
					a.printPlugin(&p)
				}
			})
		},
	}
	showCmd := &cobra.Command{
		Use: "show ID", Short: "Show an installed plugin: its origin, signature and modules with their state", Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return show(a, c.Context(), http.MethodGet, "/api/plugins/"+client.Esc(args[0]), nil, a.printPlugin)
		},
	}
	var registry string
	preview := &cobra.Command{
		Use:   "preview FILE|DIR|ID[@VERSION]",
		Short: "Ask the daemon what installing a plugin would ask: consent digests and the sources it would adopt",
		Long: "Check a plugin with the daemon without installing it: a file or folder is sent; anything else names a plugin\n" +
			"in the plugin registries (ID or ID@VERSION), fetched and verified by the daemon.",
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			pv, err := a.previewPlugin(c, args[0], registry)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.out(pv)
			}
			a.printPreview(pv)
			return nil
		},
	}
	preview.Flags().StringVar(&registry, "registry", "", "the registry to look in (default: every one)")
	var consents, adopt []string
	var yes bool
	install := &cobra.Command{
		Use:   "install FILE|DIR|ID[@VERSION]",
		Short: "Install a plugin: its modules installed, not enabled, after consenting to their permissions",
		Long: "Install a plugin from a file or folder, or from the plugin registries (ID or ID@VERSION). Its source modules are\n" +
			"installed but not enabled (loci source enable NAME). The permissions each asks for, and the sources installed on\n" +
			"their own it would take over (adopt), are shown and asked about on a terminal; --yes agrees to all of them;\n" +
			"--consent SOURCE=DIGEST and --adopt SOURCE agree to what was reviewed before (for scripts). Without a terminal\n" +
			"and without them, nothing is installed and the refusal says what is asked.",
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return a.installPlugin(c, args[0], registry, consents, adopt, yes)
		},
	}
	install.Flags().StringArrayVar(&consents, "consent", nil, "SOURCE=DIGEST: the consent digest of a module's permissions reviewed (repeat)")
	install.Flags().StringArrayVar(&adopt, "adopt", nil, "SOURCE: a source installed on its own the plugin may take over (repeat)")
	install.Flags().BoolVarP(&yes, "yes", "y", false, "consent to every permission and adoption shown without asking")
	install.Flags().StringVar(&registry, "registry", "", "the registry to install from (default: the first listing it)")
	remove := &cobra.Command{
		Use: "remove ID", Short: "Uninstall a plugin and its modules (refused while one is enabled); what they mined stays", Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return show(a, c.Context(), http.MethodDelete, "/api/plugins/"+client.Esc(args[0]), nil, func(out *api.PluginRemoved) {
				a.printf("removed the plugin %s and its sources; what they mined stays\n", out.Removed)
			})
		},
	}
	search := &cobra.Command{
		Use: "search [QUERY]", Short: "Search the plugin registries", Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return show(a, c.Context(), http.MethodGet, "/api/plugin-registry/search?"+searchQuery(args, registry), nil, func(out *api.RegistrySearch) {
				a.printRegistryWarnings(out.Warnings)
				if len(out.Entries) == 0 {
					a.printf("no plugin found\n")
				}
				a.printRegistryEntries(out.Entries, "%-20s %-10s %-12s %-8s", "  ")
			})
		},
	}
	search.Flags().StringVar(&registry, "registry", "", "the registry to search (default: every one)")
	return []*cobra.Command{list, showCmd, preview, install, remove, search}
}

// isLocal reports an argument naming a file or folder (not a registry
// plugin).
func isLocal(arg string) bool {
	_, err := os.Stat(arg)
	return err == nil || strings.ContainsAny(arg, `/\`) || strings.HasSuffix(arg, ".tar.gz")
}

// pluginRef splits ID[@VERSION].
func pluginRef(arg string) (id, version string, err error) {
	id, version, _ = strings.Cut(arg, "@")
	if !pack.ValidName(id) {
		return "", "", fault.Newf(fault.InputInvalid, "give a plugin file, a folder, or a plugin id from a registry (ID or ID@VERSION)",
			"%q is neither a file nor a plugin id (%s)", arg, pack.NameRule)
	}
	return id, version, nil
}

// previewPlugin asks the daemon for a plugin's preview: a file or folder
// sent, or a registry plugin fetched.
func (a *app) previewPlugin(c *cobra.Command, arg, registry string) (*api.PluginPreview, error) {
	var pv api.PluginPreview
	if isLocal(arg) {
		_, raw, err := readPlugin(arg)
		if err != nil {
			return nil, err
		}
		cl, err := a.client()
		if err != nil {
			return nil, err
		}
		if _, err := cl.Upload(c.Context(), "/api/plugins/preview", "application/gzip", bytes.NewReader(raw), &pv); err != nil {
			return nil, err
		}
		return &pv, nil
	}
	id, version, err := pluginRef(arg)
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	if version != "" {
		q.Set("version", version)
	}
	if registry != "" {
		q.Set("registry", registry)
	}
	if _, err := a.call(c.Context(), http.MethodGet, "/api/plugin-registry/plugins/"+client.Esc(id)+"?"+q.Encode(), nil, &pv); err != nil {
		return nil, err
	}
	return &pv, nil
}

// installPlugin sends the install with the consents and adoptions given;
// refused for consent or adoption without them, it previews, shows what
// is asked, and agrees with --yes or a yes on the terminal, never
// otherwise. A preview saying the install would be refused whatever is
// agreed to (blocked) asks nothing: the command fails with its code.
func (a *app) installPlugin(c *cobra.Command, arg, registry string, consentArgs, adopt []string, yes bool) error {
	consents := map[string]string{}
	for _, cs := range consentArgs {
		name, digest, ok := strings.Cut(cs, "=")
		if !ok || name == "" || digest == "" {
			return fault.Newf(fault.InputInvalid, "give --consent SOURCE=DIGEST (loci plugin preview shows the digests)", "--consent %q is not SOURCE=DIGEST", cs)
		}
		consents[name] = digest
	}
	local := isLocal(arg)
	var raw []byte
	var id, version string
	var err error
	if local {
		if _, raw, err = readPlugin(arg); err != nil {
			return err
		}
	} else if id, version, err = pluginRef(arg); err != nil {
		return err
	}
	cl, err := a.client()
	if err != nil {
		return err
	}
	digest := ""
	send := func(consents map[string]string, adopt []string) (*api.PluginInstalled, error) {
		var out api.PluginInstalled
		if local {
			h := http.Header{}
			cb, _ := json.Marshal(consents)
			ab, _ := json.Marshal(adopt)
			h.Set("X-Loci-Consents", string(cb))
			h.Set("X-Loci-Adopt-Sources", string(ab))
			_, err := cl.UploadWith(c.Context(), "/api/plugins", "application/gzip", h, bytes.NewReader(raw), &out)
			return &out, err
		}
		_, err := a.call(c.Context(), http.MethodPost, "/api/plugin-registry/install", api.PluginRegistryInstall{ID: id, Version: version,
			Registry: registry, Consents: consents, AdoptSources: adopt, ArchiveDigest: digest}, &out)
		return &out, err
	}
	out, err := send(consents, adopt)
	// fault.As(nil) is nil: the remote code is read only of a refusal.
	if fe := fault.As(err); fe != nil && (fe.Remote == fault.SourceConsentRequired || fe.Remote == fault.SourceAdoptionRequired) {
		pv, perr := a.previewPlugin(c, arg, registry)
		if perr != nil {
			return err
		}
		digest = pv.ArchiveDigest
		w := a.stderrOrDiscard()
		if b := pv.Blocked; b != nil {
			// Refused whatever is consented to: nothing to ask.
			fmt.Fprintf(w, "The plugin %s %s cannot be installed: %s (%s)\n", safeText(pv.Plugin.ID), safeText(pv.Plugin.Version), safeText(b.Message), safeText(b.Code))
			return fault.New(fault.Code(b.Code), b.Message, b.Help)
		}
		fmt.Fprintf(w, "The plugin %s %s:\n", safeText(pv.Plugin.ID), safeText(pv.Plugin.Version))
		for _, m := range pv.Plugin.Modules {
			if d, ok := pv.Consents[m.Name]; ok {
				fmt.Fprintf(w, "  its %s source asks to:\n", safeText(m.Name))
				for _, line := range m.PermissionWords {
					fmt.Fprintf(w, "    - %s\n", safeText(line))
				}
				fmt.Fprintf(w, "    consent digest %s\n", d)
			}
		}
		if len(pv.Adopt) > 0 {
			fmt.Fprintf(w, "  it takes over sources installed on their own: %s\n", safeText(strings.Join(pv.Adopt, ", ")))
		}
		switch {
		case yes:
			fmt.Fprintf(w, "Agreeing (--yes).\n")
		case stdinIsTerminal(c):
			fmt.Fprintf(w, "Install? [y/N] ")
			line, rerr := bufio.NewReader(c.InOrStdin()).ReadString('\n')
			if rerr != nil && line == "" {
				return fault.Wrap(fault.CLIPromptFailed, rerr, "cannot read the answer", "pass --yes, or --consent SOURCE=DIGEST and --adopt SOURCE")
			}
			if ans := strings.ToLower(strings.TrimSpace(line)); ans != "y" && ans != "yes" {
				return fault.New(fault.CLIAborted, "not agreed; nothing was installed", "answer y, or pass --yes")
			}
		default:
			return err
		}
		for name, d := range pv.Consents {
			consents[name] = d
		}
		out, err = send(consents, append(append([]string{}, adopt...), pv.Adopt...))
	}
	if err != nil {
		return err
	}
	if a.jsonOut {
		return a.out(out)
	}
	p := out.Plugin
	a.printf("installed the plugin %s %s (%s)\n", p.ID, p.Version, p.Origin)
	if out.Replaced != "" {
		a.printf("%s\n", replacedLine(out.Replaced, p.Version))
	}
	if len(out.Adopted) > 0 {
		a.printf("it took over: %s\n", strings.Join(out.Adopted, ", "))
	}
	var idle []string
	for _, m := range p.Modules {
		a.printf("  %s %s %s: %s\n", m.Kind, m.Name, m.Version, m.State)
		if m.State == "installed" {
			idle = append(idle, m.Name)
		}
	}
	if len(idle) > 0 {
		a.printf("enable a source to mine with it: loci source enable %s\n", idle[0])
	}
	return nil
}

func (a *app) printPlugin(p *api.Plugin) {
	a.printf("%s %s (%s", safeText(p.ID), safeText(p.Version), p.Origin)
	if p.Registry != "" {
		a.printf(" from %s", safeText(p.Registry))
	}
	a.printf(")\n")
	if p.Description != "" {
		a.printf("  %s\n", safeText(p.Description))
	}
	if p.SignedBy != "" {
		a.printf("  signed by %s\n", safeText(p.SignedBy))
	} else {
		a.printf("  not vouched for by a trusted key\n")
	}
	if p.InstalledAt != nil {
		a.printf("  installed %s\n", p.InstalledAt.Format("2006-01-02 15:04:05 MST"))
	}
	for _, m := range p.Modules {
		a.printf("  %s %-20s %-10s %s\n", m.Kind, safeText(m.Name), safeText(m.Version), m.State)
	}
}

func (a *app) printPreview(pv *api.PluginPreview) {
	p := pv.Plugin
	a.printf("plugin %s %s", safeText(p.ID), safeText(p.Version))
	if pv.Replaces != "" {
		a.printf(" (replaces %s)", safeText(pv.Replaces))
	}
	a.printf("\n")
	if b := pv.Blocked; b != nil {
		a.printf("  installing it would be refused: %s (%s)\n", safeText(b.Message), safeText(b.Code))
		if b.Help != "" {
			a.printf("    help: %s\n", safeText(b.Help))
		}
	}
	a.printf("  archive sha256 %s\n", pv.ArchiveDigest)
	if p.SignedBy != "" {
		a.printf("  signed by %s\n", p.SignedBy)
	} else {
		a.printf("  not signed by a trusted key\n")
	}
	for _, m := range p.Modules {
		a.printf("  %s %s %s\n", m.Kind, safeText(m.Name), safeText(m.Version))
		for _, w := range m.PermissionWords {
			a.printf("    - %s\n", safeText(w))
		}
		if d, ok := pv.Consents[m.Name]; ok {
			a.printf("    needs consent: --consent %s=%s\n", m.Name, d)
		}
	}
	if len(pv.Adopt) > 0 {
		a.printf("  takes over sources installed on their own: %s (--adopt %s)\n", strings.Join(pv.Adopt, ", "), strings.Join(pv.Adopt, " --adopt "))
	}
	if len(pv.Consents) == 0 && len(pv.Adopt) == 0 && pv.Blocked == nil {
		a.printf("  installing it asks nothing more\n")
	}
}
