package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/internal/jsontree"
	"github.com/askbridge/askbridge/internal/retry"
	"github.com/askbridge/askbridge/locale"
)

// intakeParams configures the intake.
type intakeParams struct {
	// resolve resolves the names a request gives, resolveLadder those of
	// a route's own ladder (EngineConfig.Resolve, ResolveLadder).
	resolve, resolveLadder Resolver
	// concurrency bounds the entries handled at once; readBlock is how
	// long one read of the stream waits for entries.
	concurrency int
	readBlock   time.Duration
	// maxPerAgent caps the pending questions of one agent (0: no cap).
	maxPerAgent int
	// leaseTTL is the life of the delivery lease a create takes.
	leaseTTL time.Duration
	// standing turns standing answers on; standingMax caps an offer
	// (EngineConfig.Standing, StandingMax).
	standing    bool
	standingMax time.Duration
	// created is told the deadline of each question created (the
	// sweeper's soon).
	created func(deadline time.Time)
}

// intake carries requests from the stream to people: it validates, routes
// and stores each ask and delivers it, and handles cancels and the answers
// given in the agent's own client (agentplace.go). An entry is
// acknowledged once handled; one left unacknowledged (Redis trouble, a
// replica that died) is handled again, by this replica or another.
type intake struct {
	*core
	intakeParams
	store   intakeStore
	deliver *delivery
	// acks carries the entries handled to ackAll: one alone, or the
	// entries of one read shown together.
	acks chan []string
	// batch is the store when it creates in batches: the plain asks of
	// one read are then created in one call (takeBatch). creates carries
	// the questions of the other requests handled at once to it together.
	batch   BatchCreator
	creates *groupCommit[*CreateCall]
	// submit is the one path every answer takes (Engine.submit), for
	// the answer entries.
	submit func(ctx context.Context, rec Record, a Answer) (Submitted, error)
}

func newIntake(c *core, d *delivery, p intakeParams) *intake {
	if p.created == nil {
		p.created = func(time.Time) {}
	}
	in := &intake{core: c, intakeParams: p, store: c.store, deliver: d, acks: make(chan []string, max(p.concurrency, 1))}
	if bc, ok := c.store.(BatchCreator); ok {
		in.batch = bc
		in.creates = &groupCommit[*CreateCall]{timeout: 10 * time.Second, run: func(ctx context.Context, calls []*CreateCall) error {
			in.createBatch(ctx, bc, calls)
			return nil
		}}
	}
	return in
}

// intakeStore is the store as the intake sees it: the requests stream
// and the creates, the question an answer entry answers, and the
// standing answers a request may be answered from.
type intakeStore interface {
	Requests
	Lookup(ctx context.Context, id string) (q Record, found bool, err error)
	// The use of a standing answer at intake (ask-user.md §9).
	PeekStanding(ctx context.Context, agent, key string, now time.Time) (StandingAnswer, bool, error)
	UseStanding(ctx context.Context, agent, key, gen, shape, token string, now time.Time) (bool, StandingAnswer, error)
	Conclude(ctx context.Context, q NewQuestion, res askbridge.Result, now time.Time) (EndResult, error)
}

// create stores a new question and, unless holder is "", takes its
// delivery lease for holder, with the questions of the other requests
// handled at the same moment when the store creates in batches: a burst of
// requests costs one round trip per batch, not one per request.
func (in *intake) create(ctx context.Context, q NewQuestion, holder string) (created bool, existing Record, lease Lease, err error) {
	if in.creates == nil {
		if out := in.calls.screen(ctx, []NewQuestion{q})[0]; out != nil {
			return false, out.rec, Lease{}, out.err
		}
		return in.store.CreateHolding(ctx, q, holder, in.leaseTTL)
	}
	call := &CreateCall{Question: q, Holder: holder, TTL: in.leaseTTL}
	if err := in.creates.do(ctx, call); err != nil {
		return false, Record{}, Lease{}, err
	}
	return call.Created, call.Existing, call.Lease, call.Err
}

