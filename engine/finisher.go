package engine

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/internal/retry"
	"github.com/jonboulle/clockwork"
)

// finisherParams configures the finisher.
type finisherParams struct {
	// timeout bounds the edits of one ended question in one go; what is
	// not done by then is left marked for the leftover pass.
	timeout time.Duration
	// editAttempts bounds the tries of one message edit that fails for
	// another reason than a rate limit (those are waited out).
	editAttempts int
	// leaseTTL is the life of the finishing lease a replica holds (and
	// renews) while it edits a question's messages: a replica that dies
	// mid-edit hands the question over within about that long.
	leaseTTL time.Duration
	// leftoverEvery is how often leftovers are looked for, leftoverGrace
	// how old a mark must be to be one, and leftoverBatch how many one
	// pass takes.
	leftoverEvery time.Duration
	leftoverGrace time.Duration
	leftoverBatch int
	// concurrency bounds the questions finished at once (launch).
	concurrency int
}

// finisher runs what follows a won end: the event, the metrics, and the
// edit of every message that showed the question. It also finishes the
// questions a replica that died mid-edit left behind.
type finisher struct {
	*core
	finisherParams
	store finisherStore
	// edits tracks the edits under way, so Run returns after them; mu
	// keeps an end that comes in while Run waits (a channel still handing
	// in a tap as it stops) from adding to edits during that Wait.
	mu    sync.Mutex
	edits sync.WaitGroup
	// slots holds a token per question being finished (concurrency).
	slots chan struct{}
	// work hands a launched question to an idle worker (see launch).
	work chan func()
}

func newFinisher(c *core, p finisherParams) *finisher {
	return &finisher{core: c, finisherParams: p, store: c.store, slots: make(chan struct{}, max(p.concurrency, 1)), work: make(chan func())}
}

// finisherStore is the store as the finisher sees it: the ended question
// and its messages, and its finishing mark.
type finisherStore interface {
	Get(ctx context.Context, id string) (Record, bool, error)
	Messages(ctx context.Context, id string) ([]MessageRef, error)
	MarkFinishing(ctx context.Context, id string, now time.Time) (bool, error)
	KeepFinishing(ctx context.Context, id string, now time.Time) error
	Finished(ctx context.Context, id string) error
	Unfinished(ctx context.Context, olderThan time.Time, max int) ([]string, error)
}

// workerIdle is how long a finisher worker waits for another question
// before it exits.
const workerIdle = 10 * time.Second

// ended takes won ends: it publishes their events, counts them, and
// edits each question's messages in the background. marked says the
// questions were marked finishing before they ended (core.end and
// Store.Sweep do). It never blocks on a platform. Several ends at once (a
// sweep's batch): their events
// go out in one round trip, and each question's edits start in the
// background while fewer than concurrency are under way; the others stay
// marked finishing, for the leftover pass.
func (f *finisher) ended(ctx context.Context, rs []EndResult, marked bool) {
	if len(rs) == 0 {
		return
	}
	evs := make([]askbridge.Event, 0, len(rs))
	now := f.clock.Now()
	for _, r := range rs {
		rec := r.Record
		if !r.Published {
			evs = append(evs, endEvent(r, now))
		}
		if !marked {
			if _, err := f.store.MarkFinishing(ctx, rec.ID, now); err != nil {
				f.log.Error("mark question finishing", "question", rec.ID, "err", err)
			}
		}
	}
	if len(evs) > 0 {
		if err := f.publish(ctx, evs...); err != nil {
			f.log.Error("publish events", "events", len(evs), "err", err)
		}
	}
	deferred := 0
	for _, r := range rs {
		rec, res := r.Record, r.Result
		f.metrics.Ended(rec.Target.Platform, res.Outcome(), f.clock.Since(rec.Created))
		f.log.Info("question ended", "question", rec.ID, "outcome", res.Outcome())
		if !f.launch(func() { f.finishOwn(rec, res, r.Messages) }, rec.ID) {
			deferred++
		}
	}
	if deferred > 0 {
		f.log.Warn("many questions ending at once; their edits are left to the leftover pass", "deferred", deferred)
	}
}

