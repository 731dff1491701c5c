package dbadmin

import (
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"github.com/loci-dev/loci/config"
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

// parseOrigin normalises a serialised origin by the configuration's one
// rule (config.NormalizeOrigin), so db.allowed_origins, `loci doctor` and
// the listener accept and refuse the same.
func parseOrigin(s string) (string, error) { return config.NormalizeOrigin(s) }

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