// createBatch screens the callbacks of the questions of calls, all at
// once, answers the calls of those refused or not registered itself, and
// creates the others in one batch.
func (in *intake) createBatch(ctx context.Context, bc BatchCreator, calls []*CreateCall) {
	qs := make([]NewQuestion, len(calls))
	for i, c := range calls {
		qs[i] = c.Question
	}
	outs := in.calls.screen(ctx, qs)
	rest := make([]*CreateCall, 0, len(calls))
	for i, c := range calls {
		if out := outs[i]; out != nil {
			c.Created, c.Existing, c.Lease, c.Err = false, out.rec, Lease{}, out.err
			continue
		}
		rest = append(rest, c)
	}
	if len(rest) > 0 {
		bc.CreateHoldingBatch(ctx, rest)
	}
}

// start reads the requests stream until ctx is done and handles the
// entries of each read together (takeBatch), at most concurrency entries
// at once; it waits for the entries in hand before it is done.
func (in *intake) start(ctx context.Context, wg *sync.WaitGroup) {
	wg.Add(1)
	go func() { defer wg.Done(); in.run(ctx) }()
}

// readBatch bounds the entries one read of the requests stream takes: a
// backlog is taken in readBatch entries per read, each read's asks
// created in one round trip, their events published in one and their
// entries acknowledged in one.
const readBatch = 128

func (in *intake) run(ctx context.Context) {
	sem := make(chan struct{}, in.concurrency)
	var inflight sync.WaitGroup
	acked := make(chan struct{})
	go func() { defer close(acked); in.ackAll(in.acks) }()
	defer func() {
		inflight.Wait()
		close(in.acks)
		<-acked
	}()
	// busy holds the entries this replica is handling: the store hands an
	// entry out again once it has been idle ClaimIdle, and a slow delivery
	// (a rate-limited burst) can take longer than that.
	var busyMu sync.Mutex
	busy := map[string]bool{}
	release := func(entry Entry) {
		busyMu.Lock()
		delete(busy, entry.StreamID)
		busyMu.Unlock()
		<-sem
		inflight.Done()
	}
	backoff := retry.Backoff{Min: 100 * time.Millisecond, Max: 5 * time.Second}
	backlog := false
	for ctx.Err() == nil {
		free, ok := in.room(ctx, sem, backlog)
		if !ok {
			return
		}
		want := min(free, readBatch)
		entries, err := in.store.ReadRequests(ctx, want, in.readBlock)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			in.log.Error("read requests", "err", err)
			retry.SleepOn(ctx, in.clock, backoff.Next())
			continue
		}
		backoff.Reset()
		// A full read means more are waiting: the next read waits for
		// room for a full one rather than taking a few.
		backlog = len(entries) >= want
		in.calls.read(entries)
		var batch []Entry
		for _, entry := range entries {
			busyMu.Lock()
			if busy[entry.StreamID] {
				busyMu.Unlock()
				continue
			}
			busy[entry.StreamID] = true
			busyMu.Unlock()
			sem <- struct{}{} // never waits: at most free entries come
			inflight.Add(1)
			batch = append(batch, entry)
		}
		if len(batch) > 0 {
			go in.takeBatch(batch, release)
		}
	}
}

// room waits until entries can be taken and returns how many: any free
// slot, or, while a backlog lasts, room for a full read (half the slots
// when concurrency is below two reads), so a backlog is read in full reads
// and not a few entries at a time as slots free up. False when ctx is done.
func (in *intake) room(ctx context.Context, sem chan struct{}, backlog bool) (int, bool) {
	need := 1
	if backlog {
		need = max(min(readBatch, cap(sem)/2), 1)
	}
	for {
		free := cap(sem) - len(sem)
		if free >= need || (free > 0 && len(sem) == 0) {
			return free, true
		}
		// Wait for a slot to free instead of reading entries we cannot
		// start.
		select {
		case sem <- struct{}{}:
			<-sem
		case <-ctx.Done():
			return 0, false
		}
		if free+1 < need {
			in.waitFree(ctx, sem, need)
		}
		if ctx.Err() != nil {
			return 0, false
		}
	}
}

