// Package redislog routes go-redis's own log lines to slog. go-redis
// prints what it cannot return as an error (a pool that failed to dial,
// a sentinel that named a new master, a push notification it could not
// read) to stderr through one process-wide logger; Use replaces that
// logger, so those lines reach the bridge's handler, with its level and
// format, and lose any password a Redis URL in them carries.
package redislog

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Use makes go-redis log to log, at Warn, with component=go-redis. go-redis
// keeps one logger for the whole process: cmd/bridge calls Use once, at
// start, before it makes a client.
func Use(log *slog.Logger) { redis.SetLogger(Logger{Log: log}) }

// UseAt is Use at another level: a command whose own error already says
// what went wrong (askbridge ask) logs go-redis's lines at Debug, so they
// show only when asked for.
func UseAt(log *slog.Logger, level slog.Level) {
	redis.SetLogger(Logger{Log: log, Level: &level})
}

// Logger is go-redis's logging interface (redis.SetLogger) on a
// slog.Logger. Everything go-redis logs is trouble it got past (dial
// failures, dropped connections, a failover), hence Warn unless Level
// says otherwise.
type Logger struct {
	Log *slog.Logger
	// Level of every line; nil is Warn.
	Level slog.Leveler
}

// userinfo is the user and password part of a URL ("redis://u:p@host").
var userinfo = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s]*@`)

// Printf logs one line of go-redis.
func (l Logger) Printf(ctx context.Context, format string, v ...any) {
	msg := strings.TrimSpace(fmt.Sprintf(format, v...))
	msg = userinfo.ReplaceAllString(msg, "${1}<redacted>@")
	level := slog.LevelWarn
	if l.Level != nil {
		level = l.Level.Level()
	}
	l.Log.Log(ctx, level, msg, "component", "go-redis")
}
