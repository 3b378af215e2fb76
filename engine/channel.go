package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/internal/retry"
	"github.com/askbridge/askbridge/locale"
)

// Channel shows questions on one platform and brings the answers back. A
// channel translates and nothing more: the engine decides, and records every
// message a channel posts. An implementation is safe for concurrent use; the
// engine calls Send and Finish from many goroutines.
type Channel interface {
	// Platform names the platform, as in targets: "telegram", "web".
	Platform() string
	// Capabilities says what the platform can show; the engine plans
	// prompts with it. It never changes while the channel runs.
	Capabilities() Capabilities
	// Send shows d.Plan in d.Chat, in one or more messages (a long prompt
	// takes several), starting at part d.From, and hands each message to
	// d.Sent as soon as it is posted, before posting the next, with
	// MessageRef.Part numbering the parts from 0. When d.Sent returns
	// false Send posts nothing more and returns nil: the engine knows why
	// (the question ended meanwhile, the bridge is stopping, the store
	// could not record the message). A d.From past the last part
	// posts nothing and succeeds. Send makes one try of each call: a
	// platform's refusal is returned as a *SendError (rate limits with the
	// platform's wait) and the engine decides whether and when to go on from
	// the first part not posted. Not safe to repeat (a repeat posts again).
	Send(ctx context.Context, d Delivery) error
	// Finish edits one message of an ended question to show end: buttons
	// removed, the status line added, the text kept (ref.Part says which
	// part of the prompt, or a reply box, it showed). A message already in
	// that state, or gone, counts as success. Safe to repeat.
	Finish(ctx context.Context, ref MessageRef, end Ending) error
	// Run receives taps and replies until ctx is done, handing each to in.
	// It owns its reconnects and returns only when ctx is done.
	Run(ctx context.Context, in Inbox) error
	// State reports the channel's connection state for /readyz.
	State() ChannelState
}

// Delivery is one try at showing a question in a chat.
type Delivery struct {
	Chat string
	// Place is the index of the place (Record.Places) being shown: a
	// channel that makes an answer link for the person of the chat
	// (email) names it in the link.
	Place int
	// Until is the question's deadline.
	Until time.Time
	Plan  Plan
	// From is the first part to post: the parts before it were posted by
	// an earlier try (0 for a new prompt).
	From int
	// Sent records a posted message; the engine stores it. It reports
	// whether Send goes on with the next part.
	Sent func(MessageRef) (more bool)
}

// Ending is what a channel needs to show a question's end: nothing has to
// be read back from anywhere.
type Ending struct {
	// Plan is the question's plan for the channel's capabilities.
	Plan Plan
	// Outcome is how the question ended.
	Outcome askbridge.Outcome
	// Status is the status line every channel shows under the kept text.
	Status string
	// Question is the ended question; its Result is set.
	Question Record
	// Offer is the open offer to keep the answer (ask-user.md §9) on a
	// prompt message of the place it was given in; nil otherwise. A
	// channel shows its buttons under the part that carries a prompt's
	// buttons (the last), or its Hint where it has no buttons.
	Offer *OfferView
}

// Notifier is implemented by channels that can post a message in a chat
// outside of a prompt: the engine uses it to answer a text reply that needs
// a correction or does not say which question it answers.
type Notifier interface {
	// Notify posts text in chat, as a reply to message when message is not
	// empty. Not safe to repeat.
	Notify(ctx context.Context, chat, replyTo, text string) error
}

// Finder is implemented by channels that can look on the platform for
// messages they posted: the engine asks when it resumes a delivery another
// replica began, since that replica may have died between the platform
// accepting a part and the part being recorded. What Find returns is
// recorded and not posted again. A channel whose posts are idempotent
// (Discord's enforced nonce) or that cannot read its chats' history
// (Telegram) does not implement it.
type Finder interface {
	// Find returns, in part order, the messages of l.Plan from part l.From
	// on that this bot posted in l.Chat since l.Since. It reads only; an
	// error means the platform could not be asked, not that nothing is
	// there.
	Find(ctx context.Context, l Lookup) ([]MessageRef, error)
}

