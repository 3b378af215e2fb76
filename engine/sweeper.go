package engine

import (
	"context"
	"sync"
	"time"
)

// sweeperParams configures the sweeper.
type sweeperParams struct {
	// interval is how often deadlines are checked; batch how many
	// questions one Store.Sweep call ends; workers how many Sweep calls
	// run at once while a backlog lasts.
	interval time.Duration
	batch    int
	workers  int
}

// sweeper ends questions whose deadline has passed, as expired. Every
// replica runs one; the store hands each due question to exactly one.
type sweeper struct {
	*core
	sweeperParams
	store sweepStore
}

// sweepStore is the store as the sweeper sees it.
type sweepStore interface {
	Sweep(ctx context.Context, now time.Time, max int) ([]EndResult, error)
}

func newSweeper(c *core, p sweeperParams) *sweeper {
	return &sweeper{core: c, sweeperParams: p, store: c.store}
}

// start runs a pass every interval until ctx is done.
func (s *sweeper) start(ctx context.Context, wg *sync.WaitGroup) {
	s.every(ctx, wg, s.interval, false, s.exec)
}

// exec is one pass: it ends every question due by now, a batch at a time,
// and hands each to the finisher. One Sweep call looks; when it finds a
// full batch (a backlog: many deadlines at once), workers calls go on at
// once until the backlog is gone. Each call ends questions no other is
// ending (Store.Sweep), so they share the work and none is repeated: a
// sweep waits on Redis for most of its time, and one at a time could not
// keep up with a hundred thousand deadlines in a minute.
func (s *sweeper) exec(ctx context.Context) {
	if !s.sweep(ctx) {
		return
	}
	var wg sync.WaitGroup
	for range max(s.workers, 1) {
		wg.Go(func() {
			for s.sweep(ctx) {
			}
		})
	}
	wg.Wait()
}

// sweep makes one Store.Sweep call and hands what it ended to the
// finisher; it reports whether the batch was full, so more may be due.
func (s *sweeper) sweep(ctx context.Context) bool {
	ended, err := s.store.Sweep(ctx, s.clock.Now(), s.batch)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Error("sweep deadlines", "err", err)
		}
		return false
	}
	// Store.Sweep marked them finishing before ending them.
	s.afterEnd(ctx, true, ended...)
	return len(ended) == s.batch
}
