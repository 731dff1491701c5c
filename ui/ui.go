package ui

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net"
	"net/http"
	"path"
	"regexp"
	"sort"
	"strings"
)

//go:embed static
var files embed.FS

// CSP is the dashboard's Content-Security-Policy: nothing from another
// origin, no inline script or style, no framing. The one exception is the
// SQL view's WebSocket to the database admin listener, on another port of
// this machine (ws: on loopback, any port); a page reached by another host
// name may also open a WebSocket to that host (Policy).
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self' " + loopbackWS + "; " +
	"font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

const loopbackWS = "ws://localhost:* ws://127.0.0.1:*"

// hostName is a host a CSP source may name: a DNS name or an IPv4
// address (CSP has no syntax for IPv6 literals).
var hostName = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?$`)

// Policy is the CSP for a page reached at host (the request's Host): CSP,
// with ws://HOST:* added when host is neither localhost nor 127.0.0.1, so
// the SQL view reaches a listener opened beyond loopback on that host.
func Policy(host string) string {
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	name = strings.ToLower(name)
	if name == "" || name == "localhost" || name == "127.0.0.1" || !hostName.MatchString(name) {
		return CSP
	}
	return strings.Replace(CSP, loopbackWS, loopbackWS+" ws://"+name+":*", 1)
}

// Version is the hash of every dashboard file: the assets' URL prefix.
var Version = version()

func version() string {
	h := sha256.New()
	var names []string
	_ = fs.WalkDir(files, "static", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			names = append(names, p)
		}
		return nil
	})
	sort.Strings(names)
	for _, n := range names {
		b, _ := files.ReadFile(n)
		h.Write([]byte(n))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

var types = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
	".png":  "image/png",
	".json": "application/json",
}

// Handler serves /ui (redirected to /ui/), /ui/ (the page) and
// /ui/v/<version>/<file> (the assets); anything else under /ui is 404.
func Handler() http.Handler {
	page, _ := files.ReadFile("static/index.html")
	page = bytes.ReplaceAll(page, []byte("{{V}}"), []byte("/ui/v/"+Version))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", Policy(r.Host))
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		p := r.URL.Path
		switch {
		case p == "/ui":
			http.Redirect(w, r, "/ui/", http.StatusMovedPermanently)
		case p == "/ui/" || p == "/ui/index.html":
			h.Set("Content-Type", types[".html"])
			h.Set("Cache-Control", "no-cache")
			if r.Method != http.MethodHead {
				_, _ = w.Write(page)
			}
		case strings.HasPrefix(p, "/ui/v/"):
			rest := strings.TrimPrefix(p, "/ui/v/")
			ver, name, ok := strings.Cut(rest, "/")
			clean := path.Clean("/" + name)
			b, err := files.ReadFile("static" + clean)
			if !ok || err != nil || clean == "/index.html" {
				http.NotFound(w, r)
				return
			}
			ct, known := types[path.Ext(clean)]
			if !known {
				ct = "application/octet-stream"
			}
			h.Set("Content-Type", ct)
			if ver == Version {
				h.Set("Cache-Control", "public, max-age=31536000, immutable")
			} else {
				h.Set("Cache-Control", "no-cache") // a page of another version
			}
			if r.Method != http.MethodHead {
				_, _ = w.Write(b)
			}
		default:
			http.NotFound(w, r)
		}
	})
}
