package slacktest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
)

// signHex is Slack's request signature: v0=HMAC-SHA256 over
// "v0:<timestamp>:<body>" with the signing secret, hex-encoded.
func signHex(secret, ts string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("v0:" + ts + ":"))
	m.Write(body)
	return "v0=" + hex.EncodeToString(m.Sum(nil))
}
