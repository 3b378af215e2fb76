package redislog_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge/internal/platformtest"
	"github.com/askbridge/askbridge/internal/redislog"
)

// TestUse: after Use, what go-redis logs on its own (here: a pool that
// could not dial) reaches the slog handler at Warn, marked as go-redis's,
// with the password of a Redis URL in it hidden.
func TestUse(t *testing.T) {
	var logs platformtest.SyncBuffer
	redislog.Use(slog.New(slog.NewTextHandler(&logs, nil)))
	rdb := redis.NewClient(&redis.Options{
		Addr: "127.0.0.1:1", DialerRetries: 1, MaxRetries: -1,
		Dialer: func(context.Context, string, string) (net.Conn, error) {
			return nil, errors.New("dial redis://default:hunter2-canary@10.0.0.7:6379: connection refused")
		},
	})
	defer rdb.Close()
	if err := rdb.Ping(context.Background()).Err(); err == nil {
		t.Fatal("ping reached a server that is not there")
	}
	out := logs.String()
	for _, want := range []string{"level=WARN", "component=go-redis", "failed to dial after 1 attempts", "redis://<redacted>@10.0.0.7:6379"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "hunter2-canary") {
		t.Errorf("the password was logged:\n%s", out)
	}
}

// TestUseAt: go-redis's lines at the level given, here Debug, so a handler
// at Info drops them.
func TestUseAt(t *testing.T) {
	defer redislog.Use(slog.New(slog.DiscardHandler))
	for _, tc := range []struct {
		level slog.Level
		shown bool
	}{{slog.LevelDebug, true}, {slog.LevelInfo, false}} {
		var logs platformtest.SyncBuffer
		redislog.UseAt(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: tc.level})), slog.LevelDebug)
		rdb := redis.NewClient(&redis.Options{
			Addr: "127.0.0.1:1", DialerRetries: 1, MaxRetries: -1,
			Dialer: func(context.Context, string, string) (net.Conn, error) { return nil, errors.New("connection refused") },
		})
		_ = rdb.Ping(context.Background()).Err()
		_ = rdb.Close()
		out := logs.String()
		if shown := strings.Contains(out, "level=DEBUG") && strings.Contains(out, "component=go-redis"); shown != tc.shown {
			t.Errorf("handler at %v: shown %v, want %v:\n%s", tc.level, shown, tc.shown, out)
		}
	}
}
