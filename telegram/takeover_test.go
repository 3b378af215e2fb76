package telegram_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/telegramtest"
)

func TestPollerTakeoverLosesAndRepeatsNothing(t *testing.T) {
	t.Parallel()
	e := twoReplicas(t, envOpts{})
	// One tap handled by the first poller, so an offset is stored.
	before := ask1(e, "pre-1", alice.ID)
	p0 := e.prompt(alice.ID, 1)
	e.tap(alice.ID, p0.ID, alice, "Production")
	e.Result(before, 5*time.Second)

	chats := []int64{bob.ID, carol.ID, opsGroup}
	ids := []string{ask1(e, "queued-0", bob.ID), ask1(e, "queued-1", carol.ID), ask1(e, "queued-2", opsGroup)}
	var prompts []telegramtest.Message
	for _, c := range chats {
		prompts = append(prompts, e.prompt(c, 1))
	}

	first := e.poller()
	first.ch.CrashOnStop()
	first.stop()
	crashed := time.Now()

	// While nobody polls, people keep tapping and replying.
	q0, err := e.fake.Tap(bob.ID, prompts[0].ID, bob, "Production")
	if err != nil {
		t.Fatal(err)
	}
	q1, err := e.fake.Tap(carol.ID, prompts[1].ID, carol, "Skip")
	if err != nil {
		t.Fatal(err)
	}
	e.reply(opsGroup, alice, prompts[2].ID, "staging")
	if n := e.fake.Pending(); n < 3 {
		t.Fatalf("%d updates queued, want 3 (did someone poll?)", n)
	}

	second := e.poller()
	if second == first {
		t.Fatal("the crashed replica still polls")
	}
	if d := time.Since(crashed); d > 15*time.Second {
		t.Errorf("takeover took %s", d)
	}
	if a := e.notice(q0); a.Text != en(engine.NoticeRecorded) {
		t.Errorf("notice %+v", a)
	}
	if a := e.notice(q1); a.Text != en(engine.NoticeSkipped) {
		t.Errorf("notice %+v", a)
	}
	wants := []string{"Answered: Production", "Skipped", "Answered: Staging (Recommended)"}
	for i, id := range ids {
		e.Result(id, 5*time.Second)
		e.finished(chats[i], prompts[i].ID, wants[i])
	}
	// An update is confirmed only once it has been handled (the poll gate
	// holds the next getUpdates until then).
	e.eventually(5*time.Second, "every update confirmed", func() bool { return e.fake.Pending() == 0 })
	e.NoResult(append(ids, before)...)
	st := e.fake.Stats()
	if st.AnswerRefused != 0 {
		t.Errorf("%d callback queries were answered twice: an update was handled twice", st.AnswerRefused)
	}
	if st.Answered != 3 {
		t.Errorf("%d callback queries answered, want 3", st.Answered)
	}
	if st.Conflicts != 0 {
		t.Errorf("%d getUpdates conflicts: two replicas polled at once", st.Conflicts)
	}
	// The lease and the offset are named by the bot's id, never its token.
	keys, err := e.agent.Keys(context.Background(), e.prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	secret := strings.SplitN(e.fake.Token, ":", 2)[1]
	named := false
	for _, k := range keys {
		if strings.Contains(k, secret) {
			t.Errorf("key %q holds the token", k)
		}
		named = named || strings.Contains(k, "telegram:poll:123456789")
	}
	if !named {
		t.Errorf("no key of the poller lease among %v", keys)
	}
}

// roundRobin spreads webhook deliveries over replicas, as a load balancer.
type roundRobin struct {
	n        atomic.Int64
	handlers []http.Handler
}

func (rr *roundRobin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rr.handlers[int(rr.n.Add(1))%len(rr.handlers)].ServeHTTP(w, r)
}

func TestWebhookModeThenBackToPolling(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{webhook: true})
	a, b := e.start("a"), e.start("b")
	e.fake.SetWebhookTarget(&roundRobin{handlers: []http.Handler{a.ch.WebhookHandler(), b.ch.WebhookHandler()}})
	e.eventually(5*time.Second, "the webhook set", func() bool {
		return a.ch.State() == engine.StateConnected && b.ch.State() == engine.StateConnected
	})
	if a.ch.WebhookPath() != "/hooks/telegram" {
		t.Errorf("webhook path %q", a.ch.WebhookPath())
	}
	id := ask1(e, "hook-1", opsGroup)
	p := e.prompt(opsGroup, 1)
	if n := e.tap(opsGroup, p.ID, alice, "Production"); n.Text != en(engine.NoticeRecorded) {
		t.Errorf("notice %+v", n)
	}
	e.Result(id, 5*time.Second)
	e.finished(opsGroup, p.ID, "Answered: Production")
	id2 := ask1(e, "hook-2", bob.ID)
	e.prompt(bob.ID, 1)
	e.reply(bob.ID, bob, 0, "1")
	if r := e.Result(id2, 5*time.Second); r.Answers.Answers["deploy_target"][0] != "Staging (Recommended)" {
		t.Errorf("result %+v", r)
	}

	// The secret is checked on every request.
	update := `{"update_id":1,"message":{"message_id":99,"date":1,"chat":{"id":-100500,"type":"supergroup"},"from":{"id":1002,"is_bot":false,"first_name":"Bob"},"text":"2"}}`
	for _, secret := range []string{"", "wrong", webhookSecret + "x"} {
		req := httptest.NewRequest(http.MethodPost, "/hooks/telegram", strings.NewReader(update))
		if secret != "" {
			req.Header.Set("X-Telegram-Bot-Api-Secret-Token", secret)
		}
		rec := httptest.NewRecorder()
		a.ch.WebhookHandler().ServeHTTP(rec, req)
		if rec.Code != http.StatusUnauthorized {
			t.Errorf("secret %q: status %d, want 401", secret, rec.Code)
		}
	}
	// A delivery repeated (Telegram retries) is handled once.
	id3 := ask1(e, "hook-3", carol.ID)
	p3 := e.prompt(carol.ID, 1)
	dup := fmt.Sprintf(`{"update_id":777,"message":{"message_id":%d,"date":1,"chat":{"id":%d,"type":"private"},"from":{"id":%d,"is_bot":false,"first_name":"Carol"},"reply_to_message":{"message_id":%d,"date":1,"chat":{"id":%d,"type":"private"}},"text":"nope"}}`,
		p3.ID+100, carol.ID, carol.ID, p3.ID, carol.ID)
	for _, h := range []http.Handler{a.ch.WebhookHandler(), b.ch.WebhookHandler()} {
		req := httptest.NewRequest(http.MethodPost, "/hooks/telegram", strings.NewReader(dup))
		req.Header.Set("X-Telegram-Bot-Api-Secret-Token", webhookSecret)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Errorf("status %d", rec.Code)
		}
	}
	if r := e.Result(id3, 5*time.Second); r.Answers.Answers["deploy_target"][0] != "nope" {
		t.Errorf("result %+v", r)
	}

	// Back to polling: the poller deletes the webhook first.
	a.stop()
	b.stop()
	e.opts.webhook = false
	e.start("c")
	e.poller()
	id4 := ask1(e, "poll-1", opsGroup)
	p4 := e.prompt(opsGroup, 2)
	e.tap(opsGroup, p4.ID, alice, "Skip")
	if r := e.Result(id4, 5*time.Second); r.Reason != askbridge.ReasonSkipped {
		t.Errorf("result %+v", r)
	}
	e.NoResult(id, id2, id3, id4)
}

