package matrix

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/askbridge/askbridge/engine"
)

// Capabilities of Matrix for the planner: a single-select question is a
// poll, whose answers are the plan's buttons (options, then Skip and Seen);
// there is no reply box, so free text is a reply to the prompt.
var Capabilities = engine.Capabilities{
	Buttons:      true,
	PayloadBytes: 255, // a poll answer id is the button's payload
}

// encryptionTTL is how long a room's "not encrypted" is trusted before its
// state is read again.
const encryptionTTL = time.Minute

// Cooldowns is the part of Store that shares a room's rate limit with
// the other replicas.
type Cooldowns interface {
	ShareCooldown(ctx context.Context, platform, bucket string, d time.Duration) error
	Cooldowns(ctx context.Context, platform string, fn func(bucket string, d time.Duration)) error
}

// Channel is the Matrix channel: it posts prompts as polls or numbered
// text with the client-server API, and ends them. It is safe for
// concurrent use.
type Channel struct {
	cfg   Config
	store Store
	log   *slog.Logger
	names names
	cli   *mautrix.Client
	state atomic.Value // engine.ChannelState

	mu        sync.Mutex
	encrypted map[string]encryption // room → its encryption, read at
	cooling   map[string]time.Time  // room → end of its rate limit
	sharing   sync.WaitGroup
	// crash, set by tests only, makes a stopping syncer keep its lease as
	// a killed process would.
	crash atomic.Bool // cooldowns being shared
}

type encryption struct {
	on   bool
	read time.Time
}

// New makes a Matrix channel. It validates cfg and makes no network call;
// Run syncs. store holds the syncer lease, the since token, the event
// first-seen marks and the shared rate limits (the engine records the
// messages); log receives the channel's events (never the token).
// Config.Replica must differ between replicas: it holds the syncer lease.
func New(cfg Config, store Store, log *slog.Logger) (*Channel, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if store == nil {
		return nil, errors.New("matrix: a store is required (it shares rate limits between replicas)")
	}
	cfg = cfg.withDefaults()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cli, err := mautrix.NewClient(cfg.Homeserver, id.UserID(cfg.User), cfg.Token)
	if err != nil {
		return nil, fmt.Errorf("matrix: homeserver %q: %w", cfg.Homeserver, err)
	}
	cli.Client = cfg.HTTPClient
	cli.DefaultHTTPRetries = 0 // the engine owns the retries
	c := &Channel{
		cfg: cfg, store: store, log: log.With("platform", Platform), cli: cli,
		encrypted: map[string]encryption{}, cooling: map[string]time.Time{},
	}
	c.names.m = map[id.UserID]string{}
	c.state.Store(engine.StateConnecting)
	return c, nil
}

var (
	_ engine.Channel     = (*Channel)(nil)
	_ engine.Notifier    = (*Channel)(nil)
	_ engine.PartCounter = (*Channel)(nil)
)

// Platform returns "matrix".
func (c *Channel) Platform() string { return Platform }

// Capabilities returns what Matrix can show; it never changes.
func (c *Channel) Capabilities() engine.Capabilities { return Capabilities }

// State reports the connection state for /readyz. It never blocks.
func (c *Channel) State() engine.ChannelState { return c.state.Load().(engine.ChannelState) }

func (c *Channel) setState(s engine.ChannelState) {
	if old := c.state.Swap(s); old != s {
		c.log.Info("state", "state", string(s))
	}
}

// Parts is how many events the prompt of p takes: one, a poll or a text.
func (c *Channel) Parts(engine.Plan) int { return 1 }

// Send posts d.Plan in room d.Chat as one event, part 0: a poll for a
// single-select question (ModeButtons), numbered text otherwise. A room
// that is end-to-end encrypted is refused (Permanent). The event's
// transaction id is derived from the question, the part and the kind, so
// a retry after a lost reply is recognised by the homeserver (on the same
// access token) and posts nothing new. One try; a refusal is a
// *engine.SendError.
func (c *Channel) Send(ctx context.Context, d engine.Delivery) error {
	if d.From > 0 {
		return nil
	}
	if err := c.checkRoom(ctx, d.Chat); err != nil {
		return err
	}
	typ, content := typeMessage, textContent(joinText(promptLines(d.Plan), false, ""), msgText)
	if d.Plan.Mode == engine.ModeButtons {
		typ, content = typePollStart, pollContent(d.Plan, "")
	}
	ev, err := c.send(ctx, d.Chat, typ, txnID(d.Plan.ID, 0, "prompt"), content)
	if err != nil {
		return err
	}
	if d.Sent != nil {
		d.Sent(engine.MessageRef{Platform: Platform, Chat: d.Chat, Message: ev, Part: 0})
	}
	return nil
}

