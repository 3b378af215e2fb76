package engine

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/locale"
)

// Metrics receives what the engine counts. cmd/bridge implements it with
// Prometheus; every method must be cheap and safe for concurrent use.
type Metrics interface {
	// Ended counts a question that ended, with how long it was open.
	Ended(platform string, outcome askbridge.Outcome, open time.Duration)
	// Sent counts messages posted for prompts.
	Sent(platform string, messages int)
	// PlatformError counts a refused platform call by kind.
	PlatformError(platform string, kind ErrorKind)
	// RetryAfter counts a rate limit the platform imposed.
	RetryAfter(platform string, wait time.Duration)
	// Panicked counts a panic the engine recovered from, by operation.
	Panicked(op string)
	// Reached counts what ask-user.md §5 adds, per place: a reminder
	// posted, an escalation step shown, a Seen, a place that could not be
	// reached (EventReminded, EventEscalated, EventAcknowledged,
	// EventUndeliverable), on platform.
	Reached(kind askbridge.EventKind, platform string)
	// Standing counts what standing answers do (ask-user.md §9): an
	// answer kept, used, revoked or expired.
	Standing(event StandingEvent)
}

// StandingEvent is what a standing answer did, for Metrics.Standing.
type StandingEvent string

const (
	StandingEventKept    StandingEvent = "kept"
	StandingEventUsed    StandingEvent = "used"
	StandingEventRevoked StandingEvent = "revoked"
	StandingEventExpired StandingEvent = "expired"
)

type nopMetrics struct{}

func (nopMetrics) Ended(string, askbridge.Outcome, time.Duration) {}
func (nopMetrics) Sent(string, int)                               {}
func (nopMetrics) PlatformError(string, ErrorKind)                {}
func (nopMetrics) RetryAfter(string, time.Duration)               {}
func (nopMetrics) Panicked(string)                                {}
func (nopMetrics) Reached(askbridge.EventKind, string)            {}
func (nopMetrics) Standing(StandingEvent)                         {}

// Route is where a request's `to` leads: the chat, who may answer there,
// and the language the route's questions are shown in (empty: the
// bridge's default).
type Route struct {
	Target    askbridge.Target
	Answerers []string
	Locale    string
	// Escalate is the route's default escalation ladder (ask-user.md §5),
	// used when a request shown here first gives none. Its names are the
	// operator's: the engine resolves them with EngineConfig.ResolveLadder.
	Escalate []askbridge.Step
	// Links adds the person's answer link to text prompts shown here in
	// a DM (EngineConfig.Links).
	Links bool
}

// Resolver turns a name into a Route: a request's `to` or a step of its
// `escalate` (empty for the default route), or, as
// EngineConfig.ResolveLadder, a name in a route's own ladder. An error is
// shown to the agent as the reason its request was refused.
type Resolver func(to string) (Route, error)

