package slack_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/enginetest"
	"github.com/askbridge/askbridge/internal/platformtest"
	"github.com/askbridge/askbridge/slack"
	"github.com/askbridge/askbridge/slack/internal/slacktest"
	"github.com/askbridge/askbridge/store"
)

// flakyStore is Redis failing on demand: the next n lookups of a message's
// question (the first store call of a tap or a thread reply after its
// dedupe) fail, on every replica it wraps.
type flakyStore struct {
	enginetest.Store
	f *flakiness
}

type flakiness struct {
	left   atomic.Int64 // lookups still to fail
	failed atomic.Int64 // lookups failed so far
}

var errRedisDown = errors.New("redis: connection refused")

func (s flakyStore) QuestionByMessage(ctx context.Context, ref engine.MessageRef) (string, bool, error) {
	if s.f.left.Add(-1) >= 0 {
		s.f.failed.Add(1)
		return "", false, errRedisDown
	}
	s.f.left.Store(0)
	return s.Store.QuestionByMessage(ctx, ref)
}

func flakyEnv(t *testing.T, mode string) (*env, *flakiness) {
	f := &flakiness{}
	e := newEnv(t, mode, envOpts{wrap: func(st enginetest.Store) enginetest.Store { return flakyStore{Store: st, f: f} }})
	return e, f
}

// ephemeralsTo lists the ephemeral notices text sent to user.
func ephemeralsTo(e *env, user, text string) []slacktest.Ephemeral {
	var out []slacktest.Ephemeral
	for _, m := range e.fake.Ephemerals(user) {
		if m.Text == text {
			out = append(out, m)
		}
	}
	return out
}

// A thread reply that comes while Redis fails is not lost. Over HTTP the
// event is answered 503 and Slack's retry of it answers the question, the
// person told nothing; over the socket (acknowledged at once) the person is
// told privately to try again, and a delivery of the same envelope again
// (its ack lost) still answers the question instead of being taken as a
// duplicate.
func TestReplyWhileRedisFailsIsNotLost(t *testing.T) {
	bothModes(t, func(t *testing.T, mode string) {
		e, f := flakyEnv(t, mode)
		id := e.Ask(fmt.Sprintf(oneQuestion, "flaky-reply-"+mode))
		m := e.prompt(opsChannel, id)
		f.left.Store(1)
		_, d := e.say(alice, opsChannel, m.TS, "2")
		if mode == socketMode {
			e.waitEphemeral(alice.ID, engine.NoticeTryAgain.Text("en"))
			if got := ephemeralsTo(e, alice.ID, engine.NoticeTryAgain.Text("en")); got[0].ThreadTS != m.TS {
				t.Errorf("try-again notice %+v, want it in the thread %s", got[0], m.TS)
			}
			if err := e.fake.Deliver(d); err != nil {
				t.Fatal(err)
			}
		}
		r := e.Result(id, 10*time.Second)
		if r.Status != askbridge.StatusAnswered || answers(r) != "map[deploy_target:[Production]]" {
			t.Fatalf("result %+v %s", r, answers(r))
		}
		e.waitEnded(opsChannel, m.TS, "Answered: Production")
		e.settle()
		if n := f.failed.Load(); n != 1 {
			t.Errorf("%d lookups failed, want 1", n)
		}
		want := 1
		if mode == httpMode {
			want = 0 // Slack delivered it again: nothing to try again
		}
		if got := ephemeralsTo(e, alice.ID, engine.NoticeTryAgain.Text("en")); len(got) != want {
			t.Errorf("%d try-again notices, want %d: %+v", len(got), want, got)
		}
		for _, msg := range e.fake.Messages(opsChannel) {
			if msg.BotID != "" && msg.ThreadTS == m.TS {
				t.Errorf("a message in the thread: %q", msg.Text)
			}
		}
	})
}

// Over HTTP, Slack's last retry of an event that fails again is answered
// 200 (no retry is left) and the person is told to try again; their next
// message answers the question.
func TestReplyFailingEveryRetryAsksToTryAgain(t *testing.T) {
	e, f := flakyEnv(t, httpMode)
	id := e.Ask(fmt.Sprintf(oneQuestion, "flaky-last-retry"))
	m := e.prompt(opsChannel, id)
	// The delivery and each of Slack's three retries fail.
	f.left.Store(4)
	e.say(alice, opsChannel, m.TS, "2")
	e.waitEphemeral(alice.ID, engine.NoticeTryAgain.Text("en"))
	if n := f.failed.Load(); n != 4 {
		t.Errorf("%d lookups failed, want 4 (the delivery and three retries)", n)
	}
	e.NoResult(id)
	e.say(alice, opsChannel, m.TS, "2")
	if r := e.Result(id, 10*time.Second); answers(r) != "map[deploy_target:[Production]]" {
		t.Fatalf("result %+v %s", r, answers(r))
	}
	e.settle()
	if got := ephemeralsTo(e, alice.ID, engine.NoticeTryAgain.Text("en")); len(got) != 1 {
		t.Errorf("%d try-again notices, want 1", len(got))
	}
}

