// Package credentials signs sources in to services (OAuth 2.0: the
// device flow, and the browser flow with PKCE and a one-shot loopback
// redirect listener) and keeps their tokens where credentials.backend
// says, outside the palace, in files only the daemon's user can read.
package credentials