// waitFree waits until need slots of sem are free or ctx is done, taking
// each slot as it frees and giving them all back at the end.
func (in *intake) waitFree(ctx context.Context, sem chan struct{}, need int) {
	took := 0
	defer func() {
		for range took {
			<-sem
		}
	}()
	for cap(sem)-len(sem)+took < need {
		select {
		case sem <- struct{}{}:
			took++
		case <-ctx.Done():
			return
		}
	}
}

// takeBatch handles the entries of one read, each released when handled.
// The plain asks (batchPlan) go together: their questions are created in
// one call of the store, their events published in one call, and those
// shown on a local channel (the web page: shown at once) acknowledged in
// one call once all of them are shown. Every other entry, and an ask
// whose create or events failed, is handled on its own, as before: one
// bad request gets its own refusal and the rest go on. An entry is
// acknowledged only once handled (its question created and shown, or its
// refusal written); one that is not stays pending for a later claim.
func (in *intake) takeBatch(entries []Entry, release func(Entry)) {
	now := in.clock.Now()
	var plans []*askPlan
	for _, entry := range entries {
		if p := in.safePlan(entry, now); p != nil {
			plans = append(plans, p)
			continue
		}
		in.spawn(entry, release, nil, func(ctx context.Context) error { return in.process(ctx, entry) })
	}
	if len(plans) == 0 {
		return
	}
	calls, pubErr := in.createAll(plans)
	errs := make([]error, len(plans))
	local := &ackGroup{acks: in.acks}
	for i, p := range plans {
		if calls == nil {
			// createAll panicked: every entry stays pending.
			errs[i] = pubErr
			continue
		}
		errs[i] = batchErr(calls[i], pubErr)
		if p.holder == "" && errs[i] == nil {
			local.left++
		}
	}
	for i, p := range plans {
		if err := errs[i]; err != nil {
			in.handled(p.entry, err)
			release(p.entry)
			continue
		}
		c := calls[i]
		var group *ackGroup
		if p.holder == "" {
			group = local
		}
		in.spawn(p.entry, release, group, func(ctx context.Context) error {
			return in.show(ctx, p, c.Created, c.Existing, c.Lease)
		})
	}
}

// batchErr is the error an ask of a batch ends with before it is shown:
// its create's, else, when it was created, the publishing of the batch's
// events.
func batchErr(c *CreateCall, pubErr error) error {
	if c.Err != nil {
		return fmt.Errorf("create question: %w", c.Err)
	}
	if c.Created {
		return pubErr
	}
	return nil
}

// safePlan is batchPlan with a panic recovered: the entry then goes on
// its own (where a panic again leaves it unacknowledged).
func (in *intake) safePlan(entry Entry, now time.Time) (p *askPlan) {
	defer func() {
		if v := recover(); v != nil {
			in.panicked("prepare request", v, "entry", entry.StreamID)
			p = nil
		}
	}()
	return in.batchPlan(entry, now)
}

// createAll creates the questions of plans in one call of the store and
// publishes the requested (and delivered) events of those created in one
// call: it returns each plan's create and the publishing's error. A panic
// is recovered and returned as the error, with no calls.
func (in *intake) createAll(plans []*askPlan) (calls []*CreateCall, pubErr error) {
	defer func() {
		if v := recover(); v != nil {
			in.panicked("create requests", v, "entries", len(plans))
			calls, pubErr = nil, fmt.Errorf("create requests: panic: %v", v)
		}
	}()
	ctx, cancel := context.WithTimeout(in.halt, 30*time.Second)
	defer cancel()
	calls = make([]*CreateCall, len(plans))
	for i, p := range plans {
		calls[i] = &CreateCall{Question: p.q, Holder: p.holder, TTL: in.leaseTTL}
	}
	in.createBatch(ctx, in.batch, calls)
	var evs []askbridge.Event
	var first time.Time
	for i, p := range plans {
		if calls[i].Err == nil && calls[i].Created {
			evs = append(evs, in.requested(p)...)
			if first.IsZero() || p.q.Deadline.Before(first) {
				first = p.q.Deadline
			}
		}
	}
	if len(evs) == 0 {
		return calls, nil
	}
	in.created(first)
	return calls, in.publish(ctx, evs...)
}

