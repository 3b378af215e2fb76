package discord_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/discord"
	"github.com/askbridge/askbridge/discord/internal/discordtest"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/enginetest"
	"github.com/askbridge/askbridge/internal/platformtest"
	"github.com/askbridge/askbridge/internal/redistest"
	"github.com/askbridge/askbridge/internal/testwait"
	"github.com/askbridge/askbridge/locale"
	"github.com/askbridge/askbridge/store"
)

var redisAddr string

// The replicas' HTTP clients use the default transport; its idle
// keep-alive connections belong to net/http, not to the code under test.
func TestMain(m *testing.M) {
	os.Exit(redistest.Main(m, "discord", &redisAddr, http.DefaultTransport.(*http.Transport).CloseIdleConnections))
}

var prefixSeq atomic.Int64

// inbox is the engine as the channels see it, recording what it answered
// to each press and message, so a test can wait until an event was handled
// instead of sleeping.
type inbox struct {
	engine.Inbox
	mu      sync.Mutex
	taps    map[string][]engine.TapReply     // by interaction id
	replies map[string][]engine.ReplyOutcome // by message id
}

func newInbox(in engine.Inbox) *inbox {
	return &inbox{Inbox: in, taps: map[string][]engine.TapReply{}, replies: map[string][]engine.ReplyOutcome{}}
}

func (b *inbox) Tap(ctx context.Context, t engine.Tap) engine.TapReply {
	r := b.Inbox.Tap(ctx, t)
	b.mu.Lock()
	b.taps[t.EventID] = append(b.taps[t.EventID], r)
	b.mu.Unlock()
	return r
}

func (b *inbox) Reply(ctx context.Context, r engine.TextReply) engine.ReplyOutcome {
	out := b.Inbox.Reply(ctx, r)
	b.mu.Lock()
	b.replies[r.EventID] = append(b.replies[r.EventID], out)
	b.mu.Unlock()
	return out
}

func (b *inbox) tapped(id string) []engine.TapReply {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]engine.TapReply(nil), b.taps[id]...)
}

func (b *inbox) replied(id string) []engine.ReplyOutcome {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]engine.ReplyOutcome(nil), b.replies[id]...)
}

// env is a fake Discord, one Redis key prefix, an agent, and bridge
// replicas, each an engine with a Discord channel.
type env struct {
	*platformtest.Agent
	t      *testing.T
	fake   *discordtest.Server
	prefix string
	agent  *redis.Client
	clock  *platformtest.Clock
	room   string // a guild channel; questions go there by default
	alice  string // may answer
	bob    string // may not
	reps   []*replica
}

type replica struct {
	name   string
	ch     *discord.Channel
	engine *engine.Engine
	inbox  *inbox // the engine, as ch.Run gets it
	store  enginetest.Store
	cancel context.CancelFunc
	done   chan struct{}
}

