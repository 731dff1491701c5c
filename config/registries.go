package config

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"

	"github.com/loci-dev/loci/fault"
)

// registryName is a registry's name in mining.registries ("NAME=URL"):
// the same rule as the registry client's (sources/registry), kept in
// agreement by services' TestConfigAndTheRegistryClientAgree.
var registryName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// bundledRegistry is the name reserved for the packages shipped in loci.
const bundledRegistry = "bundled"

// RegistryRule says what a registry in mining.registries is: the help of
// a location refused.
const RegistryRule = `a registry is "URL" or "NAME=URL" where URL is https://..., http:// to 127.0.0.1, [::1] or localhost only, file:///abs/path or /abs/path`

// checkRegistries checks mining.registries' entries as the registry
// client will read them, without reading any: "URL" or "NAME=URL", a
// name of lowercase letters, digits, ".", "_" and "-" given once and not
// "bundled", and a location that is https://, http:// to loopback
// (127.0.0.1, [::1] or localhost), file:///abs/path or an absolute path.
func checkRegistries(entries []string) error {
	seen := map[string]int{}
	for i, e := range entries {
		key := fmt.Sprintf("mining.registries[%d]", i)
		e = strings.TrimSpace(e)
		loc := e
		if n, rest, ok := strings.Cut(e, "="); ok && !strings.ContainsAny(n, ":/") {
			name := strings.TrimSpace(n)
			loc = strings.TrimSpace(rest)
			switch j, dup := seen[name]; {
			case name == bundledRegistry:
				return bad(key, "the name %q is reserved for the packages bundled with loci: name the registry otherwise", name)
			case !registryName.MatchString(name):
				return bad(key, "%q is not a registry name (lowercase letters, digits, \".\", \"_\" and \"-\", at most 63)", name)
			case dup:
				return bad(key, "the name %q is given twice (also mining.registries[%d]): each registry needs its own name", name, j)
			}
			seen[name] = i
		}
		if why := RegistryLocationProblem(loc); why != "" {
			// Built whole (fault.Newf clips each string argument).
			return fault.New(fault.ConfigInvalid, key+": "+why,
				"correct "+key+" in the configuration file, environment or flags: "+RegistryRule)
		}
	}
	return nil
}

// RegistryLocationProblem says what is wrong with a registry's location
// ("" nothing): the rule the registry client applies when it starts
// (sources/registry, which also refuses, at each connection, a
// localhost that does not resolve to loopback). A URL's user and
// password never show in the answer.
func RegistryLocationProblem(loc string) string {
	if loc == "" {
		return "the location is empty"
	}
	if strings.HasPrefix(loc, "/") {
		return ""
	}
	u, err := url.Parse(loc)
	if err != nil {
		return "not a URL or an absolute path"
	}
	shown := loc
	if u.User != nil {
		shown = u.Redacted()
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return "a file:// registry is on this machine (file:///path)"
		}
		if !strings.HasPrefix(u.Path, "/") {
			return "a file:// registry's path is absolute"
		}
		return ""
	case "https", "http":
		if u.Host == "" {
			return "the URL " + shown + " has no host"
		}
		if u.Scheme == "https" {
			return ""
		}
		host := u.Hostname()
		if ip := net.ParseIP(host); (ip != nil && ip.IsLoopback()) || (ip == nil && strings.EqualFold(host, "localhost")) {
			return ""
		}
		return fmt.Sprintf("http:// is allowed to loopback only, not %s: serve the registry over https://", host)
	case "":
		return fmt.Sprintf("%q is a relative path", shown)
	}
	return fmt.Sprintf("%s:// is not a registry's scheme", u.Scheme)
}
