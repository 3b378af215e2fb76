package engine

import (
	"context"
	"time"

	"github.com/askbridge/askbridge"
)

// MessageRef names one platform message that showed a question.
type MessageRef struct {
	Platform string `json:"platform"`
	Chat     string `json:"chat"`
	Message  string `json:"message"`
	// Part is what the message showed: the parts of a prompt are numbered
	// from 0 in the order they were posted; PartReplyBox is a reply box,
	// ReminderPart(n) the n-th reminder. It is not part of the message's
	// identity (Same ignores it).
	Part int `json:"part,omitempty"`
	// Place is the index of the place (Record.Places) the message was
	// posted for. Not part of the message's identity either.
	Place int `json:"place,omitempty"`
}

// PartReplyBox is the Part of a reply box an "Other…" tap opened.
const PartReplyBox = -1

// ReminderPart is the Part of the n-th reminder (1-based) posted under a
// prompt: -2 for the first, -3 for the second…
func ReminderPart(n int) int { return -1 - n }

// IsReminder reports whether a message is a reminder.
func (r MessageRef) IsReminder() bool { return r.Part < PartReplyBox }

// IsPrompt reports whether a message is a part of a prompt.
func (r MessageRef) IsPrompt() bool { return r.Part >= 0 }

// Same reports whether r and o name the same platform message.
func (r MessageRef) Same(o MessageRef) bool {
	return r.Platform == o.Platform && r.Chat == o.Chat && r.Message == o.Message
}

// Record is the stored state of one question.
type Record struct {
	ID string
	// Entry is the requests stream entry of the ask that created the
	// question ("<ms>-<seq>", NewQuestion.Entry): when the agent asked.
	// Empty when there was none.
	Entry   string
	Status  askbridge.Status
	Request askbridge. // normalised
		Request
	// Target and Answerers are those of the first place (Places[0]).
	Target askbridge.
		// Answerers lists "<platform>:<user id>" who may answer; empty means
		// anyone in the target chat.
		Target

	Answerers []string
	// Places lists every place the question is, or will be, shown in
	// (ask-user.md §5): the request's `to`, then each escalation step's.
	// It always holds at least the first place.
	Places   []askbridge.Place
	Created  time.Time
	Deadline time.Time
	// Acknowledged is who pressed Seen, once someone has.
	Acknowledged *askbridge.
		// Fired names the timers whose work is done and announced (FireOnce).
		Person

	Fired []string
	// Votes are the votes of a quorum question so far, in order.
	Votes []askbridge.
		// Result is set once the question has ended.
		Vote

	Result *askbridge.Result
}

// NewQuestion is what the engine hands the store to create a question.
type NewQuestion struct {
	ID string
	// Entry is the requests stream entry of the ask, when there is one.
	Entry     string
	Request   askbridge.Request // normalised
	Target    askbridge.Target
	Answerers []string
	// Places are every place of the question (see Record.Places); empty
	// for a question with one place, Target.
	Places   []askbridge.Place
	Created  time.Time
	Deadline time.Time
	// Timers are the reminders and escalation steps to fire, scheduled
	// with the question.
	Timers []Timer
	// Shown are messages recorded with the question, as AddMessage would
	// record them, in the same step as the create: the one message of a
	// local channel that names it before showing (Premade). Nothing is
	// recorded when the question already existed.
	Shown []MessageRef
}

// Timer is a reminder or an escalation step of a question, due At: the
// store hands each due timer to one replica at a time (DueTimers), which
// removes it once fired (TimerDone).
type Timer struct {
	ID string
	// Name says which: "r<n>" is the n-th reminder, "e<k>" step k.
	Name string
	At   time.Time
}

