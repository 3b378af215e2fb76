package telegram

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
	"github.com/jonboulle/clockwork"

	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/redact"
	"github.com/askbridge/askbridge/locale"
)

// Platform is the platform name of this channel in targets and answerers.
const Platform = "telegram"

// Capabilities of Telegram for the planner.
var Capabilities = engine.Capabilities{
	Buttons:        true,
	ButtonsPerRow:  1,    // one full-width row per option (ask-user.md §3)
	MaxButtonLabel: 64,   // Telegram shows long button texts cut; labels are at most 64 anyway
	PayloadBytes:   64,   // Telegram: callback_data is 1-64 bytes
	ReplyBox:       true, // ForceReply
}

// Channel is the Telegram channel: it sends prompts with the Bot API and
// receives taps and replies by long polling (in one replica at a time) or by
// webhook (in every replica). It is safe for concurrent use.
type Channel struct {
	cfg   Config
	coord engine.Coordinator
	log   *slog.Logger
	bot   *bot.Bot
	botID int64
	pace  *pacer
	// scrub takes the token and the webhook secret out of every error
	// that leaves the channel.
	scrub redact.Scrubber

	state    atomic.Value // engine.ChannelState
	username atomic.Value // string: the bot's @username, from getMe
	inbox    atomic.Pointer[inboxBox]

	// effects tracks work a tap or reply started after it was answered
	// (the reply box, corrections, edits), so Run returns after it.
	effects sync.WaitGroup
	// crash, set by tests only, makes a stopping poller keep its lease as
	// a crashed process would.
	crash atomic.Bool

	// marks are the update first-seen marks this replica holds for
	// updates not handled yet; once remembers the callback queries
	// answered and the people told to try again.
	marks heldMarks
	once  onceSet
	// tapPatience is how long a tap may take before it is answered "try
	// again" (tests shorten it).
	tapPatience time.Duration
}

type inboxBox struct{ in engine.Inbox }

var (
	_ engine.Channel     = (*Channel)(nil)
	_ engine.Notifier    = (*Channel)(nil)
	_ engine.PartCounter = (*Channel)(nil)
	_ engine.Updater     = (*Channel)(nil)
	_ engine.Reminder    = (*Channel)(nil)
)

// New makes a Telegram channel. It validates cfg and makes no network call;
// Run connects. coord holds the poller lease, the update offset and the
// update dedupe (the engine records the messages); log receives the
// channel's events (never the token). Config.Replica must differ between
// replicas: it holds the poller lease.
func New(cfg Config, coord engine.Coordinator, log *slog.Logger) (*Channel, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if coord == nil {
		return nil, errors.New("telegram: a coordinator is required")
	}
	cfg = cfg.withDefaults()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// The caller's logger names the replica already (cmd/bridge does).
	log = log.With("platform", Platform)
	c := &Channel{
		cfg: cfg, coord: coord, log: log, scrub: newScrubber(cfg.Token, cfg.WebhookSecret),
		pace: newPacer(cfg.ChatPace, cfg.GlobalPace, clockwork.NewRealClock()), tapPatience: tapPatience,
	}
	c.state.Store(engine.StateConnecting)
	c.username.Store("")
	b, err := c.newBot()
	if err != nil {
		return nil, fmt.Errorf("telegram: new bot: %w", c.scrub.Err(err))
	}
	c.bot = b
	c.botID = b.ID()
	return c, nil
}

// newBot makes a library client on the configured server, with no getMe at
// construction. Extra options configure a poller.
func (c *Channel) newBot(extra ...bot.Option) (*bot.Bot, error) {
	opts := []bot.Option{
		bot.WithServerURL(c.cfg.APIURL),
		bot.WithSkipGetMe(),
		bot.WithHTTPClient(c.cfg.PollTimeout, c.cfg.HTTPClient),
		bot.WithDefaultHandler(func(context.Context, *bot.Bot, *models.Update) {}),
		bot.WithErrorsHandler(func(err error) { c.log.Debug("bot api", "err", c.scrub.Err(err)) }),
	}
	return bot.New(c.cfg.Token, append(opts, extra...)...)
}

// Platform returns "telegram".
func (c *Channel) Platform() string { return Platform }

// Capabilities returns what Telegram can show; it never changes.
func (c *Channel) Capabilities() engine.Capabilities { return Capabilities }

// State reports the connection state: connecting, connected (polling or
// webhook set), standby (another replica polls), retrying, bad credentials.
// Safe for concurrent use; never blocks.
func (c *Channel) State() engine.ChannelState {
	return c.state.Load().(engine.ChannelState)
}

