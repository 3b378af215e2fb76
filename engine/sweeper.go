package engine

import (
	"context"
	"sync"
	"time"
)

// sweeperParams configures the sweeper.
type sweeperParams struct {
	// interval is the least time between two looks for due deadlines,
	// idle the most; batch how many questions one Store.Sweep call ends;
	// workers how many Sweep calls run at once while a backlog lasts.
	interval, idle time.Duration
	batch          int
	workers        int
}

// sweeper ends questions whose deadline has passed, as expired. Every
// replica runs one; the store hands each due question to exactly one.
//
// With a store that says when the next deadline comes (NextSweeper), it
// sleeps until then, or until a question this replica creates has an
// earlier deadline (soon), but at least interval and at most idle after
// its last look: an idle replica looks every idle, and a deadline is met
// as it comes rather than up to an interval late. Every deadline is at
// least askbridge.MinTimeout (30 s) after its create, so every replica
// learns of it, at a look, well before it comes, whichever replica
// created it. With any other store it looks every interval.
type sweeper struct {
	*core
	sweeperParams
	store sweepStore

	// wake is signalled when soon brings the next look forward; mu
	// guards until, the time the sleeping sweeper will look next.
	wake  chan struct{}
	mu    sync.Mutex
	until time.Time
	// handing bounds the batches of ended questions on their way to the
	// finisher while the sweeps go on (hand); handed tracks them.
	handing chan struct{}
	handed  sync.WaitGroup
}

// sweepStore is the store as the sweeper sees it.
type sweepStore interface {
	Sweep(ctx context.Context, now time.Time, max int) ([]EndResult, error)
}

// NextSweeper is implemented by a Store whose sweep also says when the
// next deadline comes, in the same round trip: next is the earliest
// deadline after now when fewer than max were due, zero when none is
// pending, and now when max were due (more may be). The sweeper then
// sleeps until it.
type NextSweeper interface {
	SweepNext(ctx context.Context, now time.Time, max int) (ended []EndResult, next time.Time, err error)
}

func newSweeper(c *core, p sweeperParams) *sweeper {
	return &sweeper{core: c, sweeperParams: p, store: c.store, wake: make(chan struct{}, 1), handing: make(chan struct{}, max(p.workers, 1))}
}

// start looks for due deadlines until ctx is done: every interval, or,
// with a NextSweeper, when the next deadline comes.
func (s *sweeper) start(ctx context.Context, wg *sync.WaitGroup) {
	if _, ok := s.store.(NextSweeper); !ok {
		s.every(ctx, wg, s.interval, false, func(ctx context.Context) { s.exec(ctx); s.handed.Wait() })
		return
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer s.handed.Wait()
		for ctx.Err() == nil {
			looked := s.clock.Now()
			next := s.exec(ctx)
			until := looked.Add(s.idle)
			if !next.IsZero() && next.Before(until) {
				until = next
			}
			s.sleep(ctx, looked, until)
		}
	}()
}

// sleep waits until until, at least interval after looked, or until ctx
// is done; soon brings until forward.
func (s *sweeper) sleep(ctx context.Context, looked, until time.Time) {
	floor := looked.Add(s.interval)
	s.mu.Lock()
	s.until = until
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.until = time.Time{}
		s.mu.Unlock()
	}()
	for {
		s.mu.Lock()
		at := s.until
		s.mu.Unlock()
		if at.Before(floor) {
			at = floor
		}
		d := at.Sub(s.clock.Now())
		if d <= 0 {
			return
		}
		t := s.clock.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.Chan():
			return
		case <-s.wake:
			t.Stop()
		}
	}
}

// soon tells the sweeper of a deadline this replica just created: a
// sleeping sweeper that would look later than it looks at it instead.
func (s *sweeper) soon(deadline time.Time) {
	s.mu.Lock()
	earlier := !s.until.IsZero() && deadline.Before(s.until)
	if earlier {
		s.until = deadline
	}
	s.mu.Unlock()
	if earlier {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// exec is one pass: it ends every question due by now, a batch at a time,
// and hands each to the finisher, and returns when the next deadline
// comes (zero when not known). One Sweep call looks; when it finds a
// full batch (a backlog: many deadlines at once), workers calls go on at
// once until the backlog is gone. Each call ends questions no other is
// ending (Store.Sweep), so they share the work and none is repeated: a
// sweep waits on Redis for most of its time, and one at a time could not
// keep up with a hundred thousand deadlines in a minute.
func (s *sweeper) exec(ctx context.Context) time.Time {
	full, next := s.sweep(ctx)
	if !full {
		return next
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		earliest time.Time
	)
	for range max(s.workers, 1) {
		wg.Go(func() {
			for {
				full, next := s.sweep(ctx)
				if full {
					continue
				}
				mu.Lock()
				if !next.IsZero() && (earliest.IsZero() || next.Before(earliest)) {
					earliest = next
				}
				mu.Unlock()
				return
			}
		})
	}
	wg.Wait()
	return earliest
}

// sweep makes one Store.Sweep call and hands what it ended to the
// finisher; it reports whether the batch was full, so more may be due,
// and the next deadline when the store says.
func (s *sweeper) sweep(ctx context.Context) (full bool, next time.Time) {
	var (
		ended []EndResult
		err   error
	)
	if ns, ok := s.store.(NextSweeper); ok {
		ended, next, err = ns.SweepNext(ctx, s.clock.Now(), s.batch)
	} else {
		ended, err = s.store.Sweep(ctx, s.clock.Now(), s.batch)
	}
	if err != nil {
		if ctx.Err() == nil {
			s.log.Error("sweep deadlines", "err", err)
		}
		// Look again after interval, as without a NextSweeper.
		return false, s.clock.Now()
	}
	s.hand(ctx, ended)
	return len(ended) == s.batch, next
}

// hand gives the questions a sweep ended to the finisher (their events,
// metrics and edits) in the background, so the next sweep claims the next
// due questions at once, their results already pushed: at most one batch
// per worker is on its way; past that the sweep hands its own over
// itself. Store.Sweep marked them finishing before ending them, so a
// replica that dies meanwhile leaves them to another's leftover pass.
func (s *sweeper) hand(ctx context.Context, ended []EndResult) {
	if len(ended) == 0 {
		return
	}
	select {
	case s.handing <- struct{}{}:
	default:
		s.afterEnd(ctx, true, ended...)
		return
	}
	s.handed.Add(1)
	go func() {
		defer s.handed.Done()
		defer func() { <-s.handing }()
		defer s.recover("hand ended questions to the finisher", "questions", len(ended))
		s.afterEnd(ctx, true, ended...)
	}()
}