// endEvent is the public event of won end r (answered, skipped, expired,
// cancelled, undeliverable...), at at.
func endEvent(r EndResult, at time.Time) askbridge.Event {
	rec, res := r.Record, r.Result
	ev := askbridge.Event{Kind: askbridge.EventOf(res.Outcome()), ID: rec.ID, At: at, Platform: rec.Target.Platform, Chat: rec.Target.Chat, Error: res.Error}
	if res.AnsweredBy != nil {
		ev.By = res.AnsweredBy.Platform + ":" + res.AnsweredBy.ID
	}
	return ev
}

// refreshLater refreshes rec's open prompts in the background (refresh),
// and reports whether it could: false when too many edits are under way.
func (f *finisher) refreshLater(rec Record) bool {
	return f.launch(func() { f.refresh(rec) }, rec.ID)
}

// clearLater makes sure message ref of ended question rec shows its end:
// a tap on it found the question ended, so its buttons may still be live
// (the end's edit of it failed, or has not reached it yet). The edit runs
// in the background with the finisher's retries; when it cannot start (too
// many edits under way) or does not land, the question is marked
// finishing, and the leftover pass edits every message of it.
func (f *finisher) clearLater(ctx context.Context, rec Record, res askbridge.Result, ref MessageRef) {
	ch, ok := f.channels[ref.Platform]
	if !ok {
		return
	}
	mark := func(ctx context.Context) {
		if _, err := f.store.MarkFinishing(ctx, rec.ID, f.clock.Now()); err != nil {
			f.log.Error("mark question finishing", "question", rec.ID, "err", err)
		}
	}
	launched := f.launch(func() {
		ctx, cancel := context.WithTimeout(f.halt, f.timeout)
		defer cancel()
		end := withOffer(ending(rec, res, ch.Capabilities(), ref.Place), f.openOffer(ctx, rec, res), ref, ch.Capabilities())
		if !f.editOne(ctx, ch, ref, end, nil) {
			// Marked even when the edits' time ran out: the leftover pass
			// goes on from there.
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), markTimeout)
			defer cancel()
			mark(ctx)
		}
	}, rec.ID)
	if !launched {
		mark(ctx)
	}
}

// markTimeout bounds the marking of a question whose edit did not land.
const markTimeout = 5 * time.Second

// launch runs the edits of question id (run) in the background if fewer
// than concurrency are under way, and reports whether it did: a burst of
// endings (a hundred thousand deadlines in a minute) must not start a
// goroutine each. A question not launched stays marked finishing and the
// leftover pass takes it in turn.
func (f *finisher) launch(run func(), id string) bool {
	select {
	case f.slots <- struct{}{}:
	default:
		return false
	}
	f.mu.Lock()
	f.edits.Add(1)
	f.mu.Unlock()
	job := func() {
		defer f.edits.Done()
		defer func() { <-f.slots }()
		defer f.recover("finish question", "question", id)
		run()
	}
	// An idle worker takes it, or a new one starts: a burst of endings
	// reuses the workers (and their stacks, grown once by building plans)
	// instead of starting a goroutine per question. There are never more
	// workers than concurrency plus those about to exit.
	select {
	case f.work <- job:
	default:
		go f.worker(job)
	}
	return true
}

// worker runs job, then the jobs handed to it, until none comes for
// workerIdle or the engine halts.
func (f *finisher) worker(job func()) {
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		job()
		idle.Reset(workerIdle)
		select {
		case job = <-f.work:
		case <-idle.C:
			return
		case <-f.halt.Done():
			return
		}
	}
}

// finishOwn edits the messages (refs, as the end recorded them) of a
// question this replica just ended, and clears its mark when every message
// is done. It takes no lease: while it works it keeps the mark fresh
// (KeepFinishing, every leftoverGrace/3), so the leftover pass of another
// replica, which takes only marks older than leftoverGrace, leaves it
// alone; if this replica dies the mark goes stale and another takes over.
func (f *finisher) finishOwn(rec Record, res askbridge.Result, refs []MessageRef) {
	ctx, cancel := context.WithTimeout(f.halt, f.timeout)
	defer cancel()
	// Deferred: an edit that panics (recovered by launch) stops it too.
	defer f.keepFinishing(ctx, rec.ID)()
	if f.edit(ctx, rec, res, refs) {
		if err := f.store.Finished(ctx, rec.ID); err != nil {
			f.log.Error("mark question finished", "question", rec.ID, "err", err)
		}
	}
}