func (c *Channel) setState(s engine.ChannelState) {
	if old := c.state.Swap(s); old != s {
		c.log.Info("state", "state", string(s))
	}
}

// WebhookHandler serves Telegram's webhook POSTs on WebhookPath (or the path
// of Config.WebhookURL, see WebhookPath). Any replica may serve it; it
// answers 503 until Run has started.
func (c *Channel) WebhookHandler() http.Handler { return http.HandlerFunc(c.serveWebhook) }

// WebhookPath is the path to mount WebhookHandler on.
func (c *Channel) WebhookPath() string { return c.cfg.webhookPath() }

// chatID is the chat_id to send to: a number when the chat is one, else the
// @username of a public channel or group.
func chatID(chat string) any {
	if id, err := strconv.ParseInt(chat, 10, 64); err == nil {
		return id
	}
	return chat
}

// Send posts d.Plan to d.Chat as HTML, from part d.From on: the plan is
// split into parts that leave room for the status line, with the keyboard
// under the last part. Each message goes to d.Sent as soon as it is posted,
// with its Part; when d.Sent says so, Send posts no more. Each
// part gets one try: a refusal comes back as a *engine.SendError (a 429
// with its retry_after) and the engine decides whether to go on. It blocks
// while the pacer holds the chat, up to ctx. Not safe to repeat.
func (c *Channel) Send(ctx context.Context, d engine.Delivery) error {
	parts := promptParts(d.Plan)
	for i := max(d.From, 0); i < len(parts); i++ {
		params := &bot.SendMessageParams{
			ChatID: chatID(d.Chat), Text: parts[i], ParseMode: models.ParseModeHTML,
			LinkPreviewOptions: &models.LinkPreviewOptions{IsDisabled: bot.True()},
		}
		if kb := keyboard(d.Plan); kb != nil && i == len(parts)-1 {
			params.ReplyMarkup = kb
		}
		msg, err := c.sendMessage(ctx, d.Chat, params)
		if err != nil {
			return err
		}
		ref := refOf(msg)
		ref.Part = i
		if d.Sent != nil && !d.Sent(ref) {
			return nil
		}
	}
	return nil
}

// Notify posts text (escaped) in chat, as a reply to message replyTo when
// it is not empty. It makes one try (a refusal is a *engine.SendError)
// and blocks while the chat is paced. Not safe to repeat.
func (c *Channel) Notify(ctx context.Context, chat, replyTo, text string) error {
	_, err := c.postText(ctx, chat, replyTo, text)
	return err
}

// postText posts plain text, escaped, in chat with link previews off; as a
// reply to message replyTo when it is a message id, posted all the same
// when that message is gone (allow_sending_without_reply). One try.
func (c *Channel) postText(ctx context.Context, chat, replyTo, text string) (*models.Message, error) {
	params := &bot.SendMessageParams{
		ChatID: chatID(chat), Text: esc(text), ParseMode: models.ParseModeHTML,
		LinkPreviewOptions: &models.LinkPreviewOptions{IsDisabled: bot.True()},
	}
	if id, err := strconv.Atoi(replyTo); err == nil {
		params.ReplyParameters = &models.ReplyParameters{MessageID: id, AllowSendingWithoutReply: true}
	}
	return c.sendMessage(ctx, chat, params)
}

func refOf(m *models.Message) engine.MessageRef {
	return engine.MessageRef{Platform: Platform, Chat: strconv.FormatInt(m.Chat.ID, 10), Message: strconv.Itoa(m.ID)}
}

func (c *Channel) sendMessage(ctx context.Context, chat string, params *bot.SendMessageParams) (*models.Message, error) {
	var msg *models.Message
	err := c.call(ctx, "send message", chat, func(ctx context.Context) error {
		var err error
		msg, err = c.bot.SendMessage(ctx, params)
		return err
	})
	return msg, err
}

// call makes one paced Bot API call and returns its error as a
// *engine.SendError, the token and the webhook secret taken out of its
// text and its reason. It does not retry: the engine owns the retries of
// what it asked for (see engine.PostOwn for what the channel posts on its own).
// A 429 still holds every send of this replica for its retry_after: that
// is pacing, so the other chats do not run into the limit too.
func (c *Channel) call(ctx context.Context, op, chat string, fn func(context.Context) error) error {
	if err := c.pace.wait(ctx, chat); err != nil {
		return &engine.SendError{Kind: engine.Temporary, Reason: err.Error(), Err: wrap(op, err)}
	}
	se := classify(op, c.scrub.Err(fn(ctx)))
	if se == nil {
		return nil
	}
	switch se.Kind {
	case engine.RateLimited:
		c.pace.limited(chat, se.RetryAfter)
		engine.ShareCooldown(c.coord, Platform, chat, se.RetryAfter, c.log)
		c.log.Info("rate limited", "op", op, "chat", chat, "retry_after", se.RetryAfter)
	case engine.Temporary:
		c.log.Warn("call failed", "op", op, "chat", chat, "err", se.Err)
	}
	return se
}