// Finish shows message ref of an ended question as ended: a poll is ended
// (org.matrix.msc3381.poll.end with the status line) and its text
// fallback edited to show the status line (its answers kept as posted,
// read back from the homeserver, though the ended plan has no Seen); a
// text prompt is edited
// (m.replace) to show its text without the instructions and with the
// status line. Both events have transaction ids of their own, so a repeat
// within the homeserver's memory posts nothing new, and a later repeat
// only says the same again. One try per event; safe to repeat.
func (c *Channel) Finish(ctx context.Context, ref engine.MessageRef, end engine.Ending) error {
	if ref.Part != 0 {
		return &engine.SendError{Kind: engine.Permanent, Reason: fmt.Sprintf("event %s shows part %d, which a Matrix prompt of %s does not have", ref.Message, ref.Part, end.Plan.ID)}
	}
	p := end.Plan
	if p.Mode == engine.ModeButtons {
		if _, err := c.send(ctx, ref.Chat, typePollEnd, txnID(p.ID, ref.Part, "end"), pollEndContent(ref.Message, end.Status)); err != nil {
			return c.gone(err, ref, p.ID)
		}
		content := pollContent(p, end.Status)
		if err := c.keepAnswers(ctx, ref, content); err != nil {
			return c.gone(err, ref, p.ID)
		}
		_, err := c.send(ctx, ref.Chat, typePollStart, txnID(p.ID, ref.Part, "edit"), editContent(ref.Message, content))
		return c.gone(err, ref, p.ID)
	}
	content := textContent(joinText(promptLines(p), true, end.Status), msgText)
	_, err := c.send(ctx, ref.Chat, typeMessage, txnID(p.ID, ref.Part, "edit"), editContent(ref.Message, content))
	return c.gone(err, ref, p.ID)
}

// gone makes an edit of a message the homeserver no longer knows (the
// room is gone) a success, logged: nothing is left to show the end on.
func (c *Channel) gone(err error, ref engine.MessageRef, id string) error {
	if err != nil && notFound(err) {
		c.log.Warn("prompt to finish is gone", "question", id, "room", ref.Chat, "event", ref.Message, "err", err)
		return nil
	}
	return err
}

// Notify posts text as a notice in room chat, in the thread of (and as a
// reply to) event replyTo when it is not empty. It pings nobody. One try
// (a refusal is a *engine.SendError); not safe to repeat.
func (c *Channel) Notify(ctx context.Context, chat, replyTo, text string) error {
	_, err := c.send(ctx, chat, typeMessage, "", noticeContent(replyTo, text))
	return err
}

// txnID is the transaction id of the event of kind ("prompt", "end",
// "edit") showing part of question id: the same question, part and kind
// always give the same id, which is what makes a retried send idempotent.
func txnID(id string, part int, kind string) string {
	sum := sha256.Sum256([]byte(id + "|" + strconv.Itoa(part) + "|" + kind))
	return "ab-" + hex.EncodeToString(sum[:])[:24]
}

// send posts one event of type typ to room with transaction id txn (a
// fresh one when empty), waiting out the room's rate limit first, and
// returns its event id. A refusal is a *engine.SendError; a 429 holds
// the room, here and (through the store) on the other replicas.
func (c *Channel) send(ctx context.Context, room, typ, txn string, content map[string]any) (string, error) {
	if err := c.waitCooldown(ctx, room); err != nil {
		return "", &engine.SendError{Kind: engine.Temporary, Reason: err.Error(), Err: wrap("send "+typ, err)}
	}
	var extra []mautrix.ReqSendEvent
	if txn != "" {
		extra = append(extra, mautrix.ReqSendEvent{TransactionID: txn})
	}
	resp, err := c.cli.SendMessageEvent(ctx, id.RoomID(room), event.Type{Type: typ, Class: event.MessageEventType}, content, extra...)
	if se := c.refused("send "+typ, room, err); se != nil {
		return "", se
	}
	return resp.EventID.String(), nil
}

// refused classifies err of a call about room, holds the room when it
// was rate limited, and marks bad credentials.
func (c *Channel) refused(op, room string, err error) *engine.SendError {
	se := classify(op, err)
	if se == nil {
		return nil
	}
	switch {
	case se.Kind == engine.RateLimited:
		c.hold(room, se.RetryAfter)
		c.share(room, se.RetryAfter)
		c.log.Info("rate limited", "op", op, "room", room, "retry_after", se.RetryAfter)
	case badToken(err):
		c.setState(engine.StateBadCredentials)
		se.Reason += " (the access token is not valid: give the bot a new one)"
	case se.Kind == engine.Temporary:
		c.log.Warn("call failed", "op", op, "room", room, "err", se.Err)
	}
	return se
}

// checkRoom refuses a room that is end-to-end encrypted: its
// m.room.encryption state, read at most once per encryptionTTL (a 404
// means none).
func (c *Channel) checkRoom(ctx context.Context, room string) error {
	c.mu.Lock()
	e, ok := c.encrypted[room]
	c.mu.Unlock()
	if !ok || (!e.on && time.Since(e.read) > encryptionTTL) {
		var content map[string]any
		err := c.cli.StateEvent(ctx, id.RoomID(room), event.StateEncryption, "", &content)
		if err != nil && !notFound(err) {
			return c.refused("read room encryption", room, err)
		}
		e = encryption{on: err == nil, read: time.Now()}
		c.mu.Lock()
		c.encrypted[room] = e
		c.mu.Unlock()
	}
	if e.on {
		return &engine.SendError{Kind: engine.Permanent, Reason: errEncrypted}
	}
	return nil
}