// Premade is implemented by a local channel (Capabilities.Local) that
// knows, before showing a question, the one message that will show it: the
// engine has the store record that message with the question, in the same
// step as the create (NewQuestion.Shown), and the delivery of the question
// just created records nothing more. Send still runs, and must hand d.Sent
// that same message (Place aside); the engine then only publishes it as
// delivered.
type Premade interface {
	// Premade returns the message that shows question id in chat, Part 0.
	Premade(chat, id string) MessageRef
}

// Updater is implemented by channels that can edit an open prompt in
// place: the engine calls Update when what an open question shows changes
// (someone pressed Seen: the prompt gains "Seen by …" and loses its Seen
// button).
type Updater interface {
	// Update edits message ref, part ref.Part of an open prompt, to show
	// p: the part's text as Send would post it (p.Notes on the part with
	// the buttons) and p's buttons on that part. Safe to repeat.
	Update(ctx context.Context, ref MessageRef, p Plan) error
}

// Reminder is implemented by channels that can post a short reminder under
// a prompt and delete it later (ask-user.md §5).
type Reminder interface {
	// Remind posts text, plain, as a reply to prompt (a recorded message
	// of the prompt) in its chat, and returns the message it posted. A
	// platform's refusal is a *SendError. Not safe to repeat.
	Remind(ctx context.Context, prompt MessageRef, text string) (MessageRef, error)
	// Delete deletes a message the bridge posted (a reminder). A message
	// already gone counts as success. Safe to repeat.
	Delete(ctx context.Context, ref MessageRef) error
}

// PartCounter is implemented by channels whose prompt may take several
// messages: Parts says how many p takes. The buttons are on the last one,
// so a message the engine learns of from a tap on its buttons (posted, but
// not yet or never recorded) is that part.
type PartCounter interface {
	Parts(p Plan) int
}

// Lookup is what a Finder looks for: the parts of Plan from From on,
// posted in Chat no earlier than Since.
type Lookup struct {
	Chat  string
	Plan  Plan
	From  int
	Since time.Time
}

// ChannelState is the connection state of a channel.
type ChannelState string

const (
	StateConnecting     ChannelState = "connecting"
	StateConnected      ChannelState = "connected"
	StateRetrying       ChannelState = "retrying"
	StateBadCredentials ChannelState = "bad credentials"
	// StateStandby: another replica holds the platform's single inbound
	// connection; this one sends and stands by to take over.
	StateStandby ChannelState = "standby"
)

// Inbox is where a channel hands what people do. The engine implements it;
// its methods block while they talk to Redis and may be called concurrently.
type Inbox interface {
	// Tap handles a button press and returns the notice to show the tapper.
	Tap(ctx context.Context, t Tap) TapReply
	// Reply handles a text message in a chat the bridge is in.
	Reply(ctx context.Context, r TextReply) ReplyOutcome
	// Attach links a message the channel posted for a question outside of
	// Send (the reply box an "Other…" tap opens, Part PartReplyBox) to that
	// question, so a reply to it answers the question and it is edited when
	// the question ends. Safe to repeat.
	Attach(ctx context.Context, id string, ref MessageRef) error
	// Locale is the bridge's default catalog (EngineConfig.Locale): the
	// language of what a channel says on its own when no question is
	// known, such as "try again" to a tap the engine could not take.
	Locale() string
}

// Tap is a button press.
type Tap struct {
	// EventID is the platform's id of this press, for deduplication.
	EventID string
	Message MessageRef
	Person  askbridge.Person
	Payload string
}

// Notice is the short private answer to a tap, as a code: decisions compare
// codes, and a channel shows Text in the question's language at the edge.
type Notice string

