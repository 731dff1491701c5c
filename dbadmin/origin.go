package dbadmin

import (
	"errors"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"
)

// The desktop client's origins, always allowed.
var desktopOrigins = []string{"tauri://localhost", "http://tauri.localhost"}

// originAllowed says whether a browser page from origin may use the
// listener: a page of this machine (http or https on localhost,
// 127.0.0.0/8 or [::1], any port), the desktop client, or an origin
// listed in allowed_origins. A request without Origin (no browser) is not
// checked here.
func (l *listener) originAllowed(origin string) bool {
	n, err := parseOrigin(origin)
	if err != nil {
		return false
	}
	if slices.Contains(desktopOrigins, n) || slices.Contains(l.set.origins, n) {
		return true
	}
	u, _ := url.Parse(n)
	if u.Scheme != "http" && u.Scheme != "https" {
		return false
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Zone() == "" && ip.Unmap().IsLoopback()
}

// parseOrigin normalises a serialised origin, scheme://host[:port], as a
// browser sends it: the scheme and host lowercased, nothing after the
// authority (a trailing "/" is dropped). Anything else ("null", a path, a
// user, a wildcard) is an error saying what is wrong.
func parseOrigin(s string) (string, error) {
	u, err := url.Parse(strings.TrimSuffix(s, "/"))
	switch {
	case err != nil:
		return "", errors.New("not a URL")
	case u.Scheme == "" || u.Host == "" || u.Opaque != "":
		return "", errors.New("it needs a scheme and a host")
	case u.User != nil:
		return "", errors.New("an origin has no user part")
	case u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return "", errors.New("an origin has no path, query or fragment")
	case strings.ContainsAny(u.Host, "*?"):
		return "", errors.New("wildcards are not accepted: list each origin")
	}
	scheme, host := strings.ToLower(u.Scheme), strings.ToLower(u.Host)
	// A browser leaves a scheme's default port out of the Origin it sends.
	if port := u.Port(); (scheme == "https" && port == "443") || (scheme == "http" && port == "80") {
		host = strings.ToLower(u.Hostname())
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
	}
	return scheme + "://" + host, nil
}

// hostAllowed says whether a request's Host header names this listener:
// any host while it is bound beyond loopback; bound to loopback, only
// localhost, 127.0.0.0/8 or [::1] (any port), so a page whose name was
// rebound to 127.0.0.1 (DNS rebinding) reaches nothing.
func (l *listener) hostAllowed(hostHeader string) bool {
	if ip, err := netip.ParseAddr(l.set.bind); err != nil || !ip.IsLoopback() {
		return true
	}
	host := hostHeader
	if h, _, err := net.SplitHostPort(hostHeader); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Zone() == "" && ip.Unmap().IsLoopback()
}
