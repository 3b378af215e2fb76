package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge/internal/telegramtest"
	"github.com/askbridge/askbridge/internal/testwait"
)

// Chats of the fake Telegram: the bot is in both, but only ops is the
// operator's.
const (
	opsChat   = -100111
	otherChat = -100222
)

// policyBridge starts a bridge on a fake Telegram whose bot is in the ops
// chat and in another one, with routes ops (that chat) and desk (the web
// page), and env on top.
func policyBridge(t *testing.T, env map[string]string) (*runningBridge, *telegramtest.Server) {
	t.Helper()
	return routesBridge(t, env, "routes:\n  ops:\n    to: telegram:-100111\n  desk:\n    to: web\n")
}

// routesBridge is policyBridge with the routes of the YAML routes.
func routesBridge(t *testing.T, env map[string]string, routes string) (*runningBridge, *telegramtest.Server) {
	t.Helper()
	fake := telegramtest.New(telegramtest.Options{})
	t.Cleanup(fake.Close) // after the bridge stops
	fake.AddChat(opsChat, "supergroup", "Ops")
	fake.AddChat(otherChat, "supergroup", "Somewhere else")
	file := filepath.Join(t.TempDir(), "askbridge.yaml")
	if err := os.WriteFile(file, []byte(routes), 0o600); err != nil {
		t.Fatal(err)
	}
	env["ASKUSER_CONFIG"] = file
	env["ASKUSER_TELEGRAM_TOKEN"] = fake.Token
	env["ASKUSER_TELEGRAM_API_URL"] = fake.URL
	env["ASKUSER_STOP_GRACE"] = "1s"
	return startBridge(t, env), fake
}

// pushAsk pushes a request the way an agent does and returns its result.
func pushAsk(t *testing.T, rdb *redis.Client, id, to string) string {
	t.Helper()
	ctx := context.Background()
	body := `{"id":"` + id + `","to":"` + to + `","questions":[{"id":"a","header":"H","question":"Deploy?","options":[{"label":"Yes"},{"label":"No"}]}]}`
	if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: "askuser:requests", Values: []string{"ask", body}}).Err(); err != nil {
		t.Fatal(err)
	}
	got, err := rdb.BLPop(ctx, 5*time.Second, "askuser:result:{"+id+"}").Result()
	if err != nil {
		t.Fatalf("%s: no result: %v", id, err)
	}
	return got[1]
}

// waitShown waits for the bot's first message in chat.
func waitShown(t *testing.T, fake *telegramtest.Server, chat int64) {
	t.Helper()
	testwait.For(t, 10*time.Second, fmt.Sprintf("a message in chat %d", chat), func() bool { return len(fake.BotMessages(chat)) > 0 })
}

// assertRefused checks a result is the error naming the setting.
func assertRefused(t *testing.T, result, want string) {
	t.Helper()
	if !strings.Contains(result, `"status":"error"`) || !strings.Contains(result, jsonQuote(want)) {
		t.Errorf("result %s, want an error containing %q", result, want)
	}
}

