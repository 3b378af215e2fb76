package engine_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/agenttest"
	"github.com/askbridge/askbridge/internal/enginetest"
	"github.com/askbridge/askbridge/internal/redistest"
	"github.com/askbridge/askbridge/internal/testwait"
	"github.com/askbridge/askbridge/store"
)

var redisAddr string

func TestMain(m *testing.M) { os.Exit(redistest.Main(m, "engine", &redisAddr)) }

var prefixSeq atomic.Int64

// fakeChannel is a channel kept in memory: it records what the engine
// sends and edits, and can be told to fail.
type fakeChannel struct {
	platform string
	caps     engine.Capabilities

	mu       sync.Mutex
	sent     []sentPrompt
	finished map[string]string // message -> status line
	nextID   int
	// failures are returned by the next Send calls, in order.
	failures []error
	// delay makes every Send take this long, like a rate-limited platform.
	delay time.Duration
	// gate, when set, holds every Send until it can receive from it;
	// entered counts the Sends that started.
	gate    chan struct{}
	entered atomic.Int64
	// panicOnFinish makes Finish panic, like a bug in a channel.
	panicOnFinish atomic.Bool
	// finishFailures are returned by the next Finish calls, in order.
	finishFailures []error
	// finishGate, when set, holds every Finish until it can receive from
	// it; inFinish counts the Finish calls under way, mostInFinish the
	// most at once.
	finishGate   chan struct{}
	inFinish     atomic.Int64
	mostInFinish atomic.Int64
	// parts is how many messages a prompt takes (default 1); failPart
	// fails the post of a part once, before posting it.
	parts    int
	failPart map[int]error
	// beforeSent, when set, runs after a part is posted and before it is
	// handed to the engine (the instant a tap may already come in).
	beforeSent func(ref engine.MessageRef)
	// failChat fails every Send to a chat with its error.
	failChat map[string]error
	// updated holds the last plan each message was updated to show,
	// reminders the reminders posted, deleted the messages deleted.
	updated   map[string]engine.Plan
	reminders []reminder
	deleted   map[string]bool
	// offers holds the offer to keep an answer each message was last
	// edited to show (nil: none), offerRemoved how often RemoveOffer
	// edited it; standing and standingEdits are the standing answers'
	// messages posted and their edits (standing_show_test.go).
	offers        map[string]*engine.OfferView
	offerRemoved  map[string]int
	standing      []standingPost
	standingEdits []standingEdit
}

type sentPrompt struct {
	chat string
	plan engine.Plan
	refs []engine.MessageRef
}

func newFakeChannel(platform string) *fakeChannel {
	return &fakeChannel{
		platform: platform,
		caps:     engine.Capabilities{Buttons: true, ButtonsPerRow: 1, PayloadBytes: 64, ReplyBox: true},
		finished: map[string]string{},
	}
}

func (f *fakeChannel) Platform() string                  { return f.platform }
func (f *fakeChannel) Capabilities() engine.Capabilities { return f.caps }
func (f *fakeChannel) State() engine.ChannelState        { return engine.StateConnected }
func (f *fakeChannel) Run(ctx context.Context, in engine.Inbox) error {
	<-ctx.Done()
	return nil
}

func (f *fakeChannel) Send(ctx context.Context, d engine.Delivery) error {
	f.entered.Add(1)
	chat, plan := d.Chat, d.Plan
	if user, ok := strings.CutPrefix(chat, "@"); ok {
		// A user's DM, as Discord and Slack open it: a chat of its own id.
		chat = "dm-" + user
	}
	f.mu.Lock()
	delay, gate := f.delay, f.gate
	f.mu.Unlock()
	time.Sleep(delay) // the fake platform's own latency, as a test sets it
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return &engine.SendError{Kind: engine.Temporary, Reason: ctx.Err().Error()}
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.failures) > 0 {
		err := f.failures[0]
		f.failures = f.failures[1:]
		return err
	}
	if err, ok := f.failChat[chat]; ok {
		return err
	}
	parts := max(f.parts, 1)
	for part := d.From; part < parts; part++ {
		if err, ok := f.failPart[part]; ok {
			delete(f.failPart, part)
			return err
		}
		f.nextID++
		ref := engine.MessageRef{Platform: f.platform, Chat: chat, Message: fmt.Sprint(f.nextID), Part: part}
		if part == 0 {
			f.sent = append(f.sent, sentPrompt{chat: chat, plan: plan})
		}
		last := &f.sent[len(f.sent)-1]
		last.refs = append(last.refs, ref)
		if hook := f.beforeSent; hook != nil {
			f.mu.Unlock()
			hook(ref)
			f.mu.Lock()
		}
		if !d.Sent(ref) {
			return nil
		}
	}
	return nil
}

// Parts: a prompt takes parts messages (1 by default), like a real
// channel's long prompt.
func (f *fakeChannel) Parts(engine.Plan) int { return max(f.parts, 1) }