// A press that comes while Redis fails gets "try again", and a delivery of
// the same envelope again (its ack lost on a dropped connection) answers
// the question instead of being taken as a duplicate.
func TestTapWhileRedisFailsIsNotLost(t *testing.T) {
	t.Parallel()
	e, f := flakyEnv(t, socketMode)
	id := e.Ask(fmt.Sprintf(oneQuestion, "flaky-tap"))
	m := e.prompt(opsChannel, id)
	f.left.Store(1)
	d := e.press(alice, opsChannel, m.TS, "Production")
	e.waitEphemeral(alice.ID, engine.NoticeTryAgain.Text("en"))
	if err := e.fake.Deliver(d); err != nil {
		t.Fatal(err)
	}
	r := e.Result(id, 10*time.Second)
	if r.Status != askbridge.StatusAnswered || answers(r) != "map[deploy_target:[Production]]" {
		t.Fatalf("result %+v %s", r, answers(r))
	}
	e.waitEphemeral(alice.ID, engine.NoticeRecorded.Text("en"))
	e.waitEnded(opsChannel, m.TS, "Answered: Production")
	e.settle()
	if n := f.failed.Load(); n != 1 {
		t.Errorf("%d lookups failed, want 1", n)
	}
}

// panicky is an inbox whose first Tap and first Reply panic (counted over
// every replica it wraps).
type panicky struct {
	engine.Inbox
	taps, replies *atomic.Int64
}

func (p panicky) Tap(ctx context.Context, t engine.Tap) engine.TapReply {
	if p.taps.Add(1) == 1 {
		panic("tap exploded")
	}
	return p.Inbox.Tap(ctx, t)
}

func (p panicky) Reply(ctx context.Context, r engine.TextReply) engine.ReplyOutcome {
	if p.replies.Add(1) == 1 {
		panic("reply exploded")
	}
	return p.Inbox.Reply(ctx, r)
}

// A panic while handling a press or a message is recovered and logged with
// its stack; the request that brought it is answered (in HTTP mode a
// delivery that never gets 200 fails e.press and e.say), and the next
// press and message are handled as usual.
func TestPanicInHandlingIsRecovered(t *testing.T) {
	bothModes(t, func(t *testing.T, mode string) {
		var logged, counted, taps, replies atomic.Int64
		e := newEnv(t, mode, envOpts{
			panicked: func(string) { counted.Add(1) },
			logs:     platformtest.PanicLogs{Prefix: "panic in", N: &logged},
			inbox:    func(in engine.Inbox) engine.Inbox { return panicky{Inbox: in, taps: &taps, replies: &replies} },
		})
		waitPanics := func(n int64) {
			t.Helper()
			if !e.fake.Wait(10*time.Second, func() bool { return logged.Load() == n }) {
				t.Fatalf("%d panics logged, want %d", logged.Load(), n)
			}
		}
		a := e.Ask(fmt.Sprintf(oneQuestion, "panic-tap-"+mode))
		ma := e.prompt(opsChannel, a)
		e.press(alice, opsChannel, ma.TS, "Production")
		waitPanics(1)
		e.press(alice, opsChannel, ma.TS, "Production")
		if r := e.Result(a, 10*time.Second); answers(r) != "map[deploy_target:[Production]]" {
			t.Fatalf("result %+v %s", r, answers(r))
		}
		e.waitEphemeral(alice.ID, engine.NoticeRecorded.Text("en"))

		b := e.Ask(fmt.Sprintf(oneQuestion, "panic-reply-"+mode))
		mb := e.prompt(opsChannel, b)
		e.say(alice, opsChannel, mb.TS, "1")
		waitPanics(2)
		e.say(alice, opsChannel, mb.TS, "1")
		if r := e.Result(b, 10*time.Second); answers(r) != "map[deploy_target:[Staging (Recommended)]]" {
			t.Fatalf("result %+v %s", r, answers(r))
		}
		e.settle()
		if taps.Load() != 2 || replies.Load() != 2 || logged.Load() != 2 || counted.Load() != 2 {
			t.Errorf("%d taps, %d replies, %d panics logged, %d counted; want 2, 2, 2, 2", taps.Load(), replies.Load(), logged.Load(), counted.Load())
		}
	})
}

// TestPromptOfADeadReplicaNotPostedAgain: a replica took a request, posted
// its prompt and died before recording the message. The replica that takes
// the request over finds the prompt in the channel's history (by its
// metadata) and records it instead of posting it again: one prompt, whose
// buttons answer.
func TestPromptOfADeadReplicaNotPostedAgain(t *testing.T) {
	const id = "dead-poster"
	e := newEnv(t, socketMode, envOpts{claimIdle: 300 * time.Millisecond, before: func(e *env) {
		target := askbridge.Target{Platform: slack.Platform, Chat: opsChannel}
		platformtest.PromptOfADeadReplica(e.Agent, id, fmt.Sprintf(oneQuestion, id), target, func(st *store.Store) (engine.Channel, error) {
			return slack.New(slack.Config{BotToken: botToken, SigningSecret: signingSecret, APIURL: e.fake.APIURL()}, st, nil)
		})
	}})
	m := e.prompt(opsChannel, id)
	e.settleRequests()
	var prompts int
	for _, msg := range e.fake.Messages(opsChannel) {
		if msg.BotID == slacktest.BotID && strings.Contains(string(msg.Blocks), askbridge.QuestionDigest(id)) {
			prompts++
		}
	}
	if prompts != 1 {
		t.Fatalf("%d prompts in the channel, want 1", prompts)
	}
	e.press(alice, opsChannel, m.TS, "Production")
	if r := e.Result(id, 10*time.Second); answers(r) != "map[deploy_target:[Production]]" {
		t.Fatalf("result %+v", r)
	}
	e.waitEnded(opsChannel, m.TS, "Answered: Production")
}
