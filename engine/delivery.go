package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/internal/retry"
)

// delivery shows questions in their places: the intake delivers a new
// question's first places, the pinger an escalation step's. It is not a
// component (it runs nothing of its own); each of the two holds one.
type delivery struct {
	*core
	deliveryParams
	store deliveryStore
}

// deliveryParams bound one delivery.
type deliveryParams struct {
	// sendAttempts and sendBudget bound the tries of one delivery.
	sendAttempts int
	sendBudget   time.Duration
	// leaseTTL is the life of the delivery lease, renewed while a replica
	// delivers: one that dies hands the question over within about that.
	leaseTTL time.Duration
}

// deliveryStore is the store as a delivery sees it: the delivery lease,
// the question, and the messages a delivery records.
type deliveryStore interface {
	AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (lease Lease, ok bool, err error)
	Get(ctx context.Context, id string) (q Record, found bool, err error)
	Messages(ctx context.Context, id string) ([]MessageRef, error)
	AddMessage(ctx context.Context, id string, ref MessageRef) (askbridge.Status, error)
	PlaceFailed(ctx context.Context, id string, place int, reason string, count int) (failed []int, status askbridge.Status, err error)
	IndexInChat(ctx context.Context, id string, t askbridge.Target, created time.Time) error
}

// publishingRecorder is a store that records a message, gives up the
// delivery lease that covered its posting (release, when its Name is set)
// and publishes evs in one round trip (the store's AddMessagePublishing):
// the last part of a prompt needs no release of its own, nor a part its
// own round trip for its delivered event. A call that fails leaves the
// lease to its holder; published says whether evs went out.
type publishingRecorder interface {
	AddMessagePublishing(ctx context.Context, id string, ref MessageRef, release Lease, evs []askbridge.Event) (status askbridge.Status, published bool, err error)
}

func newDelivery(c *core, p deliveryParams) *delivery {
	return &delivery{core: c, deliveryParams: p, store: c.store}
}