// EngineConfig wires an engine. Store, Resolve and Channels are required;
// every other field has a default.
type EngineConfig struct {
	Store fullStore
	// Resolve resolves the names a request gives, in its `to` and its
	// `escalate`: the policy on what a request may name applies to them.
	Resolve Resolver
	// ResolveLadder resolves the names of a route's own escalation ladder
	// (Route.Escalate), which the operator wrote: no policy on what a
	// request may name applies to them (cmd/bridge: config's
	// ResolveLadder). Nil: Resolve, for a bridge with no such policy.
	ResolveLadder Resolver
	// Channels are the platforms questions are shown on. The agent's own
	// client ("mcp", agentplace.go) is always there besides them; a
	// channel of that platform here takes its place.
	Channels []Channel
	// Locale is the catalog of questions whose request and route name
	// none (ASKUSER_LOCALE; default "en"), and of notices that belong to
	// no known question.
	Locale  string
	Logger  *slog.Logger
	Metrics Metrics
	// Replica names this replica in leases and logs.
	Replica string
	// Clock times every wait, sweep and timer of the engine; tests pass a
	// simulated one and advance it (default: the real clock).
	Clock clockwork.Clock
	// Concurrency bounds the requests handled at once (default 256: a burst
	// of requests keeps Redis busy in shared round trips rather than
	// waiting on one another; each in hand costs a goroutine).
	Concurrency int
	// ReadBlock is how long one read of the requests stream waits for
	// entries (default 1s).
	ReadBlock time.Duration
	// MaxPendingPerAgent caps the pending questions of one agent (the
	// request's agent field; requests without one count together): a
	// request beyond it is refused with an error result. 0: no cap. The
	// Store must keep its per-agent index (store.Options.AgentIndex) for a
	// question to leave the count when it ends rather than at its deadline.
	MaxPendingPerAgent int
	// SendAttempts bounds the tries of one send before the question is
	// undeliverable (default 6), and SendBudget the time spent on them
	// (default 2 minutes).
	SendAttempts int
	SendBudget   time.Duration
	// SweepEvery is the least time between two looks for due deadlines
	// (default 50ms) and SweepIdle the most (default 5s): with a store
	// that says when the next deadline comes (NextSweeper), the sweeper
	// sleeps until it, within those bounds, and a create with an earlier
	// deadline wakes it; with another store it looks every SweepEvery.
	// SweepBatch is how many questions one sweep call ends (default 100),
	// and SweepWorkers how many sweep calls run at once while many
	// deadlines are due together (default 4).
	SweepEvery   time.Duration
	SweepIdle    time.Duration
	SweepBatch   int
	SweepWorkers int
	// A replica delivering a question holds a delivery lease of
	// FinishLease too, renewed: one that dies mid-delivery hands the
	// question over within about that long (once the request is claimed).
	//
	// EditAttempts bounds the tries of one message edit that fails for
	// another reason than a rate limit (default 5), and FinishTimeout the
	// edits of one ended question in one go (default 1 minute). A replica
	// holds a finishing lease of FinishLease (default 15s), renewed, while
	// it edits; a question whose edits were left (its replica died, or ran
	// out of time) is taken over by any replica once its lease has lapsed:
	// each looks every LeftoverEvery (default 5s) for up to LeftoverBatch
	// (default 20) questions marked more than LeftoverGrace (default 5s)
	// ago.
	EditAttempts  int
	FinishTimeout time.Duration
	FinishLease   time.Duration
	LeftoverEvery time.Duration
	LeftoverGrace time.Duration
	LeftoverBatch int
	// TimerHold is how long a replica firing a reminder or an escalation
	// step holds it (default 30s): one that dies mid-step leaves the step
	// to another replica about that long after. Timers are looked for
	// every TimerEvery (default 1s): a reminder or a step comes up to that
	// long after its time.
	TimerHold  time.Duration
	TimerEvery time.Duration
	// FinishConcurrency bounds the ended questions whose messages one
	// replica edits at once (default 1024). A burst of endings beyond it
	// (many deadlines at once) does not start a goroutine each: the rest
	// stay marked and the leftover pass takes them in turn.
	FinishConcurrency int
	// Callbacks turns result callbacks on (ask-user.md §8; callback.go).
	// Its zero value leaves them off, and a request with a callback is
	// refused.
	Callbacks CallbackConfig
	// Standing turns standing answers on (ask-user.md §9): off, a request
	// with remember is refused. Set it when every channel shows the offer
	// to keep an answer and the standing answer's message (OfferShower and
	// StandingShower; the bridge's all do), so the feature is never half
	// visible to people.
	Standing bool
	// StandingMax caps how long an answer may be kept
	// (ASKUSER_STANDING_MAX; default 7 days): a request whose longest
	// remember.offer is longer is refused.
	StandingMax time.Duration
	// Links makes answer links (ask-user.md §10): a route with links on
	// (Route.Links) adds the person's link to its text prompts in DMs.
	// Nil: no links.
	Links LinkMaker
	// StopGrace bounds a graceful stop (default 20s): once Run's context
	// is done no new part of a prompt is started (the request is handed
	// back to another replica, which goes on from the first part not
	// posted), and what is still in hand after StopGrace is abandoned:
	// requests stay unacknowledged and edits stay marked, for another
	// replica.
	StopGrace time.Duration
}

