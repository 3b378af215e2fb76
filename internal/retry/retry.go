// Package retry holds the one backoff and the one context-aware sleep every
// run loop of the bridge uses: the engine's sends and edits, the platforms'
// reconnects and the lease holder.
package retry

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/jonboulle/clockwork"
)

// Backoff is an exponential backoff with jitter: Min, then doubling up to
// Max, each wait up to a fifth shorter at random so replicas that failed
// together do not retry in step. The zero value waits 100ms to 30s. Not safe
// for concurrent use: each loop keeps its own.
type Backoff struct {
	Min, Max time.Duration
	cur      time.Duration
}

// Next returns the next wait and doubles the one after it.
func (b *Backoff) Next() time.Duration {
	lo, hi := b.Min, b.Max
	if lo <= 0 {
		lo = 100 * time.Millisecond
	}
	if hi < lo {
		hi = max(lo, 30*time.Second)
	}
	if b.cur == 0 {
		b.cur = lo
	} else {
		b.cur = min(b.cur*2, hi)
	}
	return b.cur - time.Duration(rand.Int64N(int64(b.cur)/5+1))
}

// Reset starts the backoff over at Min, after a success.
func (b *Backoff) Reset() { b.cur = 0 }

// Sleep waits d on the real clock, or until ctx is done; it reports
// whether it slept fully.
func Sleep(ctx context.Context, d time.Duration) bool {
	return SleepOn(ctx, nil, d)
}

// SleepOn waits d on clk (the real clock when nil), or until ctx is done;
// it reports whether it slept fully. A simulated clock wakes it when a test
// advances the clock past d.
func SleepOn(ctx context.Context, clk clockwork.Clock, d time.Duration) bool {
	if ctx.Err() != nil {
		return false
	}
	if d <= 0 {
		return true
	}
	if clk == nil {
		clk = clockwork.NewRealClock()
	}
	t := clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.Chan():
		return true
	case <-ctx.Done():
		return false
	}
}