// keepFinishing keeps question id's finishing mark fresh
// (KeepFinishing) every leftoverGrace/3 until the stop it returns is
// called; stop waits for a refresh under way, and none runs after it. No
// goroutine waits meanwhile: a timer runs each refresh, so the common
// finish, done in milliseconds, costs a timer and no goroutine started and
// stopped (each of which wakes another thread of the process).
func (f *finisher) keepFinishing(ctx context.Context, id string) (stop func()) {
	every := max(f.leftoverGrace/3, time.Millisecond)
	var (
		mu      sync.Mutex // held by a refresh, and by stop
		stopped bool
		t       clockwork.Timer
	)
	refresh := func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		if err := f.store.KeepFinishing(context.WithoutCancel(ctx), id, f.clock.Now()); err != nil {
			f.log.Warn("keep finishing mark", "question", id, "err", err)
		}
		t.Reset(every)
	}
	mu.Lock()
	t = f.clock.AfterFunc(every, refresh)
	mu.Unlock()
	return func() {
		mu.Lock()
		stopped = true
		t.Stop()
		mu.Unlock()
	}
}

// finishLeft edits the messages of a question left marked (its replica
// died before ending it or mid-edit, or ran out of time) under its
// finishing lease, renewed while it works, and clears its mark when every
// message is done. Without the lease (another replica is at it) it does
// nothing.
func (f *finisher) finishLeft(id string) {
	ctx, cancel := context.WithTimeout(f.halt, f.timeout)
	defer cancel()
	release, ok, err := f.holdLease(ctx, "finish:"+id, f.leaseTTL)
	if err != nil || !ok {
		if err != nil {
			f.log.Error("finishing lease", "question", id, "err", err)
		}
		return
	}
	defer release()
	rec, found, err := f.store.Get(ctx, id)
	if err != nil {
		f.log.Error("read a question left unfinished", "question", id, "err", err)
		return
	}
	// A mark with nothing to finish is cleared when the question is gone.
	// One on a question still open (the replica that marked it died before
	// ending it) moves to its deadline instead: an end deciding meanwhile
	// keeps its mark (an end's ZADD NX leaves a mark as it is), so if that
	// replica dies mid-edit this pass finishes it after the deadline,
	// where clearing would have lost it.
	done := true
	switch {
	case found && rec.Result != nil:
		f.log.Info("finishing a question another replica left", "question", id)
		done = f.finish(ctx, rec, *rec.Result)
	case found:
		if err := f.store.KeepFinishing(ctx, id, rec.Deadline); err != nil {
			f.log.Error("move the mark of a question still open", "question", id, "err", err)
		}
		return
	}
	if done {
		if err := f.store.Finished(ctx, id); err != nil {
			f.log.Error("mark question finished", "question", id, "err", err)
		}
	}
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

// exec is one pass over the leftovers: questions marked finishing a while
// ago whose finishing lease is free, because the replica that marked them
// died before ending them, or mid-edit, or ran out of time. Edits are safe
// to repeat; the lease keeps two replicas from doing one at once.
func (f *finisher) exec(ctx context.Context) {
	ids, err := f.store.Unfinished(ctx, f.clock.Now().Add(-f.leftoverGrace), f.leftoverBatch)
	if err != nil {
		if ctx.Err() == nil {
			f.log.Error("list unfinished questions", "err", err)
		}
		return
	}
	for _, id := range ids {
		if !f.launch(func() { f.finishLeft(id) }, id) {
			return // full: the next pass goes on
		}
	}
}

// finish edits every message that showed a question to its end state,
// retrying temporary failures and waiting out every rate limit (a rate
// limit is no reason to leave buttons live). It reports whether every
// message is done (edited, or refused for good); what is not is left to the
// leftover pass.
func (f *finisher) finish(ctx context.Context, rec Record, res askbridge.Result) bool {
	refs, err := f.store.Messages(ctx, rec.ID)
	if err != nil {
		f.log.Error("list messages to finish", "question", rec.ID, "err", err)
		return false
	}
	return f.edit(ctx, rec, res, refs)
}

// edit finishes every message in refs; it reports whether all are done.
func (f *finisher) edit(ctx context.Context, rec Record, res askbridge.Result, refs []MessageRef) bool {
	done := true
	offer := f.openOffer(ctx, rec, res)
	for _, ref := range numberLegacyParts(refs, f.partsOf(rec)) {
		ch, ok := f.channels[ref.Platform]
		if !ok {
			continue
		}
		if ref.IsReminder() {
			// A reminder carries nothing worth keeping: deleted where
			// the platform lets the bridge delete its own messages.
			if r, ok := ch.(Reminder); ok && !f.editOne(ctx, ch, ref, Ending{Question: rec}, r.Delete) {
				done = false
			}
			continue
		}
		end := withOffer(ending(rec, res, ch.Capabilities(), ref.Place), offer, ref, ch.Capabilities())
		if !f.editOne(ctx, ch, ref, end, nil) {
			done = false
		}
	}
	return done
}

// editOne finishes one message (with del instead of ch.Finish when set);
// it reports whether the message is done: edited, or refused for good.
func (f *finisher) editOne(ctx context.Context, ch Channel, ref MessageRef, end Ending, del func(context.Context, MessageRef) error) bool {
	err := f.editMessage(ctx, ref, func(ctx context.Context) error {
		if del != nil {
			return del(ctx, ref)
		}
		return ch.Finish(ctx, ref, end)
	})
	if err == nil {
		return true
	}
	if kind, _, reason := Classify(err); kind == Permanent {
		f.log.Warn("could not edit message", "question", end.Question.ID, "platform", ref.Platform, "message", ref.Message, "reason", reason)
		return true
	}
	f.log.Warn("could not edit message yet; left for the leftover pass", "question", end.Question.ID, "platform", ref.Platform, "message", ref.Message, "err", err)
	return false
}

// editMessage runs call, one edit of message ref, until it lands, is
// refused for good (Permanent), or has failed editAttempts times for
// another reason: rate limits are waited out, other failures backed off,
// all within ctx. It returns nil when the edit landed, else the last
// error. The finisher's edits and the updates of open prompts (refresh)
// both go through it.
func (f *finisher) editMessage(ctx context.Context, ref MessageRef, call func(context.Context) error) error {
	backoff := retry.Backoff{Min: 500 * time.Millisecond, Max: 10 * time.Second}
	for failures := 0; ; {
		err := call(ctx)
		if err == nil {
			return nil
		}
		kind, wait, _ := Classify(err)
		f.metrics.PlatformError(ref.Platform, kind)
		switch kind {
		case Permanent:
			return err
		case RateLimited:
			f.metrics.RetryAfter(ref.Platform, wait)
		default:
			if failures++; failures >= f.editAttempts {
				return err
			}
			wait = backoff.Next()
		}
		if !retry.SleepOn(ctx, f.clock, wait) {
			return err
		}
	}
}

// numberLegacyParts numbers the parts of messages recorded by a version
// that did not record them (every ref then reads part 0): the parts of a
// prompt were recorded in order, so a place's later part-0 refs are its
// later parts. Refs recorded with parts pass unchanged. A prompt posted
// twice (a replica died between posting it and recording it, and the copy
// was adopted when tapped) also gives a place two refs of part 0: where
// parts says how many parts the place's prompt has (0: unknown), the
// numbering wraps at that count, so a copy of a one-part prompt stays part
// 0 rather than becoming a part the prompt does not have.
func numberLegacyParts(refs []MessageRef, parts func(platform string, place int) int) []MessageRef {
	next := map[[2]any]int{}
	out := make([]MessageRef, len(refs))
	for i, ref := range refs {
		if ref.Part == 0 {
			key := [2]any{ref.Platform, ref.Place}
			part := next[key]
			next[key]++
			// Counted only for a place with a second part-0 ref: the
			// count takes a plan, and the first is part 0 whatever it is.
			if part > 0 {
				if n := parts(ref.Platform, ref.Place); n > 0 {
					part %= n
				}
			}
			ref.Part = part
		}
		out[i] = ref
	}
	return out
}

// partsOf counts the parts of rec's prompt in each place on channels that
// say (PartCounter), for numberLegacyParts; 0 where unknown. It builds a
// plan only when asked, once per place.
func (c *core) partsOf(rec Record) func(platform string, place int) int {
	seen := map[[2]any]int{}
	return func(platform string, place int) int {
		key := [2]any{platform, place}
		if n, ok := seen[key]; ok {
			return n
		}
		n := 0
		if ch, ok := c.channels[platform]; ok {
			if pc, ok := ch.(PartCounter); ok && len(rec.Request.Questions) > 0 {
				n = pc.Parts(rec.PlanFor(place, ch.Capabilities()))
			}
		}
		seen[key] = n
		return n
	}
}

// refresh edits the open prompts of question rec to show what its state
// adds (who has seen it, the tally of a quorum question): in each place,
// the part with the buttons (its last). It reads the question afresh, so
// the newest state is shown, and goes on until what it showed is still
// the state after the edits (votes that came meanwhile, on any replica,
// are shown too), a few rounds at most. A channel that cannot edit in
// place is left as it is. Rate limits are waited out within the
// finisher's timeout; other failures are tried a few times, then left
// (the end edits every message anyway).
func (f *finisher) refresh(rec Record) {
	ctx, cancel := context.WithTimeout(f.halt, f.timeout)
	defer cancel()
	var updated []MessageRef
	defer func() {
		// An answer may have come meanwhile, and its edits with it: an
		// update that landed after them would put live buttons back on
		// an ended prompt. Ended now, the updated messages are finished
		// again (safe to repeat), so the end is their last edit.
		if len(updated) == 0 {
			return
		}
		now, found, err := f.store.Get(ctx, rec.ID)
		if err != nil {
			f.log.Warn("read a question after updating its prompts", "question", rec.ID, "err", err)
			return
		}
		if found && now.Status != askbridge.StatusPending && now.Result != nil {
			f.edit(ctx, now, *now.Result, updated)
		}
	}()
	shown := ""
	for range 5 {
		now, found, err := f.store.Get(ctx, rec.ID)
		if err != nil {
			f.log.Warn("read a question to update its prompts", "question", rec.ID, "err", err)
			return
		}
		if !found || now.Status != askbridge.StatusPending {
			return
		}
		state := shownState(now)
		if state == shown {
			return
		}
		shown = state
		refs, err := f.store.Messages(ctx, rec.ID)
		if err != nil {
			f.log.Warn("list messages to refresh", "question", rec.ID, "err", err)
			return
		}
		last := map[int]MessageRef{}
		for _, ref := range numberLegacyParts(refs, f.partsOf(now)) {
			if ref.IsPrompt() && ref.Part >= last[ref.Place].Part {
				last[ref.Place] = ref
			}
		}
		for k, ref := range last {
			if f.update(ctx, now, k, ref) {
				updated = append(updated, ref)
			}
		}
	}
}

// shownState is what refresh shows of rec's state: who has seen it and
// how many have voted.
func shownState(rec Record) string {
	seen := ""
	if rec.Acknowledged != nil {
		seen = rec.Acknowledged.Platform + ":" + rec.Acknowledged.ID
	}
	return fmt.Sprintf("%s/%d", seen, len(rec.Votes))
}

// update edits one prompt message, part ref of place k, to rec's plan; it
// reports whether the edit landed.
func (f *finisher) update(ctx context.Context, rec Record, k int, ref MessageRef) bool {
	ch, ok := f.channels[ref.Platform]
	if !ok {
		return false
	}
	u, ok := ch.(Updater)
	if !ok {
		return false
	}
	plan := f.withLink(rec, k, rec.PlanFor(k, ch.Capabilities()))
	err := f.editMessage(ctx, ref, func(ctx context.Context) error { return u.Update(ctx, ref, plan) })
	if err != nil {
		_, _, reason := Classify(err)
		f.log.Warn("could not update a prompt; its end will", "question", rec.ID, "platform", ref.Platform, "reason", reason)
		return false
	}
	return true
}