func (c EngineConfig) withDefaults() EngineConfig {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Metrics == nil {
		c.Metrics = nopMetrics{}
	}
	if c.Clock == nil {
		c.Clock = clockwork.NewRealClock()
	}
	if c.ResolveLadder == nil {
		c.ResolveLadder = c.Resolve
	}
	setDefault(&c.Concurrency, 256)
	setDefault(&c.ReadBlock, time.Second)
	setDefault(&c.SendAttempts, 6)
	setDefault(&c.SendBudget, 2*time.Minute)
	setDefault(&c.SweepEvery, 50*time.Millisecond)
	setDefault(&c.SweepIdle, 5*time.Second)
	setDefault(&c.TimerEvery, time.Second)
	setDefault(&c.SweepBatch, 100)
	setDefault(&c.SweepWorkers, 4)
	setDefault(&c.EditAttempts, 5)
	setDefault(&c.FinishTimeout, time.Minute)
	setDefault(&c.FinishLease, 15*time.Second)
	setDefault(&c.LeftoverEvery, 5*time.Second)
	setDefault(&c.LeftoverGrace, 5*time.Second)
	setDefault(&c.LeftoverBatch, 20)
	setDefault(&c.FinishConcurrency, 1024)
	setDefault(&c.StopGrace, 20*time.Second)
	setDefault(&c.TimerHold, 30*time.Second)
	setDefault(&c.StandingMax, DefaultStandingMax)
	return c
}

// DefaultStandingMax is EngineConfig.StandingMax's default
// (ask-user.md §9: 7 days).
const DefaultStandingMax = 7 * 24 * time.Hour

