// Package credentials signs sources in to services with OAuth 2.0 as a
// public client, and keeps their tokens outside the palace.
//
//   - Provider is a source's [oauth] table (FromManifest); its Digest
//     names the client, endpoints and scopes a token belongs to.
//   - Flows runs sign-ins (Start, WaitFor, Close): the device flow
//     (RFC 8628) and the browser flow (an authorisation code with PKCE
//     S256, redirected to a one-shot listener on 127.0.0.1), one waiting
//     per key, each reported once.
//   - Refresh renews a token with its refresh token.
//   - Store (Open) keeps tokens by key in credentials.dir/oauth, one file
//     per key that only the daemon's user can read (backend file; auto is
//     file too: no desktop keyring is used).
//   - Token never prints, logs or marshals its secrets.
//
// Nothing a provider sends is trusted: requests are bounded in time and
// size, follow no redirect, and errors repeat a provider's error code,
// never its text, a token, a code or a verifier.
package credentials
