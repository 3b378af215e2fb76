package engine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/agenttest"
	"github.com/askbridge/askbridge/internal/enginetest"
	"github.com/askbridge/askbridge/internal/testwait"
	"github.com/askbridge/askbridge/store"
)

// Fault paths of a question: each test here fails on a version that lost,
// doubled or hung something on that path.

// TestEngineCancelBeforeAsk: an agent that asks and at once cancels, while
// the bridge is down or busy, queues both entries; they are handled
// concurrently, so the cancel may come first. The question must then never
// be shown, and the agent gets "cancelled".
func TestEngineCancelBeforeAsk(t *testing.T) {
	t.Parallel()
	const n = 30
	prefix := fmt.Sprintf("enginetest%d:", prefixSeq.Add(1))
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	ctx := context.Background()
	for i := range n {
		id := fmt.Sprint("cb-", i)
		// The cancel is queued right behind its ask: both are read in one
		// batch and handled at once.
		for _, v := range [][]string{{"ask", fmt.Sprintf(oneQuestion, id)}, {"cancel", id}} {
			if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: prefix + "requests", Values: v}).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	h := newHarness(t, harnessOpts{prefix: prefix})
	for i := range n {
		if r := h.result(fmt.Sprint("cb-", i), 5*time.Second); r.Reason != askbridge.ReasonCancelled {
			t.Fatalf("cb-%d: result %+v, want cancelled", i, r)
		}
	}
	h.waitHandled()
	// A question shown after its cancel would have live buttons: every one
	// shown must have been finished as cancelled.
	for _, p := range h.ch.sends() {
		h.waitStatus(p.refs[0].Message, "Cancelled")
	}
	for i := range n {
		if c := h.resultCount(fmt.Sprint("cb-", i)); c != 0 {
			t.Errorf("cb-%d: %d more results", i, c)
		}
	}
}

// TestEngineMalformedCancel: a cancel whose id cannot be a question id is
// refused once (acknowledged, a rejected event), not redelivered forever.
func TestEngineMalformedCancel(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	ctx := context.Background()
	entry, err := h.agent.XAdd(ctx, &redis.XAddArgs{Stream: h.prefix + "requests", Values: []string{"cancel", "bad{id}"}}).Result()
	if err != nil {
		t.Fatal(err)
	}
	h.waitHandled()
	evs, err := h.agent.XRange(ctx, h.prefix+"events", "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	rejected := 0
	for _, ev := range evs {
		if ev.Values["event"] == "rejected" && ev.Values["id"] == entry {
			rejected++
		}
	}
	if rejected != 1 {
		t.Fatalf("%d rejected events for the malformed cancel, want 1: %v", rejected, evs)
	}
}

// TestEngineLateAnswerExpires: when the sweeper lags (or Redis was down at
// the deadline), a tap after the deadline does not win: the question ends
// as timed out, and the person is told it expired.
func TestEngineLateAnswerExpires(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{sweepEvery: time.Hour})
	id := h.ask(`{"id":"late-2","timeoutSeconds":30,"questions":[{"id":"a","header":"H","question":"Q?","options":[{"label":"A"},{"label":"B"}]}]}`)
	p := h.waitSent(1)[0]
	h.clock.Advance(31 * time.Second) // the sweeper's next pass is an hour away
	if r := tap(h, p, 0, alice, "late-tap"); r.Notice != engine.NoticeExpired {
		t.Errorf("late tap: notice %q, want %q", r.Notice, engine.NoticeExpired)
	}
	if r := h.result(id, 2*time.Second); r.Reason != askbridge.ReasonTimeout {
		t.Errorf("result %+v, want timeout", r)
	}
	h.waitStatus(p.refs[0].Message, "Expired")
}

// flakyStore fails the calls a reply or a tap makes while down is set, as
// a Redis that cannot be reached.
type flakyStore struct {
	enginetest.Store
	down atomic.Bool
}

var errDown = errors.New("dial tcp 127.0.0.1:6379: connect: connection refused")

func (f *flakyStore) QuestionByMessage(ctx context.Context, ref engine.MessageRef) (string, bool, error) {
	if f.down.Load() {
		return "", false, errDown
	}
	return f.Store.QuestionByMessage(ctx, ref)
}

func (f *flakyStore) OpenInChat(ctx context.Context, platform, chat string) ([]string, error) {
	if f.down.Load() {
		return nil, errDown
	}
	return f.Store.OpenInChat(ctx, platform, chat)
}

// TestEngineReplyDuringOutage: a text reply that cannot be handled because
// the store is unreachable tells the person to try again, and the
// platform's retry of the same message is handled, not taken as seen. The
// same holds for a tap.
func TestEngineReplyDuringOutage(t *testing.T) {
	t.Parallel()
	var flaky *flakyStore
	h := newHarness(t, harnessOpts{wrap: func(s enginetest.Store) enginetest.Store {
		flaky = &flakyStore{Store: s}
		return flaky
	}})
	id := h.ask(fmt.Sprintf(oneQuestion, "outage-1"))
	p := h.waitSent(1)[0]
	msg := engine.TextReply{
		EventID: "ops-room:900", Message: engine.MessageRef{Platform: "telegram", Chat: "ops-room", Message: "900"},
		ReplyTo: p.refs[0].Message, Person: alice, Text: "2",
	}
	flaky.down.Store(true)
	if out := h.engine.Reply(context.Background(), msg); !out.Claimed || out.Respond != engine.NoticeTryAgain.Text("en") {
		t.Fatalf("reply during the outage: %+v, want a try-again response", out)
	}
	if r := tap(h, p, 0, alice, "tap-900"); r.Notice != engine.NoticeTryAgain {
		t.Fatalf("tap during the outage: %q", r.Notice)
	}
	flaky.down.Store(false)
	// The platform delivers the same message again: it answers.
	if out := h.engine.Reply(context.Background(), msg); !out.Claimed || out.Respond != "" {
		t.Fatalf("retried reply: %+v", out)
	}
	if r := h.result(id, 2*time.Second); r.Answers == nil || r.Answers.Answers["deploy_target"][0] != "Production" {
		t.Fatalf("result %+v, want Production from the retried reply", r)
	}
}

