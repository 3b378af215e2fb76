package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/client"
	"github.com/askbridge/askbridge/internal/retry"
)

// watchLookback is how far before its start the follower begins reading
// the events stream: stream ids follow the Redis server's clock, which may
// be a little behind this machine's. Events of other questions are skipped.
const watchLookback = time.Minute

// recheckEvery is how often a waiting call looks at its question when no
// event of it came: a replica that died between ending a question and
// publishing its event, or a follower cut off from Redis, delays a result
// by at most this long.
const recheckEvery = 5 * time.Second

// errStale ends a read of the events stream that is no longer the
// follower's current one.
var errStale = errors.New("mcp: a newer read of the events stream took over")

// follower reads the events stream once for every call of the server:
// one blocking XREAD at a time, whatever the number of calls, instead of
// one per call. It runs only while a call waits, and hands each event of
// a waiting call's question to that call: a wake-up for its wait, and
// what progress tells. Safe for concurrent use.
type follower struct {
	log *slog.Logger

	mu    sync.Mutex
	calls map[string][]*watched
	// stop stops the running read; nil when none runs.
	stop context.CancelFunc
	// gen numbers the reads; a read whose number is not the current one
	// hands nothing on.
	gen uint64
	// last is the stream id of the last event handed on: a read that
	// starts again resumes there (within watchLookback).
	last string
	runs sync.WaitGroup
}

// watched is what the follower knows of one call's question.
type watched struct {
	st whereabouts
	// wake gets a value for every event of the question: the call then
	// looks for its result.
	wake chan struct{}
	// changed gets a value when progress has something new to say.
	changed chan struct{}
}

func newFollower(log *slog.Logger) *follower {
	return &follower{log: log, calls: map[string][]*watched{}}
}

// add follows question id for a call, reading through c when no read
// runs yet. Call it before the request is pushed, and remove when the
// call ends.
func (f *follower) add(c *client.Client, id string) *watched {
	w := &watched{wake: make(chan struct{}, 1), changed: make(chan struct{}, 1)}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[id] = append(f.calls[id], w)
	if f.stop == nil {
		ctx, cancel := context.WithCancel(context.Background())
		f.stop = cancel
		f.gen++
		f.runs.Add(1)
		go f.run(ctx, c, f.gen, f.from(time.Now()))
	}
	return w
}

// remove stops following question id for the call that added w (several
// calls may wait on one question: ask_user and wait_for_answer); the last
// call's removal stops the read. Safe to repeat.
func (f *follower) remove(id string, w *watched) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[id] = slices.DeleteFunc(f.calls[id], func(x *watched) bool { return x == w })
	if len(f.calls[id]) == 0 {
		delete(f.calls, id)
	}
	if len(f.calls) == 0 && f.stop != nil {
		f.stop()
		f.stop = nil
		f.gen++
	}
}

// wait waits for the reads stopped by remove to return (within a round
// of the client's XREAD).
func (f *follower) wait() { f.runs.Wait() }

// from is where a read starting now begins: after the last event handed
// on, or watchLookback ago when that is older.
func (f *follower) from(now time.Time) string {
	back := now.Add(-watchLookback).UnixMilli()
	if ms, _, _ := strings.Cut(f.last, "-"); f.last != "" {
		if n, err := strconv.ParseInt(ms, 10, 64); err == nil && n >= back {
			return f.last
		}
	}
	return strconv.FormatInt(back, 10)
}

// run reads the events stream from `from` until ctx ends or a newer read
// takes over, starting again after Redis trouble; the calls look at
// their questions every recheckEvery meanwhile.
func (f *follower) run(ctx context.Context, c *client.Client, gen uint64, from string) {
	defer f.runs.Done()
	wait := retry.Backoff{Min: 100 * time.Millisecond, Max: recheckEvery}
	for {
		began := time.Now()
		err := c.Watch(ctx, from, func(ev client.Event) error { return f.deliver(gen, ev) })
		if ctx.Err() != nil || errors.Is(err, errStale) {
			return
		}
		f.log.Warn("ask_user: reading the events stream failed; waiting calls look at their questions every "+recheckEvery.String()+" meanwhile", "err", err)
		if time.Since(began) > time.Minute {
			wait.Reset()
		}
		if !retry.Sleep(ctx, wait.Next()) {
			return
		}
		f.mu.Lock()
		from = f.from(time.Now())
		f.mu.Unlock()
	}
}

// deliver hands ev to the calls waiting for its question, if any.
func (f *follower) deliver(gen uint64, ev client.Event) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if gen != f.gen {
		return errStale
	}
	f.last = ev.StreamID
	for _, w := range f.calls[ev.ID] {
		signal(w.wake)
		if w.st.add(ev) {
			signal(w.changed)
		}
	}
	return nil
}

// signal puts a value in a channel of one unless one waits there.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

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
	w       *watched
}

// report runs beside a call's wait until the returned function is called
// (which waits for it to end): it cancels the call with errNotTaken when
// no bridge has taken the request Options.NotTakenAfter after the push,
// and, when the client gave a progress token, reports where the question
// is at least every Options.ProgressEvery and whenever the follower
// learns something new of it.
func (s *Server) report(ctx context.Context, cancel context.CancelCauseFunc, f followed) (stop func()) {
	rctx, end := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { s.reportLoop(rctx, cancel, f) })
	return func() { end(); wg.Wait() }
}

// reportLoop is report's loop: the not-taken check and the progress
// notifications.
func (s *Server) reportLoop(ctx context.Context, cancel context.CancelCauseFunc, f followed) {
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
			Message:       f.w.st.describe(q, found, f, now),
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
		case <-f.w.changed:
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
