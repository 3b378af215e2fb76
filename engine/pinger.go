package engine

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/locale"
)

// pingerParams configures the pinger.
type pingerParams struct {
	// interval is how often due timers are looked for, batch how many one
	// look takes, and hold how long a timer handed to this replica is
	// its own: one that dies while firing it leaves it to another replica
	// about hold later.
	interval time.Duration
	batch    int
	hold     time.Duration
	// budget bounds the work of one timer (posting a step's prompts).
	budget time.Duration
}

// pinger fires the reminders and escalation steps of open questions
// (ask-user.md §5). The timers live in Redis beside the deadlines; the store
// hands each due timer to one replica at a time, and the replica holds the
// question's timer lease while it fires, so two replicas never fire timers
// of one question at once. Firing is safe to repeat: a step's places are
// delivered under their delivery leases, going on from the parts already
// recorded (a replica that died mid-step leaves nothing doubled), and a
// reminder already recorded in a place is not posted there again. Each
// timer's event is published once (Store.FireOnce).
type pinger struct {
	*core
	pingerParams
	store   pingerStore
	deliver *delivery
	// busy bounds the timers fired at once.
	busy chan struct{}
	wg   sync.WaitGroup
	// firing holds, per question, the end of the timers this replica is
	// firing now: a timer of the same question handed out meanwhile (due
	// at once, or handed out again) waits for them here rather than for
	// the lease.
	mu     sync.Mutex
	firing map[string]chan struct{}
}

func newPinger(c *core, d *delivery, p pingerParams) *pinger {
	return &pinger{core: c, pingerParams: p, store: c.store, deliver: d, busy: make(chan struct{}, 64), firing: map[string]chan struct{}{}}
}

// pingerStore is the store as the pinger sees it: the timers, and the
// question a timer belongs to.
type pingerStore interface {
	Timers
	Get(ctx context.Context, id string) (Record, bool, error)
	Messages(ctx context.Context, id string) ([]MessageRef, error)
}

// local waits until this replica fires no timer of question id, then
// marks it firing; the returned func ends that. False when ctx is done.
func (p *pinger) local(ctx context.Context, id string) (func(), bool) {
	for {
		p.mu.Lock()
		busy, ok := p.firing[id]
		if !ok {
			done := make(chan struct{})
			p.firing[id] = done
			p.mu.Unlock()
			return func() {
				p.mu.Lock()
				delete(p.firing, id)
				p.mu.Unlock()
				close(done)
			}, true
		}
		p.mu.Unlock()
		select {
		case <-busy:
		case <-ctx.Done():
			return nil, false
		}
	}
}

// start looks for due timers every interval until ctx is done.
func (p *pinger) start(ctx context.Context, wg *sync.WaitGroup) {
	p.every(ctx, wg, p.interval, false, p.exec)
}

// wait returns when the timers being fired are done.
func (p *pinger) wait() { p.wg.Wait() }

// exec is one look: every timer due by now is fired in the background,
// a batch at a time, at most cap(busy) at once.
func (p *pinger) exec(ctx context.Context) {
	p.fireStanding(ctx)
	for {
		ts, err := p.store.DueTimers(ctx, p.clock.Now(), p.hold, p.batch)
		if err != nil {
			if ctx.Err() == nil {
				p.log.Error("read due timers", "err", err)
			}
			return
		}
		// The timers of one question are fired one after the other, in
		// the order they came due, under one hold of its lease.
		var order []string
		byID := map[string][]Timer{}
		for _, t := range ts {
			if byID[t.ID] == nil {
				order = append(order, t.ID)
			}
			byID[t.ID] = append(byID[t.ID], t)
		}
		for _, id := range order {
			select {
			case p.busy <- struct{}{}:
			case <-ctx.Done():
				return // the timers not started come back after hold
			}
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				defer func() { <-p.busy }()
				defer p.recover("fire timer", "question", id)
				// Like a request in hand, a timer in hand is finished
				// while stopping, within the stop grace.
				fctx, cancel := context.WithTimeout(p.halt, p.budget)
				defer cancel()
				p.fireAll(fctx, byID[id])
			}()
		}
		if len(ts) < p.batch {
			return
		}
	}
}

// timerRetry is how soon a timer comes back when another replica was
// firing a timer of the same question.
const timerRetry = time.Second

// fireAll fires the due timers ts of one question, in order, under the
// question's timer lease, once this replica fires no other timer of it.
// When another replica holds the lease (it fires another timer of the
// question) they come back timerRetry later; a timer that fails comes back
// after hold.
func (p *pinger) fireAll(ctx context.Context, ts []Timer) {
	id := ts[0].ID
	done, ok := p.local(ctx, id)
	if !ok {
		return // stopping: the timers come back after hold
	}
	defer done()
	release, ok, err := p.holdLease(ctx, "timer:"+id, p.hold)
	if err != nil || !ok {
		if err != nil {
			p.log.Warn("timer lease", "question", id, "err", err)
		}
		for _, t := range ts {
			if err := p.store.RetryTimer(ctx, t, p.clock.Now().Add(timerRetry)); err != nil {
				p.log.Warn("put a timer back", "question", id, "timer", t.Name, "err", err)
			}
		}
		return
	}
	defer release()
	for _, t := range ts {
		if err := p.fire(ctx, t); err != nil {
			p.log.Warn("fire timer; it comes back", "question", id, "timer", t.Name, "in", p.hold, "err", err)
			return
		}
	}
}