// hookedInbox calls hook before each tap reaches the engine.
type hookedInbox struct {
	engine.Inbox
	name string
	hook func(replica string, t engine.Tap)
}

func (h hookedInbox) Tap(ctx context.Context, t engine.Tap) engine.TapReply {
	h.hook(h.name, t)
	return h.Inbox.Tap(ctx, t)
}

// TestCrashWhileHandlingLosesNothing crashes the poller while it is in the
// middle of an update, with more updates waiting behind it: Telegram must
// not have been told (by a higher offset) that those were received, so the
// replica that takes over gets them.
func TestCrashWhileHandlingLosesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	blocked := make(chan string, 1)
	release := make(chan struct{})
	var once sync.Once
	hook := func(replica string, tap engine.Tap) {
		if tap.Person.ID != strconv.FormatInt(bob.ID, 10) {
			return
		}
		once.Do(func() {
			blocked <- replica
			<-release
		})
	}
	for _, name := range []string{"a", "b"} {
		e.startWith(name, func(in engine.Inbox) engine.Inbox { return hookedInbox{Inbox: in, name: name, hook: hook} })
	}
	e.poller()
	users := []telegramtest.User{bob, carol, alice}
	var ids []string
	var prompts []telegramtest.Message
	for i, u := range users {
		ids = append(ids, ask1(e, fmt.Sprint("held-", i), u.ID))
		prompts = append(prompts, e.prompt(u.ID, 1))
	}
	var queries []string
	tap := func(i int) {
		q, err := e.fake.Tap(users[i].ID, prompts[i].ID, users[i], "Production")
		if err != nil {
			t.Fatal(err)
		}
		queries = append(queries, q)
	}
	tap(0)
	var holder string
	select {
	case holder = <-blocked:
	case <-time.After(5 * time.Second):
		t.Fatal("bob's tap never reached a replica")
	}
	tap(1)
	tap(2)
	// Sleep: what is checked is that the updates are not confirmed, and a
	// careful poller shows nothing to wait on: real time for a careless
	// one to fetch and confirm them.
	time.Sleep(300 * time.Millisecond)
	e.mu.Lock()
	r := e.replicas[holder]
	e.mu.Unlock()
	r.ch.CrashOnStop()
	r.cancel() // the crash; the tap in hand finishes once released
	close(release)
	<-r.done
	r.stopped.Store(true)

	if next := e.poller(); next == r {
		t.Fatal("the crashed replica still polls")
	}
	for i, id := range ids {
		if a := e.notice(queries[i]); a.Text != en(engine.NoticeRecorded) {
			t.Errorf("tap %d: notice %+v", i, a)
		}
		if res := e.Result(id, 5*time.Second); res.Answers.Answers["deploy_target"][0] != "Production" {
			t.Errorf("result %+v", res)
		}
	}
	// An update is confirmed only once it has been handled.
	e.eventually(5*time.Second, "every update confirmed", func() bool { return e.fake.Pending() == 0 })
	e.NoResult(ids...)
	if st := e.fake.Stats(); st.AnswerRefused != 0 {
		t.Errorf("%d taps were handled twice", st.AnswerRefused)
	}
}
