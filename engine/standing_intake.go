package engine

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/askbridge/askbridge"
)

// checkRemember refuses a request's remember when standing answers are
// off, or when its longest offer is over the operator's cap.
func (in *intake) checkRemember(req askbridge.Request) error {
	r := req.Remember
	switch {
	case r == nil:
		return nil
	case !in.standing:
		return fmt.Errorf("remember: standing answers are not turned on on this bridge")
	case r.Longest() > in.standingMax:
		return fmt.Errorf("remember.offer: %d seconds is longer than this bridge keeps an answer (ASKUSER_STANDING_MAX=%s)",
			r.Offer[len(r.Offer)-1], in.standingMax)
	}
	return nil
}

// standingUse answers a request with remember from its standing answer,
// when one of the same shape stands and its keeper may answer one of the
// request's places (ask-user.md §9): the question is stored ended at once,
// nothing is shown, and done is true. The decision is the store's, once
// per question id (UseStanding), so a retried entry gets the same one.
func (in *intake) standingUse(ctx context.Context, entry Entry, id string, req askbridge.Request, places []askbridge.Place, now time.Time) (done bool, err error) {
	key, shape := req.Remember.Key, askbridge.Shape(req.Questions)
	s, found, err := in.store.PeekStanding(ctx, req.Agent, key, now)
	if err != nil {
		return false, fmt.Errorf("read standing answer: %w", err)
	}
	gen := ""
	if found && s.Shape == shape && keeperMayAnswer(s, places) {
		gen = s.Gen
	}
	used, s, err := in.store.UseStanding(ctx, req.Agent, key, gen, shape, id, now)
	if err != nil || !used {
		return false, err
	}
	res := askbridge.Answered(id, s.Answers, personPtr(s.By), askbridge.ViaStanding)
	res.Standing = s.Info()
	q := NewQuestion{ID: id, Entry: entry.StreamID, Request: req, Target: places[0].Target, Answerers: places[0].Answerers,
		Places: places, Created: now, Deadline: now}
	registered, err := in.calls.rejecting(ctx, id, now)
	if err != nil {
		return false, err
	}
	r, err := in.store.Conclude(ctx, q, res, now)
	if err != nil {
		return false, fmt.Errorf("store a question a standing answer answered: %w", err)
	}
	if !r.Won {
		return true, in.replay(ctx, id, entry.StreamID)
	}
	if registered {
		in.calls.ended(ctx, now, id)
	}
	in.log.Info("question answered by a standing answer", "question", id, "agent", req.Agent, "key", key)
	in.metrics.Standing(StandingEventUsed)
	in.metrics.Ended(places[0].Target.Platform, askbridge.OutcomeAnswered, 0)
	first := places[0].Target
	err = in.publish(ctx,
		askbridge.Event{Kind: askbridge.EventRequested, ID: id, At: now, Platform: first.Platform, Chat: first.Chat},
		askbridge.Event{Kind: askbridge.EventAnswered, ID: id, At: now, By: personLabel(s.By), Via: askbridge.ViaStanding, Agent: req.Agent, Key: key})
	in.noteUse(ctx, s, now)
	return true, err
}

// keeperMayAnswer reports whether the keeper of s may answer one of
// places: one whose answerers name them, or one open to anyone in the
// very chat the answer was kept in (who is in another chat is not known).
func keeperMayAnswer(s StandingAnswer, places []askbridge.Place) bool {
	who := personLabel(s.By)
	for _, p := range places {
		if slices.Contains(p.Answerers, who) || (len(p.Answerers) == 0 && p.Target == s.Target) {
			return true
		}
	}
	return false
}

// revoke handles a revoke entry: a malformed one is a rejected event; an
// unknown standing answer is acknowledged and nothing else.
func (in *intake) revokeEntry(ctx context.Context, entry Entry) error {
	r, err := askbridge.DecodeRevokeEntry(entry.Revoke)
	if err != nil {
		in.log.Warn("malformed revoke entry", "entry", entry.StreamID, "err", err)
		return in.publish(ctx, askbridge.Event{Kind: askbridge.EventRejected, ID: entry.StreamID, Error: "revoke: " + err.Error()})
	}
	_, err = in.revoke(ctx, r.Agent, r.Key, "", nil)
	return err
}
