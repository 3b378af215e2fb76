package mcp

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/client"
)

// watchLookback is how far before its push a call starts reading the
// events stream: stream ids follow the Redis server's clock, which may be
// a little behind this machine's. Events of other questions are skipped.
const watchLookback = time.Minute

// followed is the question a call waits for.
type followed struct {
	c       *client.Client
	id      string
	start   time.Time
	timeout time.Duration
	// session and token are where progress goes; token is nil when the
	// client asked for none.
	session *sdk.ServerSession
	token   any
}

// follow follows question f.id while its call waits: it cancels the call
// with errNotTaken when no bridge has taken the request
// Options.NotTakenAfter after the push, and, when the client gave a
// progress token, reports where the question is at least every
// Options.ProgressEvery and whenever it is shown somewhere. The returned
// function stops following and waits for it to end (within a BLPOP round
// of the client).
func (s *Server) follow(ctx context.Context, cancel context.CancelCauseFunc, f followed) (stop func()) {
	fctx, end := context.WithCancel(ctx)
	var wg sync.WaitGroup
	st := &whereabouts{}
	changed := make(chan struct{}, 1)
	if f.token != nil {
		wg.Go(func() {
			from := strconv.FormatInt(f.start.Add(-watchLookback).UnixMilli(), 10)
			err := f.c.Watch(fctx, from, func(ev client.Event) error {
				if ev.ID == f.id && st.add(ev) {
					select {
					case changed <- struct{}{}:
					default:
					}
				}
				return nil
			})
			if fctx.Err() == nil {
				s.log.Warn("ask_user: following the events stream stopped; progress says less", "question", f.id, "err", err)
			}
		})
	}
	wg.Go(func() { s.report(fctx, cancel, f, st, changed) })
	return func() { end(); wg.Wait() }
}

// report is follow's loop: the not-taken check and the progress
// notifications.
func (s *Server) report(ctx context.Context, cancel context.CancelCauseFunc, f followed, st *whereabouts, changed <-chan struct{}) {
	tick := time.NewTicker(s.opts.ProgressEvery)
	defer tick.Stop()
	notTaken := time.NewTimer(s.opts.NotTakenAfter)
	defer notTaken.Stop()
	taken := false
	last := 0.0
	notify := func() {
		if f.token == nil {
			return
		}
		q, found, err := f.c.Status(ctx, f.id)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("ask_user: read the question for progress", "question", f.id, "err", err)
			}
			return
		}
		taken = taken || found
		now := time.Now()
		// Progress must grow with every notification.
		p := max(now.Sub(f.start).Seconds(), last+0.001)
		last = p
		err = f.session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{
			ProgressToken: f.token,
			Progress:      p,
			Total:         f.timeout.Seconds(),
			Message:       st.describe(q, found, f, now),
		})
		if err != nil && ctx.Err() == nil {
			s.log.Warn("ask_user: send progress", "question", f.id, "err", err)
		}
	}
	notify()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			notify()
		case <-changed:
			notify()
		case <-notTaken.C:
			if taken {
				continue
			}
			_, found, err := f.c.Status(ctx, f.id)
			if err == nil && !found {
				cancel(errNotTaken)
				return
			}
			taken = found
		}
	}
}

// whereabouts is what the events stream said of one question.
type whereabouts struct {
	mu sync.Mutex
	// shown lists the platforms it was shown on, in order.
	shown []string
	// failed lists the places it could not be shown, with the reason.
	failed []string
	// seenBy is who acknowledged it.
	seenBy string
}

// add records an event of the question; false when it changes nothing
// progress tells.
func (w *whereabouts) add(ev client.Event) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch ev.Kind {
	case askbridge.EventDelivered:
		name := platformName(ev.Platform)
		if slices.Contains(w.shown, name) {
			return false
		}
		w.shown = append(w.shown, name)
	case askbridge.EventUndeliverable:
		place := ev.Fields["to"]
		if place == "" {
			place = platformName(ev.Platform)
		}
		w.failed = append(w.failed, strings.TrimSpace(place+" ("+ev.Error+")"))
	case "acknowledged":
		w.seenBy = ev.By
	default:
		return false
	}
	return true
}

// describe says where question f.id is and how long is left, for a
// progress notification.
func (w *whereabouts) describe(q client.Question, found bool, f followed, now time.Time) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	deadline := f.start.Add(f.timeout)
	if found && !q.Deadline.IsZero() {
		deadline = q.Deadline
	}
	var b strings.Builder
	switch {
	case !found:
		b.WriteString("Sent; waiting for a bridge to take the question")
	case q.Status != askbridge.StatusPending:
		fmt.Fprintf(&b, "The question ended (%s)", q.Status)
		return b.String()
	case len(w.shown) > 0:
		fmt.Fprintf(&b, "Shown on %s; waiting for the answer", strings.Join(w.shown, ", "))
	default:
		b.WriteString("Taken by the bridge; not shown to anyone yet")
	}
	if w.seenBy != "" {
		fmt.Fprintf(&b, "; seen by %s", w.seenBy)
	}
	if len(w.failed) > 0 {
		fmt.Fprintf(&b, "; could not be shown on %s", strings.Join(w.failed, ", "))
	}
	fmt.Fprintf(&b, " — %s left", leftText(deadline.Sub(now)))
	return b.String()
}

// platformName is how a progress message names a platform.
func platformName(p string) string {
	switch p {
	case "web":
		return "the web page"
	case "telegram", "discord", "slack":
		return strings.ToUpper(p[:1]) + p[1:]
	case "":
		return "a place"
	}
	return p
}

// leftText says how long is left: "14m 30s", "45s", "1h 0m".
func leftText(d time.Duration) string {
	d = max(d, 0).Round(time.Second)
	switch {
	case d >= time.Hour:
		return fmt.Sprintf("%dh %dm", int(d.Hours()), int(d.Minutes())%60)
	case d >= time.Minute:
		return fmt.Sprintf("%dm %ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%ds", int(d.Seconds()))
}