// TestEngineEndedWhileShown: a question cancelled while its prompt is
// being posted (a slow, rate-limited platform) does not keep live buttons:
// the message posted after the end is finished too.
func TestEngineEndedWhileShown(t *testing.T) {
	t.Parallel()
	ch := newFakeChannel("telegram")
	ch.gate = make(chan struct{})
	h := newHarness(t, harnessOpts{ch: ch})
	id := h.ask(fmt.Sprintf(oneQuestion, "slow-cancel"))
	if !testwait.Until(5*time.Second, func() bool { return ch.entered.Load() != 0 }) {
		t.Fatal("the prompt never started")
	}
	// The ask is in Send, held by the gate; the agent cancels.
	ctx := context.Background()
	if err := h.agent.XAdd(ctx, &redis.XAddArgs{Stream: h.prefix + "requests", Values: []string{"cancel", id}}).Err(); err != nil {
		t.Fatal(err)
	}
	if r := h.result(id, 5*time.Second); r.Reason != askbridge.ReasonCancelled {
		t.Fatalf("result %+v", r)
	}
	close(ch.gate)
	p := h.waitSent(1)[0]
	h.waitStatus(p.refs[0].Message, "Cancelled")
}

// panicCounter counts recovered panics.
type panicCounter struct {
	engine.Metrics
	n atomic.Int64
}

func (p *panicCounter) Ended(string, askbridge.Outcome, time.Duration) {}
func (p *panicCounter) Sent(string, int)                               {}
func (p *panicCounter) PlatformError(string, engine.ErrorKind)         {}
func (p *panicCounter) RetryAfter(string, time.Duration)               {}
func (p *panicCounter) Reached(askbridge.EventKind, string)            {}
func (p *panicCounter) Standing(engine.StandingEvent)                  {}
func (p *panicCounter) Panicked(string)                                { p.n.Add(1) }

// TestEnginePanicRecovered: a panic in a channel's edit is logged and
// counted; the engine and the process go on answering.
func TestEnginePanicRecovered(t *testing.T) {
	t.Parallel()
	ch := newFakeChannel("telegram")
	ch.panicOnFinish.Store(true)
	m := &panicCounter{}
	h := newHarness(t, harnessOpts{ch: ch, metrics: m})
	h.ask(fmt.Sprintf(oneQuestion, "boom-1"))
	p := h.waitSent(1)[0]
	if r := tap(h, p, 0, alice, "boom-tap"); r.Notice != engine.NoticeRecorded {
		t.Fatalf("tap: %q", r.Notice)
	}
	if !testwait.Until(5*time.Second, func() bool { return m.n.Load() != 0 }) {
		t.Fatal("the panic was never counted")
	}
	ch.panicOnFinish.Store(false)
	id := h.ask(fmt.Sprintf(oneQuestion, "after-boom"))
	p = h.waitSent(2)[1]
	tap(h, p, 1, alice, "after-tap")
	if r := h.result(id, 2*time.Second); r.Answers == nil {
		t.Fatalf("after a panic: %+v", r)
	}
	h.waitStatus(p.refs[0].Message, "Answered: Production")
}

// lostEnd performs End and then loses its reply, as a replica whose
// connection dropped (or that died) right after winning an end would.
type lostEnd struct {
	enginetest.Store
	lose atomic.Bool
}

func (l *lostEnd) End(ctx context.Context, id string, res askbridge.Result, now time.Time) (engine.EndResult, error) {
	r, err := l.Store.End(ctx, id, res, now)
	if err == nil && l.lose.Load() {
		return engine.EndResult{}, errors.New("read tcp: connection reset by peer")
	}
	return r, err
}

func (l *lostEnd) MarkAndEnd(ctx context.Context, id string, res askbridge.Result, now time.Time) (bool, engine.EndResult, error) {
	added, r, err := l.Store.MarkAndEnd(ctx, id, res, now)
	if err == nil && l.lose.Load() {
		return false, engine.EndResult{}, errors.New("read tcp: connection reset by peer")
	}
	return added, r, err
}

// TestEngineEndWonThenLostLeavesNoLiveButtons: a replica that wins an end
// and dies (or loses the reply) before it edits anything leaves the
// question marked, so another replica edits its messages within seconds.
func TestEngineEndWonThenLostLeavesNoLiveButtons(t *testing.T) {
	t.Parallel()
	var lossy *lostEnd
	ch := newFakeChannel("telegram")
	a := newHarness(t, harnessOpts{replica: "a", ch: ch, wrap: func(s enginetest.Store) enginetest.Store {
		lossy = &lostEnd{Store: s}
		return lossy
	}})
	a.ask(fmt.Sprintf(oneQuestion, "lost-end"))
	p := a.waitSent(1)[0]
	lossy.lose.Store(true)
	if r := tap(a, p, 1, alice, "lost-tap"); r.Notice != engine.NoticeTryAgain {
		t.Fatalf("tap: %q", r.Notice)
	}
	if r := a.result("lost-end", 2*time.Second); r.Answers == nil {
		t.Fatalf("result %+v", r)
	}
	// Replica a never edits (its end "failed"); b's finisher takes the
	// marked question once the mark is LeftoverGrace old.
	b := newHarness(t, harnessOpts{replica: "b", ch: ch, prefix: a.prefix})
	b.advance(6 * time.Second)
	b.waitStatus(p.refs[0].Message, "Answered: Production")
}

// TestEngineTakesOverFinishingWithinSeconds: a replica that dies while it
// edits a question's messages (its finishing lease lapses) hands them over
// within seconds, not minutes.
func TestEngineTakesOverFinishingWithinSeconds(t *testing.T) {
	t.Parallel()
	prefix, _ := deadReplicaEnded(t, "mid-edit", "88", askbridge.ReasonSkipped)
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	ctx := context.Background()
	dead := store.New(rdb, store.Options{Prefix: prefix, Consumer: "dead"})
	// The dead replica held the finishing lease; it lapses unrenewed.
	if _, ok, err := dead.AcquireLease(ctx, "finish:mid-edit", "dead/1", 300*time.Millisecond); err != nil || !ok {
		t.Fatalf("lease: %v %v", ok, err)
	}
	h := newHarness(t, harnessOpts{prefix: prefix, replica: "survivor"})
	// Seconds later, on the survivor's clock (the lease lapses in Redis's).
	if !testwait.Until(10*time.Second, func() bool {
		if h.ch.status("88") == "Skipped" {
			return true
		}
		h.advance(6 * time.Second)
		return false
	}) {
		t.Fatal("the survivor never took over the edits")
	}
}

