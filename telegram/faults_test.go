package telegram_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/platformtest"
	"github.com/redis/go-redis/v9"
)

// outage cuts one replica off from Redis (its one client, shared by the
// engine and the channel): while cut, every command refuse matches fails
// at once, as with a refused connection, or, with hang, waits until the
// outage ends, as with a server that stopped answering.
type outage struct {
	mu     sync.Mutex
	refuse func(args []any) bool // nil: not cut
	hang   bool
	ended  chan struct{}

	// marks counts the tries of an update refused: the first-seen mark of
	// the update (SET NX of a seen: key), or, when the channel's keys pass,
	// the first thing the engine asks of Redis for a tap or a reply: the
	// lookup of the message it is for (GET of a msg: key) or, where the
	// replica that recorded the message knows it without a read, the read
	// of its question (HGETALL, a reply's) or the finishing mark that goes
	// first in the end's round trip (ZADD of the finishing key, a tap's).
	marks atomic.Int64
}

var errOutage = errors.New("dial tcp 127.0.0.1:6379: connect: connection refused (test outage)")

func (o *outage) cut(hang bool, refuse func(args []any) bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.refuse, o.hang, o.ended = refuse, hang, make(chan struct{})
}

// restore ends the outage. Safe to repeat.
func (o *outage) restore() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.refuse != nil {
		close(o.ended)
	}
	o.refuse = nil
}

