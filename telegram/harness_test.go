package telegram_test

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/platformtest"
	"github.com/askbridge/askbridge/internal/redistest"
	"github.com/askbridge/askbridge/internal/telegramtest"
	"github.com/askbridge/askbridge/internal/testwait"
	"github.com/askbridge/askbridge/locale"
	"github.com/askbridge/askbridge/store"
	"github.com/askbridge/askbridge/telegram"
)

var redisAddr string

// TestMain runs the tests on one shared redis-server and then fails the
// package when a test left a goroutine behind.
// The replicas' HTTP clients use the default transport; its idle
// keep-alive connections belong to net/http, not to the code under test.
func TestMain(m *testing.M) {
	os.Exit(redistest.Main(m, "telegram", &redisAddr, http.DefaultTransport.(*http.Transport).CloseIdleConnections))
}

var prefixSeq atomic.Int64

// People and chats of the tests.
var (
	alice = telegramtest.User{ID: 1001, FirstName: "Alice", Username: "alice"}
	bob   = telegramtest.User{ID: 1002, FirstName: "Bob"}
	carol = telegramtest.User{ID: 1003, FirstName: "Carol"}
)

const opsGroup int64 = -100500

// env is a fake Telegram, one Redis key prefix, an agent's client and the
// bridge replicas.
type env struct {
	*platformtest.Agent
	t      *testing.T
	fake   *telegramtest.Server
	prefix string
	agent  *redis.Client
	check  *store.Store
	clock  *platformtest.Clock
	opts   envOpts

	mu       sync.Mutex
	replicas map[string]*replica
	// panics counts the panics the replicas' channels recovered.
	panics atomic.Int64
}

type envOpts struct {
	fake       telegramtest.Options
	chatPace   time.Duration
	globalPace time.Duration
	webhook    bool
	verbose    bool // log at Info, not only warnings
	logLevel   slog.Level
	// leaseTTL replaces the poller lease's 1.5 s.
	leaseTTL time.Duration
	// tapPatience replaces how long a tap may take before it is answered
	// "try again".
	tapPatience time.Duration
	// logs, when set, receives every replica's log too.
	logs io.Writer
	// standing turns standing answers on (EngineConfig.Standing).
	standing bool
}

type replica struct {
	name    string
	redis   *outage // cuts the replica off from Redis
	ch      *telegram.Channel
	engine  *engine.Engine
	cancel  context.CancelFunc // stops the channel, then the engine
	done    chan struct{}
	stopped atomic.Bool
}

func newEnv(t *testing.T, o envOpts) *env {
	t.Helper()
	if o.chatPace == 0 {
		o.chatPace = 20 * time.Millisecond
	}
	if o.globalPace == 0 {
		o.globalPace = time.Millisecond
	}
	if !o.verbose {
		o.logLevel = slog.LevelWarn
	}
	fake := telegramtest.New(o.fake)
	fake.AddChat(opsGroup, "supergroup", "Ops")
	for _, u := range []telegramtest.User{alice, bob, carol} {
		fake.AddChat(u.ID, "private", u.FirstName)
	}
	agent := redis.NewClient(&redis.Options{Addr: redisAddr})
	e := &env{
		t: t, fake: fake, prefix: fmt.Sprintf("tgtest%d:", prefixSeq.Add(1)), agent: agent,
		clock: platformtest.NewClock(), opts: o, replicas: map[string]*replica{},
	}
	e.Agent = platformtest.NewAgent(t, agent, e.prefix)
	e.check = store.New(agent, store.Options{Prefix: e.prefix, Consumer: "check"})
	t.Cleanup(func() {
		e.mu.Lock()
		rs := make([]*replica, 0, len(e.replicas))
		for _, r := range e.replicas {
			rs = append(rs, r)
		}
		e.mu.Unlock()
		for _, r := range rs {
			r.stop()
		}
		fake.Close()
		agent.Close()
	})
	return e
}

// clientHeader marks a replica's requests so the fake judges 429 honouring
// per replica.
type clientHeader struct {
	name string
	next http.RoundTripper
}

func (c clientHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Test-Client", c.name)
	r.Header.Set("X-Test-Sent", strconv.FormatInt(time.Now().UnixNano(), 10))
	return c.next.RoundTrip(r)
}

const webhookURL = "https://bridge.example/hooks/telegram"
const webhookSecret = "s3cret-Token_1-long-enough"

