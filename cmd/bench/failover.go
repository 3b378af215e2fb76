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
	fronts := [2]*front{newFront(fake.URL), newFront(fake.URL)}
	defer fronts[0].Close()
	defer fronts[1].Close()
	var procs [2]*proc
	defer func() {
		for _, p := range procs {
			if p != nil {
				p.stop(30 * time.Second)
			}
		}
	}()
	gen := 0
	start := func(i int) error {
		gen++
		env := w.bridgeEnv(fronts[i].URL(), failoverPrefix)
		p, err := startBridge(w.bin, fmt.Sprintf("bench-fo-%c%d", 'a'+i, gen), w.dir, env)
		if err != nil {
			return err
		}
		procs[i] = p
		return nil
	}
	if err := start(0); err != nil {
		return err
	}
	if err := waitPoll(ctx, fronts[0], time.Time{}, 30*time.Second); err != nil {
		return err
	}
	if err := start(1); err != nil {
		return err
	}
	if err := procs[1].ready(ctx, "telegram", "standby", 30*time.Second); err != nil {
		return err
	}
	for range w.p.failovers {
		// Anywhere in the lease's renewal cycle.
		if !sleep(ctx, time.Duration(rand.Int64N(int64(3*time.Second)))) {
			return ctx.Err()
		}
		poller := 0
		if fronts[1].LastPoll().After(fronts[0].LastPoll()) {
			poller = 1
		}
		other := 1 - poller
		polled := make(chan time.Time, 1)
		stop := fronts[other].watch(func(c tgCall) {
			if c.Method == "getupdates" {
				select {
				case polled <- c.At:
				default:
				}
			}
		})
		killed := time.Now()
		procs[poller].kill()
		procs[poller] = nil
		var d time.Duration
		select {
		case at := <-polled:
			d = at.Sub(killed)
		case <-time.After(2 * time.Minute):
			stop()
			return fmt.Errorf("no replica took over polling within 2 minutes")
		case <-ctx.Done():
			stop()
			return ctx.Err()
		}
		stop()
		m.failover = append(m.failover, d)
		w.logf("failover: the standby polled %s after the poller was killed", d.Round(time.Millisecond))
		if err := start(poller); err != nil {
			return err
		}
		if err := procs[poller].ready(ctx, "telegram", "standby", 30*time.Second); err != nil {
			return err
		}
	}
	return nil
}