// Entry is one entry of the requests stream: an ask or a cancel.
type Entry struct {
	// StreamID is the Redis stream entry id, used to acknowledge it.
	StreamID string
	// Ask holds the raw request JSON of an `ask` entry.
	Ask []byte
	// Cancel holds the question id of a `cancel` entry.
	Cancel string
	// Answer holds the raw JSON of an `answer` entry: an answer given in
	// the agent's own client (askbridge.AnswerEntry).
	Answer []byte
	// Revoke holds the raw JSON of a `revoke` entry: a standing answer to
	// revoke (askbridge.RevokeEntry).
	Revoke []byte
	// Malformed is set when the entry has none of the fields ask, cancel,
	// answer and revoke, or more than one; the engine acknowledges it and
	// records a rejection event.
	Malformed string
	// Oversize is the entry's size in bytes (field names and values
	// together) when it is over MaxEntryBytes; Ask (or Answer) then holds
	// only the first bytes of the ask (or answer) value, if any, and the
	// engine refuses it.
	Oversize int
}

// CreateCall is one question of a batch create (BatchCreator): the
// question, the delivery lease's holder and ttl; the outcome as
// CreateHolding returns it.
type CreateCall struct {
	Question NewQuestion
	Holder   string
	TTL      time.Duration

	Created  bool
	Existing Record
	Lease    Lease
	Err      error
}

// BatchCreator is implemented by stores that create many questions in one
// round trip: CreateHoldingBatch fills in each call's outcome, exactly as
// CreateHolding would have. The engine creates the questions of a burst
// of requests together through it.
type BatchCreator interface {
	CreateHoldingBatch(ctx context.Context, calls []*CreateCall)
}

// EndResult reports the result of trying to end a question.
type EndResult struct {
	// Won is true when this call ended the question.
	Won bool
	// Found is false when no such question exists (never created, or its
	// retention has passed).
	Found bool
	// Result is the question's final result: the one just written when Won,
	// otherwise the one that won earlier (Status is pending if the question
	// is still open, which happens only when the call could not end it).
	Result askbridge.
		// Record is the question as it stood after the call.
		Result

	Record Record
	// Messages are the messages recorded as showing the question when it
	// ended (set when Won): what the winner edits.
	Messages []MessageRef
	// Published is set by the engine when the end's event went out with
	// the end itself (endPublisher): the finisher publishes it no more.
	Published bool
}

// Lease is a held lease with its fencing token: the token grows every time
// the lease changes hands, so writes fenced by an old token are refused.
type Lease struct {
	Name   string
	Holder string
	Token  int64
}

// Coordinator is what channels share across replicas: leases (one poller
// or gateway at a time), fenced cursors (a poller's offset) and first-seen
// marks for platform event ids. It holds no question state. *store.Store
// implements it; it is safe for concurrent use by many goroutines and many
// processes, and an error always means infrastructure trouble.
type Coordinator interface {
	// FirstSeen records a platform event id and reports whether this is the
	// first time it was seen within ttl. Safe to call concurrently: exactly
	// one caller gets true.
	FirstSeen(ctx context.Context, platform, eventID string, ttl time.Duration) (bool, error)
	// ForgetSeen undoes FirstSeen for an event whose handling failed, so
	// the platform's retry of it is handled. Safe to repeat.
	ForgetSeen(ctx context.Context, platform, eventID string) error
	// Settle marks an event seen by FirstSeen as handled, for ttl: a
	// caller can take a short FirstSeen (a claim that lapses if it dies
	// while handling) and settle it once done. Settled reports whether an
	// event was settled (false for a claim still in hand, or no mark). Both
	// are safe to repeat.
	Settle(ctx context.Context, platform, eventID string, ttl time.Duration) error
	Settled(ctx context.Context, platform, eventID string) (bool, error)

	// AcquireLease takes the named lease for holder if it is free or
	// already held by holder, for ttl. ok is false when another holder has it.
	AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (lease Lease, ok bool, err error)
	// RenewLease extends a held lease; ok is false when it was lost.
	RenewLease(ctx context.Context, lease Lease, ttl time.Duration) (ok bool, err error)
	// ReleaseLease gives a held lease up. Safe to repeat.
	ReleaseLease(ctx context.Context, lease Lease) error
	// Cursor reads a named position (such as a poller's update offset).
	Cursor(ctx context.Context, name string) (value int64, found bool, err error)
	// SetCursor writes a named position, only while lease is still the
	// current holder of its lease (fencing). The cursor is fenced by the
	// lease of the same name: lease.Name must equal name (both live in one
	// Redis Cluster slot so one atomic step can check and write). ok is
	// false when the lease was lost.
	SetCursor(ctx context.Context, name string, value int64, lease Lease) (ok bool, err error)

	// ShareCooldown tells the other replicas that the platform limited
	// bucket (the platform's own name for what was limited: a chat, a
	// route) for d, a 429's Retry-After, so they hold their calls to it
	// back too. Cooldowns calls fn with each cooldown another replica
	// shares for platform until ctx is done; a cooldown shared while a
	// replica does not listen is missed (it learns from its own 429).
	ShareCooldown(ctx context.Context, platform, bucket string, d time.Duration) error
	Cooldowns(ctx context.Context, platform string, fn func(bucket string, d time.Duration)) error
}

