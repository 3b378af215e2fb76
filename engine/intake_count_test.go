package engine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/enginetest"
	"github.com/askbridge/askbridge/internal/testwait"
)

// intakeRoundTrips is the most Redis round trips the bridge may make to
// take in 1,000 requests for a local channel (issue 33: ≤ 60): reads of
// up to 128 entries, each read's questions created in one round trip,
// their events published in one and their entries acknowledged in one.
const intakeRoundTrips = 60

// TestIntakeRoundTrips takes in 1,000 requests for a local channel that
// names its message in advance (as the web page does), queued before the
// engine starts, and counts the engine's round trips to Redis (a go-redis
// hook: one per command, one per pipeline, but a new connection's set-up,
// which depends on how many the pool opens) from its start until every
// entry is read, created, shown and acknowledged: a count, not a time.
func TestIntakeRoundTrips(t *testing.T) {
	t.Parallel()
	const n = 1000
	prefix := fmt.Sprintf("enginetest%d:", prefixSeq.Add(1))
	agent := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer agent.Close()
	ctx := context.Background()
	pipe := agent.Pipeline()
	for i := range n {
		pipe.XAdd(ctx, &redis.XAddArgs{Stream: prefix + "requests", Values: []any{"ask", fmt.Sprintf(oneQuestion, fmt.Sprint("intake-", i))}})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	trips := &workTrips{}
	ch := newFakeChannel("telegram")
	ch.caps.Local = true
	h := newHarness(t, harnessOpts{
		prefix: prefix, hook: trips, ch: ch,
		channel: func(f *fakeChannel) engine.Channel { return premadeChannel{f} },
	})
	h.waitHandled()
	got := trips.n.Load()
	if sent := len(ch.sends()); sent != n {
		t.Fatalf("%d questions shown, want %d", sent, n)
	}
	evs, _, err := h.store.Events(ctx, "0", 10*n, 0)
	if err != nil {
		t.Fatal(err)
	}
	requested := 0
	for _, ev := range evs {
		if ev.Kind == askbridge.EventRequested {
			requested++
		}
	}
	if requested != n {
		t.Errorf("%d requested events, want %d", requested, n)
	}
	t.Logf("%d round trips to take in %d requests", got, n)
	if got > intakeRoundTrips*n/1000 {
		t.Errorf("%d round trips to take in %d requests, want at most %d", got, n, intakeRoundTrips*n/1000)
	}
}

// workTrips counts a client's round trips to Redis but a connection's
// set-up (HELLO, CLIENT SETINFO, alone or in a pipeline of their own).
type workTrips struct{ n atomic.Int64 }

func (c *workTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *workTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !setUp(cmd) {
			c.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (c *workTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if !slices.ContainsFunc(cmds, func(cmd redis.Cmder) bool { return !setUp(cmd) }) {
			return next(ctx, cmds)
		}
		c.n.Add(1)
		return next(ctx, cmds)
	}
}

// setUp reports a command of a connection's set-up.
func setUp(cmd redis.Cmder) bool {
	n := cmd.Name()
	return n == "hello" || n == "client"
}

// failingCreates fails the create of the questions whose id is in fail,
// as a store whose create of those failed, and passes the rest on.
type failingCreates struct {
	enginetest.Store
	fail map[string]bool
}

func (f *failingCreates) CreateHoldingBatch(ctx context.Context, calls []*engine.CreateCall) {
	var rest []*engine.CreateCall
	for _, c := range calls {
		if f.fail[c.Question.ID] {
			c.Err = errors.New("connection reset by peer")
			continue
		}
		rest = append(rest, c)
	}
	f.Store.(engine.BatchCreator).CreateHoldingBatch(ctx, rest)
}

// TestIntakeBatchIsolatesEntries: the entries of one read are taken in
// together, and each on its own merits: a request that cannot be decoded
// gets its refusal, a cancel is handled, an ask whose create failed stays
// pending (unacknowledged, for a later claim) and the others are shown
// and acknowledged.
func TestIntakeBatchIsolatesEntries(t *testing.T) {
	t.Parallel()
	prefix := fmt.Sprintf("enginetest%d:", prefixSeq.Add(1))
	agent := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer agent.Close()
	ctx := context.Background()
	pipe := agent.Pipeline()
	add := func(field, value string) {
		pipe.XAdd(ctx, &redis.XAddArgs{Stream: prefix + "requests", Values: []any{field, value}})
	}
	for i := range 5 {
		add("ask", fmt.Sprintf(oneQuestion, fmt.Sprint("iso-", i)))
	}
	add("ask", `{"id":"iso-bad","questions":[`)
	add("cancel", "iso-cancelled")
	add("ask", fmt.Sprintf(oneQuestion, "iso-fails"))
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	ch := newFakeChannel("telegram")
	ch.caps.Local = true
	h := newHarness(t, harnessOpts{
		prefix: prefix, ch: ch,
		channel: func(f *fakeChannel) engine.Channel { return premadeChannel{f} },
		wrap: func(s enginetest.Store) enginetest.Store {
			return &failingCreates{Store: s, fail: map[string]bool{"iso-fails": true}}
		},
	})
	h.waitSent(5)
	if r := h.result("iso-bad", 5*time.Second); r.Status != askbridge.StatusError {
		t.Errorf("undecodable request: %+v, want its refusal", r)
	}
	if r := h.result("iso-cancelled", 5*time.Second); r.Reason != askbridge.ReasonCancelled {
		t.Errorf("cancel: %+v, want cancelled", r)
	}
	testwait.For(t, 10*time.Second, "every entry but the failed create acknowledged", func() bool {
		p, err := agent.XPending(ctx, prefix+"requests", "bridge").Result()
		if err != nil {
			t.Fatal(err)
		}
		return p.Count == 1
	})
	p, err := agent.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: prefix + "requests", Group: "bridge", Start: "-", End: "+", Count: 10}).Result()
	if err != nil || len(p) != 1 {
		t.Fatalf("pending %v, %v; want the one entry whose create failed", p, err)
	}
	msgs, err := agent.XRange(ctx, prefix+"requests", p[0].ID, p[0].ID).Result()
	if err != nil || len(msgs) != 1 || !strings.Contains(fmt.Sprint(msgs[0].Values["ask"]), "iso-fails") {
		t.Fatalf("the pending entry is %v, %v; want the ask of iso-fails", msgs, err)
	}
	if n := len(ch.sends()); n != 5 {
		t.Errorf("%d questions shown, want 5", n)
	}
}
