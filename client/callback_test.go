package client_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/client"
)

// specSign signs as the Standard Webhooks specification says, written here
// from the specification and not from the bridge's code: base64 of
// HMAC-SHA256 over "<id>.<timestamp>.<body>", the key being the decoded
// bytes of a whsec_ secret and the secret's bytes otherwise.
func specSign(t *testing.T, secret, id string, ts int64, body []byte) string {
	t.Helper()
	key := []byte(secret)
	if len(secret) > 6 && secret[:6] == "whsec_" {
		var err error
		if key, err = base64.StdEncoding.DecodeString(secret[6:]); err != nil {
			t.Fatal(err)
		}
	}
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%s.%d.", id, ts)
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

func TestVerifyCallback(t *testing.T) {
	const (
		raw   = "a-callback-secret-of-32-chars!!!"
		other = "another-secret-of-enough-length"
	)
	whsec := "whsec_" + base64.StdEncoding.EncodeToString([]byte("sixteen+ bytes of key material"))
	body := []byte(`{"id":"deploy-42","status":"answered","answers":{"answers":{"deploy_target":["Production"]}},"createdAt":1,"endedAt":2}`)
	now := time.Now().Unix()
	headers := func(id string, ts int64, sig string) http.Header {
		h := http.Header{}
		h.Set("webhook-id", id)
		h.Set("webhook-timestamp", fmt.Sprint(ts))
		h.Set("webhook-signature", sig)
		return h
	}
	tests := []struct {
		name    string
		secret  string
		header  http.Header
		body    []byte
		wantErr error
	}{
		{"raw secret", raw, headers("deploy-42", now, specSign(t, raw, "deploy-42", now, body)), body, nil},
		{"whsec secret", whsec, headers("deploy-42", now, specSign(t, whsec, "deploy-42", now, body)), body, nil},
		{"one of several signatures", raw, headers("deploy-42", now,
			"v1,bm90IHRoaXMgb25l v2,ignored "+specSign(t, raw, "deploy-42", now, body)), body, nil},
		{"a minute old", raw, headers("deploy-42", now-60, specSign(t, raw, "deploy-42", now-60, body)), body, nil},
		{"wrong secret", raw, headers("deploy-42", now, specSign(t, other, "deploy-42", now, body)), body, client.ErrCallbackSignature},
		{"body changed", raw, headers("deploy-42", now, specSign(t, raw, "deploy-42", now, body)),
			[]byte(`{"id":"deploy-42","status":"no_answer"}`), client.ErrCallbackSignature},
		{"id changed", raw, headers("deploy-43", now, specSign(t, raw, "deploy-42", now, body)), body, client.ErrCallbackSignature},
		{"too old", raw, headers("deploy-42", now-600, specSign(t, raw, "deploy-42", now-600, body)), body, client.ErrCallbackTimestamp},
		{"from the future", raw, headers("deploy-42", now+600, specSign(t, raw, "deploy-42", now+600, body)), body, client.ErrCallbackTimestamp},
		{"no signature", raw, headers("deploy-42", now, ""), body, client.ErrCallbackSignature},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := client.VerifyCallback(tc.secret, tc.header, tc.body, 0)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.ID != "deploy-42" || res.Status != askbridge.StatusAnswered || res.Answers.Answers["deploy_target"][0] != "Production" {
				t.Errorf("result %+v", res)
			}
		})
	}
}

// A tolerance given is used instead of the default.
func TestVerifyCallbackTolerance(t *testing.T) {
	const secret = "a-callback-secret-of-32-chars!!!"
	body := []byte(`{"id":"q","status":"no_answer","reason":"timeout"}`)
	ts := time.Now().Add(-time.Hour).Unix()
	h := http.Header{}
	h.Set("webhook-id", "q")
	h.Set("webhook-timestamp", fmt.Sprint(ts))
	h.Set("webhook-signature", specSign(t, secret, "q", ts, body))
	if _, err := client.VerifyCallback(secret, h, body, 0); !errors.Is(err, client.ErrCallbackTimestamp) {
		t.Errorf("an hour old with the default tolerance: %v", err)
	}
	if res, err := client.VerifyCallback(secret, h, body, 2*time.Hour); err != nil || res.Reason != askbridge.ReasonTimeout {
		t.Errorf("an hour old with a two-hour tolerance: %+v, %v", res, err)
	}
}
