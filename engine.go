package askbridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/askbridge/askbridge/internal/retry"
)

// Metrics receives what the engine counts. cmd/bridge implements it with
// Prometheus; every method must be cheap and safe for concurrent use.
type Metrics interface {
	// Ended counts a question that ended, with how long it was open.
	Ended(platform string, outcome Outcome, open time.Duration)
	// Sent counts messages posted for prompts.
	Sent(platform string, messages int)
	// PlatformError counts a refused platform call by kind.
	PlatformError(platform string, kind ErrorKind)
	// RetryAfter counts a rate limit the platform imposed.
	RetryAfter(platform string, wait time.Duration)
}

type nopMetrics struct{}

func (nopMetrics) Ended(string, Outcome, time.Duration) {}
func (nopMetrics) Sent(string, int)                     {}
func (nopMetrics) PlatformError(string, ErrorKind)      {}
func (nopMetrics) RetryAfter(string, time.Duration)     {}

// Resolver turns a request's `to` (empty for the default route) into a
// target and the people the route lets answer. An error is shown to the
// agent as the reason its request was refused.
type Resolver func(to string) (Target, []string, error)

// EngineConfig wires an engine. Store, Resolve and Channels are required.
type EngineConfig struct {
	Store    Store
	Resolve  Resolver
	Channels []Channel
	Logger   *slog.Logger
	Metrics  Metrics
	// Replica names this replica in leases and logs.
	Replica string
	// Clock times the engine's waits, sweeps and timers; tests pass a
	// simulated one and advance it (default: the real clock).
	Clock clockwork.Clock
	// Concurrency bounds the requests handled at once (default 64).
	Concurrency int
	// SendAttempts bounds the tries of one send before the question is
	// undeliverable (default 6), and SendBudget the time spent on them
	// (default 2 minutes).
	SendAttempts int
	SendBudget   time.Duration
	// SweepEvery is how often deadlines are checked (default 250ms).
	SweepEvery time.Duration
}

// Engine carries questions from the requests stream to people and the
// answers back. Every replica runs one; they share all state through the
// Store, so any replica can handle any question.
type Engine struct {
	store    Store
	resolve  Resolver
	channels map[string]Channel
	log      *slog.Logger
	metrics  Metrics
	clock    clockwork.Clock
	cfg      EngineConfig

	// attempts numbers delivery attempts, to make lease holders unique.
	attempts atomic.Int64

	// wg tracks background work (finishing messages) so Run returns only
	// when it is done.
	wg sync.WaitGroup
}

// NewEngine makes an engine. It does not start anything.
func NewEngine(cfg EngineConfig) *Engine {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Metrics == nil {
		cfg.Metrics = nopMetrics{}
	}
	if cfg.Clock == nil {
		cfg.Clock = clockwork.NewRealClock()
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 64
	}
	if cfg.SendAttempts <= 0 {
		cfg.SendAttempts = 6
	}
	if cfg.SendBudget <= 0 {
		cfg.SendBudget = 2 * time.Minute
	}
	if cfg.SweepEvery <= 0 {
		cfg.SweepEvery = 250 * time.Millisecond
	}
	e := &Engine{
		store: cfg.Store, resolve: cfg.Resolve, channels: map[string]Channel{},
		log: cfg.Logger, metrics: cfg.Metrics, clock: cfg.Clock, cfg: cfg,
	}
	for _, ch := range cfg.Channels {
		e.channels[ch.Platform()] = ch
	}
	return e
}

// Run reads requests and sweeps deadlines until ctx is done, then waits for
// the requests in hand and the message edits under way, so a graceful stop
// loses nothing: an entry not yet acknowledged is claimed by another replica.
func (e *Engine) Run(ctx context.Context) error {
	var loops sync.WaitGroup
	loops.Add(3)
	go func() { defer loops.Done(); e.intake(ctx) }()
	go func() { defer loops.Done(); e.sweep(ctx) }()
	go func() { defer loops.Done(); e.leftovers(ctx) }()
	loops.Wait()
	e.wg.Wait()
	return nil
}

