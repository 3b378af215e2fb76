package engine

import (
	"context"
	"time"

	"github.com/askbridge/askbridge"
)

// The timers of standing answers (ask-user.md §9) live in Redis beside the
// reminders' and are handed out the same way, each to one replica at a
// time; the pinger fires them on its ticker. An offer's end closes it
// (and finishes a keep whose replica died between its two steps); a
// standing answer's end publishes expired, once across replicas.

// standingTimerStore is the store as the standing timers see it.
type standingTimerStore interface {
	DueStandingTimers(ctx context.Context, now time.Time, hold time.Duration, max int) ([]StandingTimer, error)
	StandingTimerDone(ctx context.Context, t StandingTimer) error
}

// fireStanding fires the due timers of offers and standing answers, one
// batch, in turn. A timer that fails comes back after hold.
func (p *pinger) fireStanding(ctx context.Context) {
	var st standingTimerStore = p.core.store
	ts, err := st.DueStandingTimers(ctx, p.clock.Now(), p.hold, p.batch)
	if err != nil {
		if ctx.Err() == nil {
			p.log.Error("read due standing timers", "err", err)
		}
		return
	}
	for _, t := range ts {
		done, err := p.fireStandingTimer(ctx, t)
		if err != nil {
			p.log.Warn("standing timer", "offer", t.OfferOf, "key", t.Key, "err", err)
			continue
		}
		if !done {
			continue // it comes back after hold
		}
		if err := st.StandingTimerDone(ctx, t); err != nil {
			p.log.Warn("remove a standing timer", "err", err)
		}
	}
}

// fireStandingTimer fires one timer; done is false when it is to come
// back (a standing answer whose until another replica's clock has not
// reached).
func (p *pinger) fireStandingTimer(ctx context.Context, t StandingTimer) (done bool, err error) {
	defer p.recover("standing timer", "offer", t.OfferOf, "key", t.Key)
	if t.OfferOf != "" {
		return true, p.offerEnded(ctx, t.OfferOf)
	}
	out, s, err := p.core.store.ExpireStanding(ctx, t.Agent, t.Key, t.Gen, p.clock.Now())
	if err != nil {
		return false, err
	}
	switch out {
	case ExpireNotYet:
		return false, nil
	case ExpireMoot:
		return true, nil
	}
	p.log.Info("standing answer ended", "agent", t.Agent, "key", t.Key)
	p.metrics.Standing(StandingEventExpired)
	p.editStanding(ctx, s, StandingExpired)
	return true, p.publish(ctx, askbridge.Event{Kind: askbridge.EventExpired, Agent: t.Agent, Key: t.Key, By: personLabel(s.By)})
}

// offerEnded closes the offer of question id at its end: a keep taken and
// not yet set (its replica died) is set now, and the offer leaves the
// question's messages.
func (c *core) offerEnded(ctx context.Context, id string) error {
	o, found, err := c.store.CloseOffer(ctx, id)
	if err != nil || !found {
		return err
	}
	if o.Kept != nil {
		if err := c.setKept(ctx, o); err != nil {
			return err
		}
	}
	c.removeOffer(ctx, id)
	return nil
}