func setDefault[T int | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// Engine carries questions from the requests stream to people and the
// answers back. Every replica runs one; they share all state through the
// Store, so any replica can handle any question.
//
// It is four small components around one core: the intake (requests
// stream → validated, stored, delivered question; intake.go), the answers
// (taps, replies and the web page → one Submit path; inbox.go), the
// finisher (a won end → event, metrics, every message edited; finisher.go)
// and the sweeper (deadlines → expired; sweeper.go). docs/architecture.md
// walks one question through them. With callbacks on, a fifth, the
// dispatcher, POSTs the results of ended questions to their callbacks
// (callback.go).
type Engine struct {
	*core
	intake    *intake
	sweeper   *sweeper
	finisher  *finisher
	pinger    *pinger
	callbacks *callbacks
}

// core is what the components share: the store, the channels, the clock,
// and the one way a question ends (end, which hands a won end to the
// finisher).
type core struct {
	store    fullStore
	channels map[string]Channel
	// locale is the bridge's default catalog (EngineConfig.Locale).
	locale  string
	log     *slog.Logger
	metrics Metrics
	clock   clockwork.Clock
	replica string
	// edits is the one part that edits a question's messages (the
	// finisher); the others reach it only through this.
	edits editor
	// calls is the result callbacks' part where questions begin and end;
	// the others reach it only through this.
	calls resultCalls
	// links makes answer links for DMs of routes with links (links.go);
	// nil: off.
	links LinkMaker

	// stopping is done once Run's context is: nothing new starts. halt
	// is done StopGrace later (or when Run returns): work in hand stops.
	stopping context.Context
	halt     context.Context
	haltNow  context.CancelFunc
	grace    time.Duration

	// nonce and attempts make lease holders unique: to this process (two
	// replicas may be given one name) and to the hold.
	nonce    string
	attempts atomic.Int64
	// events publishes the events of callers that come at once together.
	events *groupCommit[askbridge.Event]
}

// NewEngine makes an engine. It does not start anything.
func NewEngine(cfg EngineConfig) *Engine {
	cfg = cfg.withDefaults()
	c := &core{
		store: cfg.Store, channels: map[string]Channel{}, log: cfg.Logger, locale: locale.Match(cfg.Locale),
		metrics: cfg.Metrics, clock: cfg.Clock, replica: cfg.Replica,
		stopping: context.Background(), grace: cfg.StopGrace, nonce: Nonce(), links: cfg.Links,
	}
	publish := func(ctx context.Context, evs []askbridge.Event) error { return cfg.Store.Publish(ctx, evs...) }
	c.events = &groupCommit[askbridge.Event]{run: publish, timeout: 10 * time.Second}
	c.halt, c.haltNow = context.WithCancel(context.Background())
	cb := newCallbacks(c, cfg.Callbacks)
	c.calls = cb
	// The agent's own client is a place on every bridge ("mcp"): nothing
	// is posted there, so nothing configures it.
	c.channels[askbridge.PlatformMCP] = agentPlace{}
	for _, ch := range cfg.Channels {
		c.channels[ch.Platform()] = ch
	}
	fin := newFinisher(c, finisherParams{
		timeout: cfg.FinishTimeout, editAttempts: cfg.EditAttempts, leaseTTL: cfg.FinishLease,
		leftoverEvery: cfg.LeftoverEvery, leftoverGrace: cfg.LeftoverGrace, leftoverBatch: cfg.LeftoverBatch,
		concurrency: cfg.FinishConcurrency,
	})
	c.edits = fin
	// The intake and the pinger show questions the same way.
	d := newDelivery(c, deliveryParams{sendAttempts: cfg.SendAttempts, sendBudget: cfg.SendBudget, leaseTTL: cfg.FinishLease})
	sw := newSweeper(c, sweeperParams{interval: cfg.SweepEvery, idle: cfg.SweepIdle, batch: cfg.SweepBatch, workers: cfg.SweepWorkers})
	in := newIntake(c, d, intakeParams{
		resolve: cfg.Resolve, resolveLadder: cfg.ResolveLadder, concurrency: cfg.Concurrency, readBlock: cfg.ReadBlock,
		maxPerAgent: cfg.MaxPendingPerAgent, leaseTTL: cfg.FinishLease,
		standing: cfg.Standing, standingMax: cfg.StandingMax, created: sw.soon,
	})
	e := &Engine{
		core:      c,
		callbacks: cb,
		finisher:  fin,
		intake:    in,
		sweeper:   sw,
		pinger: newPinger(c, d, pingerParams{
			interval: cfg.TimerEvery, batch: cfg.SweepBatch, hold: cfg.TimerHold, budget: cfg.SendBudget + 30*time.Second,
		}),
	}
	in.submit = e.submit
	return e
}

// Run starts the components and runs until ctx is done, then waits for the
// requests in hand and the message edits under way, at most StopGrace, so
// a graceful stop loses nothing: a request not yet acknowledged is claimed
// by another replica, an edit not done is left marked for another
// replica's finisher. Call it once.
func (e *Engine) Run(ctx context.Context) error {
	e.stopping = ctx
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
		case <-done:
			return
		}
		select {
		case <-e.clock.After(e.grace):
			e.log.Warn("stop grace over; leaving what is in hand to another replica", "grace", e.grace)
			e.haltNow()
		case <-done:
		}
	}()
	var wg sync.WaitGroup
	e.intake.start(ctx, &wg)
	e.sweeper.start(ctx, &wg)
	e.finisher.start(ctx, &wg)
	e.pinger.start(ctx, &wg)
	if e.callbacks.on() {
		e.callbacks.start(ctx, &wg)
	}
	wg.Wait()
	e.pinger.wait()
	e.finisher.wait()
	e.callbacks.wait()
	close(done)
	e.haltNow()
	return nil
}

// Cancel ends a pending question as cancelled. Cancelling an unknown or
// ended question does nothing.
func (e *Engine) Cancel(ctx context.Context, id string) (EndResult, error) {
	return e.end(ctx, id, askbridge.NoAnswer(id, askbridge.ReasonCancelled, ""))
}

