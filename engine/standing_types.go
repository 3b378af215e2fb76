package engine

import (
	"context"
	"time"

	"github.com/askbridge/askbridge"
)

// OfferOpen is how long the offer to keep an answer stays open after the
// answer (ask-user.md §9: 15 minutes).
const OfferOpen = 15 * time.Minute

// Offer is the offer to keep an answer (ask-user.md §9), recorded when a
// question with remember ends answered by one person choosing options
// only: who may keep it, for how long, and what would stand.
type Offer struct {
	// ID is the question answered.
	ID         string
	Agent, Key string
	// Shape is askbridge.Shape of the question's questions.
	Shape   string
	By      askbridge.Person
	Answers map[string][]string
	// Durations are the request's remember.offer.
	Durations []time.Duration
	// Ends is when the offer closes: OfferOpen after the answer.
	Ends time.Time
	// Place is the place the answer was given in (Record.Places index),
	// and Target its chat: where the answer, once kept, is shown standing.
	Place  int
	Target askbridge.Target
	// Answerers are who may answer in that place (empty: anyone there).
	Answerers []string
	Locale    string
	// Kept is the standing answer a keep decided, once one has.
	Kept *StandingAnswer
}

// StandingAnswer is a standing answer (ask-user.md §9) as the store holds
// it: `<prefix>standing:{<agent>}:<key>`.
type StandingAnswer struct {
	Agent, Key string
	Shape      string
	Answers    map[string][]string
	By         askbridge.Person
	Since      time.Time
	Until      time.Time
	Uses       int
	// LastUse is when it last answered a request (zero: never).
	LastUse time.Time
	// Gen names the keep that set it: a later keep of the same agent and
	// key replaces it with another Gen.
	Gen string
	// From is the question it was kept from, Target the chat it was kept
	// in, Locale that question's catalog.
	From   string
	Target askbridge.Target
	Locale string
	// Answerers are who may answer in the place it was kept in (empty:
	// anyone there): they may revoke it too.
	Answerers []string
	// Message is the message that shows it standing, once a channel has
	// posted one (StandingShower).
	Message *MessageRef
}

// Info is the result's `standing`.
func (s StandingAnswer) Info() *askbridge.Standing {
	return &askbridge.Standing{By: s.By, Since: s.Since.UnixMilli(), Until: s.Until.UnixMilli()}
}

// TakeOutcome is what became of taking an offer (Standings.TakeOffer).
type TakeOutcome int

const (
	// TakeDone: the offer was taken; Offer.Kept is what is to stand.
	TakeDone TakeOutcome = iota + 1
	// TakeAgain: it had been taken before; Offer.Kept is that keep.
	TakeAgain
	// TakeNotYours: by is not the person the offer is to.
	TakeNotYours
	// TakeClosed: the offer is closed (its 15 minutes passed) or unknown.
	TakeClosed
	// TakeNoSuchDuration: the duration is not one the offer has.
	TakeNoSuchDuration
)

// ExpireOutcome is what became of a standing answer's end timer.
type ExpireOutcome int

const (
	// ExpireDone: this call ended it; publish expired.
	ExpireDone ExpireOutcome = iota + 1
	// ExpireMoot: revoked, replaced by a later keep, or ended before.
	ExpireMoot
	// ExpireNotYet: its until is still ahead (the timer came early).
	ExpireNotYet
)

// StandingTimer is a timer of standing answers, due At: the end of an
// offer (Offer set: the question id), or the end of a standing answer
// (Agent, Key, Gen).
type StandingTimer struct {
	OfferOf    string
	Agent, Key string
	Gen        string
	At         time.Time
}

// Offers holds the offers to keep an answer (ask-user.md §9), each in its
// question's slot, and the timers of offers and standing answers. Safe for
// concurrent use; expected outcomes are results.
type Offers interface {
	// OpenOffer records an offer and schedules its end (o.Ends). Safe to
	// repeat: an offer already recorded is left as it is.
	OpenOffer(ctx context.Context, o Offer) error
	// TakeOffer takes the offer of question id for by and d at now, in one
	// step: it checks that the offer is open and by's, and that d is
	// offered, and records the keep (gen, since now, until now+d) on it.
	TakeOffer(ctx context.Context, id string, by askbridge.Person, d time.Duration, gen string, now time.Time) (TakeOutcome, Offer, error)
	// PeekOffer reads the offer of question id, changing nothing (found
	// false when there is none: never made, or closed).
	PeekOffer(ctx context.Context, id string) (o Offer, found bool, err error)
	// CloseOffer removes the offer of question id and returns it as it
	// was (found false when there was none). Safe to repeat.
	CloseOffer(ctx context.Context, id string) (o Offer, found bool, err error)
	// DueStandingTimers hands out up to max due timers, each to one caller
	// at a time (as DueTimers); StandingTimerDone removes one.
	DueStandingTimers(ctx context.Context, now time.Time, hold time.Duration, max int) ([]StandingTimer, error)
	StandingTimerDone(ctx context.Context, t StandingTimer) error
}