const (
	NoticeRecorded        Notice = "Recorded"
	NoticeSkipped         Notice = "Skipped"
	NoticeAlreadyAnswered Notice = "AlreadyAnswered"
	NoticeAlreadySkipped  Notice = "AlreadySkipped"
	NoticeExpired         Notice = "Expired"
	NoticeCancelled       Notice = "Cancelled"
	NoticeUndeliverable   Notice = "Undeliverable"
	NoticeNotForYou       Notice = "NotForYou"
	NoticeUnknown         Notice = "Unknown"
	NoticeOther           Notice = "Other"
	NoticeDuplicate       Notice = "Duplicate"
	NoticeTryAgain        Notice = "TryAgain"
	// ask-user.md §5: Seen pressed (or "seen" replied), and pressed again.
	NoticeSeen        Notice = "Seen"
	NoticeAlreadySeen Notice = "AlreadySeen"
	// ask-user.md §6: a vote counted (shown with its count and the
	// quorum), an abstention, a second vote of one person, and a quorum
	// question that ended without agreement.
	NoticeVoted        Notice = "Voted"
	NoticeAbstained    Notice = "Abstained"
	NoticeAlreadyVoted Notice = "AlreadyVoted"
	NoticeNoQuorum     Notice = "NoQuorum"
	// ask-user.md §9: a keep's outcome (KeepOutcome.Notice).
	NoticeKept               Notice = "Kept"
	NoticeKeptAgain          Notice = "KeptAgain"
	NoticeKeepNotYours       Notice = "KeepNotYours"
	NoticeKeepClosed         Notice = "KeepClosed"
	NoticeKeepNoSuchDuration Notice = "KeepNoSuchDuration"
	// ask-user.md §9: a Revoke tap revoked the standing answer, was not
	// the keeper's nor one allowed to answer there, or found it gone.
	NoticeRevoked          Notice = "Revoked"
	NoticeRevokeNotAllowed Notice = "RevokeNotAllowed"
	NoticeRevokeGone       Notice = "RevokeGone"
)

// Text is the notice in the words of catalog tag (locale.For): "Answer
// recorded.", "บันทึกคำตอบแล้ว".
func (n Notice) Text(tag string) string {
	return locale.For(tag).Get("Notice" + string(n))
}

// TapAction is what a channel does after it has shown a tap's notice.
type TapAction int

const (
	// TapDone: nothing more. A tap that ended the question leaves every
	// message, the tapped one included, to the engine's finisher; so does
	// a tap on a question that had already ended (the finisher makes sure
	// the tapped message shows the end, with its retries).
	TapDone TapAction = iota
	// TapOpenReply: open a reply box for a free-text answer (the "Other…"
	// button), attach it with Inbox.Attach; ReplyTo is the question it asks.
	TapOpenReply
	// TapDuplicate: the same press arrived twice (a platform's retry, two
	// sessions during a hand-over) and the first delivery is answered;
	// a channel that can answer a press only once leaves this one alone.
	TapDuplicate
)

// TapReply tells the channel how to answer a tap.
type TapReply struct {
	Notice Notice
	// Locale is the catalog the notice is shown in: the question's, or
	// the bridge's default when the tap names no question it knows.
	Locale string
	// QuestionID is the question the tap was for, when known.
	QuestionID string
	// Action is what the channel does after showing the notice.
	Action TapAction
	// Ended says the question had already ended before the tap: the
	// engine's finisher makes sure the tapped message shows the end. A
	// channel whose platform lets the answer to a tap edit the tapped
	// message (Discord's interactions) keeps the tap for Finish to use
	// should the edit otherwise be refused.
	Ended bool
	// ReplyTo is the text of the question a reply box asks; set for
	// TapOpenReply.
	ReplyTo string
	// Retry is set when the tap could not be handled (the store could not
	// be reached): nothing was done and the engine forgot the event, so a
	// later delivery of it is handled. The notice asks to try again.
	Retry bool
	// Count and Need go with NoticeVoted: how many votes agree with the
	// tapper's, and how many must.
	Count, Need int
}

// Text is the notice as the tapper reads it.
func (r TapReply) Text() string { return r.Notice.TextCount(r.Locale, r.Count, r.Need) }