// end ends a question with res (first writer wins); a won end goes to the
// finisher, which publishes it and edits every message.
//
// The question is marked finishing before the end is tried (in the same
// round trip where the store can keep that order), so a replica
// that dies right after winning leaves the mark for another replica's
// finisher. A mark this call added is taken back when the end lost to one
// that happened before it (that winner had marked before ending, and has
// finished since, or left its own mark); a mark made while the winner was
// ending is left to the winner (or the leftover pass) to clear.
func (c *core) end(ctx context.Context, id string, res askbridge.Result) (EndResult, error) {
	now := c.clock.Now()
	c.calls.ending(ctx, now, id)
	added, r, err := c.store.MarkAndEnd(ctx, id, res, now)
	if err != nil {
		return r, fmt.Errorf("end question: %w", err)
	}
	if r.Won {
		c.afterEnd(ctx, true, r)
		return r, nil
	}
	ended := time.UnixMilli(r.Result.EndedAt)
	if added && (!r.Found || ended.Before(now.Add(-clockSkew))) {
		if err := c.store.Finished(ctx, id); err != nil {
			c.log.Warn("take back a finishing mark", "question", id, "err", err)
		}
	}
	return r, nil
}

// afterEnd is the one path of won ends, from wherever they come (an
// answer, a cancel, a vote, a sweep): an answer that offers to keep it
// records its offer (ask-user.md §9), then the finisher publishes each
// end, counts it and edits its messages. marked says the questions were marked
// finishing before they ended.
func (c *core) afterEnd(ctx context.Context, marked bool, rs ...EndResult) {
	var ids []string
	for _, r := range rs {
		if r.Won && r.Record.Request.Callback != "" {
			ids = append(ids, r.Record.ID)
		}
		if r.Won {
			// Before the edits, so they show the offer.
			c.offer(ctx, r)
		}
	}
	c.calls.ended(ctx, c.clock.Now(), ids...)
	c.edits.ended(ctx, rs, marked)
}

// reject stores res as the refusal of request id (first writer wins; see
// Requests.Reject), the callback of the entry read for it registered first
// and brought forward once the refusal is won.
func (c *core) reject(ctx context.Context, id string, res askbridge.Result, now time.Time) (EndResult, error) {
	registered, err := c.calls.rejecting(ctx, id, now)
	if err != nil {
		return EndResult{}, err
	}
	r, err := c.store.Reject(ctx, id, res, now)
	if err == nil && r.Won && registered {
		c.calls.ended(ctx, now, id)
	}
	return r, err
}

// resultCalls is what the other parts ask of the result callbacks,
// through the core: where questions begin (screen, read, rejecting) and
// end (ending, ended). None of its methods makes a callback itself.
type resultCalls interface {
	// screen applies the operator's policy to the callbacks of questions
	// about to be created and registers the allowed ones: nil for a
	// question to create, or what to return in its place.
	screen(ctx context.Context, qs []NewQuestion) []*screened
	// read notes the callbacks of the entries read, for their refusal.
	read(entries []Entry)
	// rejecting registers the callback of a request about to be refused.
	rejecting(ctx context.Context, id string, now time.Time) (registered bool, err error)
	// ending brings a callback forward before an end is tried; ended
	// brings those of won ends forward to now.
	ending(ctx context.Context, now time.Time, id string)
	ended(ctx context.Context, now time.Time, ids ...string)
}

// editor is what the other parts ask of the finisher, through the core.
// None of its methods blocks on a platform.
type editor interface {
	// ended takes won ends: their events, metrics and message edits.
	ended(ctx context.Context, rs []EndResult, marked bool)
	// finish edits the messages of an ended question again, as the end
	// left them (an edit that landed after the end, a late post).
	finish(ctx context.Context, rec Record, res askbridge.Result) bool
	// clearLater makes sure message ref of ended question rec shows its
	// end, in the background (a tap on it found the question ended).
	clearLater(ctx context.Context, rec Record, res askbridge.Result, ref MessageRef)
	// refreshLater re-shows a pending question's prompts as it now stands
	// (who has seen it, the tally); false when too many edits are under
	// way.
	refreshLater(rec Record) bool
}

// clockSkew is how far apart the clocks of two replicas may be when one
// decides whether another's end came before its own.
const clockSkew = time.Second