// Standings holds standing answers (ask-user.md §9), each in its agent's
// slot. Each step that must be atomic is one script, and a step that spans
// an offer's slot and a standing answer's (a keep, a use) is split so a
// replica dying in between loses nothing. Safe for concurrent use;
// expected outcomes are results.
type Standings interface {
	// SetStanding makes s stand (its end timer scheduled first), unless
	// this keep (s.Gen) was set before — even if revoked since — or a
	// later keep stands. set reports whether this call set it. Safe to
	// repeat.
	SetStanding(ctx context.Context, s StandingAnswer) (set bool, err error)
	// PeekStanding reads the standing answer of agent and key that stands
	// at now, changing nothing.
	PeekStanding(ctx context.Context, agent, key string, now time.Time) (StandingAnswer, bool, error)
	// UseStanding decides, once for token (a question id), whether the
	// standing answer gen of agent and key, of this shape, answers it at
	// now: a use counts it. A repeat with the same token returns the
	// first decision, whatever happened since; gen "" records that none
	// does. Atomic with RevokeStanding.
	UseStanding(ctx context.Context, agent, key, gen, shape, token string, now time.Time) (used bool, s StandingAnswer, err error)
	// RevokeStanding removes the standing answer of agent and key: keep
	// gen, or whichever stands when gen is ""; found is false when none
	// stands (or another keep does).
	RevokeStanding(ctx context.Context, agent, key, gen string) (s StandingAnswer, found bool, err error)
	// ExpireStanding ends standing answer gen of agent and key at its
	// time: ExpireDone exactly once across callers.
	ExpireStanding(ctx context.Context, agent, key, gen string, now time.Time) (ExpireOutcome, StandingAnswer, error)
	// ListStanding lists the standing answers at now.
	ListStanding(ctx context.Context, now time.Time) ([]StandingAnswer, error)
	// SetStandingMessage records the message that shows standing answer
	// gen (a channel posted it). Nothing happens once it no longer stands.
	SetStandingMessage(ctx context.Context, agent, key, gen string, ref MessageRef) error
	// PaceStandingEdit reports whether the message of standing answer gen
	// may be edited at now: true for the first caller across replicas in
	// each interval every, false within it or once gen no longer stands.
	PaceStandingEdit(ctx context.Context, agent, key, gen string, now time.Time, every time.Duration) (bool, error)
	// Conclude stores question q ended at once with res (answered by a
	// standing answer) and pushes res to the agent, unless the id is
	// known. Safe to repeat.
	Conclude(ctx context.Context, q NewQuestion, res askbridge.Result, now time.Time) (EndResult, error)
}

// StandingState is how a standing answer stands, for its message.
type StandingState int

const (
	StandingKept StandingState = iota + 1
	StandingUsed
	StandingRevoked
	StandingExpired
)

// OfferShower is implemented by channels that show the offer to keep an
// answer under the message that shows it (ask-user.md §9): the engine
// calls RemoveOffer on each message of the question when the offer
// closes (its 15 minutes passed, or the answer was kept). Safe to
// repeat; called concurrently for different messages.
type OfferShower interface {
	RemoveOffer(ctx context.Context, ref MessageRef, end Ending) error
}

// StandingShower is implemented by channels that show a standing answer
// in the chat where it was kept: ShowStanding posts the message (once per
// keep; the engine records what it returns), EditStanding edits it as the
// answer is used, revoked or ends. Neither is safe to repeat blindly:
// ShowStanding posts again.
type StandingShower interface {
	ShowStanding(ctx context.Context, s StandingAnswer) (MessageRef, error)
	EditStanding(ctx context.Context, ref MessageRef, s StandingAnswer, state StandingState) error
}
