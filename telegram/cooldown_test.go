package telegram_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/telegramtest"
	"github.com/askbridge/askbridge/internal/testwait"
	"github.com/askbridge/askbridge/store"
	"github.com/askbridge/askbridge/telegram"
)

// TestRateLimitSharedWithOtherReplicas: a 429 one replica gets for a chat
// holds every other replica's sends to that chat too, for its
// retry_after, through the shared Redis: the other replica makes no call
// to that chat while it runs, and still sends to other chats.
func TestRateLimitSharedWithOtherReplicas(t *testing.T) {
	t.Parallel()
	fake := telegramtest.New(telegramtest.Options{ChatRate: 0.1, ChatBurst: 1})
	t.Cleanup(fake.Close)
	fake.AddChat(opsGroup, "supergroup", "Ops")
	const otherChat int64 = -100600
	fake.AddChat(otherChat, "supergroup", "Other")
	prefix := fmt.Sprintf("tgcool%d:", prefixSeq.Add(1))
	admin := redis.NewClient(&redis.Options{Addr: redisAddr})
	t.Cleanup(func() { admin.Close() })
	replica := func(name string) *telegram.Channel {
		rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
		st := store.New(rdb, store.Options{Prefix: prefix, Consumer: name})
		ch, err := telegram.New(telegram.Config{Token: fake.Token, APIURL: fake.URL, Replica: name, ChatPace: 1, GlobalPace: 1}, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = ch.Run(ctx, noticeInbox{}) }()
		t.Cleanup(func() { cancel(); <-done; rdb.Close() })
		return ch
	}
	a, b := replica("a"), replica("b")
	testwait.For(t, 10*time.Second, "the replicas listening for cooldowns", func() bool {
		return admin.PubSubNumSub(context.Background(), prefix+"cooldowns").Val()[prefix+"cooldowns"] >= 2
	})

	req, err := askbridge.DecodeRequest([]byte(goldenShapes[0].request))
	if err != nil {
		t.Fatal(err)
	}
	plan := engine.BuildPlan("cool", req, a.Capabilities())
	chat := fmt.Sprint(opsGroup)
	if _, err := sendAll(context.Background(), a, chat, plan); err != nil {
		t.Fatal(err)
	}
	_, err = sendAll(context.Background(), a, chat, plan)
	var se *engine.SendError
	if !errors.As(err, &se) || se.Kind != engine.RateLimited || se.RetryAfter < 5*time.Second {
		t.Fatalf("a 429 of at least 5 s: %v", err)
	}
	testwait.For(t, 10*time.Second, "the other replica hearing of the 429", func() bool { return b.Held(chat) })
	before := fake.Stats()
	short, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := sendAll(short, b, chat, plan); err == nil {
		t.Fatal("the other replica sent within the retry_after")
	}
	if after := fake.Stats(); after.Sent != before.Sent || after.RateLimited != before.RateLimited {
		t.Fatalf("the other replica called Telegram within the retry_after: sent %d→%d, 429s %d→%d",
			before.Sent, after.Sent, before.RateLimited, after.RateLimited)
	}
	if _, err := sendAll(context.Background(), b, fmt.Sprint(otherChat), plan); err != nil {
		t.Fatalf("another chat on the other replica: %v", err)
	}
}