func (c *core) publish(ctx context.Context, evs ...askbridge.Event) error {
	for i := range evs {
		if evs[i].At.IsZero() {
			evs[i].At = c.clock.Now()
		}
	}
	if err := c.events.do(ctx, evs...); err != nil {
		if len(evs) == 1 {
			return fmt.Errorf("publish %s event: %w", evs[0].Kind, err)
		}
		return fmt.Errorf("publish %d events: %w", len(evs), err)
	}
	return nil
}

// every runs exec every d on the engine's clock until ctx is done (at
// once first when now is set), in a goroutine wg tracks: the one timer
// loop of the components.
func (c *core) every(ctx context.Context, wg *sync.WaitGroup, d time.Duration, now bool, exec func(context.Context)) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := c.clock.NewTicker(d)
		defer t.Stop()
		if now {
			exec(ctx)
		}
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.Chan():
			}
			exec(ctx)
		}
	}()
}

// recover, deferred in a goroutine the engine starts or a call it serves,
// turns a panic into an error log with the stack, so one bad event never
// takes the process down (in embedded mode that would lose everything).
func (c *core) recover(op string, args ...any) {
	if v := recover(); v != nil {
		c.panicked(op, v, args...)
	}
}

// panicked logs and counts a recovered panic.
func (c *core) panicked(op string, v any, args ...any) {
	LogPanic(c.log, c.metrics.Panicked, op, v, args...)
}

// holdLease takes the named per-question lease for ttl and renews it every
// ttl/3 until release is called, so a replica that dies hands the work over
// within about ttl while a live one keeps it however long the work takes.
// ok is false when another holder has it.
func (c *core) holdLease(ctx context.Context, name string, ttl time.Duration) (release func(), ok bool, err error) {
	lease, ok, err := c.store.AcquireLease(ctx, name, c.holder(), ttl)
	if err != nil || !ok {
		return nil, ok, err
	}
	end := c.keepLease(ctx, lease, ttl)
	return func() { end(true) }, true, nil
}

// keepLease renews a lease taken for ttl every ttl/3 until end is called;
// end gives the lease up when release is set, and otherwise leaves it to
// lapse within ttl. No goroutine waits meanwhile: a timer runs each renewal,
// so the common lease, given up long before its first renewal (a message
// posted in milliseconds), costs a timer and nothing more.
func (c *core) keepLease(ctx context.Context, lease Lease, ttl time.Duration) (end func(release bool)) {
	var (
		mu      sync.Mutex // held by a renewal, and by end: none runs after end
		stopped bool
		t       clockwork.Timer
	)
	renew := func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		if _, err := c.store.RenewLease(context.WithoutCancel(ctx), lease, ttl); err != nil {
			c.log.Warn("renew lease", "lease", lease.Name, "err", err)
		}
		t.Reset(ttl / 3)
	}
	mu.Lock()
	t = c.clock.AfterFunc(ttl/3, renew)
	mu.Unlock()
	return func(release bool) {
		mu.Lock()
		stopped = true
		t.Stop()
		mu.Unlock()
		if release {
			_ = c.store.ReleaseLease(context.WithoutCancel(ctx), lease)
		}
	}
}

// Nonce is a random name part, unique to its call: what keeps two holders
// of leases given the same name apart (two engines, two pollers).
func Nonce() string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// holder names one hold of a lease by this replica: unique to the hold, so
// no other hold — on another replica or on this one — can take the lease
// while it runs.
func (c *core) holder() string {
	name := c.replica
	if name == "" {
		name = fmt.Sprintf("engine-%p", c)
	}
	return fmt.Sprintf("%s/%s/%d", name, c.nonce, c.attempts.Add(1))
}

// ending is what a channel with caps needs to show the end of rec in
// place k.
func ending(rec Record, res askbridge.Result, caps Capabilities, k int) Ending {
	rec.Result = &res
	return Ending{
		Plan:     rec.PlanFor(k, caps),
		Outcome:  res.Outcome(),
		Status:   StatusLine(rec.Request, res),
		Question: rec,
	}
}
