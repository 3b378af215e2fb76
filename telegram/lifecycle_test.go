package telegram_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/enginetest"
	"github.com/askbridge/askbridge/internal/telegramtest"
	"github.com/askbridge/askbridge/internal/testwait"
	"github.com/askbridge/askbridge/telegram"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  telegram.Config
		want string
	}{
		{"ok", telegram.Config{Token: "1:abc"}, ""},
		{"no token", telegram.Config{}, "token is required"},
		{"bad token", telegram.Config{Token: "abc"}, "is not a Telegram bot token"},
		{"bad api url", telegram.Config{Token: "1:a", APIURL: "ftp://x"}, "api url"},
		{"http webhook", telegram.Config{Token: "1:a", WebhookURL: "http://x.example/h", WebhookSecret: "s"}, "must be an https:// URL"},
		{"no secret", telegram.Config{Token: "1:a", WebhookURL: "https://x.example/h"}, "webhook secret is required"},
		{"bad secret", telegram.Config{Token: "1:a", WebhookURL: "https://x.example/h", WebhookSecret: "a b"}, "webhook secret"},
		{"one-character secret", telegram.Config{Token: "1:a", WebhookURL: "https://x.example/h", WebhookSecret: "s"}, "webhook secret: must be at least 16 characters (it has 1)"},
		{"15-character secret", telegram.Config{Token: "1:a", WebhookURL: "https://x.example/h", WebhookSecret: strings.Repeat("s", 15)}, "webhook secret: must be at least 16 characters (it has 15)"},
		{"16-character secret", telegram.Config{Token: "1:a", WebhookURL: "https://x.example/h", WebhookSecret: strings.Repeat("s", 16)}, ""},
		{"short poll", telegram.Config{Token: "1:a", PollTimeout: time.Second}, "at least 2s"},
		{"renew too slow", telegram.Config{Token: "1:a", LeaseTTL: time.Second, RenewEvery: 2 * time.Second}, "shorter than the lease ttl"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("Validate() = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestStatesAndNoTokenInLogs(t *testing.T) {
	t.Parallel()
	const secret = "AAHsecretPART-xyz"
	fake := telegramtest.New(telegramtest.Options{Token: "424242:" + secret})
	defer fake.Close()
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	bad, err := telegram.New(telegram.Config{Token: "424242:wrong-" + secret, APIURL: fake.URL}, enginetest.NewMemCoord(), log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = bad.Run(ctx, &fuzzInbox{}) }()
	testwait.Until(5*time.Second, func() bool { return bad.State() == engine.StateBadCredentials })
	cancel()
	<-done
	if s := bad.State(); s != engine.StateBadCredentials {
		t.Errorf("state with a wrong token: %s", s)
	}
	if strings.Contains(logs.String(), secret) {
		t.Errorf("the token was logged:\n%s", logs.String())
	}
}

func TestStandbyAndDeletedMessage(t *testing.T) {
	t.Parallel()
	e := twoReplicas(t, envOpts{})
	p := e.poller()
	e.mu.Lock()
	others := make([]*replica, 0, len(e.replicas))
	for _, r := range e.replicas {
		if r != p {
			others = append(others, r)
		}
	}
	e.mu.Unlock()
	// A replica starts "connecting" and turns "standby" at its first try of
	// the lease, which may come a little after the poller took it.
	for _, r := range others {
		testwait.Until(5*time.Second, func() bool { return r.ch.State() == engine.StateStandby })
		if s := r.ch.State(); s != engine.StateStandby {
			t.Errorf("replica %s is %s, want standby", r.name, s)
		}
	}
	// A two-part prompt whose first part someone deleted: the other part
	// is still edited, and the question ends normally.
	e.Ask(fmt.Sprintf(`{"id":"deleted-1","to":"telegram:%d",%s`, opsGroup, strings.TrimPrefix(longRequest(), "{")))
	first, second := e.prompt(opsGroup, 1), e.prompt(opsGroup, 2)
	e.fake.DeleteMessage(opsGroup, first.ID)
	e.Cancel("deleted-1")
	if r := e.Result("deleted-1", 5*time.Second); r.Reason != askbridge.ReasonCancelled {
		t.Errorf("result %+v", r)
	}
	e.finished(opsGroup, second.ID, "Cancelled")
}

// TestNoGoroutinesLeftAfterStop runs the bridge and stops it: nothing it
// started may keep running. It is not parallel, so it runs alone.
func TestNoGoroutinesLeftAfterStop(t *testing.T) {
	running := goleak.IgnoreCurrent()
	func() {
		e := newEnv(t, envOpts{})
		a := e.start("a")
		b := e.start("b")
		e.poller()
		id := ask1(e, "leak-1", opsGroup)
		p := e.prompt(opsGroup, 1)
		e.tap(opsGroup, p.ID, alice, "Other…")
		box := e.prompt(opsGroup, 2)
		e.reply(opsGroup, alice, box.ID, "my own answer")
		e.Result(id, 5*time.Second)
		a.stop()
		b.stop()
		e.fake.Close()
		e.agent.Close()
	}()
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	goleak.VerifyNone(t, running)
}

func TestWebhookHandlerBeforeRunAndInPollingMode(t *testing.T) {
	t.Parallel()
	st := enginetest.NewMemCoord()
	hook, err := telegram.New(telegram.Config{Token: "1:a", WebhookURL: "https://x.example/tg", WebhookSecret: webhookSecret}, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	poll, err := telegram.New(telegram.Config{Token: "1:a"}, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		h    http.Handler
		want int
	}{{"before run", hook.WebhookHandler(), http.StatusServiceUnavailable}, {"polling mode", poll.WebhookHandler(), http.StatusNotFound}} {
		req := httptest.NewRequest(http.MethodPost, "/tg", strings.NewReader(`{"update_id":1}`))
		req.Header.Set("X-Telegram-Bot-Api-Secret-Token", webhookSecret)
		rec := httptest.NewRecorder()
		tt.h.ServeHTTP(rec, req)
		if rec.Code != tt.want {
			t.Errorf("%s: status %d, want %d", tt.name, rec.Code, tt.want)
		}
	}
	if poll.WebhookPath() != telegram.WebhookPath || hook.WebhookPath() != "/tg" {
		t.Errorf("paths %q %q", poll.WebhookPath(), hook.WebhookPath())
	}
}
