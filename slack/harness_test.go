package slack_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/enginetest"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/internal/platformtest"
	"github.com/askbridge/askbridge/internal/redistest"
	"github.com/askbridge/askbridge/locale"
	"github.com/askbridge/askbridge/slack"
	"github.com/askbridge/askbridge/slack/internal/slacktest"
	"github.com/askbridge/askbridge/store"
)

var redisAddr string

func TestMain(m *testing.M) { os.Exit(redistest.Main(m, "slack", &redisAddr)) }

const (
	botToken      = "xoxb-test-bot-token"
	appToken      = "xapp-test-app-token"
	signingSecret = "test-signing-secret"
	opsChannel    = "C0OPS"
)

var (
	alice = slacktest.Person{ID: "UALICE", Name: "alice"}
	bob   = slacktest.Person{ID: "UBOB", Name: "bob"}
)

// Inbound modes of the channel.
const (
	socketMode = "socket"
	httpMode   = "http"
)

var modes = []string{socketMode, httpMode}

var prefixSeq atomic.Int64

// replica is one bridge replica: an engine and a Slack channel on the
// shared Redis.
type replica struct {
	engine *engine.Engine
	ch     *slack.Channel
	// stop stops the engine and the channel and waits until both have
	// returned (Run returns once the events in hand are handled). Safe
	// to repeat.
	stop func()
}

// env is two replicas, one real Redis, the fake Slack, and an agent.
type env struct {
	*platformtest.Agent
	t        *testing.T
	mode     string
	prefix   string
	fake     *slacktest.Server
	agent    *redis.Client
	replicas []*replica
	clock    *platformtest.Clock
	// store reads what the replicas recorded.
	store *store.Store

	// handled lists the taps and text replies the engines have answered,
	// in the order they returned to a channel.
	mu      sync.Mutex
	handled []handledEvent
}

// handledEvent is a tap or a text reply an engine has answered.
type handledEvent struct {
	Tap    bool
	Person string
	// Text is a text reply's text.
	Text string
}

// watchInbox is the engine as a channel's inbox, recording each tap and
// reply once the engine has answered it: a positive signal that an event
// was handled (and so that whatever it was going to change has changed).
type watchInbox struct {
	engine.Inbox
	e *env
}

func (w watchInbox) Tap(ctx context.Context, t engine.Tap) engine.TapReply {
	r := w.Inbox.Tap(ctx, t)
	w.e.record(handledEvent{Tap: true, Person: t.Person.ID})
	return r
}

func (w watchInbox) Reply(ctx context.Context, r engine.TextReply) engine.ReplyOutcome {
	out := w.Inbox.Reply(ctx, r)
	w.e.record(handledEvent{Person: r.Person.ID, Text: r.Text})
	return out
}

func (e *env) record(h handledEvent) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.handled = append(e.handled, h)
}

// handledEvents returns what the engines have answered so far.
func (e *env) handledEvents() []handledEvent {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]handledEvent(nil), e.handled...)
}

// waitHandled waits until the engines have answered every event in want
// (each at least as many times as it is listed).
func (e *env) waitHandled(want ...handledEvent) {
	e.t.Helper()
	ok := e.fake.Wait(10*time.Second, func() bool {
		left := append([]handledEvent(nil), want...)
		for _, h := range e.handledEvents() {
			for i, w := range left {
				if w == h {
					left = append(left[:i], left[i+1:]...)
					break
				}
			}
		}
		return len(left) == 0
	})
	if !ok {
		e.t.Fatalf("not all of %+v were handled; handled %+v", want, e.handledEvents())
	}
}

// settle waits until every event the fake sent has been taken (in socket
// mode, acknowledged), then stops both replicas, which return once every
// event in hand is handled and every edit under way is done. After it
// nothing changes any more, so a test may check that something did not
// happen.
func (e *env) settle() {
	e.t.Helper()
	if !e.fake.Wait(10*time.Second, func() bool { return e.fake.Unacked() == 0 }) {
		e.t.Fatalf("%d envelopes never acknowledged", e.fake.Unacked())
	}
	for _, r := range e.replicas {
		r.stop()
	}
}

