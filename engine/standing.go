package engine

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/textparse"
)

// Standing answers (ask-user.md §9): the offer recorded when a question
// with remember is answered with options only, the keep that makes the
// answer stand, its use at intake, its revoke, and its end. The store
// decides each step in one script (Standings); the engine publishes the
// events and calls the channels that show offers and standing answers
// (OfferShower, StandingShower), when they implement them.

// KeepResult says what became of a keep.
type KeepResult int

const (
	// KeepKept: the answer stands now.
	KeepKept KeepResult = iota + 1
	// KeepAgain: it was kept before (a second tap); nothing changed.
	KeepAgain
	// KeepNotYours: only the person who answered may keep it.
	KeepNotYours
	// KeepClosed: the offer has closed (15 minutes passed) or there is
	// none (the question was not offered, or is unknown).
	KeepClosed
	// KeepNoSuchDuration: the duration is not one the offer has.
	KeepNoSuchDuration
)

// KeepOutcome is what a keep did, for the person's private notice.
type KeepOutcome struct {
	Result KeepResult
	// Standing is what stands, for KeepKept and KeepAgain.
	Standing StandingAnswer
	// Locale is the catalog of the question's words.
	Locale string
}

// Notice is the private notice of the outcome.
func (o KeepOutcome) Notice() Notice {
	return map[KeepResult]Notice{
		KeepKept: NoticeKept, KeepAgain: NoticeKeptAgain, KeepNotYours: NoticeKeepNotYours,
		KeepClosed: NoticeKeepClosed, KeepNoSuchDuration: NoticeKeepNoSuchDuration,
	}[o.Result]
}

// RevokeOutcome is what a revoke did.
type RevokeOutcome struct {
	// Revoked is true when this call revoked it; Standing is then what
	// stood.
	Revoked  bool
	Standing StandingAnswer
	// NotAllowed: by may not revoke it (nothing changed).
	NotAllowed bool
}

// offerOf is the offer an answered question makes, if any: the request
// has remember, one person answered (no quorum, not a standing answer),
// and chose declared options only (no own words, no skip).
func offerOf(rec Record, res askbridge.Result, now time.Time) (Offer, bool) {
	req := rec.Request
	if req.Remember == nil || req.Quorum > 0 || res.Status != askbridge.StatusAnswered ||
		res.AnsweredBy == nil || res.Via == askbridge.ViaStanding || res.Answers == nil {
		return Offer{}, false
	}
	for _, q := range req.Questions {
		vals := res.Answers.Answers[q.ID]
		if len(vals) == 0 {
			return Offer{}, false
		}
		for _, v := range vals {
			if !slices.ContainsFunc(q.Options, func(o askbridge.Option) bool { return o.Label == v }) {
				return Offer{}, false
			}
		}
	}
	place := placeNamed(rec, res.Place)
	o := Offer{
		ID: rec.ID, Agent: req.Agent, Key: req.Remember.Key, Shape: askbridge.Shape(req.Questions),
		By: *res.AnsweredBy, Answers: res.Answers.Answers, Durations: req.Remember.Durations(),
		Ends: now.Add(OfferOpen), Place: place, Locale: req.Locale,
	}
	if place < len(rec.Places) {
		o.Target, o.Answerers = rec.Places[place].Target, rec.Places[place].Answerers
	}
	return o, true
}

// placeNamed is the index of the place a result names (Result.Place), 0
// when it names none.
func placeNamed(rec Record, name string) int {
	for k, p := range rec.Places {
		if name != "" && p.Name == name {
			return k
		}
	}
	return 0
}

// offer records the offer a won answer makes, if it makes one. A failure
// is logged: the answer stands, only the offer is lost.
func (c *core) offer(ctx context.Context, r EndResult) {
	o, ok := offerOf(r.Record, r.Result, c.clock.Now())
	if !ok {
		return
	}
	if err := c.store.OpenOffer(ctx, o); err != nil {
		c.log.Error("record the offer to keep an answer", "question", o.ID, "err", err)
	}
}

