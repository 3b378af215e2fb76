package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge/client"
	"github.com/askbridge/askbridge/config"
	"github.com/askbridge/askbridge/internal/redislog"
	"github.com/askbridge/askbridge/mcp"
	"github.com/askbridge/askbridge/store"
)

// mcpConnectTimeout bounds one attempt to reach Redis: an MCP client shows
// the tool's error instead of waiting on a Redis that is not there.
const mcpConnectTimeout = 5 * time.Second

// mcpRedisOptions shape the Redis client MCP calls go through, in the
// bridge (beside the engine's) and in `askbridge mcp`. A waiting call holds
// no connection: the pool serves the one read of the events stream that
// wakes every call, and the calls' short commands (a push, a look at the
// question every few seconds, the result).
var mcpRedisOptions = store.ConnectOptions{PoolSize: 8, Name: "askbridge-mcp"}

// serveMCP runs `askbridge mcp`: the ask_user tool of package mcp over stdin
// and stdout, asking through the Redis of a bridge. It needs no platform
// credentials: it is an agent of that bridge. Logs go to stderr (stdout is
// the protocol). It returns when the client closes stdin or ctx ends, after
// cancelling the questions of the calls still waiting.
func serveMCP(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	fs := flag.NewFlagSet("askbridge mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		to       = fs.String("to", "", "where a call without `to` asks: a route name or a target such as web or slack:<channel> (default: the bridge's default route, ASKUSER_DEFAULT_TO)")
		agent    = fs.String("agent", "", "who asks, shown as \"Question from <agent>:\", when a call names no agent (default: the MCP client's name)")
		redisURL = fs.String("redis", "", "Redis URL of the bridge (default: ASKUSER_REDIS_URL, else the embedded Redis of a bridge on this machine, redis://127.0.0.1:6380 or ASKUSER_EMBEDDED_REDIS_ADDR)")
		progress = fs.Duration("progress", mcp.DefaultProgressEvery, "longest time between two progress notifications of a waiting call")
		maxWait  = fs.Duration("max-wait", 0, "longest a call waits before it returns pending and the model calls wait_for_answer (default: ASKUSER_MCP_MAX_WAIT, else 50s); keep it under the client's request timeout")
	)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: askbridge mcp [flags]\n\nServes the ask_user tool to an MCP client (Claude Code, Claude Desktop, Cursor) over stdin and stdout.\nIt asks through the Redis of a running bridge: ASKUSER_REDIS_URL and ASKUSER_REDIS_PREFIX, as the bridge has them.\nSee docs/mcp.md.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "askbridge mcp: unexpected argument %q (askbridge mcp -h lists the flags)\n", fs.Arg(0))
		return 2
	}
	format := strings.ToLower(strings.TrimSpace(getenv("ASKUSER_LOG_FORMAT")))
	if !config.ValidLogFormat(format) {
		fmt.Fprintf(stderr, "askbridge mcp: ASKUSER_LOG_FORMAT: %q is not one of %s, %s\n", format, config.LogFormatJSON, config.LogFormatText)
		return 2
	}
	base := newLogger(stderr, getenv("ASKUSER_LOG_LEVEL"), format)
	log := base.With("part", "mcp")
	// go-redis's own messages too, passwords hidden.
	redislog.Use(base.With("part", "redis"))

	rawURL, prefix, err := redisTarget(*redisURL, getenv)
	if err != nil {
		fmt.Fprintf(stderr, "askbridge mcp: %v\n", err)
		return 2
	}
	set, err := mcpSettings(getenv, *maxWait)
	if err != nil {
		fmt.Fprintf(stderr, "askbridge mcp: %v\n", err)
		return 2
	}
	conn := &mcpRedis{url: rawURL, prefix: prefix, named: *redisURL != "" || getenv("ASKUSER_REDIS_URL") != "" || getenv("ASKUSER_REDIS_URL_FILE") != ""}
	defer conn.close()
	srv, err := mcp.New(mcp.Options{
		Client: conn.client, Redis: conn.name(),
		DefaultTo: *to, DefaultAgent: *agent, ProgressEvery: *progress,
		MaxCalls: set.MCPMaxCalls, MaxWait: set.MCPMaxWait, NoRelay: set.MCPElicit == config.MCPElicitOff,
		Logger: log, Version: currentBuild().Version,
	})
	if err != nil {
		fmt.Fprintf(stderr, "askbridge mcp: --to or --agent: %v\n", err)
		return 2
	}
	// Reach Redis now, beside serving, so a wrong address is in the
	// client's log at once; the server runs either way, and each call
	// tries again (the bridge may start later).
	var probe sync.WaitGroup
	defer probe.Wait()
	probe.Go(func() {
		if _, err := conn.client(ctx); err != nil {
			log.Warn("askbridge mcp: ask_user fails until Redis answers: " + err.Error())
			return
		}
		log.Info("askbridge mcp: serving ask_user over stdio", "redis", conn.name())
	})
	if err := srv.ServeStdio(ctx, io.NopCloser(stdin), nopWriteCloser{stdout}); err != nil {
		log.Error("askbridge mcp: " + err.Error())
		return 1
	}
	return 0
}