type envOpts struct {
	sendBudget time.Duration
	// wrap wraps each replica's store (the engine's and the channel's),
	// to make Redis fail on demand.
	wrap func(enginetest.Store) enginetest.Store
	// inbox wraps the inbox each channel gets (the engine, recorded).
	inbox func(engine.Inbox) engine.Inbox
	// logs, when set, receives every replica's log records too.
	logs slog.Handler
	// panicked, when set, counts the panics the channels recovered.
	panicked func(op string)
	// claimIdle is how long a request a replica took may go
	// unacknowledged before another takes it (the store's default if 0).
	claimIdle time.Duration
	// before runs before the replicas start, to leave what a replica that
	// died left behind.
	before func(e *env)
	// standing turns standing answers on (EngineConfig.Standing).
	standing bool
}

func newEnv(t *testing.T, mode string, o envOpts) *env {
	t.Helper()
	if o.sendBudget == 0 {
		o.sendBudget = 5 * time.Second
	}
	fake := slacktest.New(slacktest.Options{BotToken: botToken, AppToken: appToken, SigningSecret: signingSecret,
		AckTimeout: 3 * time.Second, PingEvery: 50 * time.Millisecond})
	t.Cleanup(fake.Close)
	fake.AddChannel(opsChannel)
	e := &env{t: t, mode: mode, prefix: fmt.Sprintf("slacktest%d:", prefixSeq.Add(1)), fake: fake, clock: platformtest.NewClock()}
	e.agent = redis.NewClient(&redis.Options{Addr: redisAddr})
	t.Cleanup(func() { e.agent.Close() })
	e.Agent = platformtest.NewAgent(t, e.agent, e.prefix)
	e.store = store.New(e.agent, store.Options{Prefix: e.prefix, Consumer: "reader"})
	if o.before != nil {
		o.before(e)
	}
	var handlers []http.Handler
	for i := range 2 {
		r, h := e.startReplica(fmt.Sprintf("replica-%d", i+1), o)
		e.replicas = append(e.replicas, r)
		handlers = append(handlers, h)
	}
	if mode == httpMode {
		// A load balancer in front of the replicas: round robin.
		var n atomic.Int64
		lb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			handlers[int(n.Add(1))%len(handlers)].ServeHTTP(w, r)
		}))
		t.Cleanup(lb.Close)
		fake.UseHTTP(lb.URL+slack.EventsPath, lb.URL+slack.InteractivityPath)
	} else if !fake.Wait(10*time.Second, func() bool { return fake.Connections() == 2 }) {
		t.Fatalf("%d socket connections, want 2", fake.Connections())
	}
	for _, r := range e.replicas {
		if !fake.Wait(5*time.Second, func() bool { return r.ch.State() == engine.StateConnected }) {
			t.Fatalf("channel state %q", r.ch.State())
		}
	}
	return e
}

func (e *env) startReplica(name string, o envOpts) (*replica, http.Handler) {
	t := e.t
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	t.Cleanup(func() { rdb.Close() })
	var st enginetest.Store = store.New(rdb, store.Options{Prefix: e.prefix, Consumer: name, ClaimIdle: o.claimIdle, AutoPipeline: true})
	if o.wrap != nil {
		st = o.wrap(st)
	}
	var handler slog.Handler = slog.NewTextHandler(platformtest.LogWriter{T: t}, &slog.HandlerOptions{Level: slog.LevelInfo})
	if o.logs != nil {
		handler = slog.NewMultiHandler(handler, o.logs)
	}
	log := slog.New(handler).With("replica", name)
	cfg := slack.Config{BotToken: botToken, SigningSecret: signingSecret, APIURL: e.fake.APIURL(),
		PingInterval: time.Second, RetryMin: 50 * time.Millisecond, RetryMax: time.Second, Panicked: o.panicked}
	if e.mode == socketMode {
		cfg.AppToken = appToken
	}
	ch, err := slack.New(cfg, st, log)
	if err != nil {
		t.Fatal(err)
	}
	resolve := platformtest.Resolver(engine.Route{Target: askbridge.Target{Platform: slack.Platform, Chat: opsChannel}})
	eng := engine.NewEngine(engine.EngineConfig{
		Store: st, Resolve: resolve, Channels: []engine.Channel{ch}, Logger: log,
		Clock: e.clock, Replica: name, SweepEvery: 20 * time.Millisecond, SendBudget: o.sendBudget,
		Standing: o.standing,
		// Stopping a replica waits out the read of the requests stream in
		// progress: a short one keeps each test's teardown short.
		ReadBlock: 100 * time.Millisecond,
	})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = eng.Run(ctx) }()
	var in engine.Inbox = watchInbox{Inbox: eng, e: e}
	if o.inbox != nil {
		in = o.inbox(in)
	}
	go func() { defer wg.Done(); _ = ch.Run(ctx, in) }()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return &replica{engine: eng, ch: ch, stop: stop}, ch.HTTPHandler()
}