// TestEngineRateLimitedEditsLand: a platform that rate-limits edits for a
// while (more times than an edit is tried for other failures) still gets
// the edit in the end; buttons do not stay live.
func TestEngineRateLimitedEditsLand(t *testing.T) {
	t.Parallel()
	ch := newFakeChannel("telegram")
	for range 8 {
		ch.finishFailures = append(ch.finishFailures, &engine.SendError{Kind: engine.RateLimited, RetryAfter: time.Second, Reason: "ratelimited"})
	}
	h := newHarness(t, harnessOpts{ch: ch})
	h.ask(fmt.Sprintf(oneQuestion, "edit-429"))
	p := h.waitSent(1)[0]
	tap(h, p, 0, alice, "edit-429-tap")
	h.advanceWhileRetrying(time.Second, func() bool { return ch.status(p.refs[0].Message) != "" })
	if got := ch.status(p.refs[0].Message); got != "Answered: Staging (Recommended)" {
		t.Fatalf("status %q", got)
	}
}

// TestEngineStopIsBounded: a stop while a send hangs returns within the
// stop grace, and hands the request back (unacknowledged) for another
// replica.
func TestEngineStopIsBounded(t *testing.T) {
	t.Parallel()
	ch := newFakeChannel("telegram")
	ch.gate = make(chan struct{}) // never opened: the platform hangs
	h := newHarness(t, harnessOpts{ch: ch, stopGrace: 10 * time.Second})
	h.ask(fmt.Sprintf(oneQuestion, "hang-1"))
	if !testwait.Until(5*time.Second, func() bool { return ch.entered.Load() != 0 }) {
		t.Fatal("the prompt never started")
	}
	h.stop()
	// The grace runs on the engine's clock: the stop waits for it alone.
	// Nothing else moves the clock, so it returns once the clock has
	// passed the grace.
	var moved time.Duration
	for stopped := false; !stopped; {
		select {
		case <-h.stopped:
			stopped = true
		case <-time.After(50 * time.Millisecond):
			if moved > time.Minute {
				t.Fatal("Run did not return after the stop grace")
			}
			h.clock.Advance(time.Second)
			moved += time.Second
		}
	}
	if moved < 10*time.Second {
		t.Fatalf("Run returned after %s on its clock, before the grace of 10s", moved)
	}
	groups, err := h.agent.XInfoGroups(context.Background(), h.prefix+"requests").Result()
	if err != nil || len(groups) != 1 || groups[0].Pending != 1 {
		t.Fatalf("the request was not handed back: %+v %v", groups, err)
	}
}

// TestEngineAdoptsUnrecordedPrompt: a replica that posted a prompt and
// died before recording it leaves a message with live buttons, and the
// prompt is posted again. A tap on that first copy answers the question
// (its buttons name it, and it is open in that chat), and both copies are
// finished.
func TestEngineAdoptsUnrecordedPrompt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	id := h.ask(fmt.Sprintf(oneQuestion, "orphan-tap"))
	p := h.waitSent(1)[0]
	orphan := engine.MessageRef{Platform: "telegram", Chat: "ops-room", Message: "orphan-999"}
	r := h.engine.Tap(context.Background(), engine.Tap{
		EventID: "orphan-ev", Message: orphan, Person: alice, Payload: p.plan.Buttons()[1].Payload,
	})
	if r.Notice != engine.NoticeRecorded {
		t.Fatalf("tap on the unrecorded copy: %q, want %q", r.Notice, engine.NoticeRecorded)
	}
	if res := h.result(id, 2*time.Second); res.Answers == nil || res.Answers.Answers["deploy_target"][0] != "Production" {
		t.Fatalf("result %+v", res)
	}
	h.waitStatus(p.refs[0].Message, "Answered: Production")
	h.waitStatus(orphan.Message, "Answered: Production")
	// A payload of another question on an unknown message is still refused.
	other := askbridge.EncodePayload("another-question", askbridge.Choice{Kind: askbridge.ControlOption})
	if r := h.engine.Tap(context.Background(), engine.Tap{EventID: "forged", Message: engine.MessageRef{Platform: "telegram", Chat: "ops-room", Message: "x"}, Person: alice, Payload: other}); r.Notice != engine.NoticeUnknown {
		t.Fatalf("forged tap: %q", r.Notice)
	}
}

// TestEnginePartlySentPromptGoesOn: a long prompt whose second part fails
// with a temporary error is not left half-shown (the part with the buttons
// missing, the agent waiting out the timeout): the engine goes on from the
// first part not posted, and posts none twice.
func TestEnginePartlySentPromptGoesOn(t *testing.T) {
	t.Parallel()
	ch := newFakeChannel("telegram")
	ch.parts = 3
	ch.failPart = map[int]error{1: &engine.SendError{Kind: engine.Temporary, Reason: "502 Bad Gateway"}}
	h := newHarness(t, harnessOpts{ch: ch})
	id := h.ask(fmt.Sprintf(oneQuestion, "long-1"))
	h.advanceWhileRetrying(100*time.Millisecond, func() bool {
		ch.mu.Lock()
		defer ch.mu.Unlock()
		return len(ch.sent) == 1 && len(ch.sent[0].refs) == 3
	})
	h.waitHandled()
	p := h.ch.sends()[0]
	for i, ref := range p.refs {
		if ref.Part != i {
			t.Fatalf("part %d posted as part %d: %+v", i, ref.Part, p.refs)
		}
	}
	msgs, err := h.store.Messages(context.Background(), id)
	if err != nil || len(msgs) != 3 {
		t.Fatalf("recorded %v, %v; want the three parts once each", msgs, err)
	}
}

// failingRecord fails the next n AddMessage calls, as a Redis that is
// briefly unreachable right after a prompt was posted.
type failingRecord struct {
	enginetest.Store
	n atomic.Int64
}

func (f *failingRecord) AddMessage(ctx context.Context, id string, ref engine.MessageRef) (askbridge.Status, error) {
	if f.n.Add(-1) >= 0 {
		return "", errDown
	}
	return f.Store.AddMessage(ctx, id, ref)
}

// TestEngineRecordsAPostedPromptThroughAnOutage: when Redis fails between
// posting a prompt and recording it, the message is recorded once Redis is
// back; the request is not retried, so the prompt is not posted twice with
// the first copy's buttons orphaned.
func TestEngineRecordsAPostedPromptThroughAnOutage(t *testing.T) {
	t.Parallel()
	var failing *failingRecord
	ch := newFakeChannel("telegram")
	h := newHarness(t, harnessOpts{ch: ch, wrap: func(s enginetest.Store) enginetest.Store {
		failing = &failingRecord{Store: s}
		failing.n.Store(3)
		return failing
	}})
	id := h.ask(fmt.Sprintf(oneQuestion, "record-outage"))
	h.advanceWhileRetrying(100*time.Millisecond, func() bool { return failing.n.Load() < 0 })
	h.waitHandled()
	if n := len(ch.sends()); n != 1 {
		t.Fatalf("posted %d times, want once", n)
	}
	msgs, err := h.store.Messages(context.Background(), id)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("recorded %v, %v", msgs, err)
	}
	p := ch.sends()[0]
	if r := tap(h, p, 0, alice, "after-outage"); r.Notice != engine.NoticeRecorded {
		t.Fatalf("tap on the prompt: %q", r.Notice)
	}
}