// DedupeTTL is how long a platform event id is remembered by default:
// longer than any platform retries a delivery (Slack retries for about an
// hour at most; Telegram keeps unconfirmed updates for 24 hours and uses
// its own, longer, time).
const DedupeTTL = 2 * time.Hour

// The store is seen by each part of the engine only through what that part
// calls: the families below, each a handful of methods (the way go-redis
// groups its commands). *store.Store implements all of them, asserted where
// it is wired (cmd/bridge). Implementations are safe for concurrent use by
// many goroutines and many processes. Expected outcomes (losing a race, an
// unknown id) are results; an error always means infrastructure trouble and
// the call may be retried.

// Requests is the intake's side of the requests stream: reading and
// acknowledging entries, the cap on one agent's pending questions, and the
// creates and refusals that store what an entry asked.
type Requests interface {
	// ReadRequests returns up to max entries of the requests stream for
	// this replica's consumer, blocking up to block when none are waiting.
	// It first claims entries other consumers took and left unacknowledged
	// longer than the configured idle time. An entry is returned again until
	// it is acknowledged.
	ReadRequests(ctx context.Context, max int, block time.Duration) ([]Entry, error)

	// AckRequest acknowledges handled entries, several in one call. Safe to
	// repeat.
	AckRequest(ctx context.Context, streamIDs ...string) error

	// Admit counts a question against its agent's cap of pending questions
	// (the request's agent field): admitted is false, and nothing changes,
	// when the agent already has max pending; pending is its count after
	// the call. An id already counted is admitted again. A question leaves
	// the count when it ends, or at its deadline at the latest. Unadmit
	// takes an admitted id out again (its question turned out to have
	// ended already). Both are safe to repeat and to call concurrently.
	Admit(ctx context.Context, agent, id string, deadline, now time.Time, max int) (admitted bool, pending int, err error)

	Unadmit(ctx context.Context, agent, id string) error

	// Replay pushes an ended question's stored result onto its result list
	// again when the list is empty (the agent took it and asks again):
	// the same JSON, not a second outcome. entry is the stream entry of the
	// ask at hand: the entry that created the question (NewQuestion.Entry)
	// handled again replays nothing, nor does an ask its cancel came
	// before. pushed is false when there was nothing to do. Safe to repeat.
	Replay(ctx context.Context, id, entry string) (pushed bool, err error)

	// Reject records a refused request: it stores the error result and
	// pushes it to the agent, unless the id is already known. Safe to repeat.
	Reject(ctx context.Context, id string, res askbridge.Result, now time.Time) (EndResult, error)

	// Create stores a new pending question and schedules its deadline. It
	// is idempotent on the id: when the id is already known (pending, or
	// ended within the retention) it changes nothing and returns the stored
	// question with created false.
	Create(ctx context.Context, q NewQuestion) (created bool, existing Record, err error)

	// CreateHolding is Create that, when it creates the question and
	// holder is set, takes the question's delivery lease ("deliver:<id>")
	// for holder for ttl in the same step; the lease is renewed and
	// released like one AcquireLease took. A question that already existed
	// comes back with no lease.
	CreateHolding(ctx context.Context, q NewQuestion, holder string, ttl time.Duration) (created bool, existing Record, lease Lease, err error)
}