// waitMessages waits until channel holds n messages of the bot that are
// not thread replies, and returns them.
func (e *env) waitMessages(channel string, n int) []slacktest.Message {
	e.t.Helper()
	var got []slacktest.Message
	ok := e.fake.Wait(10*time.Second, func() bool {
		got = nil
		for _, m := range e.fake.Messages(channel) {
			if m.BotID == slacktest.BotID && m.ThreadTS == "" {
				got = append(got, m)
			}
		}
		return len(got) >= n
	})
	if !ok {
		e.t.Fatalf("%s holds %d prompts, want %d", channel, len(got), n)
	}
	return got
}

// prompt waits for the prompt of question id in channel.
func (e *env) prompt(channel, id string) slacktest.Message {
	e.t.Helper()
	digest := askbridge.QuestionDigest(id)
	var found slacktest.Message
	ok := e.fake.Wait(10*time.Second, func() bool {
		for _, m := range e.fake.Messages(channel) {
			if m.BotID == slacktest.BotID && m.ThreadTS == "" && strings.Contains(string(m.Blocks), digest) {
				found = m
				return true
			}
		}
		return false
	})
	if !ok {
		e.t.Fatalf("no prompt for %s in %s", id, channel)
	}
	// The engine records the message once chat.postMessage has answered;
	// a person replies seconds later, a test within milliseconds, so it
	// waits for the record first.
	ref := engine.MessageRef{Platform: slack.Platform, Chat: channel, Message: found.TS}
	if !e.fake.Wait(10*time.Second, func() bool {
		got, known, err := e.store.QuestionByMessage(context.Background(), ref)
		return err == nil && known && got == id
	}) {
		e.t.Fatalf("the prompt of %s was never recorded", id)
	}
	return found
}

// waitEnded waits until message ts shows status and no buttons.
func (e *env) waitEnded(channel, ts, status string) slacktest.Message {
	e.t.Helper()
	var m slacktest.Message
	ok := e.fake.Wait(10*time.Second, func() bool {
		m, _ = e.fake.Message(channel, ts)
		return len(slacktest.Buttons(m.Blocks)) == 0 && strings.Contains(string(m.Blocks), `"context"`) && strings.Contains(m.Text, status) && strings.Contains(string(m.Blocks), jsonString(status))
	})
	if !ok {
		e.t.Fatalf("message %s: want ended with %q, now text %q blocks %s", ts, status, m.Text, m.Blocks)
	}
	// Ended, it no longer says how to answer, in any language; and no
	// write of it ever asked for a preview or linked a name.
	shown := append(mrkdwnTexts(e.t, string(m.Blocks)), m.Text)
	for _, tag := range locale.Tags() {
		w := locale.For(tag)
		for _, id := range []string{"FreeText", "ClosingButtons", "ClosingOne", "ClosingMulti", "ClosingSeveral", "ClosingSeveralEnd"} {
			for _, text := range shown {
				if strings.Contains(text, slack.Escape(w.Get(id))) {
					e.t.Errorf("message %s ended still showing %s (%s): %q", ts, id, tag, text)
				}
			}
		}
	}
	e.quiet(m)
	return m
}