func (f *fakeChannel) Finish(ctx context.Context, ref engine.MessageRef, end engine.Ending) error {
	if f.panicOnFinish.Load() {
		panic("fake channel: finish failed badly")
	}
	n := f.inFinish.Add(1)
	defer f.inFinish.Add(-1)
	for most := f.mostInFinish.Load(); n > most && !f.mostInFinish.CompareAndSwap(most, n); most = f.mostInFinish.Load() {
	}
	f.mu.Lock()
	gate := f.finishGate
	f.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return &engine.SendError{Kind: engine.Temporary, Reason: ctx.Err().Error()}
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.finishFailures) > 0 {
		err := f.finishFailures[0]
		f.finishFailures = f.finishFailures[1:]
		return err
	}
	if ref.Part >= max(f.parts, 1) {
		// As the real channels do: a part the plan does not have.
		return &engine.SendError{Kind: engine.Permanent, Reason: fmt.Sprintf("message %s shows part %d, which the plan does not have", ref.Message, ref.Part)}
	}
	f.finished[ref.Message] = end.Status
	if f.offers == nil {
		f.offers = map[string]*engine.OfferView{}
	}
	f.offers[ref.Message] = end.Offer
	return nil
}

// Update records the notes an open prompt was edited to show (Updater).
func (f *fakeChannel) Update(ctx context.Context, ref engine.MessageRef, p engine.Plan) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.updated == nil {
		f.updated = map[string]engine.Plan{}
	}
	f.updated[ref.Message] = p
	return nil
}

// Remind posts a reminder under prompt (Reminder).
func (f *fakeChannel) Remind(ctx context.Context, prompt engine.MessageRef, text string) (engine.MessageRef, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	ref := engine.MessageRef{Platform: f.platform, Chat: prompt.Chat, Message: fmt.Sprint(f.nextID)}
	f.reminders = append(f.reminders, reminder{ref: ref, under: prompt.Message, text: text})
	return ref, nil
}

// Delete deletes a reminder (Reminder).
func (f *fakeChannel) Delete(ctx context.Context, ref engine.MessageRef) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.deleted == nil {
		f.deleted = map[string]bool{}
	}
	f.deleted[ref.Message] = true
	return nil
}

type reminder struct {
	ref   engine.MessageRef
	under string
	text  string
}

func (f *fakeChannel) sends() []sentPrompt {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]sentPrompt(nil), f.sent...)
}

func (f *fakeChannel) status(message string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.finished[message]
}

// newClock is the engine's simulated clock: it moves only when a test
// advances it.
func newClock() *clockwork.FakeClock { return clockwork.NewFakeClockAt(time.Now()) }

// engineTickers is how many tickers a running engine keeps on its clock
// (the sweeper's, the finisher's and the pinger's): a test that waits for one more
// waiter knows the engine sleeps on a retry.
const engineTickers = 3

// advance moves the clock by d once the engine's tickers are on it, so the
// sweeper and the finisher see the new time.
func (h *harness) advance(d time.Duration) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.clock.BlockUntilContext(ctx, engineTickers); err != nil {
		h.t.Fatalf("engine tickers not on the clock: %v", err)
	}
	h.clock.Advance(d)
}

// advanceWhileRetrying moves the clock a step at a time whenever the
// engine sleeps on it beyond its tickers and the renewal of the lease it
// holds while it delivers or edits (a retry's wait), until done reports
// true.
func (h *harness) advanceWhileRetrying(step time.Duration, done func() bool) {
	h.t.Helper()
	h.advanceWhileSleeping(engineTickers+2, step, done)
}