// Keep makes the answer of question id stand for d (ask-user.md §9), when
// by answered it, d is offered and the offer is open: the standing answer
// is set, a kept event published, and the offer removed from the
// question's messages. Otherwise the outcome says why. Blocks on Redis;
// safe to repeat (a second keep is KeepAgain) and to call concurrently.
func (e *Engine) Keep(ctx context.Context, id string, by askbridge.Person, d time.Duration) (KeepOutcome, error) {
	now := e.clock.Now()
	out, o, err := e.store.TakeOffer(ctx, id, by, d, Nonce(), now)
	if err != nil {
		return KeepOutcome{}, fmt.Errorf("keep: %w", err)
	}
	ko := KeepOutcome{Locale: o.Locale}
	switch out {
	case TakeNotYours:
		ko.Result = KeepNotYours
	case TakeClosed:
		ko.Result = KeepClosed
	case TakeNoSuchDuration:
		ko.Result = KeepNoSuchDuration
	case TakeAgain:
		ko.Result, ko.Standing = KeepAgain, *o.Kept
	case TakeDone:
		if err := e.setKept(ctx, o); err != nil {
			return KeepOutcome{}, err
		}
		ko.Result, ko.Standing = KeepKept, *o.Kept
		e.removeOffer(ctx, id)
	}
	return ko, nil
}

// setKept sets the standing answer a taken offer decided, once: the kept
// event, the metric and the standing message go with the call that set
// it. The offer's end timer calls it again for a keep whose replica died
// before setting it.
func (c *core) setKept(ctx context.Context, o Offer) error {
	s := *o.Kept
	s.Answerers = o.Answerers
	set, err := c.store.SetStanding(ctx, s)
	if err != nil {
		return fmt.Errorf("keep: %w", err)
	}
	if !set {
		return nil
	}
	c.log.Info("answer kept", "question", o.ID, "agent", s.Agent, "key", s.Key, "until", s.Until)
	c.metrics.Standing(StandingEventKept)
	if err := c.publish(ctx, askbridge.Event{Kind: askbridge.EventKept, Agent: s.Agent, Key: s.Key, By: personLabel(s.By), ID: o.ID}); err != nil {
		c.log.Warn("publish kept", "err", err)
	}
	if sh, ok := c.channels[s.Target.Platform].(StandingShower); ok {
		ref, err := sh.ShowStanding(ctx, s)
		if err != nil {
			c.log.Warn("show a standing answer", "key", s.Key, "err", err)
			return nil
		}
		if err := c.store.SetStandingMessage(ctx, s.Agent, s.Key, s.Gen, ref); err != nil {
			c.log.Warn("record a standing answer's message", "key", s.Key, "err", err)
		}
	}
	return nil
}

// personLabel is a person as events name them: "<platform>:<id>".
func personLabel(p askbridge.Person) string {
	if p.Platform == "" && p.ID == "" {
		return ""
	}
	return p.Platform + ":" + p.ID
}

// removeOffer removes the offer from every message of question id, on
// the channels that show offers.
func (c *core) removeOffer(ctx context.Context, id string) {
	refs, err := c.store.Messages(ctx, id)
	if err != nil || len(refs) == 0 {
		return
	}
	var rec Record
	for _, ref := range refs {
		sh, ok := c.channels[ref.Platform].(OfferShower)
		if !ok || !ref.IsPrompt() {
			continue
		}
		if rec.ID == "" {
			r, found, err := c.store.Get(ctx, id)
			if err != nil || !found || r.Result == nil {
				return
			}
			rec = r
		}
		caps := c.channels[ref.Platform].Capabilities()
		if err := sh.RemoveOffer(ctx, ref, ending(rec, *rec.Result, caps, ref.Place)); err != nil {
			c.log.Warn("remove the offer from a message", "question", id, "message", ref.Message, "err", err)
		}
	}
}