// quiet checks that every post and edit of m asked Slack for no link or
// media preview and no linking of names.
func (e *env) quiet(m slacktest.Message) {
	e.t.Helper()
	for i, d := range m.Displays {
		if d != (slacktest.Display{}) {
			e.t.Errorf("message %s, write %d: shown as %+v, want no unfurling and no link_names", m.TS, i, d)
		}
	}
}

// quietCalls checks every chat.postMessage and chat.update so far the way
// quiet checks a message.
func (e *env) quietCalls() {
	e.t.Helper()
	n := 0
	for _, method := range []string{"chat.postMessage", "chat.update"} {
		for _, c := range e.fake.Calls(method) {
			n++
			if d := slacktest.DisplayOf(c.Form); d != (slacktest.Display{}) {
				e.t.Errorf("%s of %q: shown as %+v", method, c.Form.Get("text"), d)
			}
		}
	}
	if n == 0 {
		e.t.Errorf("no chat.postMessage or chat.update to check")
	}
}

// settleRequests waits until every request in the stream was read and
// acknowledged.
func (e *env) settleRequests() {
	e.t.Helper()
	ctx := context.Background()
	if !e.fake.Wait(10*time.Second, func() bool {
		groups, err := e.agent.XInfoGroups(ctx, e.prefix+"requests").Result()
		n, err2 := e.agent.XLen(ctx, e.prefix+"requests").Result()
		return err == nil && err2 == nil && len(groups) == 1 && groups[0].Pending == 0 && groups[0].EntriesRead >= n
	}) {
		e.t.Fatal("requests still unhandled")
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return strings.Trim(string(b), `"`)
}

// waitEphemeral waits for an ephemeral notice text to user.
func (e *env) waitEphemeral(user, text string) {
	e.t.Helper()
	ok := e.fake.Wait(10*time.Second, func() bool {
		for _, m := range e.fake.Ephemerals(user) {
			if m.Text == text {
				return true
			}
		}
		return false
	})
	if !ok {
		e.t.Fatalf("no ephemeral %q to %s; got %+v", text, user, e.fake.Ephemerals(user))
	}
}

// waitThreadReply waits for a reply of the bot in the thread of ts that
// contains want.
func (e *env) waitThreadReply(channel, thread, want string) slacktest.Message {
	e.t.Helper()
	var found slacktest.Message
	ok := e.fake.Wait(10*time.Second, func() bool {
		for _, m := range e.fake.Messages(channel) {
			if m.BotID == slacktest.BotID && m.ThreadTS == thread && strings.Contains(m.Text, want) {
				found = m
				return true
			}
		}
		return false
	})
	if !ok {
		e.t.Fatalf("no reply containing %q in thread %s", want, thread)
	}
	return found
}

func (e *env) press(p slacktest.Person, channel, ts, label string) slacktest.Delivery {
	e.t.Helper()
	d, err := e.fake.Press(p, channel, ts, label)
	if err != nil {
		e.t.Fatal(err)
	}
	return d
}

func (e *env) say(p slacktest.Person, channel, thread, text string) (string, slacktest.Delivery) {
	e.t.Helper()
	ts, d, err := e.fake.Say(p, channel, thread, text)
	if err != nil {
		e.t.Fatal(err)
	}
	return ts, d
}

// bothModes runs f once per inbound mode, in parallel.
func bothModes(t *testing.T, f func(t *testing.T, mode string)) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			f(t, mode)
		})
	}
}

func httptestServer(t *testing.T, h http.Handler) string {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// pressPayload is the block_actions payload of alice pressing Production
// on m, built by the fake without sending it.
func pressPayload(e *env, m slacktest.Message) ([]byte, error) {
	d, err := e.fake.PressPayload(alice, m, "Production")
	return d.Payload, err
}

type nopInbox struct{}

func (nopInbox) Tap(context.Context, engine.Tap) engine.TapReply { return engine.TapReply{} }
func (nopInbox) Reply(context.Context, engine.TextReply) engine.ReplyOutcome {
	return engine.ReplyOutcome{}
}
func (nopInbox) Attach(context.Context, string, engine.MessageRef) error { return nil }

func (nopInbox) Locale() string { return "en" }
