package main_test

import (
	"strings"
	"testing"

	"github.com/loci-dev/loci/sources/pack"
)

// Re-trial 30 (through the daemon): under signature_policy = required,
// show answers an unsigned source for review (installable false, the
// refusal) and install still refuses it; a plugin install by id naming a
// consent or an adoption of a source the plugin does not carry is 400
// loci::input::invalid naming it, and nothing is installed (POST
// /api/plugins likewise); the by-id consent help speaks of the REST
// body, not headers; loci doctor's message on a relative registry is
// whole and says what a registry is once.
func TestTrial30Svc2(t *testing.T) {
	t.Parallel()
	home, palace := newPalace(t)
	una, plugs := t.TempDir(), t.TempDir()
	writeRegistry(t, una, map[string][]byte{"notes-1.0.0.tar.gz": regPackage(t, "notes", "1.0.0", "", "read = [\"locator\"]\n")}, nil, nil)
	p, _ := notesPackage(t, "scribe", "1.0.0", notesPerms, guestModule(t))
	pub, arc := signedPluginRegistry(t, plugs, "duo", "notes", p)
	d := start(t, home, palace, registryConfig(t, home, []string{"una=" + una, "plugs=" + plugs}, "required", pack.FormatPublicKey(pub)))

	show := d.do("GET", "/api/source-registry/sources/notes?registry=una", nil)
	if show.status != 200 || show.body["installable"] != false || get[string](show.body, "signed_by") != "" ||
		get[string](show.body, "refusal", "code") != "loci::source::untrusted" || get[string](show.body, "consent_digest") == "" {
		t.Fatalf("show of an unsigned source under the required policy: %d %s", show.status, show.raw)
	}
	in := d.do("POST", "/api/source-registry/install", map[string]any{"name": "notes", "consent": get[string](show.body, "consent_digest")})
	if in.code() != "loci::source::untrusted" {
		t.Fatalf("install of an unsigned source under the required policy: %d %s", in.status, in.raw)
	}

	digest := pack.ConsentDigest("scribe", p.Manifest.Permissions)
	r := d.do("POST", "/api/plugin-registry/install", map[string]any{"id": "duo"})
	if r.status != 400 || r.code() != "loci::source::consent_required" || !strings.Contains(r.raw, "POST /api/plugin-registry/install") ||
		strings.Contains(r.raw, "X-Loci") || strings.Contains(r.raw, "FILE") || !strings.Contains(r.raw, "loci plugin install duo@1.0.0 --consent scribe="+digest) {
		t.Fatalf("install by id without consent: %d %s", r.status, r.raw)
	}
	for bad, body := range map[string]map[string]any{
		"nosuch": {"id": "duo", "consents": map[string]string{"scribe": digest}, "adopt_sources": []string{"nosuch"}},
		"bogus":  {"id": "duo", "consents": map[string]string{"scribe": digest, "bogus": "abc"}},
	} {
		r := d.do("POST", "/api/plugin-registry/install", body)
		if r.status != 400 || r.code() != "loci::input::invalid" || !strings.Contains(r.raw, bad) {
			t.Fatalf("install naming the source %s the plugin does not carry: %d %s", bad, r.status, r.raw)
		}
	}
	r = d.do("POST", "/api/plugins", string(arc), "X-Loci-Consents", jsonHeader(map[string]string{"scribe": digest}), "X-Loci-Adopt-Sources", `["nosuch"]`)
	if r.status != 400 || r.code() != "loci::input::invalid" || !strings.Contains(r.raw, "nosuch") {
		t.Fatalf("a file install adopting a source the plugin does not carry: %d %s", r.status, r.raw)
	}
	if l := d.do("GET", "/api/plugins", nil); len(get[[]any](l.body, "plugins")) != 0 {
		t.Fatalf("a refused install installed: %s", l.raw)
	}

	dh, _ := newPalace(t)
	out, errOut, code := runCLI(dh, "", []string{"doctor"}, []string{registryConfig(t, dh, []string{"relative/reg"}, "optional")})
	if all := out + errOut; code == 0 || strings.Contains(all, "…") || strings.Count(all, "a registry is") != 1 || !strings.Contains(all, "relative path") {
		t.Fatalf("loci doctor with a relative registry (%d): %s %s", code, out, errOut)
	}
}
