package pack

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/loci-dev/loci/fault"
)

const oauthTable = `
[oauth]
provider = "GitHub"
client_id = "Iv1.loci"
device_authorization_url = "https://github.com/login/device/code"
authorization_url = "https://github.com/login/oauth/authorize"
token_url = "https://github.com/login/oauth/access_token"
scopes = ["repo", "read:user"]
`

func TestManifestOAuthTable(t *testing.T) {
	m, err := ParseManifest([]byte(goodManifest + oauthTable))
	if err != nil {
		t.Fatal(err)
	}
	o := m.OAuth
	if o == nil || o.Provider != "GitHub" || o.ClientID != "Iv1.loci" || o.TokenURL != "https://github.com/login/oauth/access_token" ||
		strings.Join(o.Scopes, " ") != "repo read:user" || strings.Join(o.Flows, ",") != "device,browser" {
		t.Fatalf("oauth: %+v", o)
	}
	// Flows default to those whose endpoint is given.
	browserOnly := strings.Replace(goodManifest+oauthTable, `device_authorization_url = "https://github.com/login/device/code"`, "", 1)
	if m, err := ParseManifest([]byte(browserOnly)); err != nil || strings.Join(m.OAuth.Flows, ",") != "browser" {
		t.Fatalf("browser only: %v %v", m, err)
	}
	named := goodManifest + oauthTable + `flows = ["browser"]` + "\n"
	if m, err := ParseManifest([]byte(named)); err != nil || strings.Join(m.OAuth.Flows, ",") != "browser" {
		t.Fatalf("flows named: %v %v", m, err)
	}
	loop := strings.ReplaceAll(goodManifest+oauthTable, "https://github.com", "http://127.0.0.1:8080")
	if _, err := ParseManifest([]byte(loop)); err != nil {
		t.Fatalf("http to loopback is allowed: %v", err)
	}
}

func TestManifestWithoutOAuthIsUnchanged(t *testing.T) {
	m, err := ParseManifest([]byte(goodManifest))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(m)
	if m.OAuth != nil || strings.Contains(string(b), "oauth") {
		t.Fatalf("a manifest without [oauth] grew one: %s", b)
	}
}

func TestManifestOAuthRefusesEachBadField(t *testing.T) {
	full := goodManifest + oauthTable
	for name, c := range map[string]struct{ from, to, want string }{
		"a client secret":      {`client_id = "Iv1.loci"`, "client_id = \"Iv1.loci\"\nclient_secret = \"s3cret\"", "line 21: oauth.client_secret: a source signs in as a public client"},
		"no provider":          {`provider = "GitHub"`, ``, "oauth.provider: the service's name is required"},
		"no client id":         {`client_id = "Iv1.loci"`, ``, "oauth.client_id: the client id registered at the provider is required"},
		"a client id spaced":   {`client_id = "Iv1.loci"`, `client_id = "Iv1 loci"`, "oauth.client_id:"},
		"no token url":         {`token_url = "https://github.com/login/oauth/access_token"`, ``, "oauth.token_url: the provider's endpoint is required"},
		"plain http":           {`token_url = "https://github.com/login/oauth/access_token"`, `token_url = "http://github.com/token"`, "oauth.token_url: \"http://github.com/token\" is plain http to another machine"},
		"ftp":                  {`authorization_url = "https://github.com/login/oauth/authorize"`, `authorization_url = "ftp://github.com/a"`, "oauth.authorization_url: \"ftp://github.com/a\" is not https"},
		"relative":             {`device_authorization_url = "https://github.com/login/device/code"`, `device_authorization_url = "/login/device/code"`, "oauth.device_authorization_url: \"/login/device/code\" is not an absolute URL"},
		"a user in the url":    {`token_url = "https://github.com/login/oauth/access_token"`, `token_url = "https://me:pw@github.com/t"`, "oauth.token_url: a URL with a user or password in it is refused"},
		"a fragment":           {`token_url = "https://github.com/login/oauth/access_token"`, `token_url = "https://github.com/t#x"`, "oauth.token_url: an endpoint has no fragment"},
		"a bad scope":          {`scopes = ["repo", "read:user"]`, `scopes = ["repo", "read user"]`, "oauth.scopes: \"read user\" is not a scope"},
		"an unknown flow":      {`scopes = ["repo", "read:user"]`, "scopes = []\nflows = [\"implicit\"]", "oauth.flows: \"implicit\" is not a flow (device, browser)"},
		"a flow twice":         {`scopes = ["repo", "read:user"]`, "scopes = []\nflows = [\"device\", \"device\"]", "oauth.flows: \"device\" is named twice"},
		"a flow without url":   {`authorization_url = "https://github.com/login/oauth/authorize"`, "flows = [\"browser\"]", "oauth.authorization_url: the browser flow is named in flows but has no endpoint"},
		"no flow can run":      {`authorization_url = "https://github.com/login/oauth/authorize"`, ``, ""},
		"an unknown oauth key": {`scopes = ["repo", "read:user"]`, "scope = \"repo\"", "line 24: unknown key oauth.scope (the oauth keys are provider, client_id, device_authorization_url, authorization_url, token_url, scopes, flows)"},
	} {
		t.Run(name, func(t *testing.T) {
			text := strings.Replace(full, c.from, c.to, 1)
			if name == "no flow can run" {
				text = strings.Replace(text, `device_authorization_url = "https://github.com/login/device/code"`, "", 1)
				c.want = "oauth.flows: no flow can run"
			}
			if text == full {
				t.Fatalf("the edit %q did not apply", c.from)
			}
			_, err := ParseManifest([]byte(text))
			if !fault.Is(err, fault.InputInvalid) || !strings.Contains(fault.As(err).Msg, c.want) {
				t.Fatalf("want loci::input::invalid saying %q, got %v", c.want, err)
			}
			if fault.As(err).Help != ManifestHelp {
				t.Fatalf("help %q", fault.As(err).Help)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Fatalf("the error repeats the secret: %v", err)
			}
		})
	}
}
