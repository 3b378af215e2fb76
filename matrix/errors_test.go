package matrix

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"maunium.net/go/mautrix"

	"github.com/askbridge/askbridge/engine"
)

// httpErr is the error mautrix returns for a homeserver's answer.
func httpErr(status int, code, msg string, extra map[string]any) error {
	data := map[string]any{"errcode": code, "error": msg}
	for k, v := range extra {
		data[k] = v
	}
	return mautrix.HTTPError{
		Response:  &http.Response{StatusCode: status, Header: http.Header{}},
		RespError: &mautrix.RespError{ErrCode: code, Err: msg, ExtraData: data, StatusCode: status},
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		kind     engine.ErrorKind
		wait     time.Duration
		reason   string
		badToken bool
	}{
		{"rate limited", httpErr(429, "M_LIMIT_EXCEEDED", "Too Many Requests", map[string]any{"retry_after_ms": float64(1500)}), engine.RateLimited, 1500 * time.Millisecond, "M_LIMIT_EXCEEDED: Too Many Requests", false},
		{"rate limited without a wait", httpErr(429, "M_LIMIT_EXCEEDED", "slow down", nil), engine.RateLimited, time.Second, "M_LIMIT_EXCEEDED: slow down", false},
		{"not in the room", httpErr(403, "M_FORBIDDEN", "User @bot:x is not in room !r:x", nil), engine.Permanent, 0, "M_FORBIDDEN: User @bot:x is not in room !r:x", false},
		{"not found", httpErr(404, "M_NOT_FOUND", "Room not found", nil), engine.Permanent, 0, "M_NOT_FOUND: Room not found", false},
		{"unknown token", httpErr(401, "M_UNKNOWN_TOKEN", "Invalid access token", nil), engine.Permanent, 0, "M_UNKNOWN_TOKEN: Invalid access token", true},
		{"server error", httpErr(500, "M_UNKNOWN", "Internal server error", nil), engine.Temporary, 0, "M_UNKNOWN: Internal server error", false},
		{"network", errors.New("dial tcp: connection refused"), engine.Temporary, 0, "dial tcp: connection refused", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			se := classify("send", tc.err)
			if se.Kind != tc.kind || se.RetryAfter != tc.wait || se.Reason != tc.reason {
				t.Errorf("classify = %v/%v/%q, want %v/%v/%q", se.Kind, se.RetryAfter, se.Reason, tc.kind, tc.wait, tc.reason)
			}
			if got := badToken(tc.err); got != tc.badToken {
				t.Errorf("badToken = %v, want %v", got, tc.badToken)
			}
			if !errors.Is(se, tc.err) && !errors.As(se, new(mautrix.HTTPError)) && tc.kind != engine.Temporary {
				t.Errorf("the SendError does not wrap the homeserver's error")
			}
		})
	}
}

func TestStripFallback(t *testing.T) {
	tests := []struct{ in, want string }{
		{"2", "2"},
		{"> <@bot:x> Where should this deploy?\n> 1. Staging\n\n2", "2"},
		{"> quoted only", ""},
		{">not a fallback", ">not a fallback"},
	}
	for _, tc := range tests {
		if got := stripFallback(tc.in); got != tc.want {
			t.Errorf("stripFallback(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