// Questions reads stored questions and records the messages that show
// them.
type Questions interface {
	// Get reads a question. found is false for an unknown id.
	Get(ctx context.Context, id string) (q Record, found bool, err error)

	// Lookup is Get for taking an answer: it may serve the record from
	// memory of a question this store created or read lately, without a
	// round trip. The request, places, answerers, target and deadline are
	// exact (they never change); the status, acknowledgement and votes may
	// be a moment old. So it is for where End or Vote decides what
	// happens, first writer wins, as a question that ended a moment ago
	// does. The record is shared: the caller must not modify it.
	Lookup(ctx context.Context, id string) (q Record, found bool, err error)

	// OpenInChat lists the pending questions shown in a chat, oldest first.
	// Ended questions are dropped from the index as they are found.
	OpenInChat(ctx context.Context, platform, chat string) ([]string, error)

	// QuestionByMessage finds the question a message showed.
	QuestionByMessage(ctx context.Context, ref MessageRef) (id string, found bool, err error)

	// Messages lists every message recorded for a question, in the order
	// they were added.
	Messages(ctx context.Context, id string) ([]MessageRef, error)

	// AddMessage records a message that showed a question, and indexes it
	// for QuestionByMessage and for OpenInChat. It returns the question's
	// status as the message was recorded ("" for an unknown id), so a
	// message posted after the question ended is known at once. Safe to
	// repeat.
	AddMessage(ctx context.Context, id string, ref MessageRef) (askbridge.Status, error)
}

// Ends ends questions, first writer wins, and keeps the finishing marks of
// ended questions whose messages are still to be edited.
type Ends interface {
	// End ends a pending question with res: first writer wins. The winner
	// writes the result, pushes it onto the agent's result list and sets the
	// retention; every other caller learns what won. An ending other than a
	// timeout (res.Reason is not ReasonTimeout) that comes when the
	// question's deadline is at or before now is too late: the question
	// ends as a timeout instead, with the result Sweep would have written,
	// and the call still wins (Won true, Result the timeout result), so the
	// caller must look at Result rather than assume res was stored. Safe to
	// repeat and to call concurrently.
	End(ctx context.Context, id string, res askbridge.Result, now time.Time) (EndResult, error)

	// MarkAndEnd is MarkFinishing at now, then End: in one round trip where
	// the store can keep the order (one Redis runs a pipeline in order),
	// in two where it cannot (on a Cluster the two keys live on different
	// nodes). The end never runs without the mark made before it. Should
	// the mark fail where the end ran, the end stands (added is false) and
	// only the mark's error is lost: the end is not undone.
	MarkAndEnd(ctx context.Context, id string, res askbridge.Result, now time.Time) (added bool, r EndResult, err error)

	// Sweep ends up to max questions whose deadline is at or before now as
	// expired, and returns those this call ended (each question is ended by
	// exactly one caller across replicas). Its cost does not grow with the
	// number of questions that are not yet due.
	Sweep(ctx context.Context, now time.Time, max int) ([]EndResult, error)

	// MarkFinishing records that the messages of a question that is ending
	// are about to be edited; Finished records that they were. A replica
	// that dies in between leaves the question to Unfinished, which lists
	// those marked at or before a time, oldest first, up to max, so another
	// replica finishes them. A mark keeps its first time; added reports
	// whether this call made it. KeepFinishing moves an existing mark to
	// at: the replica editing a question keeps its mark fresh, so no other
	// takes it for a leftover while it works. All four are safe to repeat.
	MarkFinishing(ctx context.Context, id string, at time.Time) (added bool, err error)

	KeepFinishing(ctx context.Context, id string, at time.Time) error

	Finished(ctx context.Context, id string) error

	Unfinished(ctx context.Context, before time.Time, max int) ([]string, error)
}

