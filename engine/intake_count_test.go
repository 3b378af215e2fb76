package engine_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
)

// intakeRoundTrips is the most Redis round trips the bridge may make to
// take in 1,000 requests for a local channel (issue 33: ≤ 60): reads of
// up to 128 entries, each read's questions created in one round trip,
// their events published in one and their entries acknowledged in one.
const intakeRoundTrips = 60

// TestIntakeRoundTrips takes in 1,000 requests for a local channel that
// names its message in advance (as the web page does), queued before the
// engine starts, and counts the engine's round trips to Redis (a go-redis
// hook: one per command, one per pipeline) from its start until every
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
	trips := &tripCounter{}
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