// deliverAll shows question rec in every place of step at once (the
// places of `to` for step 0), each under its own delivery lease, with what
// its state adds (rec's votes, who has seen it); created is the lease
// Create took for place 0, if any. It returns the first infrastructure
// error, after every place has had its try.
func (d *delivery) deliverAll(ctx context.Context, rec Record, step int, created Lease) error {
	id, places := rec.ID, rec.Places
	var ks []int
	for k, p := range places {
		if p.Step == step {
			ks = append(ks, k)
		}
	}
	if len(ks) == 1 {
		return d.deliver(ctx, rec, ks[0], created)
	}
	errs := make([]error, len(ks))
	var wg sync.WaitGroup
	for i, k := range ks {
		wg.Go(func() {
			defer d.recover("deliver to a place", "question", id, "place", k)
			l := Lease{}
			if k == 0 {
				l = created
			}
			errs[i] = d.deliver(ctx, rec, k, l)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// deliver shows a question, holding a per-question lease so two replicas
// never post it twice, retrying temporary failures and rate limits, and
// ending it as undeliverable when the platform refuses for good.
//
// created is the delivery lease Create took when this call created the
// question (unleased for a local channel, Token 0 when it existed): then no
// message can exist yet, and a question that ends before or while it is
// posted is caught by the status AddMessage returns, so nothing is read
// first.
func (d *delivery) deliver(ctx context.Context, rec Record, k int, created Lease) error {
	lease, err := d.lease(ctx, rec.ID, k, created)
	if err != nil {
		return err
	}
	var s *sending
	if lease != unleased {
		end := d.keepLease(ctx, lease, d.leaseTTL)
		// Released when done, so a repeat of the request is handled at
		// once: by the record of the last part when the store could, else
		// here.
		defer func() { end(s == nil || !s.released) }()
	}
	target := rec.Places[k].Target
	if rec.Places[k].Step > 0 {
		// The create indexed the places shown at once; a step's are
		// indexed as it is taken, before its prompt is out, so a tap on
		// the prompt that beats its record finds the question.
		if err := d.store.IndexInChat(ctx, rec.ID, target, rec.Created); err != nil {
			return fmt.Errorf("index the step's chat: %w", err)
		}
	}
	ch := d.channels[target.Platform]
	s = &sending{
		d: d, id: rec.ID, places: rec.Places, k: k, target: target, ch: ch,
		plan:     d.withLink(rec, k, rec.PlanFor(k, ch.Capabilities())),
		deadline: d.clock.Now().Add(d.sendBudget),
		until:    rec.Deadline,
		log:      d.log.With("question", rec.ID, "platform", target.Platform),
		last:     -1,
	}
	if pc, ok := ch.(PartCounter); ok && lease != unleased {
		if _, ok := d.store.(publishingRecorder); ok {
			s.lease, s.last = lease, pc.Parts(s.plan)-1
		}
	}
	// The message the create recorded, for a question just created for a
	// local channel that names it in advance (Premade).
	if ref, ok := premadeRef(ch, target.Chat, rec.ID); ok && lease == unleased && k == 0 {
		s.premade = &ref
	}
	if created.Token == 0 {
		from, done, err := d.resume(ctx, rec.ID, rec.Places, k, s.plan, s.deadline)
		if err != nil || done {
			return err
		}
		s.from = from
	}
	return s.run(ctx)
}

// lease is the delivery lease of place k of question id: created, the one
// the create took, when there is one; else one taken now. errDelivering
// when another replica holds it.
func (d *delivery) lease(ctx context.Context, id string, k int, created Lease) (Lease, error) {
	if created.Token != 0 {
		return created, nil
	}
	lease, ok, err := d.store.AcquireLease(ctx, placeLease(id, k), d.holder(), d.leaseTTL)
	if err != nil {
		return Lease{}, fmt.Errorf("delivery lease: %w", err)
	}
	if !ok {
		// Another replica is delivering it: leave the entry
		// unacknowledged, so it is claimed again should that replica die
		// mid-delivery.
		return Lease{}, errDelivering
	}
	return lease, nil
}

// sending is the delivery of a question to one place, across its tries.
type sending struct {
	d        *delivery
	id       string
	places   []askbridge.Place
	k        int
	target   askbridge.Target
	ch       Channel
	plan     Plan
	premade  *MessageRef
	deadline time.Time
	// until is the question's deadline.
	until time.Time
	// from is the first part not posted yet.
	from int
	// lease is the delivery lease the record of part last gives up
	// (publishingRecorder); last is -1 when no record gives it up.
	lease Lease
	last  int
	// released is set once a record gave the lease up.
	released bool
	log      *slog.Logger
}

// tried is what one Send did: the parts it posted, and why it stopped
// (each of recordErr, ended and stopping says the engine stopped it; err is
// Send's own error).
type tried struct {
	posted    int
	recordErr error
	ended     bool
	stopping  bool
	err       error
}

// run tries to post the parts not posted yet until every one is out, the
// platform refuses for good, or the tries or the budget run out.
func (s *sending) run(ctx context.Context) error {
	d := s.d
	backoff := retry.Backoff{Min: 500 * time.Millisecond, Max: 30 * time.Second}
	var lastReason string
	for attempt := 1; attempt <= d.sendAttempts; attempt++ {
		t := s.try(ctx)
		switch {
		case t.recordErr != nil:
			return t.recordErr
		case t.ended:
			return d.finishLate(ctx, s.id)
		case t.stopping:
			return errStopping
		case t.err == nil:
			s.log.Info("question delivered", "messages", t.posted, "from", s.from-t.posted)
			return nil
		}
		kind, wait, reason := Classify(t.err)
		lastReason = reason
		d.metrics.PlatformError(s.target.Platform, kind)
		if kind == Permanent {
			s.log.Warn("question undeliverable", "reason", reason)
			return d.undeliverable(ctx, s.id, s.places, s.k, reason)
		}
		if t.posted > 0 {
			// Progress: the next try goes on from the first part not out.
			backoff.Reset()
		}
		if kind == RateLimited {
			d.metrics.RetryAfter(s.target.Platform, wait)
		} else {
			wait = backoff.Next()
		}
		if d.clock.Now().Add(wait).After(s.deadline) {
			break
		}
		if d.stopping.Err() != nil {
			return errStopping
		}
		s.log.Info("send failed, retrying", "attempt", attempt, "from", s.from, "wait", wait, "reason", reason)
		if !retry.SleepOn(ctx, d.clock, wait) {
			return ctx.Err()
		}
	}
	return d.undeliverable(ctx, s.id, s.places, s.k, "the platform kept refusing: "+lastReason)
}

// try makes one Send from the first part not posted, recording each
// message as the channel hands it back.
func (s *sending) try(ctx context.Context) tried {
	var t tried
	t.err = s.ch.Send(ctx, Delivery{Chat: s.target.Chat, Place: s.k, Until: s.until, Plan: s.plan, From: s.from, Sent: func(ref MessageRef) bool {
		return s.sent(ctx, &t, ref)
	}})
	if t.posted > 0 {
		s.d.metrics.Sent(s.target.Platform, t.posted)
	}
	return t
}

// sent records message ref that Send just posted, notes in t what
// happened, and reports whether Send goes on with the next part.
func (s *sending) sent(ctx context.Context, t *tried, ref MessageRef) bool {
	d := s.d
	ref.Place = s.k
	status, err := askbridge.StatusPending, error(nil)
	premade := s.premade != nil && ref.Same(*s.premade) && ref.Part == s.premade.Part
	// A premade message's delivered event went out with the question's
	// requested event (intake); any other's goes out with its record
	// where the store can (publishingRecorder), else once it is recorded.
	published := premade
	if !premade {
		var release Lease
		if ref.Part == s.last && !s.released {
			release = s.lease
		}
		ev := d.deliveredEvent(s.id, ref)
		status, published, err = d.record(ctx, s.id, ref, s.deadline, release, &ev)
		if err == nil && release.Name != "" {
			s.released = true
		}
	}
	if err != nil {
		t.recordErr = fmt.Errorf("record message: %w", err)
		return false
	}
	if status != askbridge.StatusPending {
		// Ended while it was being posted: post no more, and finish what
		// is out (the finisher that won the end may have listed the
		// messages before this one).
		t.ended = true
		return false
	}
	t.posted++
	s.from = ref.Part + 1
	if !published {
		d.delivered(ctx, s.id, ref)
	}
	if d.stopping.Err() != nil {
		// Stopping: no new part is started here; another replica goes on
		// from the next one (nothing, if this was the last).
		t.stopping = true
		return false
	}
	return true
}

// deliveredEvent is the event that message ref of question id is out.
func (d *delivery) deliveredEvent(id string, ref MessageRef) askbridge.Event {
	return askbridge.Event{Kind: askbridge.EventDelivered, ID: id, At: d.clock.Now(), Platform: ref.Platform, Chat: ref.Chat, Message: ref.Message}
}

// delivered publishes that message ref of question id is out. An event
// that cannot be published is logged, not retried: the message is
// recorded, which is what the delivery promises.
func (d *delivery) delivered(ctx context.Context, id string, ref MessageRef) {
	if err := d.publish(ctx, d.deliveredEvent(id, ref)); err != nil {
		d.log.Warn("publish a delivered event", "question", id, "message", ref.Message, "err", err)
	}
}

// premadeRef is the message that shows question id in chat on ch, when ch
// is a local channel that names it in advance (Premade): the create
// records it (ask), and so the delivery of the question just created does
// not (deliver).
func premadeRef(ch Channel, chat, id string) (MessageRef, bool) {
	p, ok := ch.(Premade)
	if !ok || !ch.Capabilities().Local {
		return MessageRef{}, false
	}
	return p.Premade(chat, id), true
}

// unleased stands for the delivery lease of a question just created for a
// local channel (Capabilities.Local), which takes none: deliver goes ahead
// as the creator, with nothing to renew or release.
var unleased = Lease{Token: -1}

// placeLease names the delivery lease of place k of question id (the
// store keeps it in the question's slot): "deliver:<id>" for the first
// place, as a question with one place always had, "deliver<k>:<id>" for
// the others.
func placeLease(id string, k int) string {
	if k == 0 {
		return "deliver:" + id
	}
	return fmt.Sprintf("deliver%d:%s", k, id)
}

// undeliverable handles a place that cannot be reached. A question with one
// place ends undeliverable, as always. With several, the place's failure is
// an event (naming it) while the question stays open elsewhere; it ends
// undeliverable once every place of the request's `to` has failed. A place
// of an escalation step never ends it.
func (d *delivery) undeliverable(ctx context.Context, id string, places []askbridge.Place, k int, reason string) error {
	count := 0
	for _, p := range places {
		if p.Step == 0 {
			count++
		}
	}
	if len(places) == 1 {
		_, err := d.end(ctx, id, askbridge.NoAnswer(id, askbridge.ReasonUndeliverable, reason))
		return err
	}
	p := places[k]
	failed, status, err := d.store.PlaceFailed(ctx, id, k, reason, count)
	if err != nil {
		return fmt.Errorf("record a place that failed: %w", err)
	}
	if err := d.publish(ctx, askbridge.Event{Kind: askbridge.EventUndeliverable, ID: id, Platform: p.Target.Platform, Chat: p.Target.Chat, To: p.Name, Error: reason}); err != nil {
		return err
	}
	d.metrics.Reached(askbridge.EventUndeliverable, p.Target.Platform)
	d.log.Warn("a place of the question cannot be reached; it stays open elsewhere", "question", id, "place", p.Name, "reason", reason)
	if status != askbridge.StatusPending || p.Step != 0 || len(failed) < count {
		return nil
	}
	var why []string
	for _, f := range failed {
		why = append(why, places[f].Name)
	}
	_, err = d.end(ctx, id, askbridge.NoAnswer(id, askbridge.ReasonUndeliverable, "no place could be reached ("+strings.Join(why, ", ")+"): "+reason))
	return err
}

// resume looks, under the delivery lease, at a question seen before: one
// that has ended is not shown (done), and one shown in part goes on from
// the first part not posted. Parts the platform has but the store does not
// (posted by a replica that died before recording them) are found, when
// the channel can look, and recorded instead of being posted again.
func (d *delivery) resume(ctx context.Context, id string, places []askbridge.Place, k int, plan Plan, until time.Time) (from int, done bool, err error) {
	target := places[k].Target
	rec, found, err := d.store.Get(ctx, id)
	if err != nil {
		return 0, false, fmt.Errorf("read question: %w", err)
	}
	if !found || rec.Status != askbridge.StatusPending {
		d.log.Info("question ended before it was shown", "question", id)
		return 0, true, nil
	}
	msgs, err := d.store.Messages(ctx, id)
	if err != nil {
		return 0, false, fmt.Errorf("list messages: %w", err)
	}
	for _, m := range msgs {
		if m.Place != k || !m.IsPrompt() || m.Platform != target.Platform {
			continue
		}
		// Recorded again: a replica that died between recording a
		// message and indexing it left it unfindable by a tap; a repeat
		// redoes the index writes.
		if _, err := d.store.AddMessage(ctx, id, m); err != nil {
			return 0, false, fmt.Errorf("record message again: %w", err)
		}
		if m.Part >= from {
			from = m.Part + 1
		}
	}
	posted, err := d.find(ctx, id, target, plan, from, rec.Created)
	if err != nil {
		return 0, false, err
	}
	for _, ref := range posted {
		ref.Place = k
		status, _, err := d.record(ctx, id, ref, until, Lease{}, nil)
		if err != nil {
			return 0, false, fmt.Errorf("record message found: %w", err)
		}
		if status != askbridge.StatusPending {
			return 0, true, d.finishLate(ctx, id)
		}
		d.delivered(ctx, id, ref)
		from = max(from, ref.Part+1)
	}
	return from, false, nil
}

// findSkew widens a lookup's window for the clocks of the replicas and the
// platform, which need not agree.
const findSkew = time.Minute

// find asks a Finder channel for the parts from on of a prompt posted
// since created that no replica recorded. A lookup that fails is logged
// and treated as finding nothing: the prompt is posted again rather than
// not at all, and a tap on a copy nobody recorded is still taken (adopted
// by the inbox).
func (d *delivery) find(ctx context.Context, id string, target askbridge.Target, plan Plan, from int, created time.Time) ([]MessageRef, error) {
	f, ok := d.channels[target.Platform].(Finder)
	if !ok {
		return nil, nil
	}
	found, err := f.Find(ctx, Lookup{Chat: target.Chat, Plan: plan, From: from, Since: created.Add(-findSkew)})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		d.log.Warn("could not look for parts already posted; posting them", "question", id, "platform", target.Platform, "err", err)
		return nil, nil
	}
	if len(found) > 0 {
		d.log.Info("found parts posted but not recorded; recording them", "question", id, "platform", target.Platform, "from", from, "found", len(found))
	}
	return found, nil
}

// record records a message just posted. The message is out: giving up
// would have the request retried and the prompt posted again, its first
// copy's buttons orphaned, so a store that cannot be reached is tried
// again, with backoff, until it answers or the send budget (until) is
// spent.
//
// release and ev, when set, go with the record where the store can
// (publishingRecorder): the lease given up, the event published (once:
// a try that published it is not repeated by the next); published says
// whether ev went out, else the caller publishes it.
func (d *delivery) record(ctx context.Context, id string, ref MessageRef, until time.Time, release Lease, ev *askbridge.Event) (status askbridge.Status, published bool, err error) {
	b := retry.Backoff{Min: 100 * time.Millisecond, Max: 5 * time.Second}
	for try := 1; ; try++ {
		var pub bool
		status, pub, err = d.add(ctx, id, ref, release, ev)
		if pub {
			published, ev = true, nil
		}
		if err == nil {
			if try > 1 {
				d.log.Info("message recorded after trying again", "question", id, "message", ref.Message, "tries", try)
			}
			return status, published, nil
		}
		wait := b.Next()
		if d.clock.Now().Add(wait).After(until) {
			return "", published, err
		}
		d.log.Warn("record a posted message; trying again", "question", id, "message", ref.Message, "err", err)
		if !retry.SleepOn(ctx, d.clock, wait) {
			return "", published, err
		}
	}
}

// add records message ref of question id, giving up release and
// publishing ev in the same step where the store can and they are set
// (publishingRecorder).
func (d *delivery) add(ctx context.Context, id string, ref MessageRef, release Lease, ev *askbridge.Event) (askbridge.Status, bool, error) {
	if pr, ok := d.store.(publishingRecorder); ok && (release.Name != "" || ev != nil) {
		var evs []askbridge.Event
		if ev != nil {
			evs = []askbridge.Event{*ev}
		}
		return pr.AddMessagePublishing(ctx, id, ref, release, evs)
	}
	status, err := d.store.AddMessage(ctx, id, ref)
	return status, false, err
}

// errStopping hands a request back (unacknowledged) as the engine stops.
var errStopping = errors.New("stopping: the request is handed back")

// finishLate edits the messages of a question that ended while it was
// being posted, the last one included.
func (d *delivery) finishLate(ctx context.Context, id string) error {
	rec, found, err := d.store.Get(ctx, id)
	if err != nil {
		return fmt.Errorf("read question: %w", err)
	}
	if found && rec.Result != nil {
		d.log.Info("question ended while it was shown; finishing its messages", "question", id)
		d.edits.finish(ctx, rec, *rec.Result)
	}
	return nil
}

// errDelivering means another replica holds the question's delivery lease.
var errDelivering = errors.New("another replica is delivering the question")