// fire fires one timer; the caller holds the question's timer lease. A
// timer of a question that has ended, or that someone has seen, is
// dropped. An error leaves the timer for a later try (by any replica).
func (p *pinger) fire(ctx context.Context, t Timer) error {
	rec, found, err := p.store.Get(ctx, t.ID)
	if err != nil {
		return fmt.Errorf("read question: %w", err)
	}
	// A timer fired and announced before (its firer died before removing
	// it, or it was handed out again while it was fired) is done: its work
	// is not redone in the places shown since.
	if found && rec.Status == askbridge.StatusPending && rec.Acknowledged == nil && !slices.Contains(rec.Fired, t.Name) {
		n, _ := strconv.Atoi(t.Name[1:])
		switch t.Name[0] {
		case 'e':
			err = p.escalate(ctx, rec, n, t.Name)
		case 'r':
			err = p.remind(ctx, rec, n, t.Name)
		default:
			p.log.Warn("unknown timer dropped", "question", t.ID, "timer", t.Name)
		}
		if err != nil {
			return err
		}
	}
	if err := p.store.TimerDone(ctx, t); err != nil {
		return fmt.Errorf("timer done: %w", err)
	}
	return nil
}

// escalate shows rec in the places of step k, with the line saying why,
// and announces it once.
func (p *pinger) escalate(ctx context.Context, rec Record, k int, name string) error {
	var places []askbridge.Place
	for _, pl := range rec.Places {
		if pl.Step == k {
			places = append(places, pl)
		}
	}
	if len(places) == 0 {
		return nil
	}
	if err := p.deliver.deliverAll(ctx, rec, k, Lease{}); err != nil {
		return err
	}
	return p.announce(ctx, rec, name, askbridge.EventEscalated, places)
}

// remind posts reminder n under the prompt in every place rec is shown in
// that has no reminder n yet, and announces it once.
func (p *pinger) remind(ctx context.Context, rec Record, n int, name string) error {
	refs, err := p.store.Messages(ctx, rec.ID)
	if err != nil {
		return fmt.Errorf("list messages: %w", err)
	}
	prompt := map[int]MessageRef{}
	done := map[int]bool{}
	for _, ref := range numberLegacyParts(refs, p.partsOf(rec)) {
		switch {
		case ref.IsPrompt() && ref.Part >= prompt[ref.Place].Part:
			prompt[ref.Place] = ref
		case ref.Part == ReminderPart(n):
			done[ref.Place] = true
		}
	}
	text := locale.For(rec.Request.Locale).Format("Reminder", map[string]any{
		"Left": HumanDuration(locale.For(rec.Request.Locale), rec.Deadline.Sub(p.clock.Now())),
	})
	var places []askbridge.Place
	for k := range rec.Places {
		ref, shown := prompt[k]
		if !shown {
			continue
		}
		places = append(places, rec.Places[k])
		if done[k] {
			continue
		}
		if err := p.remindIn(ctx, rec, k, n, ref, text); err != nil {
			return err
		}
	}
	if len(places) == 0 {
		return nil
	}
	return p.announce(ctx, rec, name, askbridge.EventReminded, places)
}

// remindIn posts reminder n in place k under prompt and records it. A
// place whose channel cannot post reminders, or that refuses for good, is
// skipped; rate limits are waited out.
func (p *pinger) remindIn(ctx context.Context, rec Record, k, n int, prompt MessageRef, text string) error {
	ch, ok := p.channels[prompt.Platform]
	if !ok {
		return nil
	}
	r, ok := ch.(Reminder)
	if !ok {
		return nil
	}
	var posted MessageRef
	err := PostOwn(ctx, func(ctx context.Context) error {
		var err error
		posted, err = r.Remind(ctx, prompt, text)
		return err
	})
	if err != nil {
		kind, _, reason := Classify(err)
		p.metrics.PlatformError(prompt.Platform, kind)
		if kind == Permanent {
			p.log.Warn("could not post a reminder", "question", rec.ID, "place", rec.Places[k].Name, "reason", reason)
			return nil
		}
		return fmt.Errorf("remind in %s: %w", rec.Places[k].Name, err)
	}
	posted.Part, posted.Place = ReminderPart(n), k
	status, _, err := p.deliver.record(ctx, rec.ID, posted, p.clock.Now().Add(p.budget), Lease{}, nil)
	if err != nil {
		return fmt.Errorf("record reminder: %w", err)
	}
	if status != askbridge.StatusPending {
		// Ended meanwhile: the finisher may have listed the messages
		// before this one.
		if err := r.Delete(ctx, posted); err != nil {
			p.log.Warn("delete a reminder of an ended question", "question", rec.ID, "err", err)
		}
	}
	return nil
}

// announce publishes a timer's event once, naming its places, and counts
// it per place.
func (p *pinger) announce(ctx context.Context, rec Record, name string, kind askbridge.EventKind, places []askbridge.Place) error {
	first, err := p.store.FireOnce(ctx, rec.ID, name)
	if err != nil {
		return fmt.Errorf("mark timer fired: %w", err)
	}
	if !first {
		return nil
	}
	names := make([]string, len(places))
	for i, pl := range places {
		names[i] = pl.Name
		p.metrics.Reached(kind, pl.Target.Platform)
	}
	to := strings.Join(names, ",")
	p.log.Info("question "+string(kind), "question", rec.ID, "timer", name, "to", to)
	return p.publish(ctx, askbridge.Event{Kind: kind, ID: rec.ID, To: to})
}
