// Package lease holds a named lease across replicas for as long as a piece
// of work needs one holder at a time: Telegram's long poller and Discord's
// gateway session. Hold contends for the lease, renews it while the work
// runs, and stops the work as soon as the lease is lost or may have run out.
package lease

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/retry"
)

// Params configures Hold. Coord, Name, Holder and TTL are required.
type Params struct {
	Coord engine.Coordinator
	// Name is the lease's name; Holder names this replica in it (Hold adds
	// a nonce of its own, so two replicas given one name stay apart).
	Name, Holder string
	// TTL is how long the lease lives without renewal.
	TTL time.Duration
	// RenewEvery is how often the holder renews it and a standby tries to
	// take it (default TTL/3).
	RenewEvery time.Duration
	// Log receives failures to reach the store (nil: none).
	Log *slog.Logger
	// Clock is the clock of the renewals and waits (nil: the real one).
	Clock clockwork.Clock
	// Standby is called each time another holder has the lease, and
	// Failed each time the store could not be reached (both may be nil).
	Standby func()
	Failed  func(err error)
	// Abandon, when set and true as Hold stops, leaves the lease to expire
	// instead of releasing it (tests use it to act as a crashed process).
	Abandon func() bool
}

// Term is the work run while holding the lease. Its context ends when ctx
// of Hold ends or when the lease is lost. It returns how long to stand aside
// before contending again (0: at once), after Hold has released the lease.
type Term func(ctx context.Context, l engine.Lease) (standAside time.Duration)

// Hold contends for the lease until ctx is done and runs term for each
// stretch it holds it. A lease refused (another holder) is tried again
// every RenewEvery; a store error is retried with backoff. A renewal the
// store refuses ends the term at once; renewals that fail for so long that
// the lease may have expired end it too, so two holders never run together
// for longer than one renewal. It returns when ctx is done, after the last
// term returned and the lease was released.
func Hold(ctx context.Context, p Params, term Term) {
	p = p.withDefaults()
	// Two processes given one replica name must not both hold the lease
	// (the store lets a holder take again what it holds): each Hold names
	// itself apart.
	p.Holder += "#" + engine.Nonce()
	bo := retry.Backoff{Min: 200 * time.Millisecond, Max: p.RenewEvery}
	for ctx.Err() == nil {
		l, ok, err := p.Coord.AcquireLease(ctx, p.Name, p.Holder, p.TTL)
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return
			}
			p.failed("acquire lease", err)
			retry.SleepOn(ctx, p.Clock, bo.Next())
		case !ok:
			if p.Standby != nil {
				p.Standby()
			}
			retry.SleepOn(ctx, p.Clock, p.RenewEvery)
		default:
			bo.Reset()
			rest := p.hold(ctx, l, term)
			retry.SleepOn(ctx, p.Clock, rest)
		}
	}
}

func (p Params) withDefaults() Params {
	if p.RenewEvery <= 0 {
		p.RenewEvery = p.TTL / 3
	}
	if p.Log == nil {
		p.Log = slog.New(slog.DiscardHandler)
	}
	if p.Clock == nil {
		p.Clock = clockwork.NewRealClock()
	}
	return p
}

func (p Params) failed(op string, err error) {
	p.Log.Error(op, "lease", p.Name, "err", err)
	if p.Failed != nil {
		p.Failed(err)
	}
}

// hold runs one term with a renewer beside it, then releases the lease
// (unless abandoned as a crash would).
func (p Params) hold(ctx context.Context, l engine.Lease, term Term) time.Duration {
	v := &validity{clock: p.Clock, ttl: p.TTL}
	v.renewed(p.Clock.Now().Add(-p.RenewEvery / 10))
	tctx, lost := context.WithCancel(context.WithValue(ctx, validityKey{}, v))
	var renewer sync.WaitGroup
	renewer.Add(1)
	go func() {
		defer renewer.Done()
		p.renew(tctx, l, lost, v)
	}()
	rest := term(tctx, l)
	lost()
	renewer.Wait()
	if ctx.Err() != nil && p.Abandon != nil && p.Abandon() {
		return rest
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if err := p.Coord.ReleaseLease(rctx, l); err != nil {
		p.Log.Warn("release lease", "lease", p.Name, "err", err)
	}
	return rest
}

// renew keeps the lease alive every RenewEvery; it calls lost when the
// store refuses a renewal, or when renewals have failed for so long that
// the lease may have run out.
func (p Params) renew(ctx context.Context, l engine.Lease, lost context.CancelFunc, v *validity) {
	t := p.Clock.NewTicker(p.RenewEvery)
	defer t.Stop()
	last := p.Clock.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.Chan():
		}
		asked := p.Clock.Now()
		ok, err := p.Coord.RenewLease(ctx, l, p.TTL)
		switch {
		case err == nil && ok:
			last = p.Clock.Now()
			v.renewed(asked)
		case err == nil:
			p.Log.Warn("lease lost to another holder", "lease", p.Name)
			lost()
			return
		case ctx.Err() != nil:
			return
		default:
			p.failed("renew lease", err)
			if p.Clock.Since(last) > p.TTL-p.RenewEvery {
				p.Log.Warn("lease may have run out; stopping", "lease", p.Name)
				lost()
				return
			}
		}
	}
}

// validity is how long the lease of a term is surely still held: its TTL
// from the moment the last successful acquire or renewal was asked for.
type validity struct {
	clock clockwork.Clock
	ttl   time.Duration
	from  atomic.Int64 // unix nanoseconds
}

func (v *validity) renewed(asked time.Time) { v.from.Store(asked.UnixNano()) }

func (v *validity) valid() bool {
	return v.clock.Now().Before(time.Unix(0, v.from.Load()).Add(v.ttl))
}

type validityKey struct{}

// Valid reports whether the lease of the term whose context (or a context
// derived from it) ctx is can still be held: false once its TTL has passed
// since the last renewal that succeeded, for instance after the process was
// paused longer than the TTL, before the renewer notices. Work that must
// never run beside another holder (a poll) checks it right before it acts.
// A context from no term is never valid.
func Valid(ctx context.Context) bool {
	v, ok := ctx.Value(validityKey{}).(*validity)
	return ok && v.valid()
}