func (e *Engine) intake(ctx context.Context) {
	sem := make(chan struct{}, e.cfg.Concurrency)
	var inflight sync.WaitGroup
	defer inflight.Wait()
	// busy holds the entries this replica is handling: the store hands an
	// entry out again once it has been idle ClaimIdle, and a slow delivery
	// (a rate-limited burst) can take longer than that.
	var busyMu sync.Mutex
	busy := map[string]bool{}
	backoff := retry.Backoff{Min: 100 * time.Millisecond, Max: 5 * time.Second}
	for ctx.Err() == nil {
		free := cap(sem) - len(sem)
		if free == 0 {
			// Wait for a slot instead of reading entries we cannot start.
			select {
			case sem <- struct{}{}:
				<-sem
			case <-ctx.Done():
				return
			}
			continue
		}
		entries, err := e.store.ReadRequests(ctx, free, time.Second)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			e.log.Error("read requests", "err", err)
			retry.SleepOn(ctx, e.clock, backoff.Next())
			continue
		}
		backoff.Reset()
		for _, entry := range entries {
			busyMu.Lock()
			if busy[entry.StreamID] {
				busyMu.Unlock()
				continue
			}
			busy[entry.StreamID] = true
			busyMu.Unlock()
			sem <- struct{}{}
			inflight.Add(1)
			go func() {
				defer func() {
					busyMu.Lock()
					delete(busy, entry.StreamID)
					busyMu.Unlock()
					<-sem
					inflight.Done()
				}()
				// A request in hand is finished even while stopping: its
				// context is not the one that stops intake.
				hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.cfg.SendBudget+30*time.Second)
				defer cancel()
				e.handle(hctx, entry)
			}()
		}
	}
}

// handle processes one stream entry and acknowledges it when done, unless
// Redis failed, in which case the entry stays pending and is retried.
func (e *Engine) handle(ctx context.Context, entry Entry) {
	var err error
	switch {
	case entry.Ask != nil:
		err = e.ask(ctx, entry)
	case entry.Cancel != "":
		_, err = e.Cancel(ctx, entry.Cancel)
	default:
		e.log.Warn("malformed request entry", "entry", entry.StreamID, "problem", entry.Malformed)
		err = e.publish(ctx, Event{Kind: EventRejected, ID: entry.StreamID, Error: entry.Malformed})
	}
	if errors.Is(err, errDelivering) {
		e.log.Debug("request is being delivered by another replica", "entry", entry.StreamID)
		return
	}
	if err != nil {
		e.log.Error("handle request", "entry", entry.StreamID, "err", err)
		return
	}
	if err := e.store.AckRequest(ctx, entry.StreamID); err != nil {
		e.log.Error("ack request", "entry", entry.StreamID, "err", err)
	}
}

// ask validates, routes, stores and delivers one request. It returns an
// error only for infrastructure trouble.
func (e *Engine) ask(ctx context.Context, entry Entry) error {
	now := e.clock.Now()
	req, err := DecodeRequest(entry.Ask)
	if err != nil {
		return e.refuse(ctx, refusedID(entry), err, now)
	}
	id := req.ID
	if id == "" {
		id = entry.StreamID
	}
	target, answerers, err := e.route(req)
	if err != nil {
		return e.refuse(ctx, id, err, now)
	}
	created, existing, err := e.store.Create(ctx, NewQuestion{
		ID: id, Request: req, Target: target, Answerers: answerers,
		Created: now, Deadline: now.Add(time.Duration(req.TimeoutSeconds) * time.Second),
	})
	if err != nil {
		return fmt.Errorf("create question: %w", err)
	}
	if !created {
		// A retried XADD or a redelivered entry: deliver only if the
		// question is still open and no replica has shown it yet.
		if existing.Status != StatusPending {
			return nil
		}
		// deliver goes on from the first part not posted, if any.
		e.log.Debug("question seen again while open", "question", id)
	} else {
		e.log.Info("question requested", "question", id, "to", target.String())
		if err := e.publish(ctx, Event{Kind: EventRequested, ID: id, At: now, Platform: target.Platform, Chat: target.Chat}); err != nil {
			return err
		}
	}
	return e.deliver(ctx, id, req, target)
}