// failingPublishingRecord fails the next n records of the store's
// publishing kind (the record, the lease given up with the last part, the
// delivered event: one round trip), as a Redis that is briefly
// unreachable right after a part was posted; the rest go to the store.
type failingPublishingRecord struct {
	enginetest.Store
	st    *store.Store
	n     atomic.Int64
	calls atomic.Int64
}

func (f *failingPublishingRecord) AddMessagePublishing(ctx context.Context, id string, ref engine.MessageRef, release engine.Lease, evs []askbridge.Event) (askbridge.Status, bool, error) {
	f.calls.Add(1)
	if f.n.Add(-1) >= 0 {
		return "", false, errDown
	}
	return f.st.AddMessagePublishing(ctx, id, ref, release, evs)
}

// TestEngineRecordsWithItsEventThroughAnOutage: a three-part prompt whose
// records (each with its delivered event, the last also giving up the
// delivery lease) fail for a while is posted once, each part recorded
// once with one delivered event, and the lease is given up by the last
// record: another replica can take it at once.
func TestEngineRecordsWithItsEventThroughAnOutage(t *testing.T) {
	t.Parallel()
	var failing *failingPublishingRecord
	ch := newFakeChannel("telegram")
	ch.parts = 3
	h := newHarness(t, harnessOpts{ch: ch, wrap: func(s enginetest.Store) enginetest.Store {
		st, ok := s.(*store.Store)
		if !ok {
			t.Fatalf("the harness's store is a %T", s)
		}
		failing = &failingPublishingRecord{Store: s, st: st}
		failing.n.Store(2)
		return failing
	}})
	id := h.ask(fmt.Sprintf(oneQuestion, "record-publish-outage"))
	h.advanceWhileRetrying(100*time.Millisecond, func() bool { return failing.n.Load() < 0 })
	h.waitHandled()
	if n := len(ch.sends()); n != 1 {
		t.Fatalf("posted %d times, want once", n)
	}
	if n := failing.calls.Load(); n != 5 {
		t.Errorf("%d publishing records, want 5: three parts, two of them tried again", n)
	}
	msgs, err := h.store.Messages(context.Background(), id)
	if err != nil || len(msgs) != 3 {
		t.Fatalf("recorded %v, %v; want the three parts", msgs, err)
	}
	delivered := map[string]int{}
	for _, ev := range h.events(id) {
		if ev.Kind == askbridge.EventDelivered {
			delivered[ev.Message]++
		}
	}
	if len(delivered) != 3 {
		t.Fatalf("delivered events %v, want one for each of the three parts", delivered)
	}
	for m, n := range delivered {
		if n != 1 {
			t.Errorf("message %s: %d delivered events", m, n)
		}
	}
	if _, ok, err := h.store.AcquireLease(context.Background(), store.QuestionLease(store.LeaseDeliver, id), "another/1", time.Minute); err != nil || !ok {
		t.Fatalf("the delivery lease is still held after the last part's record: %v %v", ok, err)
	}
}

// findingChannel is the fake channel with a history it can search (a
// Finder, like Slack's); lookupErr makes every lookup fail.
type findingChannel struct {
	*fakeChannel
	lookups   atomic.Int64
	lookupErr error
}