func (e *env) config(name string) telegram.Config {
	cfg := telegram.Config{
		Token: e.fake.Token, APIURL: e.fake.URL, Replica: name,
		PollTimeout: 2 * time.Second, LeaseTTL: cmp.Or(e.opts.leaseTTL, 1500*time.Millisecond), RenewEvery: 300 * time.Millisecond,
		ChatPace: e.opts.chatPace, GlobalPace: e.opts.globalPace,
		HTTPClient: &http.Client{Timeout: 20 * time.Second, Transport: clientHeader{name: name, next: http.DefaultTransport}},
		Panicked:   func(string) { e.panics.Add(1) },
	}
	if e.opts.webhook {
		cfg.WebhookURL, cfg.WebhookSecret = webhookURL, webhookSecret
	}
	return cfg
}

// start runs a bridge replica: an engine and a Telegram channel on the
// shared Redis.
func (e *env) start(name string) *replica {
	e.t.Helper()
	return e.startWith(name, nil)
}

// startWith runs a replica whose channel hands what people do to
// wrap(engine) instead of the engine itself.
func (e *env) startWith(name string, wrap func(engine.Inbox) engine.Inbox) *replica {
	e.t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr, PoolSize: 64})
	cut := &outage{}
	rdb.AddHook(cut)
	// ClaimIdle is longer than any send in these tests: the engine's
	// delivery lease is re-entrant for its own replica, so a replica that
	// claims back its own entry while still sending it would post it twice
	// (see the report on engine.deliver).
	st := store.New(rdb, store.Options{Prefix: e.prefix, Consumer: name, ClaimIdle: time.Minute, AutoPipeline: true})
	var out io.Writer = platformtest.LogWriter{T: e.t}
	if e.opts.logs != nil {
		out = io.MultiWriter(out, e.opts.logs)
	}
	log := slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: e.opts.logLevel})).With("replica", name)
	ch, err := telegram.New(e.config(name), st, log)
	if err != nil {
		e.t.Fatal(err)
	}
	if e.opts.tapPatience > 0 {
		ch.SetTapPatience(e.opts.tapPatience)
	}
	resolve := platformtest.Resolver(engine.Route{Target: askbridge.Target{Platform: "telegram", Chat: strconv.FormatInt(opsGroup, 10)}})
	eng := engine.NewEngine(engine.EngineConfig{
		Store: st, Resolve: resolve, Channels: []engine.Channel{ch}, Logger: log,
		Replica: name, Clock: e.clock, SweepEvery: 50 * time.Millisecond, SendBudget: 30 * time.Second,
		Standing: e.opts.standing,
		// Stopping a replica waits out the read of the requests stream in
		// progress: a short one keeps each test's teardown short.
		ReadBlock: 100 * time.Millisecond,
	})
	// A replica stops as the bridge does: the channel first (it finishes
	// the update in hand, which may end a question), then the engine,
	// which waits for the edits that started.
	engineCtx, stopEngine := context.WithCancel(context.Background())
	channelCtx, stopChannel := context.WithCancel(engineCtx)
	r := &replica{name: name, redis: cut, ch: ch, engine: eng, cancel: stopChannel, done: make(chan struct{})}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = eng.Run(engineCtx) }()
	var in engine.Inbox = eng
	if wrap != nil {
		in = wrap(eng)
	}
	go func() { defer wg.Done(); _ = ch.Run(channelCtx, in); stopEngine() }()
	go func() { wg.Wait(); rdb.Close(); close(r.done) }()
	e.mu.Lock()
	e.replicas[name] = r
	e.mu.Unlock()
	if e.opts.webhook {
		e.fake.SetWebhookTarget(ch.WebhookHandler())
	}
	return r
}

func (r *replica) stop() {
	r.stopped.Store(true)
	r.cancel()
	<-r.done
}

// eventually polls cond until it holds or within passes.
func (e *env) eventually(within time.Duration, what string, cond func() bool) {
	e.t.Helper()
	testwait.For(e.t, within, what, cond)
}