// spawn handles entry in a goroutine of its own with work, then
// acknowledges it (with group, when set: together with the others of
// the group) unless work failed, and releases it. A request in hand is
// finished even while stopping: its context is not the one that stops
// intake. A panic leaves the entry unacknowledged (another try comes
// after the claim idle time) and the process up.
func (in *intake) spawn(entry Entry, release func(Entry), group *ackGroup, work func(context.Context) error) {
	go func() {
		ok := false
		defer func() {
			if group != nil {
				group.done(entry.StreamID, ok)
			} else if ok {
				in.acks <- []string{entry.StreamID}
			}
			release(entry)
		}()
		ctx, cancel := context.WithTimeout(in.halt, in.deliver.sendBudget+30*time.Second)
		defer cancel()
		defer in.recover("handle request", "entry", entry.StreamID)
		ok = in.handled(entry, work(ctx))
	}()
}

// ackGroup gathers the entries of one read that are acknowledged together:
// once the last of them is done, the handled ones go to ackAll in one
// piece.
type ackGroup struct {
	acks chan<- []string
	mu   sync.Mutex
	left int
	ids  []string
}

// done counts one entry of the group done, handled (to acknowledge) or not.
func (g *ackGroup) done(id string, handled bool) {
	g.mu.Lock()
	if handled {
		g.ids = append(g.ids, id)
	}
	g.left--
	last, ids := g.left == 0, g.ids
	g.mu.Unlock()
	if last && len(ids) > 0 {
		g.acks <- ids
	}
}

// process handles one stream entry on its own. It returns an error only
// for infrastructure trouble (or a delivery another replica has).
func (in *intake) process(ctx context.Context, entry Entry) error {
	switch {
	case entry.Oversize > 0 && entry.Answer != nil:
		return in.oversizeAnswer(ctx, entry)
	case entry.Oversize > 0:
		return in.refuse(ctx, refusedID(entry), fmt.Errorf("request entry is %d bytes; at most %d", entry.Oversize, askbridge.MaxEntryBytes), in.clock.Now())
	case entry.Ask != nil:
		return in.ask(ctx, entry)
	case entry.Cancel != "":
		return in.cancel(ctx, entry)
	case entry.Answer != nil:
		return in.answer(ctx, entry)
	case entry.Revoke != nil:
		return in.revokeEntry(ctx, entry)
	default:
		in.log.Warn("malformed request entry", "entry", entry.StreamID, "problem", entry.Malformed)
		return in.publish(ctx, askbridge.Event{Kind: askbridge.EventRejected, ID: entry.StreamID, Error: entry.Malformed})
	}
}

// handled logs how an entry's handling ended and reports whether it is
// to be acknowledged: not when Redis failed, nor when another replica is
// delivering it or this one is stopping (it stays pending and comes back).
func (in *intake) handled(entry Entry, err error) bool {
	switch {
	case errors.Is(err, errDelivering):
		in.log.Debug("request is being delivered by another replica", "entry", entry.StreamID)
		return false
	case errors.Is(err, errStopping):
		in.log.Info("stopping: request handed back to another replica", "entry", entry.StreamID)
		return false
	case err != nil:
		in.log.Error("handle request", "entry", entry.StreamID, "err", err)
		return false
	}
	return true
}

// maxAckBatch bounds the entries one AckRequest call acknowledges.
const maxAckBatch = 256

// ackAll acknowledges the entries handled, as they come: alone when they
// come one by one, and together, in one call, the entries of one read
// shown together and those that finished while the previous call was on
// its way (a burst costs one XACK and one XDEL per batch, not per entry).
// It returns once ids is closed and drained. An acknowledgement that fails
// leaves its entries pending: they come back after the claim idle time and
// are found handled.
func (in *intake) ackAll(ids <-chan []string) {
	for first := range ids {
		batch := first
	more:
		for len(batch) < maxAckBatch {
			select {
			case next, ok := <-ids:
				if !ok {
					break more
				}
				batch = append(batch, next...)
			default:
				break more
			}
		}
		if err := in.store.AckRequest(in.halt, batch...); err != nil {
			in.log.Error("ack requests", "entries", len(batch), "err", err)
		}
	}
}

