package engine

import (
	"context"
	"fmt"
	"slices"

	"github.com/askbridge/askbridge"
)

// PlaceAt is the index of the place whose target is t, or -1.
func (r Record) PlaceAt(t askbridge.Target) int {
	for k, p := range r.Places {
		if p.Target == t {
			return k
		}
	}
	return -1
}

// MayAnswerIn reports whether p may answer the question in place k: anyone
// there when the place names no answerers, else only those named. A k
// that is not a place reads as the first place.
func (r Record) MayAnswerIn(p askbridge.Person, k int) bool {
	if k < 0 || k >= len(r.Places) {
		return r.MayAnswer(p)
	}
	a := r.Places[k].Answerers
	return len(a) == 0 || slices.Contains(a, p.Platform+":"+p.ID)
}

// placeOf finds the place of rec a message belongs to: the place whose
// chat it is in, else the place it was recorded for (a DM opened for a
// user), else the first place on its platform; -1 when none fits.
func (c *core) placeOf(ctx context.Context, rec Record, ref MessageRef) (int, error) {
	if len(rec.Places) <= 1 {
		return 0, nil
	}
	if k := rec.PlaceAt(askbridge.Target{Platform: ref.Platform, Chat: ref.Chat}); k >= 0 {
		return k, nil
	}
	if ref.Message != "" {
		refs, err := c.store.Messages(ctx, rec.ID)
		if err != nil {
			return -1, err
		}
		for _, m := range refs {
			if m.Same(ref) {
				return m.Place, nil
			}
		}
	}
	for k, p := range rec.Places {
		if p.Target.Platform == ref.Platform {
			return k, nil
		}
	}
	return -1, nil
}

// Acknowledge records that by, in place k of question id, has seen it
// (ask-user.md §5: the Seen button, a "seen" reply, the web page's Seen):
// reminders and escalation stop, every prompt gains "Seen by …" and loses
// its Seen button, and an acknowledged event is published. It never
// answers and never moves the deadline. It returns what to tell by: Seen
// when this call acknowledged, AlreadySeen when someone had, NotForYou for
// a person who may not answer there, Unknown for a question that offers no
// Seen, or how the question ended. An error is trouble reaching the store.
func (e *Engine) Acknowledge(ctx context.Context, id string, by askbridge.Person, k int) (Notice, error) {
	rec, found, err := e.store.Get(ctx, id)
	if err != nil {
		return "", fmt.Errorf("read question: %w", err)
	}
	if !found {
		return NoticeExpired, nil
	}
	return e.acknowledge(ctx, rec, by, k)
}

func (e *Engine) acknowledge(ctx context.Context, rec Record, by askbridge.Person, k int) (Notice, error) {
	switch {
	case rec.Status != askbridge.StatusPending && rec.Result != nil:
		return endedNotice(*rec.Result), nil
	case !rec.Request.Pings():
		return NoticeUnknown, nil
	case !rec.MayAnswerIn(by, k):
		return NoticeNotForYou, nil
	case rec.Acknowledged != nil:
		return NoticeAlreadySeen, nil
	}
	won, now, found, err := e.store.Acknowledge(ctx, rec.ID, by)
	if err != nil {
		return "", fmt.Errorf("acknowledge: %w", err)
	}
	switch {
	case !found:
		return NoticeExpired, nil
	case now.Status != askbridge.StatusPending && now.Result != nil:
		return endedNotice(*now.Result), nil
	case !won:
		return NoticeAlreadySeen, nil
	}
	where := ""
	if k >= 0 && k < len(now.Places) {
		where = now.Places[k].Name
	}
	e.metrics.Reached(askbridge.EventAcknowledged, by.Platform)
	e.log.Info("question acknowledged", "question", rec.ID, "by", by.Platform+":"+by.ID, "place", where)
	if err := e.publish(ctx, askbridge.Event{Kind: askbridge.EventAcknowledged, ID: rec.ID, By: by.Platform + ":" + by.ID, Platform: by.Platform, To: where}); err != nil {
		e.log.Warn("publish acknowledged event", "question", rec.ID, "err", err)
	}
	if !e.finisher.launch(func() { e.refresh(now) }, rec.ID) {
		e.log.Warn("too many edits under way; prompts keep their Seen button", "question", rec.ID)
	}
	return NoticeSeen, nil
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
func (c *core) refresh(rec Record) {
	ctx, cancel := context.WithTimeout(c.halt, c.finisher.timeout)
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
		now, found, err := c.store.Get(ctx, rec.ID)
		if err != nil {
			c.log.Warn("read a question after updating its prompts", "question", rec.ID, "err", err)
			return
		}
		if found && now.Status != askbridge.StatusPending && now.Result != nil {
			c.finisher.edit(ctx, now, *now.Result, updated)
		}
	}()
	shown := ""
	for range 5 {
		now, found, err := c.store.Get(ctx, rec.ID)
		if err != nil {
			c.log.Warn("read a question to update its prompts", "question", rec.ID, "err", err)
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
		refs, err := c.store.Messages(ctx, rec.ID)
		if err != nil {
			c.log.Warn("list messages to refresh", "question", rec.ID, "err", err)
			return
		}
		last := map[int]MessageRef{}
		for _, ref := range numberLegacyParts(refs, c.partsOf(now)) {
			if ref.IsPrompt() && ref.Part >= last[ref.Place].Part {
				last[ref.Place] = ref
			}
		}
		for k, ref := range last {
			if c.update(ctx, now, k, ref) {
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
func (c *core) update(ctx context.Context, rec Record, k int, ref MessageRef) bool {
	ch, ok := c.channels[ref.Platform]
	if !ok {
		return false
	}
	u, ok := ch.(Updater)
	if !ok {
		return false
	}
	plan := rec.PlanFor(k, ch.Capabilities())
	err := c.finisher.editMessage(ctx, ref, func(ctx context.Context) error { return u.Update(ctx, ref, plan) })
	if err != nil {
		_, _, reason := Classify(err)
		c.log.Warn("could not update a prompt; its end will", "question", rec.ID, "platform", ref.Platform, "reason", reason)
		return false
	}
	return true
}
