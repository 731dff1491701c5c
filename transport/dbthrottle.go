package transport

import (
	"net/http"
	"time"
)

// RefusedSignIn records a sign-in the database admin listener refused
// from remote (its host:port) in the record of refused tokens the REST
// API keeps, so a brute force on either port slows both; it says how long
// the refusal's answer waits and, once the address is throttled, after how
// many seconds it may try again (0: not throttled). The daemon hands it to
// the listener (dbadmin.Throttle).
func (s *Server) RefusedSignIn(remote string) (wait time.Duration, retryAfter int) {
	v := s.throttle().refused(clientKey(&http.Request{RemoteAddr: remote}))
	if !v.throttled {
		return v.wait, 0
	}
	return v.wait, v.retryAfter
}
