// Package ui is the web dashboard: plain HTML, CSS and ES modules in
// static/, embedded in the binary and served on /ui when web.enable is
// set (Handler). Assets are served under /ui/v/<version>/, the version
// being a hash of every file, so they are cached for good; the page
// itself is never cached. Every answer carries a strict
// Content-Security-Policy: scripts and styles from this origin only, no
// inline script or style, no other origin.
package ui
