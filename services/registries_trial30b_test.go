package services

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/sources/registry"
)

// Re-trial 30: under signature_policy = required, show still answers an
// unsigned release so it can be reviewed (signed_by "", installable
// false and the refusal install would give); install is still refused.
func TestShowAnswersAReleaseThePolicyWouldRefuse(t *testing.T) {
	ctx := context.Background()
	pk, _ := newPackages(t)
	dir := regFolder(t, filepath.Join(t.TempDir(), "una"), nil, testPackage(t, "notes", "1.0.0", readPerms, testModule))
	specs, err := registry.ParseSpecs([]string{"una=" + dir})
	if err != nil {
		t.Fatal(err)
	}
	c, err := registry.New(registry.Options{Registries: specs, LociVersion: pk.Version, Policy: registry.PolicyRequired})
	if err != nil {
		t.Fatal(err)
	}
	s := &Registries{Packages: pk, Client: c}
	sh, err := s.Show(ctx, "notes", "", "una")
	if err != nil || sh.SignedBy != "" || sh.Installable || sh.Refusal == nil || sh.Refusal.Code != string(fault.SourceUntrusted) ||
		!strings.Contains(sh.Refusal.Message, "not signed") || sh.ConsentDigest == "" || len(sh.PermissionWords) == 0 {
		t.Fatalf("show under the required policy: %+v %v", sh, err)
	}
	_, err = s.Install(ctx, api.RegistryInstall{Name: "notes", Consent: sh.ConsentDigest})
	wantCode(t, err, fault.SourceUntrusted, "not signed")
	if _, err := pk.Show(ctx, "notes"); !fault.Is(err, fault.SourceNotFound) {
		t.Fatalf("a refused install installed: %v", err)
	}
	open := newRegistriesOver(t, pk, "una="+dir)
	if sh, err := open.Show(ctx, "notes", "", ""); err != nil || !sh.Installable || sh.Refusal != nil {
		t.Fatalf("show under the optional policy: %+v %v", sh, err)
	}
}