// TextCount is the notice in the words of catalog tag, with a vote's
// count and the quorum for NoticeVoted ("Vote recorded (1 of 2
// needed).").
func (n Notice) TextCount(tag string, count, need int) string {
	if n == NoticeVoted {
		return locale.For(tag).Format("NoticeVoted", map[string]any{"Votes": count, "Need": need})
	}
	return n.Text(tag)
}

// TextReply is a text message from a person.
type TextReply struct {
	EventID string
	// Message is the message itself.
	Message MessageRef
	// ReplyTo is the message it replies to (reply, thread, reference);
	// empty when it is not a reply.
	ReplyTo string
	Person  askbridge.Person
	Text    string
	// FromBot is set for messages of bots, including this one.
	FromBot bool
}

// ReplyOutcome tells the channel what became of a text message.
type ReplyOutcome struct {
	// Claimed is true when the message was taken as (part of) an answer, a
	// skip, or a question about which question it answers.
	Claimed bool
	// Respond, when set, is a short message the channel posts in the
	// chat as a reply to the person's message, in the question's language
	// (the bridge's default when no question is known): a correction
	// naming what is missing, a request to reply to the question they
	// mean, how the question ended, or to try again. Plain text: the
	// channel escapes it for its markup.
	Respond string
	// Retry is set when the message could not be handled (the store could
	// not be reached): nothing was done and the engine forgot the event, so
	// a later delivery of it is handled. Respond then asks to try again
	// when the message was surely meant for a question.
	Retry bool
}

// ErrorKind classifies a platform error into how the engine reacts.
type ErrorKind int

const (
	// Temporary: retry with backoff.
	Temporary ErrorKind = iota + 1
	// RateLimited: retry after RetryAfter.
	RateLimited
	// Permanent: retrying cannot help (chat not found, bot removed); the
	// question ends as undeliverable with the reason.
	Permanent
)

// SendError is a platform's refusal, classified at the adapter boundary.
type SendError struct {
	Kind       ErrorKind
	RetryAfter time.Duration
	// Reason is the platform's own words, shown to the agent.
	Reason string
	Err    error
}

func (e *SendError) Error() string {
	switch e.Kind {
	case RateLimited:
		return fmt.Sprintf("rate limited (retry after %s): %s", e.RetryAfter, e.Reason)
	case Permanent:
		return "permanent: " + e.Reason
	}
	return "temporary: " + e.Reason
}

func (e *SendError) Unwrap() error { return e.Err }

// Classify returns how an error should be treated; an error that is not a
// *SendError is temporary.
func Classify(err error) (ErrorKind, time.Duration, string) {
	var se *SendError
	if errors.As(err, &se) {
		return se.Kind, se.RetryAfter, se.Reason
	}
	return Temporary, 0, err.Error()
}

// OwnTries bounds the tries of a message a channel posts on its own (a
// tap's notice, a correction, a reply box), which no engine retries.
const OwnTries = 5

// PostOwn runs post, one platform call a channel makes on its own, until it
// succeeds, fails for good (Permanent), or has had OwnTries tries: it waits
// out a rate limit's RetryAfter and backs off, with jitter, after another
// failure, all within ctx. It returns the last error.
func PostOwn(ctx context.Context, post func(context.Context) error) error {
	b := retry.Backoff{Min: 300 * time.Millisecond, Max: 5 * time.Second}
	for try := 1; ; try++ {
		err := post(ctx)
		if err == nil {
			return nil
		}
		kind, wait, _ := Classify(err)
		if kind == Permanent || try == OwnTries {
			return err
		}
		if kind != RateLimited {
			wait = b.Next()
		}
		if !retry.Sleep(ctx, wait) {
			return err
		}
	}
}

// LogPanic logs a recovered panic v at error level with its stack, and
// counts it with count (nil: not counted), by op. The engine and every
// channel report the panics they recover through it, so each is logged the
// same way and counted in one metric (cmd/bridge: askbridge_panics_total).
func LogPanic(log *slog.Logger, count func(op string), op string, v any, args ...any) {
	log.Error("panic in "+op, append(args, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))...)
	if count != nil {
		count(op)
	}
}