// prompt waits for the bot's n-th message (1-based) in chat, and until
// the bridge has recorded it for its question (a person cannot tap faster
// than that; a test can).
func (e *env) prompt(chat int64, n int) telegramtest.Message {
	e.t.Helper()
	var m telegramtest.Message
	e.eventually(5*time.Second, fmt.Sprintf("bot message %d in chat %d", n, chat), func() bool {
		msgs := e.fake.BotMessages(chat)
		if len(msgs) >= n {
			m = msgs[n-1]
			return true
		}
		return false
	})
	ref := engine.MessageRef{Platform: "telegram", Chat: strconv.FormatInt(chat, 10), Message: strconv.Itoa(m.ID)}
	e.eventually(5*time.Second, "the message recorded", func() bool {
		_, found, err := e.check.QuestionByMessage(context.Background(), ref)
		return err == nil && found
	})
	return m
}

// message reads one message as it stands.
func (e *env) message(chat int64, id int) telegramtest.Message {
	e.t.Helper()
	for _, m := range e.fake.Messages(chat) {
		if m.ID == id {
			return m
		}
	}
	e.t.Fatalf("no message %d in chat %d", id, chat)
	return telegramtest.Message{}
}

// finished waits until a message shows status and has no keyboard.
func (e *env) finished(chat int64, id int, status string) telegramtest.Message {
	e.t.Helper()
	var m telegramtest.Message
	e.eventually(5*time.Second, fmt.Sprintf("message %d to show %q", id, status), func() bool {
		m = e.message(chat, id)
		return strings.HasSuffix(m.Text, "\n\n"+status) && len(m.Keyboard) == 0
	})
	return m
}

// tap presses a button and waits for the notice.
func (e *env) tap(chat int64, msg int, who telegramtest.User, label string) telegramtest.Answer {
	e.t.Helper()
	id, err := e.fake.Tap(chat, msg, who, label)
	if err != nil {
		e.t.Fatal(err)
	}
	return e.notice(id)
}

func (e *env) notice(queryID string) telegramtest.Answer {
	e.t.Helper()
	var a telegramtest.Answer
	e.eventually(5*time.Second, "the answer to callback query "+queryID, func() bool {
		var ok bool
		a, ok = e.fake.Answer(queryID)
		return ok
	})
	return a
}

func (e *env) reply(chat int64, who telegramtest.User, replyTo int, text string) int {
	e.t.Helper()
	id, err := e.fake.Reply(chat, who, replyTo, text)
	if err != nil {
		e.t.Fatal(err)
	}
	return id
}

// poller waits until exactly one replica polls and returns it.
func (e *env) poller() *replica {
	e.t.Helper()
	var p *replica
	e.eventually(10*time.Second, "one polling replica", func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		p = nil
		n := 0
		for _, r := range e.replicas {
			if !r.stopped.Load() && r.ch.State() == engine.StateConnected {
				p, n = r, n+1
			}
		}
		return n == 1
	})
	return p
}

// questionOf is the text of a prompt message before its instructions,
// which start with the free-text line of catalog tag: what the message
// keeps when the question ends.
func questionOf(text, tag string) string {
	i := strings.Index(text, "\n\n"+locale.For(tag).Get("FreeText"))
	if i < 0 {
		return text
	}
	return text[:i]
}

// en is notice n as a person reads it in English, the language of the
// requests without a locale.
func en(n engine.Notice) string { return n.Text(locale.Default) }

// noticeOf is the notice a person read as text in the words of catalog
// tag, "" when it is none of them.
func noticeOf(text, tag string) engine.Notice {
	for _, n := range []engine.Notice{
		engine.NoticeRecorded, engine.NoticeSkipped, engine.NoticeAlreadyAnswered, engine.NoticeAlreadySkipped,
		engine.NoticeExpired, engine.NoticeCancelled, engine.NoticeUndeliverable, engine.NoticeNotForYou,
		engine.NoticeUnknown, engine.NoticeOther, engine.NoticeDuplicate, engine.NoticeTryAgain,
		engine.NoticeSeen, engine.NoticeAlreadySeen,
	} {
		if n.Text(tag) == text {
			return n
		}
	}
	return ""
}

const oneQuestion = `{"id":%q,"to":%q,"questions":[{"id":"deploy_target","header":"Target","question":"Where should this deploy?","options":[{"label":"Staging (Recommended)","description":"Safer default"},{"label":"Production"}]}]}`

func ask1(e *env, id string, chat int64) string {
	return e.Ask(fmt.Sprintf(oneQuestion, id, "telegram:"+strconv.FormatInt(chat, 10)))
}
