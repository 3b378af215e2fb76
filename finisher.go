package askbridge

import (
	"context"
	"sync"
	"time"

	"github.com/askbridge/askbridge/internal/retry"
)

// finisherParams configures the finisher.
type finisherParams struct {
	// timeout bounds the edits of one ended question; a question still
	// marked finishing twice as long after its end was left by a replica
	// that died, and another replica finishes it.
	timeout time.Duration
	// editAttempts bounds the tries of one message edit.
	editAttempts int
	// leftoverEvery is how often leftovers are looked for, and
	// leftoverBatch how many one pass takes.
	leftoverEvery time.Duration
	leftoverBatch int
}

// finisher runs what follows a won end: the event, the metrics, and the
// edit of every message that showed the question. It also finishes the
// questions a replica that died mid-edit left behind.
type finisher struct {
	*core
	finisherParams
	// edits tracks the edits under way, so Run returns after them; mu
	// keeps an end that comes in while Run waits (a channel still handing
	// in a tap as it stops) from adding to edits during that Wait.
	mu    sync.Mutex
	edits sync.WaitGroup
}

func newFinisher(c *core, p finisherParams) *finisher {
	return &finisher{core: c, finisherParams: p}
}

// ended takes a won end: it publishes the event, counts it, marks the
// question finishing and edits its messages in the background. It never
// blocks on a platform.
func (f *finisher) ended(ctx context.Context, r EndResult) {
	rec, res := r.Record, r.Result
	ev := Event{Kind: EventOf(res.Outcome()), ID: rec.ID, At: f.clock.Now(), Platform: rec.Target.Platform, Chat: rec.Target.Chat, Error: res.Error}
	if res.AnsweredBy != nil {
		ev.By = res.AnsweredBy.Platform + ":" + res.AnsweredBy.ID
	}
	if err := f.publish(ctx, ev); err != nil {
		f.log.Error("publish event", "question", rec.ID, "err", err)
	}
	f.metrics.Ended(rec.Target.Platform, res.Outcome(), f.clock.Since(rec.Created))
	f.log.Info("question ended", "question", rec.ID, "outcome", res.Outcome())
	// Marked before the edits start, so a replica that dies half-way
	// leaves the question for another to finish (exec).
	if err := f.store.MarkFinishing(ctx, rec.ID, f.clock.Now()); err != nil {
		f.log.Error("mark question finishing", "question", rec.ID, "err", err)
	}
	f.mu.Lock()
	f.edits.Add(1)
	f.mu.Unlock()
	go func() {
		defer f.edits.Done()
		defer f.recover("finish question", "question", rec.ID)
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.timeout)
		defer cancel()
		f.finish(fctx, rec, res)
		if err := f.store.Finished(fctx, rec.ID); err != nil {
			f.log.Error("mark question finished", "question", rec.ID, "err", err)
		}
	}()
}

// start looks for leftovers at once and then every leftoverEvery until ctx
// is done.
func (f *finisher) start(ctx context.Context, wg *sync.WaitGroup) {
	f.every(ctx, wg, f.leftoverEvery, true, f.exec)
}

// wait returns when the edits under way are done.
func (f *finisher) wait() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.edits.Wait()
}

// exec is one pass over the leftovers: questions whose end was won by a
// replica that died before it had edited every message. Edits are safe to
// repeat; a lease keeps two replicas from doing the same one at once.
func (f *finisher) exec(ctx context.Context) {
	ids, err := f.store.Unfinished(ctx, f.clock.Now().Add(-2*f.timeout), f.leftoverBatch)
	if err != nil {
		if ctx.Err() == nil {
			f.log.Error("list unfinished questions", "err", err)
		}
		return
	}
	for _, id := range ids {
		lease, ok, err := f.store.AcquireLease(ctx, "finish:"+id, f.holder(), 2*f.timeout)
		if err != nil || !ok {
			continue
		}
		rec, found, err := f.store.Get(ctx, id)
		switch {
		case err != nil:
		case !found || rec.Result == nil:
			_ = f.store.Finished(ctx, id)
		default:
			f.log.Info("finishing a question another replica left", "question", id)
			fctx, cancel := context.WithTimeout(ctx, f.timeout)
			f.finish(fctx, rec, *rec.Result)
			cancel()
			_ = f.store.Finished(ctx, id)
		}
		_ = f.store.ReleaseLease(ctx, lease)
	}
}

// finish edits every message that showed a question to its end state,
// retrying temporary failures and waiting out rate limits.
func (f *finisher) finish(ctx context.Context, rec Record, res Result) {
	refs, err := f.store.Messages(ctx, rec.ID)
	if err != nil {
		f.log.Error("list messages to finish", "question", rec.ID, "err", err)
		return
	}
	for _, ref := range numberLegacyParts(refs) {
		ch, ok := f.channels[ref.Platform]
		if !ok {
			continue
		}
		end := ending(rec, res, ch.Capabilities())
		backoff := retry.Backoff{Min: 500 * time.Millisecond, Max: 10 * time.Second}
		for attempt := 1; ; attempt++ {
			err := ch.Finish(ctx, ref, end)
			if err == nil {
				break
			}
			kind, wait, reason := Classify(err)
			f.metrics.PlatformError(ref.Platform, kind)
			if kind == Permanent || attempt >= f.editAttempts {
				f.log.Warn("could not edit message", "question", rec.ID, "platform", ref.Platform, "message", ref.Message, "reason", reason)
				break
			}
			if kind == RateLimited {
				f.metrics.RetryAfter(ref.Platform, wait)
			} else {
				wait = backoff.Next()
			}
			if !retry.SleepOn(ctx, f.clock, wait) {
				return
			}
		}
	}
}

// numberLegacyParts numbers the parts of messages recorded by a version
// that did not record them (every ref then reads part 0): the parts of a
// prompt were recorded in order, so a platform's later part-0 refs are its
// later parts. Refs recorded with parts pass unchanged: a platform shows at
// most one part 0 per question.
func numberLegacyParts(refs []MessageRef) []MessageRef {
	next := map[string]int{}
	out := make([]MessageRef, len(refs))
	for i, ref := range refs {
		if ref.Part == 0 {
			ref.Part = next[ref.Platform]
			next[ref.Platform]++
		}
		out[i] = ref
	}
	return out
}