// cancel ends a question as cancelled. An id that cannot be a question id
// is refused (acknowledged, with a rejected event). A cancel that comes
// before its question exists (both entries queued, handled concurrently)
// leaves the cancelled result in the question's place, so the ask that
// follows finds its id ended and shows nothing; the agent gets the
// cancelled result either way.
func (in *intake) cancel(ctx context.Context, entry Entry) error {
	id := entry.Cancel
	if !askbridge.ValidRequestID(id) {
		in.log.Warn("cancel with an invalid question id", "entry", entry.StreamID)
		return in.publish(ctx, askbridge.Event{Kind: askbridge.EventRejected, ID: entry.StreamID, Error: "cancel: not a question id: " + quoteShort(id)})
	}
	res := askbridge.NoAnswer(id, askbridge.ReasonCancelled, "")
	for range 2 {
		r, err := in.end(ctx, id, res)
		if err != nil || r.Found {
			return err
		}
		now := in.clock.Now()
		t, err := in.reject(ctx, id, res.Stamp(now, now), now)
		if err != nil {
			return fmt.Errorf("cancel before ask: %w", err)
		}
		if t.Won {
			in.log.Info("cancel came before its question; the question will not be shown", "question", id)
			return in.publish(ctx, askbridge.Event{Kind: askbridge.EventCancelled, ID: id, At: now})
		}
		// The ask was created between the two calls: end it.
	}
	return nil
}

// quoteShort quotes s for a log or an event, cut to 64 bytes.
func quoteShort(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return fmt.Sprintf("%q", s)
}

// askPlan is an ask validated and routed, ready to create: the question
// and how its create takes the delivery lease (creator).
type askPlan struct {
	entry  Entry
	q      NewQuestion
	holder string
	shown  []MessageRef
}

// prepare decodes, validates and routes the ask of entry, received at
// now: the plan to create, or the id its refusal goes to and why. It
// makes no call to Redis.
func (in *intake) prepare(entry Entry, now time.Time) (p *askPlan, id string, refusal error) {
	req, err := askbridge.DecodeRequestWith(entry.Ask, jsontree.Decode)
	if err != nil {
		return nil, refusedID(entry), err
	}
	id = req.ID
	if id == "" {
		id = entry.StreamID
	}
	places, routeLocale, err := in.checked(&req)
	if err != nil {
		return nil, id, err
	}
	// The catalog is decided once, here, and stored with the request, so
	// every replica shows and finishes the question in the same words.
	req.Locale = locale.Resolve(req.Locale, routeLocale, in.locale)
	deadline := now.Add(time.Duration(req.TimeoutSeconds) * time.Second)
	holder, shown := in.creator(places[0].Target, id)
	q := NewQuestion{
		ID: id, Entry: entry.StreamID, Request: req, Target: places[0].Target, Answerers: places[0].Answerers,
		Places: places, Created: now, Deadline: deadline, Timers: timersOf(id, req, now), Shown: shown,
	}
	return &askPlan{entry: entry, q: q, holder: holder, shown: shown}, id, nil
}

// batchPlan is the plan of entry when it is a plain ask that takeBatch
// creates with the others of its read: valid, with no standing answer to
// look up and no per-agent cap to count it against, on a store that
// creates in batches. Nil for any other entry, which is handled on its
// own (process).
func (in *intake) batchPlan(entry Entry, now time.Time) *askPlan {
	if in.batch == nil || entry.Ask == nil || entry.Oversize > 0 || in.maxPerAgent > 0 {
		return nil
	}
	p, _, refusal := in.prepare(entry, now)
	if refusal != nil || p.q.Request.Remember != nil {
		return nil
	}
	return p
}

