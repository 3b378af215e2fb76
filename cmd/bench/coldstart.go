package main

import (
	"context"
	"fmt"
	"time"

	"github.com/askbridge/askbridge/internal/telegramtest"
)

// coldStarts is how many times the cold start phase starts a bridge; the
// row gives their median.
const coldStarts = 5

// coldStartPrefix is the key prefix of the cold starts' bridges, one of its
// own per start ("benchcold1:", ...), so no start finds the last one's
// polling lease or update cursor and waits as a standby.
const coldStartPrefix = "benchcold"

// coldStart starts the bridge binary coldStarts times, each with a fresh
// fake Telegram behind a front of its own and the environment of the main
// bridge, and times exec → its first getUpdates at the front: what the
// bridge does before it polls (package init, configuration, Redis, the
// platforms' first calls). Each is stopped before the next starts.
func (w *world) coldStart(ctx context.Context, m *measured) error {
	for i := range coldStarts {
		d, err := w.coldStartOne(ctx, i)
		if err != nil {
			return err
		}
		m.coldStart = append(m.coldStart, d)
	}
	w.logf("cold start: exec → first getUpdates %s (median %s)", joinDur(m.coldStart), fmtDur(pct(m.coldStart, 50)))
	return nil
}

// coldStartOne is one start of coldStart.
func (w *world) coldStartOne(ctx context.Context, i int) (time.Duration, error) {
	fake := telegramtest.New(telegramtest.Options{})
	defer fake.Close()
	f := newFront(fake.URL)
	defer f.Close()
	polled := make(chan time.Time, 1)
	stop := f.watch(func(c tgCall) {
		if c.Method == "getupdates" {
			select {
			case polled <- c.At:
			default:
			}
		}
	})
	defer stop()
	env := w.bridgeEnv(f.URL(), fmt.Sprintf("%s%d:", coldStartPrefix, i+1))
	env["ASKUSER_TELEGRAM_TOKEN"] = fake.Token
	p, err := startBridge(w.bin, fmt.Sprintf("bench-cold-%d", i+1), w.dir, env)
	if err != nil {
		return 0, err
	}
	defer p.stop(30 * time.Second)
	select {
	case at := <-polled:
		return at.Sub(p.started), nil
	case <-time.After(30 * time.Second):
		return 0, fmt.Errorf("cold start %d: no getUpdates within 30 s", i+1)
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}