func (o *outage) check(ctx context.Context, cmds ...redis.Cmder) error {
	o.mu.Lock()
	refuse, hang, ended := o.refuse, o.hang, o.ended
	o.mu.Unlock()
	if refuse == nil {
		return nil
	}
	for _, cmd := range cmds {
		args := cmd.Args()
		if !refuse(args) {
			continue
		}
		if isMark(args) {
			o.marks.Add(1)
		}
		if !hang {
			return errOutage
		}
		select {
		case <-ended:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func isMark(args []any) bool {
	if len(args) == 2 && strings.EqualFold(fmt.Sprint(args[0]), "get") && strings.Contains(fmt.Sprint(args[1]), "msg:telegram:") {
		return true
	}
	if len(args) > 2 && strings.EqualFold(fmt.Sprint(args[0]), "zadd") && strings.HasSuffix(fmt.Sprint(args[1]), "finishing") {
		return true
	}
	if len(args) == 2 && strings.EqualFold(fmt.Sprint(args[0]), "hgetall") && strings.Contains(fmt.Sprint(args[1]), "question:{") {
		return true
	}
	if len(args) < 2 || !strings.EqualFold(fmt.Sprint(args[0]), "set") || !strings.Contains(fmt.Sprint(args[1]), "seen:") {
		return false
	}
	for _, a := range args[2:] {
		if strings.EqualFold(fmt.Sprint(a), "nx") {
			return true
		}
	}
	return false
}

func (o *outage) DialHook(next redis.DialHook) redis.DialHook { return next }

func (o *outage) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if err := o.check(ctx, cmd); err != nil {
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}

func (o *outage) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if err := o.check(ctx, cmds...); err != nil {
			for _, cmd := range cmds {
				cmd.SetErr(err)
			}
			return err
		}
		return next(ctx, cmds)
	}
}

// everything is a whole Redis outage.
func everything([]any) bool { return true }

// theEngines refuses what the engine asks of Redis and lets the channel's
// own keys through (the update marks, the poller lease and its offset), so
// the update is marked seen and then the engine fails.
func theEngines(args []any) bool {
	for _, a := range args {
		if s, ok := a.(string); ok && (strings.Contains(s, "seen:telegram:update:") || strings.Contains(s, "telegram:poll:")) {
			return false
		}
	}
	return true
}

// TestStoreOutage cuts the replica off from Redis for longer than the
// poller once tried an update (five tries, then "update dropped" and the
// offset confirmed past it) while a person taps and another replies; then
// brings it back. Nothing is lost without a word: the tap is answered "try
// again" during the outage (once, so never twice), no offset is confirmed
// past the waiting updates, and once Redis is back both are handled and
// both questions answered.
func TestStoreOutage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		webhook bool
		// leaseTTL: 0 keeps the harness's 1.5 s, shorter than the outage.
		leaseTTL time.Duration
		refuse   func(args []any) bool
		hang     bool
		// replyFirst: the reply comes before the tap (and the tap waits
		// behind it).
		replyFirst bool
		// tries is how many refused first-seen marks show the outage has
		// lasted long enough; 0 waits until the poller lost its lease and
		// gave the update back.
		tries int64
	}{
		{name: "redis down within the lease", leaseTTL: time.Minute, refuse: everything, tries: 6},
		{name: "redis down past the lease", refuse: everything},
		{name: "engine fails on a marked tap", leaseTTL: time.Minute, refuse: theEngines, tries: 6},
		{name: "engine fails on a marked reply", leaseTTL: time.Minute, refuse: theEngines, replyFirst: true, tries: 6},
		{name: "redis hangs", leaseTTL: time.Minute, refuse: everything, hang: true, tries: 1},
		{name: "webhook, engine fails", webhook: true, refuse: theEngines, tries: 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			logs := &platformtest.SyncBuffer{}
			e := newEnv(t, envOpts{webhook: tt.webhook, leaseTTL: tt.leaseTTL, tapPatience: 300 * time.Millisecond, logs: logs})
			r := e.start("a")
			t.Cleanup(r.redis.restore) // before the replica stops
			e.eventually(5*time.Second, "the channel connected", func() bool { return r.ch.State() == engine.StateConnected })
			tapped, replied := ask1(e, "outage-tap", bob.ID), ask1(e, "outage-reply", carol.ID)
			tapPrompt, replyPrompt := e.prompt(bob.ID, 1), e.prompt(carol.ID, 1)

			r.redis.cut(tt.hang, tt.refuse)
			var query string
			tap := func() {
				var err error
				if query, err = e.fake.Tap(bob.ID, tapPrompt.ID, bob, "Production"); err != nil {
					t.Fatal(err)
				}
			}
			reply := func() { e.reply(carol.ID, carol, replyPrompt.ID, "staging") }
			if tt.replyFirst {
				reply()
				tap()
			} else {
				tap()
				reply()
			}
			if !tt.replyFirst {
				if a := e.notice(query); a.Text != en(engine.NoticeTryAgain) {
					t.Errorf("during the outage the tap was answered %q, want %q", a.Text, engine.NoticeTryAgain)
				}
			} else {
				e.eventually(5*time.Second, "the reply answered: try again", func() bool { return tryAgains(e, carol.ID) == 1 })
			}
			// Neither update is confirmed while the outage lasts.
			held := func() {
				if n := e.fake.Pending(); n != 2 {
					t.Fatalf("%d updates left at Telegram during the outage, want the tap and the reply: an offset was confirmed past an update not handled", n)
				}
			}
			if tt.tries > 0 {
				e.eventually(15*time.Second, fmt.Sprintf("%d tries refused", tt.tries), func() bool {
					held()
					return r.redis.marks.Load() >= tt.tries
				})
			} else {
				e.eventually(10*time.Second, "the update given back", func() bool {
					held()
					return strings.Contains(logs.String(), "update given back unhandled")
				})
			}
			held()

			r.redis.restore()
			if res := e.Result(tapped, 10*time.Second); res.Answers == nil || res.Answers.Answers["deploy_target"][0] != "Production" {
				t.Errorf("tap result %+v", res)
			}
			if res := e.Result(replied, 10*time.Second); res.Answers == nil || res.Answers.Answers["deploy_target"][0] != "Staging (Recommended)" {
				t.Errorf("reply result %+v", res)
			}
			e.finished(bob.ID, tapPrompt.ID, "Answered: Production")
			e.finished(carol.ID, replyPrompt.ID, "Answered: Staging (Recommended)")
			if tt.replyFirst {
				// The tap waited behind the reply; it is answered once handled.
				if a := e.notice(query); a.Text != en(engine.NoticeRecorded) {
					t.Errorf("the tap was answered %q, want %q", a.Text, engine.NoticeRecorded)
				}
			}
			e.eventually(10*time.Second, "every update confirmed", func() bool { return e.fake.Pending() == 0 })
			e.NoResult(tapped, replied)
			if n := tryAgains(e, carol.ID); tt.replyFirst && n != 1 {
				t.Errorf("the reply was answered %q %d times, want once", engine.NoticeTryAgain, n)
			}
			if st := e.fake.Stats(); st.AnswerRefused != 0 {
				t.Errorf("%d callback queries answered twice", st.AnswerRefused)
			}
		})
	}
}