// refusedID picks where the error result of a refused request goes: the id
// the agent asked for when it can be a key, else the stream entry id.
func refusedID(entry Entry) string {
	var probe struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(entry.Ask, &probe) == nil && ValidRequestID(probe.ID) {
		return probe.ID
	}
	return entry.StreamID
}

func (e *Engine) refuse(ctx context.Context, id string, cause error, now time.Time) error {
	res := Refused(id, cause).Stamp(now, now)
	r, err := e.store.Reject(ctx, id, res, now)
	if err != nil {
		return fmt.Errorf("reject request: %w", err)
	}
	if !r.Won {
		return nil // known id: the agent already has its result
	}
	e.log.Info("request refused", "question", id, "error", cause.Error())
	e.metrics.Ended("", OutcomeRejected, 0)
	return e.publish(ctx, Event{Kind: EventRejected, ID: id, At: now, Error: cause.Error()})
}

// route resolves the request's target and who may answer: the request's
// answerers narrow the route's.
func (e *Engine) route(req Request) (Target, []string, error) {
	target, allowed, err := e.resolve(req.To)
	if err != nil {
		return Target{}, nil, err
	}
	if _, ok := e.channels[target.Platform]; !ok {
		return Target{}, nil, fmt.Errorf("to: platform %q is not enabled on this bridge", target.Platform)
	}
	if len(req.Answerers) == 0 {
		return target, allowed, nil
	}
	if len(allowed) == 0 {
		return target, req.Answerers, nil
	}
	var both []string
	for _, a := range req.Answerers {
		if contains(allowed, a) {
			both = append(both, a)
		}
	}
	if len(both) == 0 {
		return Target{}, nil, fmt.Errorf("answerers: none of them may answer on %s", target)
	}
	return target, both, nil
}

// deliver shows a question, holding a per-question lease so two replicas
// never post it twice, retrying temporary failures and rate limits, and
// ending it as undeliverable when the platform refuses for good.
func (e *Engine) deliver(ctx context.Context, id string, req Request, target Target) error {
	// The holder is unique to this attempt, so no other attempt — on
	// another replica or on this one — can take the lease while it runs.
	holder := fmt.Sprintf("%s/%d", replicaName(e), e.attempts.Add(1))
	lease, ok, err := e.store.AcquireLease(ctx, "deliver:"+id, holder, e.cfg.SendBudget+time.Minute)
	if err != nil {
		return fmt.Errorf("delivery lease: %w", err)
	}
	if !ok {
		// Another replica is delivering it: leave the entry unacknowledged,
		// so it is claimed again should that replica die mid-delivery.
		return errDelivering
	}
	defer func() { _ = e.store.ReleaseLease(context.WithoutCancel(ctx), lease) }()
	// Another replica may have delivered it, or some of it, between our
	// look and the lease: go on from the first part not posted.
	msgs, err := e.store.Messages(ctx, id)
	if err != nil {
		return fmt.Errorf("list messages: %w", err)
	}
	from := 0
	for _, m := range msgs {
		if m.Platform == target.Platform && m.Part >= from {
			from = m.Part + 1
		}
	}

	ch := e.channels[target.Platform]
	plan := BuildPlan(id, req, ch.Capabilities())
	log := e.log.With("question", id, "platform", target.Platform)
	deadline := e.clock.Now().Add(e.cfg.SendBudget)
	backoff := retry.Backoff{Min: 500 * time.Millisecond, Max: 30 * time.Second}
	var lastReason string
	for attempt := 1; attempt <= e.cfg.SendAttempts; attempt++ {
		posted := 0
		var recordErr error
		err := ch.Send(ctx, Delivery{Chat: target.Chat, Plan: plan, From: from, Sent: func(ref MessageRef) error {
			if err := e.store.AddMessage(ctx, id, ref); err != nil {
				recordErr = fmt.Errorf("record message: %w", err)
				return recordErr
			}
			posted++
			from = ref.Part + 1
			_ = e.publish(ctx, Event{Kind: EventDelivered, ID: id, At: e.clock.Now(), Platform: ref.Platform, Chat: ref.Chat, Message: ref.Message})
			return nil
		}})
		if posted > 0 {
			e.metrics.Sent(target.Platform, posted)
		}
		if recordErr != nil {
			return recordErr
		}
		if err == nil {
			log.Info("question delivered", "messages", posted, "from", from-posted)
			return nil
		}
		kind, wait, reason := Classify(err)
		lastReason = reason
		e.metrics.PlatformError(target.Platform, kind)
		if kind == Permanent {
			log.Warn("question undeliverable", "reason", reason)
			return e.undeliverable(ctx, id, reason)
		}
		if posted > 0 {
			// Progress: the next try goes on from the first part not out.
			backoff.Reset()
		}
		if kind == RateLimited {
			e.metrics.RetryAfter(target.Platform, wait)
		} else {
			wait = backoff.Next()
		}
		if e.clock.Now().Add(wait).After(deadline) {
			break
		}
		log.Info("send failed, retrying", "attempt", attempt, "from", from, "wait", wait, "reason", reason)
		if !retry.SleepOn(ctx, e.clock, wait) {
			return ctx.Err()
		}
	}
	return e.undeliverable(ctx, id, "the platform kept refusing: "+lastReason)
}

