package discord_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/discord"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/enginetest"
	"github.com/askbridge/askbridge/internal/platformtest"
	"github.com/askbridge/askbridge/store"
)

// flakyStore is Redis failing on demand: the next n lookups of a message's
// question (the first store call of a press or a reply after its dedupe)
// fail.
type flakyStore struct {
	enginetest.Store
	left   *atomic.Int64 // lookups still to fail
	failed *atomic.Int64 // lookups failed so far
}

func (s flakyStore) QuestionByMessage(ctx context.Context, ref engine.MessageRef) (string, bool, error) {
	if s.left.Add(-1) >= 0 {
		s.failed.Add(1)
		return "", false, errDead
	}
	s.left.Store(0)
	return s.Store.QuestionByMessage(ctx, ref)
}

// afterFirst hands an event to in once in has answered another copy of
// it: the copy a second gateway session gets during a hand-over, arriving
// after the first copy was handled. For a press, handled means the first
// copy's response reached Discord (responded), not only that the engine
// returned: on a busy machine the second copy could otherwise respond
// first.
type afterFirst struct {
	in        *inbox
	responded func(interaction string) bool
}

func (a afterFirst) Locale() string { return a.in.Locale() }

func (a afterFirst) wait(ctx context.Context, handled func() bool) {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for !handled() {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (a afterFirst) Tap(ctx context.Context, t engine.Tap) engine.TapReply {
	a.wait(ctx, func() bool { return len(a.in.tapped(t.EventID)) > 0 && a.responded(t.EventID) })
	return a.in.Tap(ctx, t)
}

func (a afterFirst) Reply(ctx context.Context, r engine.TextReply) engine.ReplyOutcome {
	a.wait(ctx, func() bool { return len(a.in.replied(r.EventID)) > 0 })
	return a.in.Reply(ctx, r)
}

func (a afterFirst) Attach(ctx context.Context, id string, ref engine.MessageRef) error {
	return a.in.Attach(ctx, id, ref)
}

// A press and a reply that come while Redis fails are not lost: the person
// is told to try again (privately for the press, in a reply for the
// message: Discord has no ephemeral message outside an interaction), and
// Discord's copy of the same event in a second session, handled after the
// first, answers the question instead of being taken as a duplicate.
func TestPressAndReplyWhileRedisFailsAreNotLost(t *testing.T) {
	t.Parallel()
	var left, failed atomic.Int64
	e := newEnv(t, envOpts{replicas: 1, wrap: func(_ int, st enginetest.Store) enginetest.Store {
		return flakyStore{Store: st, left: &left, failed: &failed}
	}})
	e.waitGateway()
	extra, err := discord.New(discord.Config{
		Token: e.fake.Token(), APIURL: e.fake.URL, AppID: "another-lease", Replica: "extra",
		LeaseTTL: time.Second, StandbyPoll: 100 * time.Millisecond, RetryMin: 50 * time.Millisecond,
	}, e.reps[0].store, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = extra.Run(ctx, afterFirst{in: e.reps[0].inbox, responded: func(id string) bool {
			in, ok := e.fake.Interaction(id)
			return ok && len(in.Responses) > 0
		}})
	}()
	t.Cleanup(func() { cancel(); <-done })
	e.eventually(5*time.Second, "two gateway sessions", func() bool { return e.fake.Sessions() == 2 })
	tryAgain := discord.Escape(engine.NoticeTryAgain.Text("en"))

	pressed := e.Ask(fmt.Sprintf(oneQuestion, "flaky-press"))
	p := e.shown(pressed)[0]
	left.Store(1)
	in := e.click(e.alice, p.ID, buttonIDs(p)[1])
	if got := notice(in); got != tryAgain || in.AckType != 4 || in.Failed {
		t.Errorf("first answer %q (ack type %d, failed %v), want %q as the acknowledgement", got, in.AckType, in.Failed, tryAgain)
	}
	if r := e.Result(pressed, 10*time.Second); answers(r)["deploy_target"][0] != "Production" {
		t.Fatalf("result %+v", r)
	}
	e.handled(in.ID, 2)
	e.eventually(10*time.Second, "the second copy's notice", func() bool {
		in, _ = e.fake.Interaction(in.ID)
		return len(in.Responses) == 2
	})
	if in.Responses[1].Content != "Answer recorded." || !in.Responses[1].Ephemeral() {
		t.Errorf("second answer %+v, want an ephemeral %q", in.Responses[1], "Answer recorded.")
	}

	texted := e.Ask(fmt.Sprintf(oneQuestion, "flaky-reply"))
	p = e.shown(texted)[0]
	left.Store(1)
	msg, err := e.fake.Reply(e.alice, e.room, p.ID, "2")
	if err != nil {
		t.Fatal(err)
	}
	if got := e.replyTo(e.room, msg).Content; got != tryAgain {
		t.Errorf("reply %q, want %q", got, tryAgain)
	}
	if r := e.Result(texted, 10*time.Second); answers(r)["deploy_target"][0] != "Production" {
		t.Fatalf("result %+v", r)
	}
	e.handled(msg, 2)
	if n := failed.Load(); n != 2 {
		t.Errorf("%d lookups failed, want 2", n)
	}
}

// panicky is an inbox whose first Tap and first Reply of a person panic.
type panicky struct {
	engine.Inbox
	taps, replies atomic.Int64
}

func (p *panicky) Tap(ctx context.Context, t engine.Tap) engine.TapReply {
	if p.taps.Add(1) == 1 {
		panic("tap exploded")
	}
	return p.Inbox.Tap(ctx, t)
}

func (p *panicky) Reply(ctx context.Context, r engine.TextReply) engine.ReplyOutcome {
	if !r.FromBot && p.replies.Add(1) == 1 {
		panic("reply exploded")
	}
	return p.Inbox.Reply(ctx, r)
}

// A panic while handling a press or a message is recovered and logged with
// its stack; the press is still acknowledged within Discord's 3 seconds
// (with "try again"), and the next press and message are handled as usual.
func TestPanicInHandlersIsRecovered(t *testing.T) {
	t.Parallel()
	var logged, counted atomic.Int64
	boom := &panicky{}
	e := newEnv(t, envOpts{replicas: 1, logs: platformtest.PanicLogs{Prefix: "panic in discord ", N: &logged},
		panicked: func(string) { counted.Add(1) },
		inbox:    func(_ int, in engine.Inbox) engine.Inbox { boom.Inbox = in; return boom }})
	e.waitGateway()
	panics := func(n int64) {
		t.Helper()
		e.eventually(10*time.Second, fmt.Sprintf("%d panics logged", n), func() bool { return logged.Load() == n })
	}

	pressed := e.Ask(fmt.Sprintf(oneQuestion, "panic-press"))
	p := e.shown(pressed)[0]
	in := e.click(e.alice, p.ID, buttonIDs(p)[1])
	if got, want := notice(in), discord.Escape(engine.NoticeTryAgain.Text("en")); got != want || in.Failed || in.AckType == 0 {
		t.Errorf("answer %q (ack type %d, failed %v), want %q in time", got, in.AckType, in.Failed, want)
	}
	panics(1)
	in = e.click(e.alice, p.ID, buttonIDs(p)[1])
	if got := notice(in); got != "Answer recorded." {
		t.Errorf("second press answered %q", got)
	}
	if r := e.Result(pressed, 10*time.Second); answers(r)["deploy_target"][0] != "Production" {
		t.Fatalf("result %+v", r)
	}

	texted := e.Ask(fmt.Sprintf(oneQuestion, "panic-reply"))
	p = e.shown(texted)[0]
	if _, err := e.fake.Reply(e.alice, e.room, p.ID, "1"); err != nil {
		t.Fatal(err)
	}
	panics(2)
	if _, err := e.fake.Reply(e.alice, e.room, p.ID, "1"); err != nil {
		t.Fatal(err)
	}
	if r := e.Result(texted, 10*time.Second); answers(r)["deploy_target"][0] != "Staging (Recommended)" {
		t.Fatalf("result %+v", r)
	}
	if boom.taps.Load() != 2 || boom.replies.Load() != 2 {
		t.Errorf("%d taps, %d replies reached the inbox, want 2 and 2", boom.taps.Load(), boom.replies.Load())
	}
	if counted.Load() != logged.Load() {
		t.Errorf("%d panics counted, %d logged", counted.Load(), logged.Load())
	}
}

// TestPromptNotPostedTwice: each part of a prompt carries an enforced
// nonce, so a post Discord accepted but whose reply never came back (a
// proxy dropped it), or that a replica which then died never recorded, is
// returned by the next post instead of being created again: one prompt,
// whose buttons answer.
func TestPromptNotPostedTwice(t *testing.T) {
	t.Parallel()
	t.Run("reply lost", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, envOpts{replicas: 1})
		e.waitGateway()
		e.fake.LoseReplies(1)
		id := e.Ask(fmt.Sprintf(oneQuestion, "lost-reply"))
		onePromptAnswers(t, e, id)
		var failed int
		for _, r := range e.requests("POST", "channels/"+e.room+"/messages") {
			if r.Status == 502 {
				failed++
			}
		}
		if failed != 1 {
			t.Fatalf("%d posts answered 502, want 1", failed)
		}
	})
	t.Run("replica died", func(t *testing.T) {
		t.Parallel()
		const id = "dead-poster"
		e := newEnv(t, envOpts{claimIdle: 300 * time.Millisecond, before: func(e *env) {
			target := askbridge.Target{Platform: discord.Platform, Chat: e.room}
			platformtest.PromptOfADeadReplica(e.Agent, id, fmt.Sprintf(oneQuestion, id), target, func(st *store.Store) (engine.Channel, error) {
				return discord.New(discord.Config{Token: e.fake.Token(), APIURL: e.fake.URL}, st, nil)
			})
		}})
		e.waitGateway()
		onePromptAnswers(t, e, id)
	})
}

// onePromptAnswers checks that question id is shown once, in one message
// of the room, and that a press on it answers.
func onePromptAnswers(t *testing.T, e *env, id string) {
	t.Helper()
	shown := e.shown(id)
	if len(shown) != 1 {
		t.Fatalf("recorded %d messages, want 1", len(shown))
	}
	if n := len(e.botMessages(e.room)); n != 1 {
		t.Fatalf("%d bot messages in the room, want 1", n)
	}
	in := e.click(e.alice, shown[0].ID, buttonIDs(shown[0])[1])
	if got := notice(in); got != engine.NoticeRecorded.Text("en") {
		t.Fatalf("press: %q", got)
	}
	if r := e.Result(id, 10*time.Second); answers(r)["deploy_target"][0] != "Production" {
		t.Fatalf("result %+v", r)
	}
}
