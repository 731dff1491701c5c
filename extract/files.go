package extract

import (
	"path"
	"regexp"
	"strings"
)

// lockfiles are the names of dependency lockfiles: pinned versions and
// hashes, written by tools, never prose.
var lockfiles = map[string]bool{
	"go.sum": true, "go.work.sum": true, "package-lock.json": true, "npm-shrinkwrap.json": true,
	"pnpm-lock.yaml": true, "bun.lockb": true, "composer.lock": true, "Gemfile.lock": true,
	"Cargo.lock": true, "poetry.lock": true, "Pipfile.lock": true, "yarn.lock": true,
	"flake.lock": true, "mix.lock": true, "pubspec.lock": true, "Podfile.lock": true,
	"packages.lock.json": true, "gradle.lockfile": true, "uv.lock": true, "deno.lock": true,
}

// generatedRE is the header of a generated file, in Go's convention
// (https://go.dev/s/generatedcode), which other generators follow: a
// line "Code generated ... DO NOT EDIT." behind any comment marker.
var generatedRE = regexp.MustCompile(`(?m)^\W{0,4}\s*Code generated .*DO NOT EDIT\.?`)

// minifiedLine is the line length past which a script or style sheet is
// minified: written for machines, not people.
const minifiedLine = 1000

// Unread says why a mined file is not read by extraction ("" when it is):
// a lockfile (go.sum, package-lock.json, *.lock...), a generated file (a
// "Code generated ... DO NOT EDIT" header in its first 4 KB) or a minified
// one (*.min.js, *.min.css, or a .js/.css line over 1,000 characters).
// head is the document's beginning (its first chunk).
func Unread(p, head string) string {
	base := path.Base(strings.ReplaceAll(p, "\\", "/"))
	switch {
	case lockfiles[base] || strings.HasSuffix(base, ".lock"):
		return "lockfile"
	case generatedRE.MatchString(head[:min(len(head), 4096)]):
		return "generated"
	case strings.HasSuffix(base, ".min.js") || strings.HasSuffix(base, ".min.css") || strings.HasSuffix(base, ".map"):
		return "minified"
	case strings.HasSuffix(base, ".js") || strings.HasSuffix(base, ".css") || strings.HasSuffix(base, ".mjs"):
		for _, l := range strings.SplitN(head, "\n", 50) {
			if len(l) > minifiedLine {
				return "minified"
			}
		}
	}
	return ""
}