// advanceWhileSleeping moves the clock a step at a time whenever waiters
// sleep on it, until done reports true.
func (h *harness) advanceWhileSleeping(waiters int, step time.Duration, done func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !done() {
		if time.Now().After(deadline) {
			h.t.Fatal("the engine never got there")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		err := h.clock.BlockUntilContext(ctx, waiters)
		cancel()
		if err == nil {
			h.clock.Advance(step)
		}
	}
}

// waitHandled waits until every entry pushed to the requests stream has
// been read and acknowledged: nothing the engine does after that comes
// from a request.
func (h *harness) waitHandled() {
	h.t.Helper()
	ctx := context.Background()
	testwait.For(h.t, 30*time.Second, "every request handled", func() bool {
		groups, err := h.agent.XInfoGroups(ctx, h.prefix+"requests").Result()
		if err != nil {
			h.t.Fatal(err)
		}
		n, err := h.agent.XLen(ctx, h.prefix+"requests").Result()
		if err != nil {
			h.t.Fatal(err)
		}
		return len(groups) == 1 && groups[0].Pending == 0 && groups[0].EntriesRead >= n
	})
}

// harness is one bridge replica on the shared test Redis, plus an agent's
// raw client.
type harness struct {
	t      *testing.T
	prefix string
	agent  *redis.Client
	ch     *fakeChannel
	engine *engine.Engine
	store  *store.Store
	// stop stops the engine; stopped is closed when its Run returned.
	stop    context.CancelFunc
	stopped chan struct{}
	clock   *clockwork.FakeClock
}

type harnessOpts struct {
	prefix    string
	replica   string
	claimIdle time.Duration
	clock     *clockwork.FakeClock
	// sweepEvery overrides the sweeper's interval (a long one stands for
	// a sweeper that lags); wrap, when set, wraps the store the engine uses.
	sweepEvery time.Duration
	wrap       func(enginetest.Store) enginetest.Store
	metrics    engine.Metrics
	stopGrace  time.Duration
	// finishConcurrency bounds the questions finished at once.
	finishConcurrency int
	// maxPerAgent caps the pending questions per agent (the store keeps
	// its agent index when set).
	maxPerAgent int
	// locale is the bridge's default language (EngineConfig.Locale).
	locale string
	ch     *fakeChannel
	// timerHold is EngineConfig.TimerHold.
	timerHold time.Duration
	// channel, when set, is what the engine gets in place of ch (ch
	// wrapped, to add an optional interface).
	channel func(*fakeChannel) engine.Channel
	// standing turns standing answers on (EngineConfig.Standing), with
	// standingMax as their cap.
	standing    bool
	standingMax time.Duration
	// links is EngineConfig.Links; a `to` of "links:<chat>" is a route
	// to that chat with links on.
	links engine.LinkMaker
	// hook, when set, is added to the engine's Redis client (a counter
	// of its round trips).
	hook redis.Hook
}

func newHarness(t *testing.T, o harnessOpts) *harness {
	t.Helper()
	if o.prefix == "" {
		o.prefix = fmt.Sprintf("enginetest%d:", prefixSeq.Add(1))
	}
	if o.replica == "" {
		o.replica = "replica-1"
	}
	if o.clock == nil {
		o.clock = newClock()
	}
	if o.ch == nil {
		o.ch = newFakeChannel("telegram")
	}
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	agent := redis.NewClient(&redis.Options{Addr: redisAddr})
	t.Cleanup(func() { rdb.Close(); agent.Close() })
	if o.hook != nil {
		rdb.AddHook(o.hook)
	}
	st := store.New(rdb, store.Options{Prefix: o.prefix, Consumer: o.replica, ClaimIdle: o.claimIdle, AgentIndex: o.maxPerAgent > 0, AutoPipeline: true})
	routes := map[string]askbridge.Target{"ops": {Platform: o.ch.platform, Chat: "ops-room"}}
	resolve := func(to string) (engine.Route, error) {
		if to == "" {
			to = "ops"
		}
		if t, ok := routes[to]; ok {
			return engine.Route{Target: t}, nil
		}
		if to == "thai-ops" {
			return engine.Route{Target: routes["ops"], Locale: "th"}, nil
		}
		if to == askbridge.PlatformMCP {
			return engine.Route{Target: askbridge.Target{Platform: to}}, nil
		}
		if to == "mcp-ladder" {
			// A route whose ladder names the agent's own client, as a
			// configuration validated by hand might.
			return engine.Route{Target: routes["ops"], Escalate: []askbridge.Step{{AfterSeconds: 60, To: askbridge.ToList{askbridge.PlatformMCP}}}}, nil
		}
		if who, ok := strings.CutPrefix(to, "only-"); ok {
			// A route only who may answer in: "only-bob" is bob's room,
			// "only-@carol" carol's DM.
			chat := "room-" + who
			if strings.HasPrefix(who, "@") {
				chat = who
			}
			return engine.Route{Target: askbridge.Target{Platform: o.ch.platform, Chat: chat}, Answerers: []string{o.ch.platform + ":" + strings.TrimPrefix(who, "@")}}, nil
		}
		if chat, ok := strings.CutPrefix(to, "links:"); ok {
			return engine.Route{Target: askbridge.Target{Platform: o.ch.platform, Chat: chat}, Links: true}, nil
		}
		if p, c, ok := strings.Cut(to, ":"); ok {
			return engine.Route{Target: askbridge.Target{Platform: p, Chat: c}}, nil
		}
		return engine.Route{Target: askbridge.Target{}}, fmt.Errorf("to: unknown route %q", to)
	}
	if o.sweepEvery == 0 {
		o.sweepEvery = 20 * time.Millisecond
	}
	var engineStore enginetest.Store = st
	if o.wrap != nil {
		engineStore = o.wrap(st)
	}
	var channel engine.Channel = o.ch
	if o.channel != nil {
		channel = o.channel(o.ch)
	}
	e := engine.NewEngine(engine.EngineConfig{
		Store: engineStore, Resolve: resolve, Metrics: o.metrics, Channels: []engine.Channel{channel},
		Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil)), Clock: o.clock,
		Replica: o.replica, SweepEvery: o.sweepEvery, SendBudget: 5 * time.Second, StopGrace: o.stopGrace,
		FinishConcurrency: o.finishConcurrency, MaxPendingPerAgent: o.maxPerAgent, Locale: o.locale,
		TimerHold: o.timerHold, Standing: o.standing, StandingMax: o.standingMax, Links: o.links,
		// A short read of the requests stream, so the engine stops soon
		// after the test (a read under way is waited for).
		ReadBlock: 100 * time.Millisecond,
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = e.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return &harness{t: t, prefix: o.prefix, agent: agent, ch: o.ch, engine: e, store: st, clock: o.clock, stop: cancel, stopped: done}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// ask pushes a request the way an agent does.
func (h *harness) ask(body string) string {
	h.t.Helper()
	return h.agentOf().Ask(h.t, body)
}

// result waits for the one result of a question, as an agent does.
func (h *harness) result(id string, within time.Duration) askbridge.Result {
	h.t.Helper()
	return h.agentOf().Result(h.t, id, within)
}

func (h *harness) resultCount(id string) int64 {
	return h.agentOf().ResultCount(h.t, id)
}

func (h *harness) agentOf() agenttest.Agent {
	return agenttest.Agent{RDB: h.agent, Prefix: h.prefix}
}

// waitSent waits until the channel has posted n prompts.
func (h *harness) waitSent(n int) []sentPrompt {
	h.t.Helper()
	// Generous for the burst tests under -race; a passing wait ends early.
	var s []sentPrompt
	if !testwait.Until(30*time.Second, func() bool { s = h.ch.sends(); return len(s) >= n }) {
		h.t.Fatalf("channel posted %d prompts, want %d", len(s), n)
	}
	return s
}

func (h *harness) waitStatus(message, want string) {
	h.t.Helper()
	if !testwait.Until(5*time.Second, func() bool { return h.ch.status(message) == want }) {
		h.t.Fatalf("message %s shows %q, want %q", message, h.ch.status(message), want)
	}
}

const oneQuestion = `{"id":%q,"questions":[{"id":"deploy_target","header":"Target","question":"Where should this deploy?","options":[{"label":"Staging (Recommended)"},{"label":"Production"}]}]}`

const threeQuestions = `{"id":%q,"questions":[
 {"id":"target","header":"Target","question":"Where?","options":[{"label":"Staging"},{"label":"Production"}]},
 {"id":"checks","header":"Checks","question":"Which checks?","multiSelect":true,"options":[{"label":"Unit"},{"label":"Integration"},{"label":"Load"}]},
 {"id":"notify","header":"Notify","question":"Who hears?","options":[{"label":"Team"},{"label":"Nobody"}]}]}`

var alice = askbridge.Person{Platform: "telegram", ID: "alice", Name: "Alice"}

func tap(h *harness, p sentPrompt, button int, who askbridge.Person, event string) engine.TapReply {
	return h.engine.Tap(context.Background(), engine.Tap{
		EventID: event, Message: p.refs[0], Person: who, Payload: p.plan.Buttons()[button].Payload,
	})
}

func TestEngineTapAnswers(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	id := h.ask(fmt.Sprintf(oneQuestion, "tap-1"))
	p := h.waitSent(1)[0]
	if p.chat != "ops-room" || p.plan.Mode != engine.ModeButtons {
		t.Fatalf("sent to %q in mode %v", p.chat, p.plan.Mode)
	}
	reply := tap(h, p, 1, alice, "ev1")
	if reply.Notice != engine.NoticeRecorded {
		t.Errorf("notice %q", reply.Notice)
	}
	r := h.result(id, 2*time.Second)
	if r.Status != askbridge.StatusAnswered || r.Via != askbridge.ViaButton || r.AnsweredBy.ID != "alice" {
		t.Errorf("result %+v", r)
	}
	if got := r.Answers.Answers["deploy_target"]; len(got) != 1 || got[0] != "Production" {
		t.Errorf("answers %v", got)
	}
	h.waitStatus(p.refs[0].Message, "Answered: Production")

	// A late tap, and the same tap delivered twice, change nothing; the
	// late tap has the finisher make sure the tapped message shows the end
	// (here it was shown live again, as a copy the end's edit missed
	// would be), trying again after the platform fails once.
	h.ch.mu.Lock()
	delete(h.ch.finished, p.refs[0].Message)
	h.ch.finishFailures = append(h.ch.finishFailures, &engine.SendError{Kind: engine.Temporary, Reason: "bad gateway"})
	h.ch.mu.Unlock()
	late := tap(h, p, 0, alice, "ev2")
	if late.Notice != engine.NoticeAlreadyAnswered || late.Action != engine.TapDone || !late.Ended {
		t.Errorf("late tap: %+v", late)
	}
	// The edit's retry sleeps on the clock beside the engine's tickers.
	h.advanceWhileSleeping(engineTickers+1, time.Second, func() bool { return h.ch.status(p.refs[0].Message) == "Answered: Production" })
	if dup := tap(h, p, 0, alice, "ev1"); dup.Notice != engine.NoticeDuplicate {
		t.Errorf("duplicate tap: %+v", dup)
	}
	// The winning tap seen again as a new event (its answer written, its
	// reply lost to a timeout on the replica that handled it) is told it
	// was recorded; anyone else on that option, that it was answered.
	if again := tap(h, p, 1, alice, "ev3"); again.Notice != engine.NoticeRecorded || again.Action != engine.TapDone {
		t.Errorf("own tap seen again: %+v", again)
	}
	bob := askbridge.Person{Platform: "telegram", ID: "bob"}
	if other := tap(h, p, 1, bob, "ev4"); other.Notice != engine.NoticeAlreadyAnswered {
		t.Errorf("another person's late tap: %+v", other)
	}
	if n := h.resultCount(id); n != 0 {
		t.Errorf("%d more results pushed", n)
	}
}

func TestEngineSkipAndOther(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	id := h.ask(fmt.Sprintf(oneQuestion, "skip-1"))
	p := h.waitSent(1)[0]
	buttons := p.plan.Buttons()
	other, skip := len(buttons)-2, len(buttons)-1
	if r := tap(h, p, other, alice, "o1"); r.Action != engine.TapOpenReply || r.Notice != engine.NoticeOther {
		t.Errorf("Other tap: %+v", r)
	}
	if r := tap(h, p, skip, alice, "s1"); r.Notice != engine.NoticeSkipped {
		t.Errorf("Skip tap: %+v", r)
	}
	r := h.result(id, 2*time.Second)
	if r.Status != askbridge.StatusNoAnswer || r.Reason != askbridge.ReasonSkipped {
		t.Errorf("result %+v", r)
	}
	h.waitStatus(p.refs[0].Message, "Skipped")
}

func TestEngineForgedAndUnauthorizedTaps(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	h.ask(`{"id":"auth-1","answerers":["telegram:alice"],"questions":[{"id":"a","header":"H","question":"Q?","options":[{"label":"A"},{"label":"B"}]}]}`)
	other := h.ask(fmt.Sprintf(oneQuestion, "auth-2"))
	sent := h.waitSent(2)
	p, q := sent[0], sent[1]
	if p.plan.ID != "auth-1" {
		p, q = q, p
	}
	bob := askbridge.Person{Platform: "telegram", ID: "bob"}
	if r := tap(h, p, 0, bob, "b1"); r.Notice != engine.NoticeNotForYou {
		t.Errorf("bob's tap: %+v", r)
	}
	// A payload of question auth-2 on the message of auth-1 is refused.
	forged := h.engine.Tap(context.Background(), engine.Tap{EventID: "f1", Message: p.refs[0], Person: alice, Payload: q.plan.Buttons()[0].Payload})
	if forged.Notice != engine.NoticeUnknown {
		t.Errorf("forged tap: %+v", forged)
	}
	if r := h.engine.Tap(context.Background(), engine.Tap{EventID: "f2", Message: p.refs[0], Person: alice, Payload: "garbage"}); r.Notice != engine.NoticeUnknown {
		t.Errorf("garbage tap: %+v", r)
	}
	// Bob's text is ignored too.
	if out := h.engine.Reply(context.Background(), engine.TextReply{Message: engine.MessageRef{Platform: "telegram", Chat: "ops-room", Message: "m1"}, ReplyTo: p.refs[0].Message, Person: bob, Text: "1"}); out.Claimed {
		t.Errorf("bob's reply claimed: %+v", out)
	}
	if n := h.resultCount("auth-1"); n != 0 {
		t.Fatalf("a result was pushed")
	}
	if n := h.resultCount(other); n != 0 {
		t.Fatalf("a result was pushed")
	}
	// Alice may.
	if r := tap(h, p, 1, alice, "a1"); r.Notice != engine.NoticeRecorded {
		t.Errorf("alice's tap: %+v", r)
	}
	if r := h.result("auth-1", 2*time.Second); r.Answers.Answers["a"][0] != "B" {
		t.Errorf("result %+v", r)
	}
}

func reply(h *harness, chat, replyTo, text string, who askbridge.Person) engine.ReplyOutcome {
	return h.engine.Reply(context.Background(), engine.TextReply{
		EventID: fmt.Sprint(time.Now().UnixNano()),
		Message: engine.MessageRef{Platform: "telegram", Chat: chat, Message: "m"}, ReplyTo: replyTo, Person: who, Text: text,
	})
}

func TestEngineTextReplies(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	id := h.ask(fmt.Sprintf(threeQuestions, "text-1"))
	p := h.waitSent(1)[0]
	if p.plan.Mode != engine.ModeText {
		t.Fatalf("mode %v", p.plan.Mode)
	}
	// A partial reply gets a correction and the question stays open.
	out := reply(h, "ops-room", "", "1: staging\n2: 1, 3", alice)
	if !out.Claimed || !strings.Contains(out.Respond, "Notify") {
		t.Errorf("partial reply: %+v", out)
	}
	if n := h.resultCount(id); n != 0 {
		t.Fatalf("partial reply ended the question")
	}
	out = reply(h, "ops-room", p.refs[0].Message, "Staging\nUnit, Load\nmy manager", alice)
	if !out.Claimed || out.Respond != "" {
		t.Errorf("full reply: %+v", out)
	}
	r := h.result(id, 2*time.Second)
	want := map[string][]string{"target": {"Staging"}, "checks": {"Unit", "Load"}, "notify": {"my manager"}}
	if fmt.Sprint(r.Answers.Answers) != fmt.Sprint(want) || r.Via != askbridge.ViaText {
		t.Errorf("answers %v, want %v", r.Answers.Answers, want)
	}
	h.waitStatus(p.refs[0].Message, "Answered: Staging, Unit, Load")
	// Text in a chat with no open question is not claimed.
	if out := reply(h, "ops-room", "", "hello", alice); out.Claimed {
		t.Errorf("chatter claimed: %+v", out)
	}
	// Bots never answer.
	if out := h.engine.Reply(context.Background(), engine.TextReply{Message: engine.MessageRef{Platform: "telegram", Chat: "ops-room"}, Text: "1", FromBot: true}); out.Claimed {
		t.Errorf("bot claimed")
	}
}

func TestEngineSeveralOpenAsksWhich(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	a := h.ask(fmt.Sprintf(oneQuestion, "which-1"))
	b := h.ask(fmt.Sprintf(oneQuestion, "which-2"))
	sent := h.waitSent(2)
	out := reply(h, "ops-room", "", "2", alice)
	if !out.Claimed || !strings.Contains(out.Respond, "Reply to the question you mean") {
		t.Errorf("ambiguous reply: %+v", out)
	}
	if h.resultCount(a)+h.resultCount(b) != 0 {
		t.Fatal("an ambiguous reply ended a question")
	}
	target := sent[1]
	out = reply(h, "ops-room", target.refs[0].Message, "skip", alice)
	if !out.Claimed {
		t.Errorf("reply to a message: %+v", out)
	}
	r := h.result(target.plan.ID, 2*time.Second)
	if r.Reason != askbridge.ReasonSkipped {
		t.Errorf("result %+v", r)
	}
	// Now only one is open: a plain reply goes to it.
	reply(h, "ops-room", "", "production", alice)
	rest := sent[0].plan.ID
	if r := h.result(rest, 2*time.Second); r.Answers.Answers["deploy_target"][0] != "Production" {
		t.Errorf("result %+v", r)
	}
}

func TestEngineRefusesBadRequests(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	tests := []struct {
		name, body, id, want string
	}{
		{"validation", `{"id":"bad-1","questions":[]}`, "bad-1", "questions must contain 1 to 3 questions (got 0)"},
		{"unknown route", `{"id":"bad-2","to":"nowhere","questions":[{"id":"a","header":"H","question":"Q?","options":[{"label":"A"},{"label":"B"}]}]}`, "bad-2", `to: unknown route "nowhere"`},
		{"platform off", `{"id":"bad-3","to":"slack:C1","questions":[{"id":"a","header":"H","question":"Q?","options":[{"label":"A"},{"label":"B"}]}]}`, "bad-3", `to: platform "slack" is not enabled on this bridge`},
		{"not json", `{{{`, "", "request is not valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := h.ask(tt.body)
			if tt.id != "" {
				id = tt.id
			}
			r := h.result(id, time.Second)
			if r.Status != askbridge.StatusError || !strings.Contains(r.Error, tt.want) {
				t.Errorf("result %+v, want error containing %q", r, tt.want)
			}
		})
	}
	if len(h.ch.sends()) != 0 {
		t.Errorf("a refused request was shown")
	}
}

func TestEngineTimeoutAndCancel(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	timeout := h.ask(`{"id":"late-1","timeoutSeconds":30,"questions":[{"id":"a","header":"H","question":"Q?","options":[{"label":"A"},{"label":"B"}]}]}`)
	cancelled := h.ask(fmt.Sprintf(oneQuestion, "cancel-1"))
	sent := h.waitSent(2)
	if _, err := h.agent.XAdd(context.Background(), &redis.XAddArgs{Stream: h.prefix + "requests", Values: []string{"cancel", cancelled}}).Result(); err != nil {
		t.Fatal(err)
	}
	if r := h.result(cancelled, 2*time.Second); r.Reason != askbridge.ReasonCancelled {
		t.Errorf("cancel result %+v", r)
	}
	h.advance(31 * time.Second)
	if r := h.result(timeout, 2*time.Second); r.Reason != askbridge.ReasonTimeout {
		t.Errorf("timeout result %+v", r)
	}
	for _, p := range sent {
		want := "Expired"
		if p.plan.ID == cancelled {
			want = "Cancelled"
		}
		h.waitStatus(p.refs[0].Message, want)
	}
}

func TestEngineUndeliverableAndRetries(t *testing.T) {
	t.Parallel()
	ch := newFakeChannel("telegram")
	ch.failures = []error{
		&engine.SendError{Kind: engine.RateLimited, RetryAfter: 50 * time.Millisecond, Reason: "Too Many Requests"},
		&engine.SendError{Kind: engine.Temporary, Reason: "502 Bad Gateway"},
	}
	h := newHarness(t, harnessOpts{ch: ch})
	h.ask(fmt.Sprintf(oneQuestion, "retry-1"))
	// The rate limit's 50ms, then a backoff of up to 500ms, on the
	// simulated clock.
	h.advanceWhileRetrying(50*time.Millisecond, func() bool { return len(ch.sends()) == 1 })
	if p := h.waitSent(1)[0]; p.plan.ID != "retry-1" {
		t.Errorf("sent %s", p.plan.ID)
	}

	ch.mu.Lock()
	ch.failures = []error{&engine.SendError{Kind: engine.Permanent, Reason: "Bad Request: chat not found"}}
	ch.mu.Unlock()
	id := h.ask(fmt.Sprintf(oneQuestion, "gone-1"))
	r := h.result(id, 2*time.Second)
	if r.Reason != askbridge.ReasonUndeliverable || r.Error != "Bad Request: chat not found" {
		t.Errorf("result %+v", r)
	}
}

func TestEngineRepeatedRequestShownOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	body := fmt.Sprintf(oneQuestion, "repeat-1")
	h.ask(body)
	h.waitSent(1)
	h.ask(body)
	h.waitHandled()
	if n := len(h.ch.sends()); n != 1 {
		t.Errorf("shown %d times", n)
	}
}

