package matrix

import (
	"context"
	"errors"
	"net/http"
	"time"

	"maunium.net/go/mautrix"

	"github.com/askbridge/askbridge/engine"
)

// errEncrypted is the reason a prompt to an end-to-end encrypted room is
// refused.
const errEncrypted = "the room is end-to-end encrypted, which the bridge does not serve yet: " +
	"route the question to an unencrypted room"

// classify turns an error of a client-server API call into the engine's
// kinds: M_LIMIT_EXCEEDED (429) → RateLimited with retry_after_ms;
// M_UNKNOWN_TOKEN and M_MISSING_TOKEN → Permanent (bad credentials, see
// badToken); any other 4xx (M_FORBIDDEN: not in the room or without the
// power to post; M_NOT_FOUND; an unknown room) → Permanent with the
// homeserver's words; 5xx, network trouble and anything else → Temporary.
func classify(op string, err error) *engine.SendError {
	if err == nil {
		return nil
	}
	se := &engine.SendError{Kind: engine.Temporary, Reason: err.Error(), Err: wrap(op, err)}
	var he mautrix.HTTPError
	if !errors.As(err, &he) {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			se.Reason = "matrix: " + op + ": " + err.Error()
		}
		return se
	}
	status := 0
	if he.Response != nil {
		status = he.Response.StatusCode
	}
	if he.RespError != nil {
		se.Reason = reason(he.RespError)
	}
	switch {
	case status == http.StatusTooManyRequests || (he.RespError != nil && he.RespError.ErrCode == mautrix.MLimitExceeded.ErrCode):
		se.Kind = engine.RateLimited
		se.RetryAfter = retryAfter(he)
	case status >= 400 && status < 500:
		se.Kind = engine.Permanent
		if se.Reason == err.Error() {
			se.Reason = http.StatusText(status)
		}
	}
	return se
}

// reason is the homeserver's own words: "M_FORBIDDEN: User @bot:x not in
// room !r:x".
func reason(re *mautrix.RespError) string {
	switch {
	case re.ErrCode != "" && re.Err != "":
		return re.ErrCode + ": " + re.Err
	case re.ErrCode != "":
		return re.ErrCode
	}
	return re.Err
}

// retryAfter is a 429's wait: retry_after_ms of the body, else the
// Retry-After header in seconds, else a second (0 would spin).
func retryAfter(he mautrix.HTTPError) time.Duration {
	if he.RespError != nil {
		if ms, ok := he.RespError.ExtraData["retry_after_ms"].(float64); ok && ms > 0 {
			return time.Duration(ms) * time.Millisecond
		}
	}
	if he.Response != nil {
		if d, err := time.ParseDuration(he.Response.Header.Get("Retry-After") + "s"); err == nil && d > 0 {
			return d
		}
	}
	return time.Second
}

// badToken reports whether err says the access token is not (or no
// longer) valid.
func badToken(err error) bool {
	return errors.Is(err, mautrix.MUnknownToken) || errors.Is(err, mautrix.MMissingToken)
}

// notFound reports whether err is the homeserver's M_NOT_FOUND (404).
func notFound(err error) bool {
	var he mautrix.HTTPError
	if errors.As(err, &he) && he.Response != nil && he.Response.StatusCode == http.StatusNotFound {
		return true
	}
	return errors.Is(err, mautrix.MNotFound)
}

type opError struct {
	op  string
	err error
}

func (e *opError) Error() string { return "matrix: " + e.op + ": " + e.err.Error() }
func (e *opError) Unwrap() error { return e.err }

func wrap(op string, err error) error { return &opError{op: op, err: err} }