func (e *Engine) undeliverable(ctx context.Context, id, reason string) error {
	_, err := e.end(ctx, id, NoAnswer(id, ReasonUndeliverable, reason))
	return err
}

// errDelivering means another replica holds the question's delivery lease.
var errDelivering = errors.New("another replica is delivering the question")

// Cancel ends a pending question as cancelled. Cancelling an unknown or
// ended question does nothing.
func (e *Engine) Cancel(ctx context.Context, id string) (EndResult, error) {
	return e.end(ctx, id, NoAnswer(id, ReasonCancelled, ""))
}

// end ends a question with res (first writer wins); the winner publishes
// the event and edits every message that showed the question.
func (e *Engine) end(ctx context.Context, id string, res Result) (EndResult, error) {
	now := e.clock.Now()
	r, err := e.store.End(ctx, id, res, now)
	if err != nil {
		return r, fmt.Errorf("end question: %w", err)
	}
	if r.Won {
		e.ended(ctx, r)
	}
	return r, nil
}

// ended runs what follows a won end: the event, the metrics, the edits.
func (e *Engine) ended(ctx context.Context, r EndResult) {
	rec, res := r.Record, r.Result
	ev := Event{Kind: EventOf(res.Outcome()), ID: rec.ID, At: e.clock.Now(), Platform: rec.Target.Platform, Chat: rec.Target.Chat, Error: res.Error}
	if res.AnsweredBy != nil {
		ev.By = res.AnsweredBy.Platform + ":" + res.AnsweredBy.ID
	}
	if err := e.publish(ctx, ev); err != nil {
		e.log.Error("publish event", "question", rec.ID, "err", err)
	}
	e.metrics.Ended(rec.Target.Platform, res.Outcome(), e.clock.Now().Sub(rec.Created))
	e.log.Info("question ended", "question", rec.ID, "outcome", res.Outcome())
	// Marked before the edits start, so a replica that dies half-way
	// leaves the question for another to finish (finishLeftovers).
	if err := e.store.MarkFinishing(ctx, rec.ID, e.clock.Now()); err != nil {
		e.log.Error("mark question finishing", "question", rec.ID, "err", err)
	}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
		defer cancel()
		e.finish(fctx, rec, res)
		if err := e.store.Finished(fctx, rec.ID); err != nil {
			e.log.Error("mark question finished", "question", rec.ID, "err", err)
		}
	}()
}