func TestEngineTwoReplicas(t *testing.T) {
	t.Parallel()
	ch := newFakeChannel("telegram")
	a := newHarness(t, harnessOpts{ch: ch, replica: "a"})
	b := newHarness(t, harnessOpts{ch: ch, replica: "b", prefix: a.prefix})
	var ids []string
	for i := range 20 {
		ids = append(ids, a.ask(fmt.Sprintf(oneQuestion, fmt.Sprint("two-", i))))
	}
	sent := a.waitSent(20)
	a.waitHandled()
	if n := len(ch.sends()); n != 20 {
		t.Fatalf("shown %d times for 20 questions", n)
	}
	// Both replicas take taps for every question; one wins each.
	var wg sync.WaitGroup
	for i, p := range sent {
		for j, h := range []*harness{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				tap(h, p, j, alice, fmt.Sprint(i, "-", j))
			}()
		}
	}
	wg.Wait()
	for _, id := range ids {
		a.result(id, 2*time.Second)
		if n := a.resultCount(id); n != 0 {
			t.Errorf("%s: %d extra results", id, n)
		}
	}
}

func TestEngineTakesOverFromDeadReplica(t *testing.T) {
	t.Parallel()
	prefix := fmt.Sprintf("enginetest%d:", prefixSeq.Add(1))
	// A replica that takes the entry and dies before handling it.
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	dead := store.New(rdb, store.Options{Prefix: prefix, Consumer: "dead"})
	if _, err := dead.ReadRequests(context.Background(), 1, 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := rdb.XAdd(context.Background(), &redis.XAddArgs{Stream: prefix + "requests", Values: []string{"ask", fmt.Sprintf(oneQuestion, "orphan-1")}}).Err(); err != nil {
		t.Fatal(err)
	}
	entries, err := dead.ReadRequests(context.Background(), 1, time.Second)
	if err != nil || len(entries) != 1 {
		t.Fatalf("dead replica read %d entries: %v", len(entries), err)
	}
	h := newHarness(t, harnessOpts{prefix: prefix, replica: "alive", claimIdle: 200 * time.Millisecond})
	p := h.waitSent(1)[0]
	if p.plan.ID != "orphan-1" {
		t.Errorf("delivered %s", p.plan.ID)
	}
}

// TestEngineSlowSendShownOnce: a send slower than the claim idle time makes
// the store hand the entry out again (to this replica and to another); the
// question is still shown once.
func TestEngineSlowSendShownOnce(t *testing.T) {
	t.Parallel()
	ch := newFakeChannel("telegram")
	ch.delay = 1500 * time.Millisecond
	a := newHarness(t, harnessOpts{ch: ch, replica: "a", claimIdle: 100 * time.Millisecond})
	newHarness(t, harnessOpts{ch: ch, replica: "b", prefix: a.prefix, claimIdle: 100 * time.Millisecond})
	for i := range 5 {
		a.ask(fmt.Sprintf(oneQuestion, fmt.Sprint("slow-", i)))
	}
	a.waitSent(5)
	a.waitHandled()
	if n := len(ch.sends()); n != 5 {
		t.Errorf("5 questions shown %d times", n)
	}
}

// deadReplicaEnded plays a replica that showed question id in message msg
// of ops-room, marked it finishing, won its end with reason, and died
// before editing anything. It returns the replicas' key prefix and when.
func deadReplicaEnded(t *testing.T, id, msg string, reason askbridge.Reason) (string, time.Time) {
	t.Helper()
	prefix := fmt.Sprintf("enginetest%d:", prefixSeq.Add(1))
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	dead := store.New(rdb, store.Options{Prefix: prefix, Consumer: "dead"})
	req, err := askbridge.DecodeRequest([]byte(fmt.Sprintf(oneQuestion, id)))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, _, err := dead.Create(ctx, engine.NewQuestion{ID: id, Request: req, Target: askbridge.Target{Platform: "telegram", Chat: "ops-room"}, Created: now, Deadline: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if _, err := dead.AddMessage(ctx, id, engine.MessageRef{Platform: "telegram", Chat: "ops-room", Message: msg}); err != nil {
		t.Fatal(err)
	}
	if _, err := dead.MarkFinishing(ctx, id, now); err != nil {
		t.Fatal(err)
	}
	if r, err := dead.End(ctx, id, askbridge.NoAnswer(id, reason, ""), now); err != nil || !r.Won {
		t.Fatalf("end: %+v %v", r, err)
	}
	return prefix, now
}

// TestEngineFinishesWhatADeadReplicaLeft: a replica won the end of a
// question and died before editing its messages; another replica edits
// them, so no stale buttons stay behind.
func TestEngineFinishesWhatADeadReplicaLeft(t *testing.T) {
	t.Parallel()
	prefix, now := deadReplicaEnded(t, "left-1", "77", askbridge.ReasonCancelled)
	ctx := context.Background()
	// The survivor looks a few minutes later.
	clk := clockwork.NewFakeClockAt(now.Add(3 * time.Minute))
	h := newHarness(t, harnessOpts{prefix: prefix, replica: "survivor", clock: clk})
	h.waitStatus("77", "Cancelled")
	var ids []string
	if !testwait.Until(5*time.Second, func() bool {
		var err error
		ids, err = h.store.Unfinished(ctx, clk.Now(), 10)
		if err != nil {
			t.Fatal(err)
		}
		return len(ids) == 0
	}) {
		t.Fatalf("still unfinished: %v", ids)
	}
}

// batchingAcks records the batches the engine acknowledges; the first call
// waits for gate, as a slow Redis would.
type batchingAcks struct {
	enginetest.Store
	gate     chan struct{}
	mu       sync.Mutex
	batches  []int
	released atomic.Int64
}

func (b *batchingAcks) AckRequest(ctx context.Context, ids ...string) error {
	b.mu.Lock()
	first := len(b.batches) == 0
	b.batches = append(b.batches, len(ids))
	b.mu.Unlock()
	if first {
		<-b.gate
	}
	return b.Store.AckRequest(ctx, ids...)
}

func (b *batchingAcks) ReleaseLease(ctx context.Context, l engine.Lease) error {
	defer b.released.Add(1)
	return b.Store.ReleaseLease(ctx, l)
}

// TestEngineAcksABurstTogether: requests handled while an acknowledgement
// is on its way are acknowledged together, in one call, and every one of
// them is acknowledged.
func TestEngineAcksABurstTogether(t *testing.T) {
	t.Parallel()
	acks := &batchingAcks{gate: make(chan struct{})}
	h := newHarness(t, harnessOpts{wrap: func(s enginetest.Store) enginetest.Store { acks.Store = s; return acks }})
	const n = 30
	for i := range n {
		h.ask(fmt.Sprintf(oneQuestion, fmt.Sprint("burst-ack-", i)))
	}
	h.waitSent(n)
	if !testwait.Until(5*time.Second, func() bool { return acks.released.Load() >= n }) {
		t.Fatalf("%d deliveries done, want %d", acks.released.Load(), n)
	}
	time.Sleep(50 * time.Millisecond) // the last ones reach the acknowledger
	close(acks.gate)
	h.waitHandled()
	acks.mu.Lock()
	defer acks.mu.Unlock()
	total, most := 0, 0
	for _, b := range acks.batches {
		total += b
		most = max(most, b)
	}
	if total != n || most < 2 || len(acks.batches) >= n {
		t.Fatalf("acknowledged %d entries in batches %v; want %d, some together", total, acks.batches, n)
	}
}

// TestEngineThaiReplies: replies in Thai are understood whatever the
// prompt's language: Thai digits pick an option, ข้าม skips, and a label
// with (แนะนำ) is picked without it.
func TestEngineThaiReplies(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	q := `{"id":"%s","timeoutSeconds":60,"questions":[` +
		`{"id":"env","header":"ที่ไหน","question":"ปล่อยที่ไหน?","options":[{"label":"สเตจจิ้ง (แนะนำ)"},{"label":"โปรดักชัน"}]},` +
		`{"id":"when","header":"เมื่อไร","question":"เมื่อไร?","options":[{"label":"ตอนนี้"},{"label":"พรุ่งนี้"}]}]}`
	digits := h.ask(fmt.Sprintf(q, "th-digits"))
	p := h.waitSent(1)[0]
	if out := reply(h, "ops-room", p.refs[0].Message, "สเตจจิ้ง\n๒", alice); !out.Claimed || out.Respond != "" {
		t.Fatalf("Thai reply: %+v", out)
	}
	r := h.result(digits, 2*time.Second)
	want := map[string][]string{"env": {"สเตจจิ้ง (แนะนำ)"}, "when": {"พรุ่งนี้"}}
	if fmt.Sprint(r.Answers.Answers) != fmt.Sprint(want) {
		t.Fatalf("answers %v, want %v", r.Answers.Answers, want)
	}
	skipped := h.ask(fmt.Sprintf(q, "th-skip"))
	p = h.waitSent(2)[1]
	if out := reply(h, "ops-room", p.refs[0].Message, "ข้าม", alice); !out.Claimed {
		t.Fatalf("ข้าม: %+v", out)
	}
	if r := h.result(skipped, 2*time.Second); r.Status != askbridge.StatusNoAnswer || r.Reason != askbridge.ReasonSkipped {
		t.Fatalf("ข้าม: %+v, want skipped", r)
	}
}