type envOpts struct {
	fake discordtest.Options
	// wrap lets a test wrap a replica's store (slow Redis, dead Redis).
	wrap     func(i int, st enginetest.Store) enginetest.Store
	replicas int
	budget   time.Duration
	// client gives a replica its own HTTP client (nil: the default).
	client func(i int) *http.Client
	// inbox wraps the inbox a replica's channel gets (the engine,
	// recorded).
	inbox func(i int, in engine.Inbox) engine.Inbox
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

func newEnv(t *testing.T, o envOpts) *env {
	t.Helper()
	if o.replicas == 0 {
		o.replicas = 2
	}
	fake := discordtest.New(o.fake)
	t.Cleanup(fake.Close)
	// After the replicas stopped (cleanups run last first).
	t.Cleanup(func() { checkQuiet(t, fake) })
	e := &env{
		t: t, fake: fake, prefix: fmt.Sprintf("discordtest%d:", prefixSeq.Add(1)), clock: platformtest.NewClock(),
		room: fake.AddChannel(), alice: fake.AddUser("alice"), bob: fake.AddUser("bob"),
	}
	e.agent = redis.NewClient(&redis.Options{Addr: redisAddr})
	t.Cleanup(func() { e.agent.Close() })
	e.Agent = platformtest.NewAgent(t, e.agent, e.prefix)
	if o.before != nil {
		o.before(e)
	}
	for i := range o.replicas {
		e.start(i, o)
	}
	// All replicas stop at once: closing a gateway session takes a second
	// (discordgo waits that long for the close frame's answer).
	t.Cleanup(func() {
		for _, r := range e.reps {
			r.cancel()
		}
		for _, r := range e.reps {
			<-r.done
		}
	})
	return e
}

func (e *env) start(i int, o envOpts) *replica {
	t := e.t
	name := fmt.Sprintf("replica-%d", i)
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	t.Cleanup(func() { rdb.Close() })
	var st enginetest.Store = store.New(rdb, store.Options{Prefix: e.prefix, Consumer: name, ClaimIdle: o.claimIdle, AutoPipeline: true})
	if o.wrap != nil {
		st = o.wrap(i, st)
	}
	var handler slog.Handler = slog.NewTextHandler(platformtest.LogWriter{T: t}, &slog.HandlerOptions{Level: slog.LevelDebug})
	if o.logs != nil {
		handler = slog.NewMultiHandler(handler, o.logs)
	}
	log := slog.New(handler).With("replica", name)
	var client *http.Client
	if o.client != nil {
		client = o.client(i)
	}
	ch, err := discord.New(discord.Config{
		HTTPClient: client,
		Token:      e.fake.Token(), APIURL: e.fake.URL, Replica: name,
		LeaseTTL: time.Second, StandbyPoll: 100 * time.Millisecond,
		RetryMin: 50 * time.Millisecond, RetryMax: 500 * time.Millisecond,
		BadCredentialsRetry: 300 * time.Millisecond, OpenTimeout: 5 * time.Second,
		Panicked: o.panicked,
	}, st, log)
	if err != nil {
		t.Fatal(err)
	}
	resolve := platformtest.Resolver(engine.Route{Target: askbridge.Target{Platform: "discord", Chat: e.room}, Answerers: []string{"discord:" + e.alice}})
	budget := o.budget
	if budget == 0 {
		budget = 10 * time.Second
	}
	eng := engine.NewEngine(engine.EngineConfig{
		Store: st, Resolve: resolve, Channels: []engine.Channel{ch}, Logger: log,
		Replica: name, Clock: e.clock, SweepEvery: 20 * time.Millisecond, SendBudget: budget,
		Standing: o.standing,
		// Stopping a replica waits out the read of the requests stream in
		// progress: a short one keeps each test's teardown short.
		ReadBlock: 100 * time.Millisecond,
	})
	ctx, cancel := context.WithCancel(context.Background())
	r := &replica{name: name, ch: ch, engine: eng, inbox: newInbox(eng), store: st, cancel: cancel, done: make(chan struct{})}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = eng.Run(ctx) }()
	var in engine.Inbox = r.inbox
	if o.inbox != nil {
		in = o.inbox(i, in)
	}
	go func() { defer wg.Done(); _ = ch.Run(ctx, in) }()
	go func() { wg.Wait(); close(r.done) }()
	t.Cleanup(r.stop)
	e.reps = append(e.reps, r)
	return r
}

func (r *replica) stop() {
	r.cancel()
	<-r.done
}

// waitGateway waits until exactly one replica holds a connected gateway
// and the others stand by, and returns the holder.
func (e *env) waitGateway() *replica {
	e.t.Helper()
	var holder *replica
	e.eventually(10*time.Second, "one gateway session, the rest standing by", func() bool {
		holder = nil
		n := 0
		for _, r := range e.reps {
			select {
			case <-r.done:
				continue
			default:
			}
			switch r.ch.State() {
			case engine.StateConnected:
				holder = r
				n++
			case engine.StateStandby:
			default:
				return false
			}
		}
		return n == 1 && e.fake.Sessions() == 1
	})
	return holder
}

func (e *env) eventually(within time.Duration, what string, cond func() bool) {
	e.t.Helper()
	testwait.For(e.t, within, what, cond)
}