func (f *findingChannel) Find(ctx context.Context, l engine.Lookup) ([]engine.MessageRef, error) {
	f.lookups.Add(1)
	if f.lookupErr != nil {
		return nil, f.lookupErr
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []engine.MessageRef
	for _, p := range f.sent {
		if p.chat != l.Chat || p.plan.ID != l.Plan.ID {
			continue
		}
		for _, r := range p.refs {
			if r.Part >= l.From {
				out = append(out, r)
			}
		}
	}
	return out, nil
}

// deadReplicaPosting plays a replica that took request id from the stream,
// posted parts 0 and 1 of its three-part prompt in ops-room, recorded only
// part 0 and died. ch holds what the platform shows.
func deadReplicaPosting(t *testing.T, id string, ch *fakeChannel) string {
	t.Helper()
	prefix := fmt.Sprintf("enginetest%d:", prefixSeq.Add(1))
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	agenttest.Agent{RDB: rdb, Prefix: prefix}.Ask(t, fmt.Sprintf(oneQuestion, id))
	dead := store.New(rdb, store.Options{Prefix: prefix, Consumer: "dead"})
	if entries, err := dead.ReadRequests(ctx, 10, time.Second); err != nil || len(entries) != 1 {
		t.Fatalf("read: %v %v", entries, err)
	}
	req, err := askbridge.DecodeRequest([]byte(fmt.Sprintf(oneQuestion, id)))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	target := askbridge.Target{Platform: "telegram", Chat: "ops-room"}
	if _, _, err := dead.Create(ctx, engine.NewQuestion{ID: id, Request: req, Target: target, Created: now, Deadline: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	plan := engine.BuildPlan(id, req, ch.caps)
	refs := []engine.MessageRef{
		{Platform: "telegram", Chat: "ops-room", Message: "dead-0", Part: 0},
		{Platform: "telegram", Chat: "ops-room", Message: "dead-1", Part: 1},
	}
	ch.sent = append(ch.sent, sentPrompt{chat: "ops-room", plan: plan, refs: refs})
	if _, err := dead.AddMessage(ctx, id, refs[0]); err != nil {
		t.Fatal(err)
	}
	return prefix
}

// TestEngineFindsPartsADeadReplicaPosted: a replica died between the
// platform accepting part 1 of a prompt and recording it. The replica that
// takes the request over finds part 1 on the platform, records it, and
// posts only part 2: no part is shown twice, no button is orphaned. When
// the platform cannot be asked, the prompt is still completed (the parts
// not recorded are posted again) rather than left without its buttons.
func TestEngineFindsPartsADeadReplicaPosted(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		lookupErr error
		posted    []string // messages of the prompt, in order
	}{
		{"found", nil, []string{"dead-0", "dead-1", "1"}},
		{"lookup fails", &engine.SendError{Kind: engine.Temporary, Reason: "502"}, []string{"dead-0", "dead-1", "1", "2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			id := "dead-post-" + strings.ReplaceAll(tc.name, " ", "-")
			ch := newFakeChannel("telegram")
			ch.parts = 3
			prefix := deadReplicaPosting(t, id, ch)
			finder := &findingChannel{fakeChannel: ch, lookupErr: tc.lookupErr}
			h := newHarness(t, harnessOpts{prefix: prefix, replica: "survivor", claimIdle: 200 * time.Millisecond, ch: ch,
				channel: func(*fakeChannel) engine.Channel { return finder }})
			h.waitHandled()
			var got []string
			for _, r := range ch.sends()[0].refs {
				got = append(got, r.Message)
			}
			if !slices.Equal(got, tc.posted) {
				t.Fatalf("the platform shows %v, want %v", got, tc.posted)
			}
			if n := finder.lookups.Load(); n != 1 {
				t.Errorf("%d lookups, want 1", n)
			}
			msgs, err := h.store.Messages(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			parts := map[int]int{}
			for _, m := range msgs {
				parts[m.Part]++
			}
			if len(parts) != 3 {
				t.Fatalf("recorded parts %v, want 0, 1 and 2", parts)
			}
			// The buttons are on the last part; a tap there answers.
			last := ch.sends()[0].refs[len(got)-1]
			r := h.engine.Tap(context.Background(), engine.Tap{EventID: id + "-tap", Message: last, Person: alice, Payload: ch.sends()[0].plan.Buttons()[1].Payload})
			if r.Notice != engine.NoticeRecorded {
				t.Fatalf("tap: %q", r.Notice)
			}
			h.result(id, 2*time.Second)
		})
	}
}

// TestEngineManyEndingsAtOnceAreBounded: when many deadlines pass at once
// the sweep ends them all in one batch (their results reach the agents at
// once), but a replica edits at most FinishConcurrency questions at a time
// and leaves the rest marked, for the leftover pass, rather than starting a
// goroutine each; in the end every message shows the end.
func TestEngineManyEndingsAtOnceAreBounded(t *testing.T) {
	t.Parallel()
	ch := newFakeChannel("telegram")
	ch.finishGate = make(chan struct{})
	h := newHarness(t, harnessOpts{ch: ch, finishConcurrency: 2})
	const n = 6
	var ids []string
	for i := range n {
		ids = append(ids, h.ask(fmt.Sprintf(`{"id":"burst-%d","timeoutSeconds":30,"questions":[{"id":"a","header":"H","question":"Q?","options":[{"label":"A"},{"label":"B"}]}]}`, i)))
	}
	sent := h.waitSent(n)
	h.waitHandled()
	h.advance(31 * time.Second)
	for _, id := range ids {
		if r := h.result(id, 5*time.Second); r.Reason != askbridge.ReasonTimeout {
			t.Fatalf("%s: %+v", id, r)
		}
	}
	if !testwait.Until(5*time.Second, func() bool { return ch.inFinish.Load() >= 2 }) {
		t.Fatalf("%d edits under way, want 2", ch.inFinish.Load())
	}
	close(ch.finishGate)
	// The leftover pass takes the others, two at a time.
	for _, p := range sent {
		if !testwait.Until(10*time.Second, func() bool {
			if ch.status(p.refs[0].Message) == "Expired" {
				return true
			}
			h.advance(6 * time.Second)
			return false
		}) {
			t.Fatalf("message %s never finished", p.refs[0].Message)
		}
	}
	if most := ch.mostInFinish.Load(); most > 2 {
		t.Fatalf("%d edits at once, want at most 2", most)
	}
	if left, err := h.store.Unfinished(context.Background(), h.clock.Now(), 100); err != nil || len(left) != 0 {
		t.Fatalf("still marked: %v %v", left, err)
	}
}

// TestEngineSlowEditsKeepTheirMark: the replica that ended a question
// takes no lease to edit its messages; it keeps the question's finishing
// mark fresh while the edits are slow, so another replica's leftover pass
// (which takes marks older than LeftoverGrace) does not edit them too.
func TestEngineSlowEditsKeepTheirMark(t *testing.T) {
	t.Parallel()
	clk := newClock()
	prefix := fmt.Sprintf("enginetest%d:", prefixSeq.Add(1))
	slow := newFakeChannel("telegram")
	a := newHarness(t, harnessOpts{prefix: prefix, replica: "a", clock: clk, ch: slow})
	other := newFakeChannel("telegram")
	newHarness(t, harnessOpts{prefix: prefix, replica: "b", clock: clk, ch: other})
	id := a.ask(fmt.Sprintf(oneQuestion, "slow-edits"))
	var p sentPrompt
	if !testwait.Until(5*time.Second, func() bool {
		for _, ch := range []*fakeChannel{slow, other} {
			if s := ch.sends(); len(s) == 1 {
				p = s[0]
				return true
			}
		}
		return false
	}) {
		t.Fatal("never shown")
	}
	slow.mu.Lock()
	slow.finishGate = make(chan struct{})
	slow.mu.Unlock()
	if r := tap(a, p, 1, alice, "slow-edits-tap"); r.Notice != engine.NoticeRecorded {
		t.Fatalf("tap: %q", r.Notice)
	}
	a.result(id, 2*time.Second)
	testwait.For(t, 5*time.Second, "the edit to start", func() bool { return slow.inFinish.Load() != 0 })
	// Four leftover grace periods pass, a second at a time, while the
	// edit hangs. (The sleep gives the other replica's leftover pass real
	// time to run after each second: there is nothing of it to wait on,
	// since what is checked is that it does nothing.)
	for range 20 {
		clk.Advance(time.Second)
		time.Sleep(20 * time.Millisecond)
	}
	if n := other.inFinish.Load(); n != 0 || other.status(p.refs[0].Message) != "" {
		t.Fatalf("the other replica edited the message too (%d under way, status %q)", n, other.status(p.refs[0].Message))
	}
	close(slow.finishGate)
	a.waitStatus(p.refs[0].Message, "Answered: Production")
}

// TestEngineTapBeforeTheRecord: a tap can reach the bridge before the
// message it tapped is recorded (the platform shows the message as soon as
// it accepts it; the record follows a moment later). The tap answers, on
// the last part of a long prompt too, and every part is finished.
func TestEngineTapBeforeTheRecord(t *testing.T) {
	t.Parallel()
	for _, parts := range []int{1, 3} {
		t.Run(fmt.Sprint(parts, " parts"), func(t *testing.T) {
			t.Parallel()
			ch := newFakeChannel("telegram")
			ch.parts = parts
			tapped := make(chan engine.TapReply, 1)
			var h *harness
			ch.beforeSent = func(ref engine.MessageRef) {
				if ref.Part != parts-1 {
					return
				}
				p := ch.sends()[0]
				tapped <- h.engine.Tap(context.Background(), engine.Tap{EventID: "early", Message: ref, Person: alice, Payload: p.plan.Buttons()[1].Payload})
			}
			h = newHarness(t, harnessOpts{ch: ch})
			id := h.ask(fmt.Sprintf(oneQuestion, fmt.Sprint("early-tap-", parts)))
			if r := <-tapped; r.Notice != engine.NoticeRecorded {
				t.Fatalf("tap before the record: %q, want %q", r.Notice, engine.NoticeRecorded)
			}
			if res := h.result(id, 2*time.Second); res.Answers == nil || res.Answers.Answers["deploy_target"][0] != "Production" {
				t.Fatalf("result %+v", res)
			}
			p := ch.sends()[0]
			for _, ref := range p.refs {
				h.waitStatus(ref.Message, "Answered: Production")
			}
			msgs, err := h.store.Messages(context.Background(), id)
			if err != nil || len(msgs) != parts {
				t.Fatalf("recorded %+v, %v; want %d parts", msgs, err, parts)
			}
			for _, m := range msgs {
				if m.Message == p.refs[parts-1].Message && m.Part != parts-1 {
					t.Fatalf("the tapped message is recorded as part %d, want %d", m.Part, parts-1)
				}
			}
		})
	}
}

// TestEngineOversizeEntry: an entry over the size limit is refused without
// its body being read into the bridge: the agent waiting on the id its
// request named first gets an error result naming the size, the entry is
// acknowledged (no other replica takes it up again), and the bridge goes
// on with the next request.
func TestEngineOversizeEntry(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	ctx := context.Background()
	big := `{"id":"huge-1","timeoutSeconds":60,"questions":[{"id":"a","header":"H","question":"` +
		strings.Repeat("x", 2*askbridge.MaxEntryBytes) + `","options":[{"label":"A"},{"label":"B"}]}]}`
	if err := h.agent.XAdd(ctx, &redis.XAddArgs{Stream: h.prefix + "requests", Values: []string{"ask", big}}).Err(); err != nil {
		t.Fatal(err)
	}
	r := h.result("huge-1", 5*time.Second)
	if r.Status != askbridge.StatusError || !strings.Contains(r.Error, fmt.Sprintf("is %d bytes; at most %d", len("ask")+len(big), askbridge.MaxEntryBytes)) {
		t.Fatalf("result %+v, want an error naming the size", r)
	}
	h.waitHandled()
	if n := h.agent.XLen(ctx, h.prefix+"requests").Val(); n != 0 {
		t.Fatalf("%d entries left in the requests stream", n)
	}
	id := h.ask(`{"id":"after-huge","timeoutSeconds":60,"questions":[{"id":"a","header":"H","question":"Q?","options":[{"label":"A"},{"label":"B"}]}]}`)
	p := h.waitSent(1)[0]
	tap(h, p, 1, alice, "after-huge-tap")
	if r := h.result(id, 5*time.Second); r.Status != askbridge.StatusAnswered {
		t.Fatalf("next request: %+v", r)
	}
}

// TestEngineMaxPendingPerAgent: an agent at its cap of pending questions
// gets an error result naming the setting, and is shown nothing; another
// agent is not held back by it; once one of its questions is answered (or
// cancelled, or times out) it may ask again; a retried request of a
// question already counted is not refused.
func TestEngineMaxPendingPerAgent(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{maxPerAgent: 2})
	ask := func(id, agent string) string {
		return h.ask(`{"id":"` + id + `","agent":"` + agent + `","timeoutSeconds":600,"questions":[{"id":"a","header":"H","question":"Q?","options":[{"label":"A"},{"label":"B"}]}]}`)
	}
	ask("bot-1", "deploy-bot")
	ask("bot-2", "deploy-bot")
	h.waitSent(2)
	ask("bot-3", "deploy-bot")
	r := h.result("bot-3", 5*time.Second)
	if r.Status != askbridge.StatusError || !strings.Contains(r.Error, `agent "deploy-bot" already has 2 pending questions`) ||
		!strings.Contains(r.Error, "ASKUSER_MAX_PENDING_PER_AGENT=2") {
		t.Fatalf("third question of the agent: %+v", r)
	}
	// The same request again (a retried XADD) is not a new question.
	ask("bot-2", "deploy-bot")
	ask("other-1", "report-bot")
	sent := h.waitSent(3)
	if len(sent) != 3 || sent[2].plan.ID != "other-1" {
		t.Fatalf("sent %d prompts, the last for %q; want other-1 third", len(sent), sent[len(sent)-1].plan.ID)
	}
	h.waitHandled()
	if n := h.resultCount("bot-2"); n != 0 {
		t.Fatalf("retried request got %d results", n)
	}
	// One answered: a place frees up.
	i := slices.IndexFunc(sent, func(p sentPrompt) bool { return p.plan.ID == "bot-1" })
	tap(h, sent[i], 0, alice, "cap-tap")
	if r := h.result("bot-1", 5*time.Second); r.Status != askbridge.StatusAnswered {
		t.Fatalf("bot-1: %+v", r)
	}
	ask("bot-4", "deploy-bot")
	if sent := h.waitSent(4); sent[3].plan.ID != "bot-4" {
		t.Fatalf("fourth prompt is for %q, want bot-4", sent[3].plan.ID)
	}
}

// TestEngineReaskAfterResultTaken: an agent that took its result and asks
// again with the same id (a script run twice) gets the same result JSON
// again instead of waiting forever, for an answered question and for a
// refused one alike; the question is not shown again, and a result still
// waiting is not doubled.
func TestEngineReaskAfterResultTaken(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	ctx := context.Background()
	body := `{"id":"again-1","timeoutSeconds":60,"questions":[{"id":"a","header":"H","question":"Q?","options":[{"label":"A"},{"label":"B"}]}]}`
	h.ask(body)
	p := h.waitSent(1)[0]
	tap(h, p, 1, alice, "again-tap")
	raw := func(id string) string {
		t.Helper()
		v, err := h.agent.BLPop(ctx, 5*time.Second, h.prefix+"result:{"+id+"}").Result()
		if err != nil {
			t.Fatalf("no result for %s: %v", id, err)
		}
		return v[1]
	}
	first := raw("again-1")
	h.ask(body)
	if again := raw("again-1"); again != first {
		t.Fatalf("asked again: %s\nwant the same result: %s", again, first)
	}
	// The result still waits in the list: asking again adds nothing.
	h.ask(body)
	h.waitHandled()
	if n := h.resultCount("again-1"); n != 1 {
		t.Fatalf("%d results waiting after a re-ask whose result was not taken, want 1", n)
	}
	if n := len(h.waitSent(1)); n != 1 {
		t.Fatalf("the question was shown %d times", n)
	}

	bad := `{"id":"again-bad","questions":[]}`
	h.ask(bad)
	refused := raw("again-bad")
	if !strings.Contains(refused, `"status":"error"`) {
		t.Fatalf("refused request: %s", refused)
	}
	h.ask(bad)
	if again := raw("again-bad"); again != refused {
		t.Fatalf("refused request asked again: %s\nwant the same result: %s", again, refused)
	}
}

// batchCounter counts the batches of creates the engine hands the store.
type batchCounter struct {
	enginetest.Store
	batches, calls atomic.Int64
}

func (b *batchCounter) CreateHoldingBatch(ctx context.Context, calls []*engine.CreateCall) {
	b.batches.Add(1)
	b.calls.Add(int64(len(calls)))
	b.Store.(engine.BatchCreator).CreateHoldingBatch(ctx, calls)
}

// askBurst adds n one-question asks, ids <prefix>-0 … <prefix>-<n-1>, with
// timeout seconds, to the requests stream in one pipeline: they arrive
// together.
func (h *harness) askBurst(prefix string, n, timeout int) {
	h.t.Helper()
	pipe := h.agent.Pipeline()
	for i := range n {
		pipe.XAdd(context.Background(), &redis.XAddArgs{Stream: h.prefix + "requests", Values: []string{"ask",
			fmt.Sprintf(`{"id":"%s-%d","timeoutSeconds":%d,"questions":[{"id":"a","header":"H","question":"Q%d?","options":[{"label":"A"},{"label":"B"}]}]}`, prefix, i, timeout, i)}})
	}
	if _, err := pipe.Exec(context.Background()); err != nil {
		h.t.Fatal(err)
	}
}

// TestEngineCreatesABurstInBatches: requests that arrive together are
// created together, several per round trip, and every one is created
// exactly once and shown.
func TestEngineCreatesABurstInBatches(t *testing.T) {
	t.Parallel()
	counter := &batchCounter{}
	h := newHarness(t, harnessOpts{wrap: func(s enginetest.Store) enginetest.Store { counter.Store = s; return counter }})
	const n = 200
	h.askBurst("burst", n, 60)
	sent := h.waitSent(n)
	seen := map[string]bool{}
	for _, p := range sent {
		seen[p.plan.ID] = true
	}
	if len(sent) != n || len(seen) != n {
		t.Fatalf("%d prompts for %d questions, want %d each", len(sent), len(seen), n)
	}
	if got := counter.calls.Load(); got != n {
		t.Fatalf("%d creates, want %d", got, n)
	}
	if b := counter.batches.Load(); b >= n {
		t.Fatalf("%d batches for %d requests that came together: none was shared", b, n)
	}
	t.Logf("%d requests created in %d batches", n, counter.batches.Load())
}

// TestEngineRepeatWhileShownIsDone: an ask repeated with the same id (a
// retried XADD) while the first is still being shown is acknowledged at
// once, not left to be claimed again: the entry that created the question
// stays pending until the prompt is out, and guards it should its replica
// die. The prompt is shown once.
func TestEngineRepeatWhileShownIsDone(t *testing.T) {
	t.Parallel()
	ch := newFakeChannel("telegram")
	gate := make(chan struct{})
	ch.gate = gate
	h := newHarness(t, harnessOpts{ch: ch})
	body := fmt.Sprintf(oneQuestion, "repeat-slow")
	h.ask(body)
	waitFor(t, "the first send under way", func() bool { return ch.entered.Load() == 1 })
	h.ask(body)
	ctx := context.Background()
	waitFor(t, "the repeat acknowledged while the first is shown", func() bool {
		groups, err := h.agent.XInfoGroups(ctx, h.prefix+"requests").Result()
		return err == nil && len(groups) == 1 && groups[0].EntriesRead == 2 && groups[0].Pending == 1
	})
	close(gate)
	h.waitHandled()
	if n := len(ch.sends()); n != 1 {
		t.Errorf("shown %d times", n)
	}
}

// TestEngineLocalChannelTakesNoLease: a question created for a local
// channel (the web page) is shown without a delivery lease, one for a
// channel that posts is shown under one; a repeat of the request shows
// neither again.
func TestEngineLocalChannelTakesNoLease(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		local bool
	}{{"local", true}, {"posting", false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ch := newFakeChannel("telegram")
			ch.caps.Local = tc.local
			h := newHarness(t, harnessOpts{ch: ch})
			id := "lease-" + tc.name
			body := fmt.Sprintf(oneQuestion, id)
			h.ask(body)
			h.waitSent(1)
			h.waitHandled()
			// The create writes the lease's fencing counter when it takes
			// the lease.
			took, err := h.agent.HExists(context.Background(), h.prefix+"question:{"+id+"}", "fence:deliver").Result()
			if err != nil {
				t.Fatal(err)
			}
			if took == tc.local {
				t.Errorf("delivery lease taken: %v, want %v", took, !tc.local)
			}
			h.ask(body)
			h.waitHandled()
			if n := len(ch.sends()); n != 1 {
				t.Errorf("shown %d times, want once", n)
			}
		})
	}
}

