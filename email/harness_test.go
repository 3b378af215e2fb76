package email

import (
	"bytes"
	"context"
	"fmt"
	"github.com/askbridge/askbridge/internal/smtptest"
	"io"
	"log/slog"
	"net/mail"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/link"
	"github.com/askbridge/askbridge/internal/platformtest"
	"github.com/askbridge/askbridge/internal/redistest"
	"github.com/askbridge/askbridge/internal/testwait"
	"github.com/askbridge/askbridge/store"
)

var redisAddr string

// TestMain runs the tests on one shared redis-server and fails the
// package when a test left a goroutine behind.
func TestMain(m *testing.M) { os.Exit(redistest.Main(m, "email", &redisAddr)) }

var prefixSeq atomic.Int64

const (
	alice      = "alice@example.com"
	bob        = "bob@example.com"
	publicURL  = "https://bridge.example"
	fromHeader = "Ask Bridge <ask@bridge.example>"
)

// linkSecret signs the tests' answer links.
var linkSecret = bytes.Repeat([]byte("L"), link.MinSecret)

// env is a test SMTP server, a Redis key prefix, and what the channels
// and engines of one test share.
type env struct {
	t      *testing.T
	mail   *smtptest.Server
	rdb    *redis.Client
	prefix string
	store  *store.Store
	signer *link.Signer
	clock  *platformtest.Clock
	agent  *platformtest.Agent
	logs   *platformtest.SyncBuffer
}

func newEnv(t *testing.T, o smtptest.Options) *env {
	t.Helper()
	signer, err := link.NewSigner(linkSecret)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr, PoolSize: 32})
	t.Cleanup(func() { _ = rdb.Close() })
	prefix := fmt.Sprintf("emailtest%d:", prefixSeq.Add(1))
	e := &env{
		t: t, mail: smtptest.New(t, o), rdb: rdb, prefix: prefix, signer: signer,
		store: store.New(rdb, store.Options{Prefix: prefix, Consumer: "check"}),
		clock: platformtest.NewClock(), logs: &platformtest.SyncBuffer{},
	}
	e.agent = platformtest.NewAgent(t, rdb, prefix)
	return e
}

// config is the channel's configuration for the test server.
func (e *env) config() Config {
	return Config{SMTPURL: "smtp://" + e.mail.Addr(), User: smtptest.User, Password: smtptest.Password, From: fromHeader, SendTimeout: 5 * time.Second}
}

// counter counts Metrics.Email results.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) Email(result string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[result]++
}

func (c *counter) get(result string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[result]
}

// channel is a channel (a replica's) on the test server and the test's
// Redis prefix, with deps changed by edit when it is set.
func (e *env) channel(cfg Config, m Metrics, edit func(*Deps)) *Channel {
	e.t.Helper()
	log := slog.New(slog.NewTextHandler(io.MultiWriter(platformtest.LogWriter{T: e.t}, e.logs), &slog.HandlerOptions{Level: slog.LevelInfo}))
	d := Deps{
		Links: link.Maker{Base: publicURL, Signer: e.signer}, Marks: e.store, Questions: e.store,
		Metrics: m, Logger: log, Roots: e.mail.Roots(),
	}
	if edit != nil {
		edit(&d)
	}
	ch, err := New(cfg, d)
	if err != nil {
		e.t.Fatal(err)
	}
	return ch
}

// engine runs an engine with ch (as replica name) until the test ends.
func (e *env) engine(name string, ch *Channel) *engine.Engine {
	e.t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr, PoolSize: 32})
	st := store.New(rdb, store.Options{Prefix: e.prefix, Consumer: name, ClaimIdle: time.Minute})
	log := slog.New(slog.NewTextHandler(platformtest.LogWriter{T: e.t}, &slog.HandlerOptions{Level: slog.LevelWarn})).With("replica", name)
	eng := engine.NewEngine(engine.EngineConfig{
		Store: st, Resolve: platformtest.Resolver(engine.Route{Target: askbridge.Target{Platform: Platform, Chat: alice}}),
		Channels: []engine.Channel{ch}, Logger: log, Replica: name, Clock: e.clock,
		SweepEvery: 50 * time.Millisecond, SendBudget: 30 * time.Second, ReadBlock: 100 * time.Millisecond,
	})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = eng.Run(ctx) }()
	go func() { defer wg.Done(); _ = ch.Run(ctx, eng) }()
	e.t.Cleanup(func() { cancel(); wg.Wait(); _ = rdb.Close() })
	return eng
}

// waitMails waits until the server has accepted n emails and returns them.
func (e *env) waitMails(n int) []smtptest.Received {
	e.t.Helper()
	var got []smtptest.Received
	testwait.For(e.t, 10*time.Second, fmt.Sprintf("%d emails", n), func() bool {
		got = e.mail.Received()
		return len(got) >= n
	})
	return got
}

// parsed is an email as a reader's program sees it.
type parsed struct {
	Header     mail.Header
	Text, HTML string
	// Link is the answer link in the text part.
	Link string
}

var linkPattern = regexp.MustCompile(regexp.QuoteMeta(publicURL+link.PathPrefix) + `[A-Za-z0-9_-]+`)

// parse reads raw as smtptest.Parse does, and finds the answer link in
// its text part.
func parse(t testing.TB, raw []byte) parsed {
	t.Helper()
	m := smtptest.Parse(t, raw)
	p := parsed{Header: m.Header, Text: m.Text, HTML: m.HTML}
	p.Link = linkPattern.FindString(p.Text)
	return p
}

// claims checks the link of p and returns what it names.
func (e *env) claims(p parsed) link.Claims {
	e.t.Helper()
	tok := strings.TrimPrefix(p.Link, publicURL+link.PathPrefix)
	c, err := e.signer.Check(tok, time.Now())
	if err != nil {
		e.t.Fatalf("link %q: %v", p.Link, err)
	}
	return c
}