// handled waits until the replicas' engines answered n presses or messages
// with this event id (the bot's own answer to it may still be on its way),
// and returns what they answered to presses and to messages.
func (e *env) handled(id string, n int) ([]engine.TapReply, []engine.ReplyOutcome) {
	e.t.Helper()
	var taps []engine.TapReply
	var replies []engine.ReplyOutcome
	e.eventually(10*time.Second, fmt.Sprintf("event %s handled %d times", id, n), func() bool {
		taps, replies = nil, nil
		for _, r := range e.reps {
			taps = append(taps, r.inbox.tapped(id)...)
			replies = append(replies, r.inbox.replied(id)...)
		}
		return len(taps)+len(replies) >= n
	})
	return taps, replies
}

// requests lists the REST calls the fake served for a path under
// /api/v9/ (as "channels/<id>/messages/<id>"), with one method.
func (e *env) requests(method, path string) []discordtest.Request {
	var out []discordtest.Request
	for _, r := range e.fake.Requests() {
		if r.Method == method && r.Path == "/api/v9/"+path {
			out = append(out, r)
		}
	}
	return out
}

func (e *env) botMessages(channel string) []discordtest.Message {
	var out []discordtest.Message
	for _, m := range e.fake.Messages(channel) {
		if m.Author.ID == e.fake.BotID && m.ReplyTo == "" {
			out = append(out, m)
		}
	}
	return out
}

// message waits until a message satisfies cond.
func (e *env) message(id string, what string, cond func(discordtest.Message) bool) discordtest.Message {
	e.t.Helper()
	var m discordtest.Message
	e.eventually(10*time.Second, "message "+id+" "+what, func() bool {
		m, _ = e.fake.Message(id)
		return cond(m)
	})
	return m
}

// ended reports whether a message shows its question ended with status:
// no buttons, the status line last (alone, for a part that held only
// instructions), and no instruction left, in any language.
func ended(status string) func(discordtest.Message) bool {
	line := "**" + discord.Escape(status) + "**"
	return func(m discordtest.Message) bool {
		if len(m.Components) != 0 || m.Content != line && !strings.HasSuffix(m.Content, "\n\n"+line) {
			return false
		}
		for _, in := range instructions {
			if strings.Contains(m.Content, in) {
				return false
			}
		}
		return true
	}
}

// instructions are the bridge's instructions (Plan.FreeText, the lines of
// Plan.Closing) in every shipped language, as a prompt shows them.
var instructions = func() []string {
	var out []string
	for _, tag := range locale.Tags() {
		w := locale.For(tag)
		for _, id := range []string{"FreeText", "ClosingButtons", "ClosingOne", "ClosingMulti", "ClosingSeveral", "ClosingSeveralEnd"} {
			out = append(out, discord.Escape(w.Get(id)))
		}
	}
	return out
}()

// exampleLine is a line of the closing of a prompt of several questions:
// "2: 1, 2".
var exampleLine = regexp.MustCompile(`^[0-9]+: [0-9, ]+$`)

// kept reports whether edited, a message of an ended question, shows the
// text of prompt, the message as posted, less its instructions: the
// prompt's text up to them, then the status line.
func kept(edited, prompt string) bool {
	text := ""
	if i := strings.LastIndex(edited, "\n\n**"); i >= 0 {
		text = edited[:i]
	}
	rest, ok := strings.CutPrefix(prompt, text)
	if !ok {
		return false
	}
	for _, l := range strings.Split(rest, "\n") {
		if l != "" && !slices.Contains(instructions, l) && !exampleLine.MatchString(l) {
			return false
		}
	}
	return true
}

// checkQuiet checks every call the bridge made that posted or edited a
// message (refused ones too): its allowed_mentions parse nothing, and it
// sets SUPPRESS_EMBEDS. An edit of an interaction's @original cannot set
// flags; the message keeps those it was posted with.
func checkQuiet(t *testing.T, fake *discordtest.Server) {
	t.Helper()
	for _, r := range fake.Requests() {
		if r.Message == nil {
			continue
		}
		if !r.Message.Quiet() {
			t.Errorf("%s %s could ping: allowed_mentions %+v", r.Method, r.Path, r.Message.AllowedMentions)
		}
		if !strings.HasSuffix(r.Path, "/messages/@original") && !r.Message.SuppressesEmbeds() {
			t.Errorf("%s %s could show embeds: flags %v", r.Method, r.Path, r.Message.Flags)
		}
	}
}