// finishTimeout bounds the edits of one ended question; a question still
// marked finishing twice as long after its end was left by a replica that
// died, and another replica finishes it.
const finishTimeout = time.Minute

// leftovers looks for questions left unfinished at start and then every
// 10 seconds.
func (e *Engine) leftovers(ctx context.Context) {
	t := e.clock.NewTicker(10 * time.Second)
	defer t.Stop()
	for {
		e.finishLeftovers(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.Chan():
		}
	}
}

// finishLeftovers edits the messages of questions whose end was won by a
// replica that died before it had edited them all. Edits are safe to repeat.
func (e *Engine) finishLeftovers(ctx context.Context) {
	ids, err := e.store.Unfinished(ctx, e.clock.Now().Add(-2*finishTimeout), 20)
	if err != nil {
		if ctx.Err() == nil {
			e.log.Error("list unfinished questions", "err", err)
		}
		return
	}
	for _, id := range ids {
		holder := fmt.Sprintf("%s/%d", replicaName(e), e.attempts.Add(1))
		lease, ok, err := e.store.AcquireLease(ctx, "finish:"+id, holder, 2*finishTimeout)
		if err != nil || !ok {
			continue
		}
		rec, found, err := e.store.Get(ctx, id)
		switch {
		case err != nil:
		case !found || rec.Result == nil:
			_ = e.store.Finished(ctx, id)
		default:
			e.log.Info("finishing a question another replica left", "question", id)
			fctx, cancel := context.WithTimeout(ctx, finishTimeout)
			e.finish(fctx, rec, *rec.Result)
			cancel()
			_ = e.store.Finished(ctx, id)
		}
		_ = e.store.ReleaseLease(ctx, lease)
	}
}

// finish edits every message that showed a question to its end state.
func (e *Engine) finish(ctx context.Context, rec Record, res Result) {
	refs, err := e.store.Messages(ctx, rec.ID)
	if err != nil {
		e.log.Error("list messages to finish", "question", rec.ID, "err", err)
		return
	}
	for _, ref := range refs {
		ch, ok := e.channels[ref.Platform]
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
			e.metrics.PlatformError(ref.Platform, kind)
			if kind == Permanent || attempt >= 5 {
				e.log.Warn("could not edit message", "question", rec.ID, "platform", ref.Platform, "message", ref.Message, "reason", reason)
				break
			}
			if kind != RateLimited {
				wait = backoff.Next()
			} else {
				e.metrics.RetryAfter(ref.Platform, wait)
			}
			if !retry.SleepOn(ctx, e.clock, wait) {
				return
			}
		}
	}
}

func (e *Engine) sweep(ctx context.Context) {
	t := e.clock.NewTicker(e.cfg.SweepEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.Chan():
		}
		for {
			ended, err := e.store.Sweep(ctx, e.clock.Now(), 100)
			if err != nil {
				if ctx.Err() == nil {
					e.log.Error("sweep deadlines", "err", err)
				}
				break
			}
			for _, r := range ended {
				e.ended(ctx, r)
			}
			if len(ended) < 100 {
				break
			}
		}
	}
}

// ending is what a channel with caps needs to show the end of rec.
func ending(rec Record, res Result, caps Capabilities) Ending {
	rec.Result = &res
	return Ending{
		Plan:     BuildPlan(rec.ID, rec.Request, caps),
		Outcome:  res.Outcome(),
		Status:   StatusLine(rec.Request, res),
		Question: rec,
	}
}

func (e *Engine) publish(ctx context.Context, ev Event) error {
	if ev.At.IsZero() {
		ev.At = e.clock.Now()
	}
	if err := e.store.Publish(ctx, ev); err != nil {
		return fmt.Errorf("publish %s event: %w", ev.Kind, err)
	}
	return nil
}

func replicaName(e *Engine) string {
	if e.cfg.Replica != "" {
		return e.cfg.Replica
	}
	return fmt.Sprintf("engine-%p", e)
}