// premadeChannel is a local channel that names its message in advance
// (askbridge.Premade), as the web page does: Send hands over that message.
type premadeChannel struct{ *fakeChannel }

func (p premadeChannel) Premade(chat, id string) engine.MessageRef {
	return engine.MessageRef{Platform: p.platform, Chat: chat, Message: "page-" + id}
}

func (p premadeChannel) Send(_ context.Context, d engine.Delivery) error {
	if d.From > 0 {
		return nil
	}
	ref := p.Premade(d.Chat, d.Plan.ID)
	p.mu.Lock()
	p.sent = append(p.sent, sentPrompt{chat: d.Chat, plan: d.Plan, refs: []engine.MessageRef{ref}})
	p.mu.Unlock()
	d.Sent(ref)
	return nil
}

// addCounter counts AddMessage calls.
type addCounter struct {
	enginetest.Store
	adds atomic.Int64
}

func (a *addCounter) AddMessage(ctx context.Context, id string, ref engine.MessageRef) (askbridge.Status, error) {
	a.adds.Add(1)
	return a.Store.AddMessage(ctx, id, ref)
}

// TestEnginePremadeMessageRecordedAtCreate: the message of a local channel
// that names it in advance is recorded by the create, the delivery records
// nothing more and still publishes it as delivered, and a tap on it
// answers. A repeated request shows nothing again.
func TestEnginePremadeMessageRecordedAtCreate(t *testing.T) {
	t.Parallel()
	ch := newFakeChannel("telegram")
	ch.caps.Local = true
	counter := &addCounter{}
	h := newHarness(t, harnessOpts{
		ch:      ch,
		channel: func(f *fakeChannel) engine.Channel { return premadeChannel{f} },
		wrap:    func(s enginetest.Store) enginetest.Store { counter.Store = s; return counter },
	})
	body := fmt.Sprintf(oneQuestion, "premade-1")
	id := h.ask(body)
	p := h.waitSent(1)[0]
	h.waitHandled()
	want := engine.MessageRef{Platform: "telegram", Chat: "ops-room", Message: "page-" + id}
	refs, err := h.store.Messages(context.Background(), id)
	if err != nil || !slices.Equal(refs, []engine.MessageRef{want}) {
		t.Fatalf("Messages = %v, %v; want %v", refs, err, want)
	}
	if n := counter.adds.Load(); n != 0 {
		t.Errorf("%d AddMessage calls for a message the create recorded", n)
	}
	var delivered []askbridge.Event
	for _, ev := range h.events(id) {
		if ev.Kind == askbridge.EventDelivered {
			delivered = append(delivered, ev)
		}
	}
	if len(delivered) != 1 || delivered[0].Message != want.Message {
		t.Fatalf("delivered events %+v, want one for %s", delivered, want.Message)
	}
	h.ask(body)
	h.waitHandled()
	if n := len(ch.sends()); n != 1 {
		t.Errorf("shown %d times, want once", n)
	}
	if reply := tap(h, p, 1, alice, "pm1"); reply.Notice != engine.NoticeRecorded {
		t.Errorf("tap notice %q", reply.Notice)
	}
	if r := h.result(id, 2*time.Second); r.Status != askbridge.StatusAnswered {
		t.Errorf("result %+v", r)
	}
}