// ask validates, routes, stores and delivers one request. It returns an
// error only for infrastructure trouble.
func (in *intake) ask(ctx context.Context, entry Entry) error {
	now := in.clock.Now()
	p, id, refusal := in.prepare(entry, now)
	if refusal != nil {
		return in.refuse(ctx, id, refusal, now)
	}
	req := p.q.Request
	if req.Remember != nil {
		if done, err := in.standingUse(ctx, entry, id, req, p.q.Places, now); err != nil || done {
			return err
		}
	}
	if refusal, err := in.admit(ctx, req, id, p.q.Deadline, now); err != nil || refusal != nil {
		if err != nil {
			return err
		}
		return in.refuse(ctx, id, refusal, now)
	}
	created, existing, lease, err := in.create(ctx, p.q, p.holder)
	if err != nil {
		return fmt.Errorf("create question: %w", err)
	}
	if created {
		in.created(p.q.Deadline)
		if err := in.publish(ctx, in.requested(p)...); err != nil {
			return err
		}
	}
	return in.show(ctx, p, created, existing, lease)
}

// requested logs the creation of p's question and returns its events:
// requested, then delivered for each message the create recorded itself
// (the web page lists it from now on, and may answer it at once), in
// order, before any answer's event.
func (in *intake) requested(p *askPlan) []askbridge.Event {
	q, now := p.q, p.q.Created
	first := q.Places[0].Target
	in.log.Info("question requested", "question", q.ID, "to", q.Request.To.String(), "places", len(q.Places))
	evs := []askbridge.Event{{Kind: askbridge.EventRequested, ID: q.ID, At: now, Platform: first.Platform, Chat: first.Chat}}
	for _, ref := range p.shown {
		evs = append(evs, askbridge.Event{Kind: askbridge.EventDelivered, ID: q.ID, At: now, Platform: ref.Platform, Chat: ref.Chat, Message: ref.Message})
	}
	return evs
}

// show delivers the question of p once its create is done (created, or
// existing when it was there already, with lease when the create took
// the delivery lease), or replays its result when it has ended.
func (in *intake) show(ctx context.Context, p *askPlan, created bool, existing Record, lease Lease) error {
	id, entry := p.q.ID, p.entry
	if !created {
		// A retried XADD or a redelivered entry: deliver only if the
		// question is still open and no replica has shown it yet.
		if existing.Status != askbridge.StatusPending {
			if in.maxPerAgent > 0 {
				if err := in.store.Unadmit(ctx, p.q.Request.Agent, id); err != nil {
					in.log.Warn("ended question left in its agent's count until its deadline", "question", id, "err", err)
				}
			}
			return in.replay(ctx, id, entry.StreamID)
		}
		// deliver goes on from the first part not posted, if any.
		in.log.Debug("question seen again while open", "question", id)
	}
	if created && p.holder == "" {
		lease = unleased
	}
	err := in.deliver.deliverAll(ctx, deliveryRecord(p.q, created, existing), 0, lease)
	if errors.Is(err, errDelivering) && !created && existing.Entry != "" && existing.Entry != entry.StreamID {
		// A second ask with the id (a retried XADD) while the first is
		// being shown: the entry that created the question stays pending
		// until it is shown, and is taken over should its replica die, so
		// this one is done.
		in.log.Debug("question asked again while it is being shown", "question", id, "entry", entry.StreamID)
		return nil
	}
	return err
}

// deliveryRecord is question q as its first delivery sees it, with the
// times the store keeps (those of the question that existed, when the
// create found one): the deadline goes with the delivery
// (Delivery.Until), and an email's answer link lives as long as it.
func deliveryRecord(q NewQuestion, created bool, existing Record) Record {
	rec := Record{ID: q.ID, Request: q.Request, Places: q.Places, Created: q.Created, Deadline: q.Deadline}
	if !created {
		rec.Created, rec.Deadline = existing.Created, existing.Deadline
	}
	return rec
}

