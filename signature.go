package askbridge

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The agent's side of result callbacks (ask-user.md §8): the form a
// request's callback URL must have, and the Standard Webhooks signature a
// receiver checks. The bridge's dispatcher lives in the engine.

// EventCallbackFailed is the event of a callback attempt that failed
// (redis-protocol.md, Additions v1.1); its Error says why, and whether
// another try follows.
const EventCallbackFailed EventKind = "callback_failed"

// MaxCallbackBytes bounds a request's callback URL.
const MaxCallbackBytes = 2048

// MinCallbackSecretBytes is the shortest callback secret (characters, or
// decoded bytes of a whsec_ secret): the project's rule for secrets.
const MinCallbackSecretBytes = 16

// DefaultCallbackTolerance is how far a callback's timestamp may be from
// the receiver's clock (Standard Webhooks recommends five minutes).
const DefaultCallbackTolerance = 5 * time.Minute

// Headers of a callback (Standard Webhooks).
const (
	HeaderWebhookID        = "webhook-id"
	HeaderWebhookTimestamp = "webhook-timestamp"
	HeaderWebhookSignature = "webhook-signature"
)

// ParseCallbackURL checks the form of a request's callback: an absolute
// http or https URL with a host, at most MaxCallbackBytes, without spaces,
// control characters, credentials or a fragment. Whether the bridge may
// call it is CallbackPolicy.Check's.
func ParseCallbackURL(raw string) (*url.URL, error) {
	if len(raw) > MaxCallbackBytes {
		return nil, fmt.Errorf("callback: must be at most %d bytes (got %d)", MaxCallbackBytes, len(raw))
	}
	if strings.IndexFunc(raw, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0 {
		return nil, errors.New("callback: must not contain spaces or control characters")
	}
	u, err := url.Parse(raw)
	if err != nil {
		reason := "unparseable"
		var ue *url.Error
		if errors.As(err, &ue) {
			reason = ue.Err.Error()
		}
		return nil, fmt.Errorf("callback: not a URL (%s)", reason)
	}
	switch {
	case u.Scheme != "https" && u.Scheme != "http":
		return nil, errors.New("callback: must be an https:// URL (http:// only to hosts the bridge's operator allows)")
	case u.Opaque != "" || u.Hostname() == "":
		return nil, errors.New("callback: must name a host, as in https://agents.example.com/hooks/askbridge")
	case u.User != nil:
		return nil, errors.New("callback: must not carry a user name or password; the bridge signs every callback instead")
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return nil, errors.New("callback: must not have a fragment (#…)")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("callback: port %q is not 1 to 65535", p)
		}
	}
	return u, nil
}

// CallbackKey is the HMAC key of a callback secret: the base64-decoded
// bytes after the prefix of a "whsec_…" secret (the form the Standard
// Webhooks libraries make and take), else the secret's own bytes. It
// refuses a secret shorter than MinCallbackSecretBytes.
func CallbackKey(secret string) ([]byte, error) {
	if rest, ok := strings.CutPrefix(secret, "whsec_"); ok {
		key, err := base64.StdEncoding.DecodeString(rest)
		if err != nil {
			return nil, errors.New("a secret that starts with whsec_ must be standard base64 after it (make one with: echo whsec_$(openssl rand -base64 32))")
		}
		if len(key) < MinCallbackSecretBytes {
			return nil, fmt.Errorf("a whsec_ secret must decode to at least %d bytes (got %d)", MinCallbackSecretBytes, len(key))
		}
		return key, nil
	}
	if len(secret) < MinCallbackSecretBytes {
		return nil, fmt.Errorf("must be at least %d characters (make one with: openssl rand -hex 32)", MinCallbackSecretBytes)
	}
	return []byte(secret), nil
}

// CallbackSignature is the webhook-signature header value of a callback:
// "v1," and the base64 HMAC-SHA256, with key, of "<id>.<timestamp>.<body>".
func CallbackSignature(key []byte, id string, timestamp int64, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + strconv.FormatInt(timestamp, 10) + "."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}
