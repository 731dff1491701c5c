package services

import (
	"testing"

	"github.com/loci-dev/loci/config"
	"github.com/loci-dev/loci/sources/registry"
)

// TestConfigAndTheRegistryClientAgree: loci doctor (config.Validate) and
// loci serve (registry.ParseSpecs and registry.New) take and refuse the
// same mining.registries entries (trial 30: doctor said "configuration
// valid" for entries serve refused).
func TestConfigAndTheRegistryClientAgree(t *testing.T) {
	entries := []string{"https://reg.example.com/loci", "mine=http://127.0.0.1:8080/index.json", "http://[::1]/r/", "http://localhost:9/",
		"file:///srv/loci-registry", "/srv/other/index.json", "file://localhost/srv/x", "two=https://user:pw@reg.example.com/two",
		"http://10.1.2.3/reg", "relative/reg", "ftp://x/y", "", "  ", "file://host/srv/x", "file:rel", "bundled=/srv/x", "Bad=/srv/x",
		"https:///nohost", "http://user:pw@reg.example.com/", "http://127.0.0.1.nip.io/", "x=", "=/srv/x", "a.b-c_d=/srv/y"}
	for _, e := range entries {
		c := config.Default(func(string) (string, bool) { return "", false })
		c.Palace.Path = "/tmp/palace"
		c.Mining.Registries = []string{e}
		cfgErr := c.Validate()
		specs, err := registry.ParseSpecs([]string{e})
		if err == nil {
			_, err = registry.New(registry.Options{Registries: specs})
		}
		if (cfgErr == nil) != (err == nil) {
			t.Errorf("%q: the configuration says %v, the registry client %v", e, cfgErr, err)
		}
	}
	c := config.Default(func(string) (string, bool) { return "", false })
	c.Palace.Path = "/tmp/palace"
	c.Mining.Registries = []string{"a=/srv/x", "a=/srv/y"}
	specs, err := registry.ParseSpecs(c.Mining.Registries)
	if c.Validate() == nil || err == nil || specs != nil {
		t.Fatal("a name given twice passes")
	}
}
