package askbridge

import (
	"context"
	"sync"
	"time"
)

// sweeperParams configures the sweeper.
type sweeperParams struct {
	// interval is how often deadlines are checked; batch how many
	// questions one Store.Sweep call ends.
	interval time.Duration
	batch    int
}

// sweeper ends questions whose deadline has passed, as expired. Every
// replica runs one; the store hands each due question to exactly one.
type sweeper struct {
	*core
	sweeperParams
}

func newSweeper(c *core, p sweeperParams) *sweeper { return &sweeper{core: c, sweeperParams: p} }

// start runs a pass every interval until ctx is done.
func (s *sweeper) start(ctx context.Context, wg *sync.WaitGroup) {
	s.every(ctx, wg, s.interval, false, s.exec)
}

// exec is one pass: it ends every question due by now, a batch at a time,
// and hands each to the finisher.
func (s *sweeper) exec(ctx context.Context) {
	for {
		ended, err := s.store.Sweep(ctx, s.clock.Now(), s.batch)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Error("sweep deadlines", "err", err)
			}
			return
		}
		// Store.Sweep marked them finishing before ending them.
		s.finisher.endedAll(ctx, ended, true)
		if len(ended) < s.batch {
			return
		}
	}
}