// checked routes req to its places and checks what depends on them and on
// the bridge's settings (quorum, remember); an error is the refusal.
func (in *intake) checked(req *askbridge.Request) ([]askbridge.Place, string, error) {
	places, routeLocale, err := in.places(req)
	if err == nil {
		err = checkQuorum(*req, places)
	}
	if err == nil {
		err = in.checkRemember(*req)
	}
	return places, routeLocale, err
}

// admit counts question id against its agent's cap, when there is one;
// refusal says why it is over the cap.
func (in *intake) admit(ctx context.Context, req askbridge.Request, id string, deadline, now time.Time) (refusal, err error) {
	if in.maxPerAgent <= 0 {
		return nil, nil
	}
	admitted, pending, err := in.store.Admit(ctx, req.Agent, id, deadline, now, in.maxPerAgent)
	if err != nil {
		return nil, fmt.Errorf("admit question: %w", err)
	}
	if !admitted {
		return fmt.Errorf("%s %d pending questions, the most allowed (ASKUSER_MAX_PENDING_PER_AGENT=%d); ask again once one has ended",
			agentHas(req.Agent), pending, in.maxPerAgent), nil
	}
	return nil, nil
}

// creator is how question id is created for its first place, first: the
// holder of the delivery lease the create takes in the same step (a
// question that already existed takes it in deliver), "" for a local
// channel, whose first showing takes none (see Capabilities.Local); and
// the premade message the create records itself, if any.
func (in *intake) creator(first askbridge.Target, id string) (holder string, shown []MessageRef) {
	ch, ok := in.channels[first.Platform]
	if !ok || !ch.Capabilities().Local {
		return in.holder(), nil
	}
	if ref, ok := premadeRef(ch, first.Chat, id); ok {
		shown = []MessageRef{ref}
	}
	return "", shown
}

// timersOf lists the reminders and escalation steps of a request accepted
// at now: reminder n at n × remindEverySeconds (at most MaxReminders, all
// before the deadline), step k at its afterSeconds.
func timersOf(id string, req askbridge.Request, now time.Time) []Timer {
	var ts []Timer
	if every := req.RemindEverySeconds; every > 0 {
		for n := 1; n <= askbridge.MaxReminders && n*every < req.TimeoutSeconds; n++ {
			ts = append(ts, Timer{ID: id, Name: fmt.Sprintf("r%d", n), At: now.Add(time.Duration(n*every) * time.Second)})
		}
	}
	for k, st := range req.Escalate {
		ts = append(ts, Timer{ID: id, Name: stepTimer(k + 1), At: now.Add(time.Duration(st.AfterSeconds) * time.Second)})
	}
	return ts
}

// agentHas opens the refusal of a request over its agent's cap.
func agentHas(agent string) string {
	if agent == "" {
		return "requests without an agent name already have"
	}
	return "agent " + quoteShort(agent) + " already has"
}

// replay pushes the stored result of an ended question again when the
// agent took it and asks again with the same id (a re-run script, a
// retried XADD after its BLPOP returned): the same result, logged, rather
// than a request ignored and an agent that waits forever.
func (in *intake) replay(ctx context.Context, id, entry string) error {
	pushed, err := in.store.Replay(ctx, id, entry)
	if err != nil {
		return fmt.Errorf("replay result: %w", err)
	}
	if pushed {
		in.log.Info("question asked again after it ended: its result pushed again", "question", id)
	}
	return nil
}

// refusedID picks where the error result of a refused request goes: the id
// the agent asked for when it can be a key, else the stream entry id. The
// id is read from the top-level object as far as it parses, so a request
// that is cut short (an oversize entry's first bytes) or broken after its
// id still reaches the agent waiting on that id.
func refusedID(entry Entry) string {
	if id := askbridge.RequestIDOf(entry.Ask); askbridge.ValidRequestID(id) {
		return id
	}
	return entry.StreamID
}

