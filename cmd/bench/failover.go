package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/askbridge/askbridge/internal/telegramtest"
)

// failoverPrefix keeps the two replicas of the failover apart from the main
// bridge on the same Redis.
const failoverPrefix = "benchfo:"

// failovers runs two more bridge replicas on the same Redis and a fake
// Telegram of their own (one bot, one poller at a time), each behind its
// own front so the bench sees who polls. params.failovers times it
// SIGKILLs the replica that polls and times how long until the other calls
// getUpdates; the killed one is started again as the standby.
func (w *world) failovers(ctx context.Context, m *measured) error {
	fake := telegramtest.New(telegramtest.Options{})
	defer fake.Close()
	r := &replicas{w: w, fronts: [2]*front{newFront(fake.URL), newFront(fake.URL)}}
	defer r.close()
	if err := r.start(0); err != nil {
		return err
	}
	if err := waitPoll(ctx, r.fronts[0], time.Time{}, 30*time.Second); err != nil {
		return err
	}
	if err := r.start(1); err != nil {
		return err
	}
	if err := r.procs[1].ready(ctx, "telegram", "standby", 30*time.Second); err != nil {
		return err
	}
	for range w.p.failovers {
		// Anywhere in the lease's renewal cycle.
		if !sleep(ctx, time.Duration(rand.Int64N(int64(3*time.Second)))) {
			return ctx.Err()
		}
		poller := r.poller()
		d, err := r.takeover(ctx, poller)
		if err != nil {
			return err
		}
		m.failover = append(m.failover, d)
		w.logf("failover: the standby polled %s after the poller was killed", d.Round(time.Millisecond))
		if err := r.start(poller); err != nil {
			return err
		}
		if err := r.procs[poller].ready(ctx, "telegram", "standby", 30*time.Second); err != nil {
			return err
		}
	}
	return nil
}

// replicas are the failover's two bridge replicas, each behind its front.
type replicas struct {
	w      *world
	fronts [2]*front
	procs  [2]*proc // nil while not running
	// gen counts the starts, to name each process apart.
	gen int
}

// start starts replica i.
func (r *replicas) start(i int) error {
	r.gen++
	env := r.w.bridgeEnv(r.fronts[i].URL(), failoverPrefix)
	p, err := startBridge(r.w.bin, fmt.Sprintf("bench-fo-%c%d", 'a'+i, r.gen), r.w.dir, env)
	if err != nil {
		return err
	}
	r.procs[i] = p
	return nil
}

// poller is the replica that polled last.
func (r *replicas) poller() int {
	if r.fronts[1].LastPoll().After(r.fronts[0].LastPoll()) {
		return 1
	}
	return 0
}

// takeover SIGKILLs replica poller and returns how long until the other
// called getUpdates (at most 2 minutes).
func (r *replicas) takeover(ctx context.Context, poller int) (time.Duration, error) {
	polled := make(chan time.Time, 1)
	stop := r.fronts[1-poller].watch(func(c tgCall) {
		if c.Method == "getupdates" {
			select {
			case polled <- c.At:
			default:
			}
		}
	})
	defer stop()
	killed := time.Now()
	r.procs[poller].kill()
	r.procs[poller] = nil
	select {
	case at := <-polled:
		return at.Sub(killed), nil
	case <-time.After(2 * time.Minute):
		return 0, fmt.Errorf("no replica took over polling within 2 minutes")
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// close stops the replicas still running, then closes the fronts.
func (r *replicas) close() {
	for _, p := range r.procs {
		if p != nil {
			p.stop(30 * time.Second)
		}
	}
	r.fronts[1].Close()
	r.fronts[0].Close()
}
