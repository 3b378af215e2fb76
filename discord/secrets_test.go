package discord_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge/discord"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/platformtest"
	"github.com/askbridge/askbridge/store"
)

// Secrets of TestNoSecretLeavesTheChannel: the bot token and an
// interaction's token, which no other text contains.
const (
	canaryToken       = "MTAxLeakCanary.Gx0123.bot-token-canary_abcdefghijklmnop"
	canaryInteraction = "aW50ZXJhY3Rpb24.interaction-canary-0123456789"
)

// faultLimited: 429 on every call, Discord's own way to fail them all.
const faultLimited = "rate limited"

// newBrokenAPI is a Discord REST API whose calls all fail with one fault,
// except GET /users/@me when me is set (so Run gets to the gateway).
func newBrokenAPI(t *testing.T, fault string, me bool) *platformtest.BrokenAPI {
	t.Helper()
	return platformtest.NewBrokenAPI(t, fault, platformtest.BrokenOptions{
		Route: func(r *http.Request) string {
			_, route, _ := strings.Cut(r.URL.Path, "/api/v9/")
			return route
		},
		Works: func(route string) bool { return me && route == "users/@me" },
		Answer: func(_ *platformtest.BrokenAPI, w http.ResponseWriter, _ *http.Request, _ string) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"111","username":"canary","bot":true}`)
		},
		CutBody: `{"id":`,
		Other: func(w http.ResponseWriter, _ *http.Request) {
			if fault == faultLimited {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusTooManyRequests)
				io.WriteString(w, `{"message":"You are being rate limited.","retry_after":1,"global":false}`)
			}
		},
	})
}

// TestNoSecretLeavesTheChannel points the channel at a Discord REST API
// that fails in each way a network does (and at a proxy that quotes the
// request, Authorization header included, in its error page, and at a
// 429 on every call) and checks that neither the bot token nor an
// interaction's token appears in any log line (at debug level), in any
// error Send, Notify, Finish and an interaction response return, in their
// Reason, or in anything those errors wrap: while reading the bot user,
// while connecting to the gateway, sending, editing and answering a press.
func TestNoSecretLeavesTheChannel(t *testing.T) {
	t.Parallel()
	secrets := []string{canaryToken, canaryInteraction}
	for _, fault := range platformtest.Faults(faultLimited) {
		t.Run(fault, func(t *testing.T) {
			t.Parallel()
			var logs platformtest.SyncBuffer
			log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
			defer rdb.Close()
			coord := store.New(rdb, store.Options{Prefix: fmt.Sprintf("dcsecret%d:", prefixSeq.Add(1)), Consumer: "leak"})
			channel := func(api *platformtest.BrokenAPI) *discord.Channel {
				ch, err := discord.New(discord.Config{
					Token: "Bot " + canaryToken, APIURL: api.URL + "/", Replica: "leak",
					LeaseTTL: time.Second, StandbyPoll: 100 * time.Millisecond,
					RetryMin: 20 * time.Millisecond, RetryMax: 100 * time.Millisecond,
					BadCredentialsRetry: 100 * time.Millisecond, OpenTimeout: time.Second,
					HTTPClient: &http.Client{Timeout: 300 * time.Millisecond, Transport: api},
				}, coord, log)
				if err != nil {
					t.Fatal(err)
				}
				return ch
			}

			// The bot user cannot be read.
			api := newBrokenAPI(t, fault, false)
			ch := channel(api)
			runUntil(t, ch, func() bool { return api.Count("users/@me") >= 2 })

			// The bot user is read; the gateway's address cannot be.
			gw := newBrokenAPI(t, fault, true)
			runUntil(t, channel(gw), func() bool { return gw.Count("gateway") >= 2 })

			// The engine's calls, and the answers to a press.
			ctx := context.Background()
			errs := append(platformtest.EngineCalls(t, ch, "discord", "222", "@333", "444"), ch.Acknowledge(ctx, "555", canaryInteraction))
			ch.Respond(ctx, "555", canaryInteraction, false, engine.TapReply{Notice: engine.NoticeUnknown})
			ch.Respond(ctx, "556", canaryInteraction, true, engine.TapReply{Notice: engine.NoticeUnknown})
			ch.Respond(ctx, "557", canaryInteraction, true, engine.TapReply{Notice: engine.NoticeExpired, QuestionID: "q1"})

			out := logs.String()
			platformtest.NoSecret(t, secrets, errs, out)
			if api.Count("interactions/555/"+canaryInteraction+"/callback") == 0 {
				t.Error("the press was not answered")
			}
			for _, want := range []string{"discord: read the bot user", "discord: connect to the gateway", "discord: ephemeral"} {
				if !strings.Contains(out, want) {
					t.Errorf("no %q logged:\n%s", want, out)
				}
			}
		})
	}
}

// runUntil runs ch until done reports true, then stops it.
func runUntil(t *testing.T, ch *discord.Channel, done func() bool) {
	t.Helper()
	platformtest.RunUntil(t, func(ctx context.Context) error { return ch.Run(ctx, nil) }, done)
}
