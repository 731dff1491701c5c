package services

// SignIn is the service of source sign-in (OAuth 2.0): flows started and
// waited for per source package or source configuration, tokens kept
// outside the palace and refreshed before expiry, a fresh access token
// handed to a run whose miner's credential is oauth.
type SignIn struct{}
