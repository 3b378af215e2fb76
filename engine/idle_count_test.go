package engine_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// idleTrips counts a client's round trips to Redis but the blocking reads
// of the requests stream, which wait on Redis's own clock, not the
// engine's.
type idleTrips struct{ n atomic.Int64 }

func (c *idleTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *idleTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !blockingRead(cmd) {
			c.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (c *idleTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmds)
	}
}

// blockingRead reports an XREADGROUP ... BLOCK.
func blockingRead(cmd redis.Cmder) bool {
	if cmd.Name() != "xreadgroup" {
		return false
	}
	for _, a := range cmd.Args() {
		if s, ok := a.(string); ok && strings.EqualFold(s, "block") {
			return true
		}
	}
	return false
}

// idleMinute is the most round trips an idle engine makes in a minute on
// its clock, blocking reads aside: the pinger's look for due timers and
// standing timers every second (TimerEvery: 120), the sweeper's look every
// SweepIdle, as nothing is pending (5 s: 12), the finisher's look for
// leftovers every LeftoverEvery (5 s: 12), and a few to spare for the
// claim scan of the requests stream (a run measured 147). With the sweeper and the pinger
// looking every SweepEvery (250 ms then) it was over 700.
const idleMinute = 160

// TestEngineIdleRoundTrips runs an engine with nothing asked for a minute
// of its fake clock, a quarter of a second at a time (the sweeper's old
// period), letting the work of each step finish before the next, and
// counts its round trips to Redis: a count, not a time.
func TestEngineIdleRoundTrips(t *testing.T) {
	t.Parallel()
	trips := &idleTrips{}
	h := newHarness(t, harnessOpts{hook: trips, sweepEvery: 250 * time.Millisecond})
	settle := func() {
		// Until no round trip has started for 10 ms.
		last, still := trips.n.Load(), 0
		for deadline := time.Now().Add(time.Second); still < 5 && time.Now().Before(deadline); {
			time.Sleep(2 * time.Millisecond)
			if n := trips.n.Load(); n != last {
				last, still = n, 0
				continue
			}
			still++
		}
	}
	settle()
	n0 := trips.n.Load()
	for range 240 {
		h.clock.Advance(250 * time.Millisecond)
		settle()
	}
	got := trips.n.Load() - n0
	t.Logf("%d round trips in a minute idle", got)
	if got > idleMinute {
		t.Errorf("%d round trips in a minute idle, want at most %d", got, idleMinute)
	}
}