// Finish edits one message of an ended question: the text it showed (part
// ref.Part of end.Plan, or the reply box), the status line under it, the
// keyboard gone. It reads nothing back: everything comes with ref and end.
// "Not modified" (already so) is success; a message that no longer exists
// is logged and skipped. One try (a refusal is a *engine.SendError);
// safe to repeat; blocks while the chat is paced.
func (c *Channel) Finish(ctx context.Context, ref engine.MessageRef, end engine.Ending) error {
	msgID, err := messageID(ref)
	if err != nil {
		return err
	}
	text, prompt, ok := finishedText(ref.Part, end)
	if !ok {
		return noSuchPart(ref, end.Plan)
	}
	params := &bot.EditMessageTextParams{
		ChatID: chatID(ref.Chat), MessageID: msgID, Text: text, ParseMode: models.ParseModeHTML,
		LinkPreviewOptions: &models.LinkPreviewOptions{IsDisabled: bot.True()},
	}
	if prompt {
		params.ReplyMarkup = noKeyboard
		// The offer to keep the answer (ask-user.md §9) takes the place
		// of the buttons, under the last part.
		if end.Offer != nil && ref.Part == len(endedParts(end.Plan))-1 {
			if kb := rowsKeyboard(end.Offer.Rows); kb != nil {
				params.ReplyMarkup = kb
			}
		}
	}
	return c.editText(ctx, "finish", end.Plan.ID, ref, params)
}

// editText makes one paced editMessageText call that shows message ref of
// question id as params say (what names the edit in the log). Telegram's
// "message is not modified" (it shows that already) is success, and so is
// a message that is gone (logged): the edit is safe to repeat. Any other
// refusal is a *engine.SendError.
func (c *Channel) editText(ctx context.Context, what, id string, ref engine.MessageRef, params *bot.EditMessageTextParams) error {
	err := c.call(ctx, "edit message", ref.Chat, func(ctx context.Context) error {
		_, err := c.bot.EditMessageText(ctx, params)
		return err
	})
	switch {
	case err == nil, hasDescription(err, notModified):
		return nil
	case hasDescription(err, editNotFound):
		c.log.Warn("message to "+what+" is gone", "question", id, "chat", ref.Chat, "message", ref.Message)
		return nil
	}
	return err
}

// messageID is the Telegram message id ref names; a ref that names none
// is a Permanent error.
func messageID(ref engine.MessageRef) (int, error) {
	id, err := strconv.Atoi(ref.Message)
	if err != nil {
		return 0, &engine.SendError{Kind: engine.Permanent, Reason: "not a Telegram message id: " + ref.Message, Err: err}
	}
	return id, nil
}

// noSuchPart is the Permanent error of a message said to show a part the
// plan does not have.
func noSuchPart(ref engine.MessageRef, p engine.Plan) error {
	return &engine.SendError{Kind: engine.Permanent, Reason: fmt.Sprintf("message %s shows part %d, which the plan of %s does not have", ref.Message, ref.Part, p.ID)}
}

// finishedText is what a message that showed part (engine.PartReplyBox
// for a reply box) of an ended question shows now: the question kept, the
// instructions gone (ask-user.md §3, §7), the status line added, in the
// words of the plan's catalog. prompt is false for a reply box; ok is false
// for a part the plan does not have.
func finishedText(part int, end engine.Ending) (text string, prompt, ok bool) {
	if part == engine.PartReplyBox {
		question := ""
		if len(end.Plan.Sections) > 0 {
			question = end.Plan.Sections[0].Question
		}
		return replyBoxClosed(locale.For(end.Plan.Locale), question, end.Status), false, true
	}
	parts := endedParts(end.Plan)
	if part < 0 || part >= len(parts) {
		return "", false, false
	}
	text = parts[part]
	if part == len(parts)-1 {
		// The notes take what the status line leaves.
		text = withNotes(text, end.Plan.Notes, plainLen(statusHTML(end.Status))+len("\n\n"))
	}
	return withStatus(text, end.Status), true, true
}

// Parts is how many messages the prompt of p takes; its buttons are on the
// last.
func (c *Channel) Parts(p engine.Plan) int { return len(promptParts(p)) }
