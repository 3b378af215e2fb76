package client

import (
	"crypto/hmac"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/askbridge/askbridge"
)

// Errors of VerifyCallback, for errors.Is.
var (
	// ErrCallbackSignature: no signature of the callback matches the
	// secret (or the headers are missing): it did not come from a bridge
	// holding the secret, or it was changed on the way.
	ErrCallbackSignature = errors.New("callback signature does not match")
	// ErrCallbackTimestamp: the callback's timestamp is further from now
	// than the tolerance (a replayed call, or a clock far off).
	ErrCallbackTimestamp = errors.New("callback timestamp is outside the tolerance")
)

// VerifyCallback checks a result callback the bridge POSTed (docs/callbacks.md)
// and returns the result it carries. secret is the bridge's
// ASKUSER_CALLBACK_SECRET (a "whsec_…" secret is base64-decoded, as the
// bridge does); header and body are the request's, the body read whole and
// unchanged. It checks, as Standard Webhooks says, that one of the
// space-separated "v1,<base64>" signatures of webhook-signature is the
// HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>" (compared in
// constant time), and that webhook-timestamp is within tolerance of now
// (tolerance ≤ 0: askbridge.DefaultCallbackTolerance). The id is the
// question id: a receiver that may see a callback twice (the bridge
// retries until it gets a 2xx) keeps the ids it handled.
func VerifyCallback(secret string, header http.Header, body []byte, tolerance time.Duration) (askbridge.Result, error) {
	return verifyCallbackAt(time.Now(), secret, header, body, tolerance)
}

func verifyCallbackAt(now time.Time, secret string, header http.Header, body []byte, tolerance time.Duration) (askbridge.Result, error) {
	if tolerance <= 0 {
		tolerance = askbridge.DefaultCallbackTolerance
	}
	key, err := askbridge.CallbackKey(secret)
	if err != nil {
		return askbridge.Result{}, fmt.Errorf("verify callback: the secret %v", err)
	}
	id := header.Get(askbridge.HeaderWebhookID)
	stamp := header.Get(askbridge.HeaderWebhookTimestamp)
	sigs := header.Get(askbridge.HeaderWebhookSignature)
	if id == "" || stamp == "" || sigs == "" {
		return askbridge.Result{}, fmt.Errorf("verify callback: %w: the webhook-id, webhook-timestamp and webhook-signature headers are required", ErrCallbackSignature)
	}
	ts, err := strconv.ParseInt(stamp, 10, 64)
	if err != nil {
		return askbridge.Result{}, fmt.Errorf("verify callback: %w: webhook-timestamp %q is not unix seconds", ErrCallbackSignature, stamp)
	}
	if d := now.Sub(time.Unix(ts, 0)); d > tolerance || d < -tolerance {
		return askbridge.Result{}, fmt.Errorf("verify callback: %w: it is %s off (tolerance %s)", ErrCallbackTimestamp, d.Round(time.Second), tolerance)
	}
	_, want, _ := strings.Cut(askbridge.CallbackSignature(key, id, ts, body), ",")
	wantMAC, _ := base64.StdEncoding.DecodeString(want)
	matched := false
	for _, sig := range strings.Fields(sigs) {
		version, value, ok := strings.Cut(sig, ",")
		if !ok || version != "v1" {
			continue
		}
		mac, err := base64.StdEncoding.DecodeString(value)
		if err == nil && hmac.Equal(mac, wantMAC) {
			matched = true
		}
	}
	if !matched {
		return askbridge.Result{}, fmt.Errorf("verify callback: %w", ErrCallbackSignature)
	}
	var res askbridge.Result
	if err := json.Unmarshal(body, &res); err != nil {
		return askbridge.Result{}, fmt.Errorf("verify callback: the body is not a result: %w", err)
	}
	if res.ID != "" && res.ID != id {
		return askbridge.Result{}, fmt.Errorf("verify callback: %w: the body's id %q is not webhook-id %q", ErrCallbackSignature, res.ID, id)
	}
	return res, nil
}