// tryAgains counts the bot's "try again" messages in chat.
func tryAgains(e *env, chat int64) int {
	n := 0
	for _, m := range e.fake.BotMessages(chat) {
		if m.Text == en(engine.NoticeTryAgain) {
			n++
		}
	}
	return n
}

// panicky panics on every tap and reply of bob, and on every Attach (the
// work an "Other…" tap starts in the background).
type panicky struct{ engine.Inbox }

func (p panicky) Tap(ctx context.Context, t engine.Tap) engine.TapReply {
	if t.Person.ID == fmt.Sprint(bob.ID) {
		panic("test: a tap that panics")
	}
	return p.Inbox.Tap(ctx, t)
}

func (p panicky) Reply(ctx context.Context, r engine.TextReply) engine.ReplyOutcome {
	if r.Person.ID == fmt.Sprint(bob.ID) {
		panic("test: a reply that panics")
	}
	return p.Inbox.Reply(ctx, r)
}

func (p panicky) Attach(context.Context, string, engine.MessageRef) error {
	panic("test: an attach that panics")
}

// TestPanicsAreRecovered makes the handling of updates panic, in the
// poller's handler and in the work a tap starts in the background, and
// checks that each panic is logged with its stack, the tap answered, and
// the next update handled by the same process; then the same over the
// webhook.
func TestPanicsAreRecovered(t *testing.T) {
	t.Parallel()
	for _, webhook := range []bool{false, true} {
		t.Run(fmt.Sprintf("webhook=%v", webhook), func(t *testing.T) {
			t.Parallel()
			logs := &platformtest.SyncBuffer{}
			e := newEnv(t, envOpts{webhook: webhook, logs: logs})
			r := e.startWith("a", func(in engine.Inbox) engine.Inbox { return panicky{in} })
			e.eventually(5*time.Second, "the channel connected", func() bool { return r.ch.State() == engine.StateConnected })
			bobs, alices := ask1(e, "panic-bob", bob.ID), ask1(e, "panic-alice", alice.ID)
			bobPrompt, alicePrompt := e.prompt(bob.ID, 1), e.prompt(alice.ID, 1)

			if a := e.tap(bob.ID, bobPrompt.ID, bob, "Production"); a.Text != en(engine.NoticeTryAgain) {
				t.Errorf("a tap whose handling panicked was answered %q, want %q", a.Text, engine.NoticeTryAgain)
			}
			e.reply(bob.ID, bob, bobPrompt.ID, "staging")
			// "Other…" opens a reply box in the background, whose Attach
			// panics.
			if a := e.tap(alice.ID, alicePrompt.ID, alice, "Other…"); a.Text != en(engine.NoticeOther) {
				t.Errorf("Other… answered %q", a.Text)
			}
			e.eventually(5*time.Second, "the reply box posted", func() bool { return len(e.fake.BotMessages(alice.ID)) == 2 })
			// The next update is handled.
			if a := e.tap(alice.ID, alicePrompt.ID, alice, "Production"); a.Text != en(engine.NoticeRecorded) {
				t.Errorf("the tap after the panics was answered %q", a.Text)
			}
			if res := e.Result(alices, 5*time.Second); res.Answers == nil || res.Answers.Answers["deploy_target"][0] != "Production" {
				t.Errorf("result %+v", res)
			}
			e.eventually(5*time.Second, "every update confirmed", func() bool { return e.fake.Pending() == 0 })
			e.eventually(5*time.Second, "three panics logged", func() bool {
				return strings.Count(logs.String(), "level=ERROR msg=\"panic ") >= 3
			})
			for _, want := range []string{"test: a tap that panics", "test: a reply that panics", "test: an attach that panics"} {
				if !strings.Contains(logs.String(), want) {
					t.Errorf("no log of %q", want)
				}
			}
			if !strings.Contains(logs.String(), "stack=\"goroutine ") {
				t.Error("a panic was logged without its stack")
			}
			if n := e.panics.Load(); n < 3 {
				t.Errorf("%d panics counted, want the 3 logged", n)
			}
			e.NoResult(bobs, alices)
			r.stop() // returns: the panicked work was waited for
		})
	}
}