func (in *intake) refuse(ctx context.Context, id string, cause error, now time.Time) error {
	res := askbridge.Refused(id, cause).Stamp(now, now)
	r, err := in.reject(ctx, id, res, now)
	if err != nil {
		return fmt.Errorf("reject request: %w", err)
	}
	if !r.Won {
		// A known id: the agent has had its result; if it took it and
		// asks again, it gets it again.
		return in.replay(ctx, id, "")
	}
	in.log.Info("request refused", "question", id, "error", cause.Error())
	in.metrics.Ended("", askbridge.OutcomeRejected, 0)
	return in.publish(ctx, askbridge.Event{Kind: askbridge.EventRejected, ID: id, At: now, Error: cause.Error()})
}

// places resolves where req is shown: the places of its `to` (step 0)
// and of each escalation step (step k), each with who may answer there
// (the request's answerers narrow each route's), and the locale of its
// first route. A request without escalation steps takes the default ladder
// of its first route, written into req; that ladder is the operator's, so
// its names are resolved with resolveLadder, which no policy on what a
// request may name binds (the request's own names are held to it). Two
// places that lead to one chat are refused, naming both.
func (in *intake) places(req *askbridge.Request) ([]askbridge.Place, string, error) {
	to := req.To
	if len(to) == 0 {
		to = askbridge.ToList{""}
	}
	var places []askbridge.Place
	var routeLocale string
	ladder := in.resolve // the request's own steps
	add := func(path string, names askbridge.ToList, step int, resolve Resolver) error {
		for i, name := range names {
			p := path
			if len(names) > 1 {
				p = fmt.Sprintf("%s[%d]", path, i)
			}
			r, err := resolve(name)
			if err != nil {
				if len(names) > 1 || step > 0 {
					// The resolver names the field "to"; here it is p.
					return fmt.Errorf("%s: %s", p, strings.TrimPrefix(err.Error(), "to: "))
				}
				return err
			}
			if _, ok := in.channels[r.Target.Platform]; !ok {
				return fmt.Errorf("%s: platform %q is not enabled on this bridge", p, r.Target.Platform)
			}
			if step > 0 && r.Target.Platform == askbridge.PlatformMCP {
				return fmt.Errorf("%s: %q is the agent's own client, which only the agent shows a question in: a step's places are shown later, by the bridge", p, name)
			}
			for _, prev := range places {
				if prev.Target == r.Target {
					return fmt.Errorf("%s (%s) leads to %s, as %s does: list each place once", p, name, r.Target, quoteShort(prev.Name))
				}
			}
			answerers, err := narrow(req.Answerers, r.Answerers, r.Target)
			if err != nil {
				return err
			}
			if len(places) == 0 {
				routeLocale = r.Locale
				if len(req.Escalate) == 0 && len(r.Escalate) > 0 {
					req.Escalate, ladder = r.Escalate, in.resolveLadder
				}
			}
			if name == "" {
				name = r.Target.String()
			}
			places = append(places, askbridge.Place{Name: name, Target: r.Target, Answerers: answerers, Step: step, Links: r.Links})
		}
		return nil
	}
	if err := add("to", to, 0, in.resolve); err != nil {
		return nil, "", err
	}
	for k, st := range req.Escalate {
		if st.AfterSeconds >= req.TimeoutSeconds {
			// A route's ladder is checked against this request's timeout.
			return nil, "", fmt.Errorf("escalate[%d].afterSeconds (%d) must be below timeoutSeconds (%d)", k, st.AfterSeconds, req.TimeoutSeconds)
		}
		if err := add(fmt.Sprintf("escalate[%d].to", k), st.To, k+1, ladder); err != nil {
			return nil, "", err
		}
	}
	return places, routeLocale, nil
}

// narrow is who may answer in a place: the route's answerers (allowed;
// empty is anyone there) narrowed by the request's.
func narrow(req, allowed []string, target askbridge.Target) ([]string, error) {
	if len(req) == 0 {
		return allowed, nil
	}
	if len(allowed) == 0 {
		return req, nil
	}
	var both []string
	for _, a := range req {
		if slices.Contains(allowed, a) {
			both = append(both, a)
		}
	}
	if len(both) == 0 {
		return nil, fmt.Errorf("answerers: none of them may answer on %s", target)
	}
	return both, nil
}