// sweepMeter holds each Sweep call until another is under way too (or
// a while has passed), and records the most under way at once.
type sweepMeter struct {
	enginetest.Store
	mu      sync.Mutex
	in      int
	most    int
	calls   int
	barrier bool
}

func (m *sweepMeter) Sweep(ctx context.Context, now time.Time, batch int) ([]engine.EndResult, error) {
	m.mu.Lock()
	m.in++
	m.calls++
	m.most = max(m.most, m.in)
	if m.barrier {
		deadline := time.Now().Add(5 * time.Second)
		for m.in < 2 && time.Now().Before(deadline) {
			m.mu.Unlock()
			time.Sleep(time.Millisecond) // a barrier inside a fake store call: hold it until a second sweep is in
			m.mu.Lock()
		}
	}
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.in--
		m.mu.Unlock()
	}()
	return m.Store.Sweep(ctx, now, batch)
}

// TestSweeperWorksABacklogAtOnce: many deadlines at once are swept by
// several calls at a time, each question timed out exactly once.
func TestSweeperWorksABacklogAtOnce(t *testing.T) {
	t.Parallel()
	meter := &sweepMeter{}
	h := newHarness(t, harnessOpts{wrap: func(s enginetest.Store) enginetest.Store { meter.Store = s; return meter }})
	const n = 450 // four and a half batches of 100
	h.askBurst("due", n, 30)
	h.waitSent(n)
	h.waitHandled()
	meter.mu.Lock()
	meter.barrier = true
	meter.mu.Unlock()
	h.advance(31 * time.Second)
	for i := range n {
		id := fmt.Sprintf("due-%d", i)
		if r := h.result(id, 10*time.Second); r.Reason != askbridge.ReasonTimeout {
			t.Fatalf("%s: %+v", id, r)
		}
	}
	for i := range n {
		if c := h.resultCount(fmt.Sprintf("due-%d", i)); c != 0 {
			t.Fatalf("due-%d: %d more results after the first", i, c)
		}
	}
	meter.mu.Lock()
	defer meter.mu.Unlock()
	if meter.most < 2 {
		t.Errorf("at most %d sweep at once over %d calls, want several for a backlog", meter.most, meter.calls)
	}
}