// TestDirectTargetsPolicy drives a bridge as agents do: a request naming a
// direct target the policy refuses gets an error result naming the setting
// and is shown nowhere, while a route still reaches its chat.
func TestDirectTargetsPolicy(t *testing.T) {
	t.Run("routes-only", func(t *testing.T) {
		b, fake := policyBridge(t, map[string]string{"ASKUSER_TARGETS": "routes-only"})
		rdb := redis.NewClient(&redis.Options{Addr: b.redisAddr})
		defer rdb.Close()
		const refusal = "to: direct targets are not allowed (ASKUSER_TARGETS=routes-only); use a route: desk, ops"

		assertRefused(t, pushAsk(t, rdb, "direct-1", "telegram:-100222"), refusal)
		env := map[string]string{"ASKUSER_EMBEDDED_REDIS_ADDR": b.redisAddr}
		r := <-askAsync(context.Background(), env, "--question", "Deploy?", "--option", "Yes", "--option", "No", "--id", "direct-2", "--to", "web")
		if r.code != exitError || !strings.Contains(r.stdout, jsonQuote(refusal)) {
			t.Errorf("askbridge ask --to web: exit %d, out %s, err %s", r.code, r.stdout, r.stderr)
		}

		// A route still works; by the time it is shown the refused
		// requests have long been handled.
		if err := rdb.XAdd(context.Background(), &redis.XAddArgs{Stream: "askuser:requests", Values: []string{"ask",
			`{"id":"routed-1","to":"ops","questions":[{"id":"a","header":"H","question":"Deploy?","options":[{"label":"Yes"},{"label":"No"}]}]}`}}).Err(); err != nil {
			t.Fatal(err)
		}
		waitShown(t, fake, opsChat)
		if n := len(fake.BotMessages(otherChat)); n != 0 {
			t.Errorf("%d messages shown in the chat no route names", n)
		}
		if _, body := b.get(t, "/api/questions"); strings.Contains(body, "direct-") {
			t.Errorf("a refused request is on the page: %s", body)
		}
		if got := len(fake.BotMessages(opsChat)); got != 1 {
			t.Errorf("%d messages in the ops chat, want the routed question's 1", got)
		}
	})

	t.Run("telegram chats", func(t *testing.T) {
		b, fake := policyBridge(t, map[string]string{"ASKUSER_TELEGRAM_CHATS": "-100111"})
		rdb := redis.NewClient(&redis.Options{Addr: b.redisAddr})
		defer rdb.Close()

		assertRefused(t, pushAsk(t, rdb, "direct-1", "telegram:-100222"), "to: telegram chat -100222 is not in ASKUSER_TELEGRAM_CHATS")
		if err := rdb.XAdd(context.Background(), &redis.XAddArgs{Stream: "askuser:requests", Values: []string{"ask",
			`{"id":"direct-2","to":"telegram:-100111","questions":[{"id":"a","header":"H","question":"Deploy?","options":[{"label":"Yes"},{"label":"No"}]}]}`}}).Err(); err != nil {
			t.Fatal(err)
		}
		waitShown(t, fake, opsChat)
		if n := len(fake.BotMessages(otherChat)); n != 0 {
			t.Errorf("%d messages shown in a chat not in ASKUSER_TELEGRAM_CHATS", n)
		}
	})
}

// TestRouteLadderUnderPolicy: a route's own escalation ladder is the
// operator's, so neither policy on what a request may name binds it. With
// routes-only, or with a list of Telegram chats that leaves the step's chat
// out, a request naming the route is shown and escalated to the chat its
// ladder names; an agent naming that chat itself, as its `to` or in an
// `escalate` of its own, is still refused.
func TestRouteLadderUnderPolicy(t *testing.T) {
	routes := "routes:\n  oncall:\n    to: telegram:-100111\n    escalate:\n      - afterSeconds: 1\n        to: telegram:-100222\n"
	for _, tc := range []struct {
		name    string
		env     map[string]string
		refusal string
	}{
		{"routes-only", map[string]string{"ASKUSER_TARGETS": "routes-only"}, "direct targets are not allowed (ASKUSER_TARGETS=routes-only); use a route: oncall"},
		{"telegram chats", map[string]string{"ASKUSER_TELEGRAM_CHATS": "-100111"}, "telegram chat -100222 is not in ASKUSER_TELEGRAM_CHATS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, fake := routesBridge(t, tc.env, routes)
			rdb := redis.NewClient(&redis.Options{Addr: b.redisAddr})
			defer rdb.Close()
			ctx := context.Background()

			assertRefused(t, pushAsk(t, rdb, "direct", "telegram:-100222"), "to: "+tc.refusal)
			if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: "askuser:requests", Values: []string{"ask",
				`{"id":"own-ladder","to":"oncall","escalate":[{"afterSeconds":1,"to":"telegram:-100222"}],"questions":[{"id":"a","header":"H","question":"Deploy?","options":[{"label":"Yes"},{"label":"No"}]}]}`}}).Err(); err != nil {
				t.Fatal(err)
			}
			got, err := rdb.BLPop(ctx, 5*time.Second, "askuser:result:{own-ladder}").Result()
			if err != nil {
				t.Fatalf("own-ladder: no result: %v", err)
			}
			assertRefused(t, got[1], "escalate[0].to: "+tc.refusal)

			if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: "askuser:requests", Values: []string{"ask",
				`{"id":"routed","to":"oncall","questions":[{"id":"a","header":"H","question":"Deploy?","options":[{"label":"Yes"},{"label":"No"}]}]}`}}).Err(); err != nil {
				t.Fatal(err)
			}
			waitShown(t, fake, opsChat)
			// The route's step, a second later.
			waitShown(t, fake, otherChat)
			if res, err := rdb.LRange(ctx, "askuser:result:{routed}", 0, -1).Result(); err != nil || len(res) != 0 {
				t.Errorf("the routed question has a result %v (%v); want it open", res, err)
			}
			if got := len(fake.BotMessages(otherChat)); got != 1 {
				t.Errorf("%d messages in the step's chat, want the routed question's 1", got)
			}
		})
	}
}