// mcpSettings are the MCP server's settings from the environment, the
// wait budget from --max-wait when it is set (not 0).
func mcpSettings(getenv func(string) string, maxWait time.Duration) (config.HTTP, error) {
	set, err := config.MCP(getenv)
	if err != nil {
		return set, err
	}
	if maxWait != 0 {
		if maxWait < config.MinMCPMaxWait || maxWait > config.MaxMCPMaxWait {
			return set, fmt.Errorf("--max-wait: %s is out of range: from %s to %s", maxWait, config.MinMCPMaxWait, config.MaxMCPMaxWait)
		}
		set.MCPMaxWait = maxWait
	}
	return set, nil
}

// nopWriteCloser is stdout, which the process closes itself.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// mcpRedis connects to Redis at the first call that needs it, and again at
// the next one until it succeeds.
type mcpRedis struct {
	url, prefix string
	// named is true when the address was given (ASKUSER_REDIS_URL,
	// --redis); false when it is the embedded Redis's default.
	named bool

	mu  sync.Mutex
	rdb redis.UniversalClient
	c   *client.Client
}

// client returns the protocol client, connecting first if need be. Its
// error says how to point askbridge mcp at the bridge's Redis.
func (m *mcpRedis) client(ctx context.Context) (*client.Client, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.c != nil {
		return m.c, nil
	}
	cctx, cancel := context.WithTimeout(ctx, mcpConnectTimeout)
	defer cancel()
	rdb, err := store.ConnectWith(cctx, m.url, mcpRedisOptions)
	if err != nil {
		if m.named {
			return nil, fmt.Errorf("cannot reach the bridge's Redis at %s (%v). Check ASKUSER_REDIS_URL (or --redis) in this MCP server's configuration: it must be the Redis your bridge uses, with the bridge's ASKUSER_REDIS_PREFIX", m.name(), err)
		}
		return nil, fmt.Errorf("cannot reach Redis at %s (%v). ASKUSER_REDIS_URL is not set, so askbridge mcp uses the embedded Redis of a bridge running on this machine (redis://127.0.0.1:6380 unless ASKUSER_EMBEDDED_REDIS_ADDR moves it): start one with `askbridge`, or set ASKUSER_REDIS_URL in this MCP server's env to the Redis your bridge uses (and ASKUSER_REDIS_PREFIX if the bridge sets one)", m.name(), err)
	}
	m.rdb = rdb
	m.c = client.New(rdb, client.Options{Prefix: m.prefix, PollTimeout: time.Second})
	return m.c, nil
}

// name shows the Redis URL (password hidden) and the prefix.
func (m *mcpRedis) name() string {
	shown := "the configured Redis URL"
	if u, err := url.Parse(m.url); err == nil {
		shown = u.Redacted()
	}
	return shown + ", prefix " + m.prefix
}

func (m *mcpRedis) close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.rdb != nil {
		_ = m.rdb.Close()
	}
}

// mcpHandler is the ask_user tool over streamable HTTP, asking through
// rdb (the bridge's Redis, through a client of MCP's own) with the MCP
// settings of h; the caller mounts it behind the page's wall. The state a
// client hands back with a form's answer is signed with a key derived from
// the page's token, so any replica behind one address takes it; without a
// token (loopback only) each replica has a key of its own.
func mcpHandler(rdb redis.UniversalClient, prefix string, h config.HTTP, log *slog.Logger) (*mcp.Server, error) {
	c := client.New(rdb, client.Options{Prefix: prefix, PollTimeout: time.Second})
	var key []byte
	if h.Token != "" {
		sum := sha256.Sum256([]byte("askbridge mcp request state\x00" + h.Token))
		key = sum[:]
	}
	return mcp.New(mcp.Options{
		Client:   func(context.Context) (*client.Client, error) { return c, nil },
		Redis:    "this bridge's Redis, prefix " + prefix,
		MaxCalls: h.MCPMaxCalls, MaxWait: h.MCPMaxWait, NoRelay: h.MCPElicit == config.MCPElicitOff,
		StateKey: key,
		Logger:   log, Version: currentBuild().Version,
	})
}