// click presses a button and waits until the bot answered the press with
// an ephemeral notice; it returns the interaction.
func (e *env) click(user, message, customID string) discordtest.Interaction {
	e.t.Helper()
	id, err := e.fake.Click(user, message, customID)
	if err != nil {
		e.t.Fatal(err)
	}
	var in discordtest.Interaction
	defer func() {
		if e.t.Failed() {
			e.t.Logf("press %s: ack type %d after %s, failed %v, %d callback calls, %d responses", id, in.AckType, in.AckLatency, in.Failed, in.Calls, len(in.Responses))
		}
	}()
	e.eventually(10*time.Second, "an answer to the press", func() bool {
		in, _ = e.fake.Interaction(id)
		for _, r := range in.Responses {
			if r.Ephemeral() {
				return true
			}
		}
		return false
	})
	return in
}

func notice(in discordtest.Interaction) string {
	for _, r := range in.Responses {
		if r.Ephemeral() {
			return r.Content
		}
	}
	return ""
}

// replies waits for the bot's replies to a message.
func (e *env) replyTo(channel, message string) discordtest.Message {
	e.t.Helper()
	var got discordtest.Message
	e.eventually(10*time.Second, "a reply to "+message, func() bool {
		for _, m := range e.fake.Messages(channel) {
			if m.Author.ID == e.fake.BotID && m.ReplyTo == message {
				got = m
				return true
			}
		}
		return false
	})
	return got
}

func buttonIDs(m discordtest.Message) []string {
	var ids []string
	for _, row := range m.Components {
		for _, b := range row.Components {
			ids = append(ids, b.CustomID)
		}
	}
	return ids
}

func answers(r askbridge.Result) map[string][]string {
	if r.Answers == nil {
		return nil
	}
	return r.Answers.Answers
}

const oneQuestion = `{"id":%q,"questions":[{"id":"deploy_target","header":"Target","question":"Where should this deploy?","options":[{"label":"Staging (Recommended)","description":"Safer default"},{"label":"Production"}]}]}`

// unescaped reports whether s shows raw where no backslash escapes it.
func unescaped(s, raw string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], raw)
		if j < 0 {
			return false
		}
		if k := i + j; k == 0 || s[k-1] != '\\' {
			return true
		}
		i += j + 1
	}
}

// shown waits until a question's messages are recorded in the store (the
// engine records them right after Discord accepted them; a person cannot
// press or reply sooner) and returns them as the fake has them.
func (e *env) shown(id string) []discordtest.Message {
	e.t.Helper()
	var refs []engine.MessageRef
	ctx := context.Background()
	st := e.reps[0].store
	e.eventually(10*time.Second, "question "+id+" shown", func() bool {
		var err error
		refs, err = st.Messages(ctx, id)
		if err != nil || len(refs) == 0 {
			return false
		}
		// The store lists the message first and indexes it a moment
		// later (store.AddMessage); a press needs the index.
		for _, ref := range refs {
			if got, found, err := st.QuestionByMessage(ctx, ref); err != nil || !found || got != id {
				return false
			}
		}
		return true
	})
	out := make([]discordtest.Message, len(refs))
	for i, ref := range refs {
		m, ok := e.fake.Message(ref.Message)
		if !ok {
			e.t.Fatalf("message %s of %s is not on Discord", ref.Message, id)
		}
		out[i] = m
	}
	return out
}

// shownWhole waits until every part of a prompt in the room is posted and
// recorded (the engine records each part as it is posted; the buttons go
// under the last one) and returns them in order.
func (e *env) shownWhole(id string) []discordtest.Message {
	e.t.Helper()
	var ps []discordtest.Message
	e.eventually(10*time.Second, "every part of "+id+" posted and recorded", func() bool {
		ps = e.shown(id)
		return len(ps[len(ps)-1].Components) > 0 && len(ps) == len(e.botMessages(e.room))
	})
	return ps
}