// Revoke revokes the standing answer of agent and key (ask-user.md §9):
// by, when not nil, must be its keeper or a person allowed to answer in
// the place it was kept in; nil is the operator or the agent (a revoke
// stream entry). A revoked answer is never used again; an unknown one is
// not an error (Revoked false). Blocks on Redis; safe to repeat.
func (e *Engine) Revoke(ctx context.Context, agent, key string, by *askbridge.Person) (RevokeOutcome, error) {
	return e.revoke(ctx, agent, key, "", by)
}

// revoke is Revoke, for the engine's parts, of keep gen ("": whichever
// stands). A person's revoke is checked against the keep that stands and
// revokes only that one, so a newer keep that replaced it meanwhile (by
// someone they may not revoke for) is left standing.
func (e *core) revoke(ctx context.Context, agent, key, gen string, by *askbridge.Person) (RevokeOutcome, error) {
	if by != nil {
		s, found, err := e.store.PeekStanding(ctx, agent, key, e.clock.Now())
		if err != nil {
			return RevokeOutcome{}, fmt.Errorf("revoke: %w", err)
		}
		if !found || (gen != "" && s.Gen != gen) {
			return RevokeOutcome{}, nil
		}
		if !s.MayRevoke(*by) {
			return RevokeOutcome{NotAllowed: true, Standing: s}, nil
		}
		gen = s.Gen
	}
	s, found, err := e.store.RevokeStanding(ctx, agent, key, gen)
	if err != nil {
		return RevokeOutcome{}, fmt.Errorf("revoke: %w", err)
	}
	if !found {
		return RevokeOutcome{}, nil
	}
	e.log.Info("standing answer revoked", "agent", agent, "key", key)
	e.metrics.Standing(StandingEventRevoked)
	ev := askbridge.Event{Kind: askbridge.EventRevoked, Agent: agent, Key: key}
	if by != nil {
		ev.By = personLabel(*by)
	}
	if err := e.publish(ctx, ev); err != nil {
		e.log.Warn("publish revoked", "err", err)
	}
	e.editStanding(ctx, s, StandingRevoked)
	return RevokeOutcome{Revoked: true, Standing: s}, nil
}

// MayRevoke reports whether by may revoke s: the keeper, or a person of
// the kept place's platform whom its answerers allow.
func (s StandingAnswer) MayRevoke(by askbridge.Person) bool {
	if by.Platform == s.By.Platform && by.ID == s.By.ID {
		return true
	}
	return by.Platform == s.Target.Platform && (len(s.Answerers) == 0 || slices.Contains(s.Answerers, personLabel(by)))
}

// editStanding edits the message that shows s, if a channel posted one.
func (c *core) editStanding(ctx context.Context, s StandingAnswer, state StandingState) {
	if s.Message == nil {
		return
	}
	if sh, ok := c.channels[s.Message.Platform].(StandingShower); ok {
		if err := sh.EditStanding(ctx, *s.Message, s, state); err != nil {
			c.log.Warn("edit a standing answer's message", "key", s.Key, "err", err)
		}
	}
}

// Standing lists the standing answers (for the web page and the CLI).
// Blocks on Redis.
func (e *Engine) Standing(ctx context.Context) ([]StandingAnswer, error) {
	list, err := e.store.ListStanding(ctx, e.clock.Now())
	if err != nil {
		return nil, fmt.Errorf("list standing answers: %w", err)
	}
	return list, nil
}

// keepReply reads a reply to an ended question as a keep ("keep 1h",
// ask-user.md §9) when the question offered to keep its answer: ok is
// false for any other reply.
func (e *Engine) keepReply(ctx context.Context, rec Record, r TextReply) (ReplyOutcome, bool, error) {
	if rec.Request.Remember == nil {
		return ReplyOutcome{}, false, nil
	}
	d, ok := textparse.ParseKeep(r.Text, replyWords())
	if !ok {
		return ReplyOutcome{}, false, nil
	}
	out, err := e.Keep(ctx, rec.ID, r.Person, d)
	if err != nil {
		return ReplyOutcome{Claimed: true, Respond: NoticeTryAgain.Text(rec.Request.Locale), Retry: true}, true, err
	}
	return ReplyOutcome{Claimed: true, Respond: out.Notice().Text(rec.Request.Locale)}, true, nil
}