// TestEngineStaleMarkOnOpenQuestionKept: a finishing mark on a question
// still open (its replica marked it and died before ending it) is not
// cleared by the leftover pass but moved to the question's deadline, so
// an end deciding meanwhile, which leaves the mark as it is, keeps it.
func TestEngineStaleMarkOnOpenQuestionKept(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	h.ask(fmt.Sprintf(oneQuestion, "stale-mark"))
	p := h.waitSent(1)[0]
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	ctx := context.Background()
	st := store.New(rdb, store.Options{Prefix: h.prefix, Consumer: "dead"})
	rec, found, err := st.Get(ctx, "stale-mark")
	if err != nil || !found {
		t.Fatalf("get: %v %v", found, err)
	}
	if _, err := st.MarkFinishing(ctx, "stale-mark", h.clock.Now()); err != nil {
		t.Fatal(err)
	}
	marked := func(before time.Time) bool {
		ids, err := st.Unfinished(ctx, before, 10)
		if err != nil {
			t.Fatal(err)
		}
		return slices.Contains(ids, "stale-mark")
	}
	// The leftover pass looks at it (marks older than the grace) and
	// moves it to the deadline.
	if !testwait.Until(10*time.Second, func() bool {
		h.advance(6 * time.Second)
		return !marked(h.clock.Now())
	}) {
		t.Fatal("the leftover pass never moved the mark")
	}
	if !marked(rec.Deadline) {
		t.Fatal("the mark of the open question was cleared; want it kept at the deadline")
	}
	// The question ends as usual; its edit clears the mark.
	if r := tap(h, p, 1, alice, "after-stale"); r.Notice != engine.NoticeRecorded {
		t.Fatalf("tap: %q", r.Notice)
	}
	h.waitStatus(p.refs[0].Message, "Answered: Production")
	if !testwait.Until(5*time.Second, func() bool { return !marked(rec.Deadline.Add(time.Hour)) }) {
		t.Error("the mark stayed after the question was finished")
	}
}
