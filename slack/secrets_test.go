package slack_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge/internal/platformtest"
	"github.com/askbridge/askbridge/slack"
	"github.com/askbridge/askbridge/store"
)

// Secrets of TestNoSecretLeavesTheChannel, which no other text contains.
const (
	canaryBot     = "xoxb-111-222-botcanary0123456789"
	canaryApp     = "xapp-1-A111-333-appcanary0123456789"
	canarySigning = "signing-canary-0123456789abcdef"
	canaryTicket  = "ticketcanary-0123456789-abcdef"
)

// faultGarbled: apps.connections.open answers a socket mode URL the
// dialer cannot parse (a proxy mangled it), and every other call hangs up.
const faultGarbled = "garbled socket URL"

// newBrokenAPI is a Slack Web API (and socket mode endpoint) whose calls
// fail with one fault, except the methods in answer: auth.test names the
// bot, apps.connections.open hands out a socket mode URL with a ticket, to
// this server's /link/ (which fails too) or, for FaultRefused, to a closed
// port.
func newBrokenAPI(t *testing.T, fault string, answer ...string) *platformtest.BrokenAPI {
	t.Helper()
	return platformtest.NewBrokenAPI(t, fault, platformtest.BrokenOptions{
		Route: func(r *http.Request) string {
			p := strings.TrimSuffix(r.URL.Path, "/")
			return p[strings.LastIndex(p, "/")+1:]
		},
		Works: func(m string) bool { return slices.Contains(answer, m) },
		Answer: func(b *platformtest.BrokenAPI, w http.ResponseWriter, _ *http.Request, m string) {
			w.Header().Set("Content-Type", "application/json")
			switch m {
			case "auth.test":
				io.WriteString(w, `{"ok":true,"user_id":"UBOT","bot_id":"BBOT","team_id":"T1"}`)
			case "apps.connections.open":
				host := strings.TrimPrefix(b.URL, "http://")
				switch fault {
				case platformtest.FaultRefused:
					host = b.Dead
				case faultGarbled:
					host = "%zz"
				}
				fmt.Fprintf(w, `{"ok":true,"url":"ws://%s/link/?ticket=%s&app_id=A111"}`, host, canaryTicket)
			}
		},
		CutBody: `{"ok":`,
		Other: func(w http.ResponseWriter, _ *http.Request) {
			if fault == faultGarbled {
				platformtest.HangUp(w, "")
			}
		},
		// The websocket is dialed, not called through the HTTP client.
		Dialed: func(m string) bool { return m == "link" },
	})
}

// TestNoSecretLeavesTheChannel points the channel at a Slack that fails in
// each way a network does (and at a proxy that quotes the request, with
// its Authorization header and form, in its error page, or mangles the
// socket mode URL so that the dialer quotes it) and checks that
// neither token, the signing secret nor a socket mode ticket appears in
// any log line (at debug level), in any error Send, Notify and Finish
// return, in their Reason, or in anything those errors wrap: while calling
// auth.test, apps.connections.open, dialing the socket mode URL, posting,
// opening a DM and editing.
func TestNoSecretLeavesTheChannel(t *testing.T) {
	t.Parallel()
	secrets := []string{canaryBot, canaryApp, canarySigning, canaryTicket}
	for _, fault := range platformtest.Faults(faultGarbled) {
		t.Run(fault, func(t *testing.T) {
			t.Parallel()
			var logs platformtest.SyncBuffer
			log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
			defer rdb.Close()
			coord := store.New(rdb, store.Options{Prefix: fmt.Sprintf("slsecret%d:", prefixSeq.Add(1)), Consumer: "leak"})
			channel := func(api *platformtest.BrokenAPI, app string) *slack.Channel {
				ch, err := slack.New(slack.Config{
					BotToken: canaryBot, AppToken: app, SigningSecret: canarySigning, APIURL: api.URL + "/api/",
					HTTPClient: &http.Client{Timeout: 300 * time.Millisecond, Transport: api},
					RetryMin:   20 * time.Millisecond, RetryMax: 100 * time.Millisecond,
				}, coord, log)
				if err != nil {
					t.Fatal(err)
				}
				return ch
			}

			// auth.test fails.
			api := newBrokenAPI(t, fault)
			ch := channel(api, "")
			runUntil(t, ch, func() bool { return api.Count("auth.test") >= 2 })

			// apps.connections.open fails.
			open := newBrokenAPI(t, fault, "auth.test")
			runUntil(t, channel(open, canaryApp), func() bool { return open.Count("apps.connections.open") >= 2 })

			// The socket mode URL, ticket and all, cannot be dialed (a
			// handshake that never ends would take the library's 45 s).
			if fault != platformtest.FaultTimeout {
				dial := newBrokenAPI(t, fault, "auth.test", "apps.connections.open")
				runUntil(t, channel(dial, canaryApp), func() bool { return dial.Count("apps.connections.open") >= 2 })
			}

			// The engine's calls.
			errs := platformtest.EngineCalls(t, ch, "slack", "C0OPS", "U0ALICE", "1700000000.000100")
			out := logs.String()
			platformtest.NoSecret(t, secrets, errs, out)
			for _, want := range []string{"auth.test failed", "socket mode connection failed"} {
				if !strings.Contains(out, want) {
					t.Errorf("no %q logged:\n%s", want, out)
				}
			}
		})
	}
}

// TestWeakSigningSecretRefused: a signing secret under 16 characters is
// refused, the setting named; Slack's own (32 hex characters) passes.
func TestWeakSigningSecretRefused(t *testing.T) {
	for _, tc := range []struct {
		secret string
		want   string
	}{
		{"s", "signing secret: must be at least 16 characters (it has 1)"},
		{"0123456789abcde", "signing secret: must be at least 16 characters (it has 15)"},
		{"0123456789abcdef", ""},
		{"8f742231b10e8888abcd99yyyzzz85a5", ""},
	} {
		err := slack.Config{BotToken: botToken, SigningSecret: tc.secret}.Validate()
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%d characters: %v, want %q", len(tc.secret), err, tc.want)
		}
		if err != nil && len(tc.secret) > 8 && strings.Contains(err.Error(), tc.secret) {
			t.Errorf("the error shows the secret: %v", err)
		}
	}
}

// runUntil runs ch until done reports true, then stops it.
func runUntil(t *testing.T, ch *slack.Channel, done func() bool) {
	t.Helper()
	platformtest.RunUntil(t, func(ctx context.Context) error { return ch.Run(ctx, nil) }, done)
}