// Timers holds the reminders and escalation steps still to fire
// (ask-user.md §5).
type Timers interface {
	// DueTimers hands out up to max timers due at now, each to one caller
	// at a time: a timer handed out comes back hold later unless TimerDone
	// removed it, so one whose firer died is fired by another replica.
	DueTimers(ctx context.Context, now time.Time, hold time.Duration, max int) ([]Timer, error)

	// TimerDone removes a fired (or moot) timer. Safe to repeat.
	TimerDone(ctx context.Context, t Timer) error

	// RetryTimer makes a timer handed out due again at at (its firer
	// could not take it now). A timer already removed stays removed.
	RetryTimer(ctx context.Context, t Timer, at time.Time) error

	// FireOnce marks timer name of question id as announced and reports
	// whether this call did: each timer's event is published once however
	// often it is fired. Safe to call concurrently.
	FireOnce(ctx context.Context, id, name string) (bool, error)
}

// Places records what happens in a question's places: a Seen, a place
// that could not be reached, a quorum vote.
type Places interface {
	// Acknowledge records that by has seen an open question: won is true
	// for the first acknowledgement of a pending question, and rec is the
	// question as it stands after the call (found false for an unknown
	// id). Safe to repeat and to call concurrently.
	Acknowledge(ctx context.Context, id string, by askbridge.Person) (won bool, rec Record, found bool, err error)

	// PlaceFailed records that place (an index of Record.Places) cannot be
	// reached, for reason, and returns which of the places 0..count-1 have
	// failed so far and the question's status. Safe to repeat.
	PlaceFailed(ctx context.Context, id string, place int, reason string, count int) (failed []int, status askbridge.Status, err error)

	// IndexInChat indexes question id (created at created) in chat t,
	// before a prompt of it is posted there for an escalation step (the
	// create indexed the places shown at once): a tap on the prompt that
	// comes before the prompt is recorded finds its question. Safe to
	// repeat.
	IndexInChat(ctx context.Context, id string, t askbridge.Target, created time.Time) error

	// Vote records v on a quorum question and, in the same step, ends it
	// when v decides it (ask-user.md §6): answered with the agreed answer
	// once quorum people gave answers of one key (AnswerKey), no_quorum
	// once agreement has become impossible among voters people. A vote
	// at or after the deadline ends the question as a timeout instead.
	// A person votes once; their first vote stands. Safe to call
	// concurrently: two votes never both decide, and none is lost.
	Vote(ctx context.Context, id string, v askbridge.Vote, quorum, voters int, now time.Time) (VoteResult, error)
}

// Publisher writes the public events stream.
type Publisher interface {
	// Publish appends events to the capped events stream, in order, in one
	// round trip.
	Publish(ctx context.Context, evs ...askbridge.Event) error
}

// fullStore is all of the store the engine uses, the union of the
// families: what EngineConfig.Store takes.
type fullStore interface {
	Coordinator
	Requests
	Questions
	Ends
	Timers
	Places
	Publisher
	Offers
	Standings
}

// VoteOutcome is what became of a vote.
type VoteOutcome int

const (
	// VoteRecorded: counted; the question stays open.
	VoteRecorded VoteOutcome = iota + 1
	// VoteDecided: counted, and it ended the question (End holds the
	// ending, as Store.End reports a won end).
	VoteDecided
	// VoteAgain: this person had voted; their first vote stands.
	VoteAgain
	// VoteClosed: the question had ended (or is unknown: End.Found).
	VoteClosed
)

// VoteResult reports a vote: its outcome and the question as it stands
// after it.
type VoteResult struct {
	Outcome VoteOutcome
	End     EndResult
}

// EventLog is the events stream as readers see it (the web page, the
// agent tools). *store.Store implements it.
type EventLog interface {
	// Events reads events after the given stream id ("$" for only new ones,
	// "0" for all kept), blocking up to block. It returns the events and the
	// id to continue from.
	Events(ctx context.Context, after string, max int, block time.Duration) ([]askbridge.Event, string, error)
}
