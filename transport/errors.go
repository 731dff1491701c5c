package transport

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/loci-dev/loci/fault"
)

// handler is an HTTP handler that returns its failure.
type handler func(w http.ResponseWriter, r *http.Request) error

// writeJSON renders v with status.
func writeJSON(w http.ResponseWriter, status int, v any) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// answerOK renders v with 200, or returns err: the end of a route that
// calls one service method.
func answerOK(w http.ResponseWriter, v any, err error) error {
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, v)
}

// answerInstalled renders v with 201, or 200 when the install replaced a
// version (replaced not empty), or returns err.
func answerInstalled(w http.ResponseWriter, v any, replaced string, err error) error {
	if err != nil {
		return err
	}
	status := http.StatusCreated
	if replaced != "" {
		status = http.StatusOK
	}
	return writeJSON(w, status, v)
}

// renderError writes the error body with its code's status and logs the
// cause of server failures (never request bodies or headers).
func renderError(log *slog.Logger, w http.ResponseWriter, r *http.Request, err error) {
	fe := fault.As(err)
	status := fe.HTTPStatus()
	if status >= 500 {
		log.Error("request failed", "method", r.Method, "path", r.URL.Path, "code", fe.Code, "err", err)
	} else {
		log.Debug("request refused", "method", r.Method, "path", r.URL.Path, "code", fe.Code, "msg", fe.Msg)
	}
	if fe.RetryAfter > 0 {
		// A passing failure (a shared store out of reach): try again then.
		w.Header().Set("Retry-After", strconv.Itoa(fe.RetryAfter))
	}
	if fe.Code == fault.AuthUnauthorized {
		w.Header().Set("WWW-Authenticate", "Bearer")
	}
	if hasBody(r) {
		// The body may be unread (refused before decoding): closing spares
		// reading the rest of it just to keep the connection.
		w.Header().Set("Connection", "close")
	}
	_ = writeJSON(w, status, fe.Body())
}
