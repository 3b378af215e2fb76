package telegram_test

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

	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/platformtest"
	"github.com/askbridge/askbridge/store"
	"github.com/askbridge/askbridge/telegram"
)

// Secrets of TestNoSecretLeavesTheChannel: a bot token and a webhook
// secret no other text contains.
const (
	canaryBotID  = "987654"
	canarySecret = "AAF-leak-canary-0123456789abcdefghijk"
	canaryToken  = canaryBotID + ":" + canarySecret
	canaryHook   = "hook-canary-0123456789abcdef"
)

// newBrokenAPI is a Bot API whose calls to the methods in broken fail
// with one fault; getMe and deleteWebhook answer, so Run gets as far as
// polling.
func newBrokenAPI(t *testing.T, fault string, broken ...string) *platformtest.BrokenAPI {
	t.Helper()
	return platformtest.NewBrokenAPI(t, fault, platformtest.BrokenOptions{
		Route: func(r *http.Request) string { return r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:] },
		Works: func(m string) bool { return !slices.Contains(broken, m) },
		Answer: func(_ *platformtest.BrokenAPI, w http.ResponseWriter, _ *http.Request, m string) {
			w.Header().Set("Content-Type", "application/json")
			switch m {
			case "getMe":
				fmt.Fprintf(w, `{"ok":true,"result":{"id":%s,"is_bot":true,"first_name":"Canary","username":"canary_bot"}}`, canaryBotID)
			default:
				io.WriteString(w, `{"ok":true,"result":true}`)
			}
		},
		CutBody: `{"ok":true,"result":[`,
	})
}

// TestNoSecretLeavesTheChannel points the channel at a Bot API that fails
// in each way a network does (and at a proxy that quotes the request in
// its error page) and checks that neither the token, nor its secret half,
// nor the webhook secret appears in any log line (at debug level), in any
// error Send, Notify and Finish return, in their Reason (an undeliverable
// result's error text), or in anything those errors wrap: while polling
// (getUpdates), registering the webhook (setWebhook), sending, editing and
// answering a tap.
func TestNoSecretLeavesTheChannel(t *testing.T) {
	t.Parallel()
	secrets := []string{canaryToken, canarySecret, canaryHook}
	for _, fault := range platformtest.Faults() {
		t.Run(fault, func(t *testing.T) {
			t.Parallel()
			api := newBrokenAPI(t, fault, "getUpdates", "setWebhook", "sendMessage", "editMessageText", "answerCallbackQuery")
			var logs platformtest.SyncBuffer
			log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
			defer rdb.Close()
			coord := store.New(rdb, store.Options{Prefix: fmt.Sprintf("tgsecret%d:", prefixSeq.Add(1)), Consumer: "leak"})
			cfg := telegram.Config{
				Token: canaryToken, APIURL: api.URL, Replica: "leak",
				PollTimeout: 2 * time.Second, LeaseTTL: time.Second, RenewEvery: 200 * time.Millisecond,
				ChatPace: time.Millisecond, GlobalPace: time.Millisecond,
				HTTPClient: &http.Client{Timeout: 300 * time.Millisecond, Transport: api},
			}

			// Polling: getMe answers, every getUpdates fails.
			poller, err := telegram.New(cfg, coord, log)
			if err != nil {
				t.Fatal(err)
			}
			runUntil(t, poller, func() bool { return api.Count("getUpdates") >= 3 })

			// Webhook mode: every setWebhook fails.
			hookCfg := cfg
			hookCfg.WebhookURL, hookCfg.WebhookSecret = "https://bridge.example/tg", canaryHook
			hook, err := telegram.New(hookCfg, coord, log)
			if err != nil {
				t.Fatal(err)
			}
			runUntil(t, hook, func() bool { return api.Count("setWebhook") >= 2 })

			// The engine's calls, and a tap the channel answers itself.
			ctx := context.Background()
			errs := platformtest.EngineCalls(t, hook, "telegram", "-100500", "1001", "7")
			tap := `{"update_id":5,"callback_query":{"id":"cq1","from":{"id":1001,"is_bot":false,"first_name":"Alice"},"message":{"message_id":7,"date":1,"chat":{"id":-100500,"type":"supergroup"}},"data":"x"}}`
			if err := hook.HandleUpdateJSON(ctx, noticeInbox{}, []byte(tap)); err != nil {
				t.Fatal(err)
			}

			out := logs.String()
			platformtest.NoSecret(t, secrets, errs, out)
			if api.Count("answerCallbackQuery") == 0 {
				t.Error("the tap was not answered")
			}
			if !strings.Contains(out, "get updates failed") && fault != platformtest.FaultCut && fault != platformtest.FaultEcho {
				t.Errorf("no getUpdates failure logged:\n%s", out)
			}
		})
	}
}

// runUntil runs ch until done reports true, then stops it.
func runUntil(t *testing.T, ch *telegram.Channel, done func() bool) {
	t.Helper()
	platformtest.RunUntil(t, func(ctx context.Context) error { return ch.Run(ctx, noticeInbox{}) }, done)
}

// noticeInbox answers every tap "unknown" and takes no text.
type noticeInbox struct{}

func (noticeInbox) Tap(context.Context, engine.Tap) engine.TapReply {
	return engine.TapReply{Notice: engine.NoticeUnknown}
}
func (noticeInbox) Reply(context.Context, engine.TextReply) engine.ReplyOutcome {
	return engine.ReplyOutcome{}
}
func (noticeInbox) Attach(context.Context, string, engine.MessageRef) error { return nil }

func (noticeInbox) Locale() string { return "en" }
