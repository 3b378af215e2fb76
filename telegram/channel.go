package telegram

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/askbridge/askbridge"
)

// Platform is the platform name of this channel in targets and answerers.
const Platform = "telegram"

// Capabilities of Telegram for the planner.
var Capabilities = askbridge.Capabilities{
	Buttons:        true,
	ButtonsPerRow:  1,  // one full-width row per option (ask-user.md §3)
	MaxButtonLabel: 64, // Telegram shows long button texts cut; labels are at most 64 anyway
	PayloadBytes:   64, // Telegram: callback_data is 1-64 bytes
	MessageChars:   messageChars,
	ReplyBox:       true, // ForceReply
}

// Channel is the Telegram channel: it sends prompts with the Bot API and
// receives taps and replies by long polling (in one replica at a time) or by
// webhook (in every replica). It is safe for concurrent use.
type Channel struct {
	cfg   Config
	store askbridge.Store
	log   *slog.Logger
	bot   *bot.Bot
	botID int64
	pace  *pacer

	state    atomic.Value // askbridge.ChannelState
	username atomic.Value // string: the bot's @username, from getMe
	inbox    atomic.Pointer[inboxBox]

	// effects tracks work a tap or reply started after it was answered
	// (the reply box, corrections, edits), so Run returns after it.
	effects sync.WaitGroup
	// crash, set by tests only, makes a stopping poller keep its lease as
	// a crashed process would.
	crash atomic.Bool
}

type inboxBox struct{ in askbridge.Inbox }

var (
	_ askbridge.Channel  = (*Channel)(nil)
	_ askbridge.Notifier = (*Channel)(nil)
)

// New makes a Telegram channel. It validates cfg and makes no network call;
// Run connects. st holds the poller lease, the update offset, the update
// dedupe and the messages of each question; log receives the channel's
// events (never the token). Config.Replica must differ between replicas:
// it holds the poller lease.
func New(cfg Config, st askbridge.Store, log *slog.Logger) (*Channel, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if st == nil {
		return nil, errors.New("telegram: a store is required")
	}
	cfg = cfg.withDefaults()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// The caller's logger names the replica already (cmd/bridge does).
	log = log.With("platform", Platform)
	c := &Channel{cfg: cfg, store: st, log: log, pace: newPacer(cfg.ChatPace, cfg.GlobalPace)}
	c.state.Store(askbridge.StateConnecting)
	c.username.Store("")
	b, err := c.newBot()
	if err != nil {
		return nil, fmt.Errorf("telegram: new bot: %w", err)
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
		bot.WithErrorsHandler(func(err error) { c.log.Debug("bot api", "err", err) }),
	}
	return bot.New(c.cfg.Token, append(opts, extra...)...)
}

// Platform returns "telegram".
func (c *Channel) Platform() string { return Platform }

// Capabilities returns what Telegram can show; it never changes.
func (c *Channel) Capabilities() askbridge.Capabilities { return Capabilities }

// State reports the connection state: connecting, connected (polling or
// webhook set), standby (another replica polls), retrying, bad credentials.
// Safe for concurrent use; never blocks.
func (c *Channel) State() askbridge.ChannelState {
	return c.state.Load().(askbridge.ChannelState)
}

func (c *Channel) setState(s askbridge.ChannelState) {
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

// Send posts the plan to chat as HTML, split into parts that leave room for
// the status line, with the keyboard under the last part. It returns every
// message it posted, also when it fails part-way. It blocks while the
// pacer or a 429 holds the chat, up to ctx. Not safe to repeat.
func (c *Channel) Send(ctx context.Context, chat string, plan askbridge.Plan) ([]askbridge.MessageRef, error) {
	parts := promptParts(plan)
	var refs []askbridge.MessageRef
	for i, text := range parts {
		params := &bot.SendMessageParams{
			ChatID: chatID(chat), Text: text, ParseMode: models.ParseModeHTML,
			LinkPreviewOptions: &models.LinkPreviewOptions{IsDisabled: bot.True()},
		}
		if kb := keyboard(plan); kb != nil && i == len(parts)-1 {
			params.ReplyMarkup = kb
		}
		msg, err := c.sendMessage(ctx, chat, params)
		if err != nil {
			return refs, err
		}
		ref := refOf(msg)
		refs = append(refs, ref)
		// Record the message at once, so a tap that comes before the
		// engine records it (it does too; adding is idempotent) finds it.
		if err := c.store.AddMessage(ctx, plan.ID, ref); err != nil {
			c.log.Warn("record message", "question", plan.ID, "err", err)
		}
	}
	return refs, nil
}

// Notify posts text (escaped) in chat, as a reply to message replyTo when
// it is not empty. It blocks while the chat is paced. Not safe to repeat.
func (c *Channel) Notify(ctx context.Context, chat, replyTo, text string) error {
	params := &bot.SendMessageParams{ChatID: chatID(chat), Text: esc(text), ParseMode: models.ParseModeHTML}
	if id, err := strconv.Atoi(replyTo); err == nil {
		params.ReplyParameters = &models.ReplyParameters{MessageID: id, AllowSendingWithoutReply: true}
	}
	_, err := c.sendMessage(ctx, chat, params)
	return err
}

func refOf(m *models.Message) askbridge.MessageRef {
	return askbridge.MessageRef{Platform: Platform, Chat: strconv.FormatInt(m.Chat.ID, 10), Message: strconv.Itoa(m.ID)}
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

// Attempts of one call before its error goes to the caller: a 429 is
// waited out this many times (each wait is Telegram's retry_after), a
// temporary failure retried with a short backoff.
const (
	rateLimitAttempts = 10
	temporaryAttempts = 3
)

// call runs one paced Bot API call. It waits out 429s itself (so a prompt
// in several parts is not left half-sent) and retries temporary failures a
// few times; the error it returns is a *askbridge.SendError.
func (c *Channel) call(ctx context.Context, op, chat string, fn func(context.Context) error) error {
	limited, temporary := 0, 0
	for {
		if err := c.pace.wait(ctx, chat); err != nil {
			return &askbridge.SendError{Kind: askbridge.Temporary, Reason: err.Error(), Err: wrap(op, err)}
		}
		se := classify(op, fn(ctx))
		if se == nil {
			return nil
		}
		switch se.Kind {
		case askbridge.RateLimited:
			c.pace.pause(se.RetryAfter)
			limited++
			c.log.Info("rate limited", "op", op, "chat", chat, "retry_after", se.RetryAfter)
			if limited < rateLimitAttempts {
				continue
			}
		case askbridge.Temporary:
			temporary++
			c.log.Warn("call failed", "op", op, "chat", chat, "attempt", temporary, "err", se.Err)
			if ctx.Err() == nil && temporary < temporaryAttempts {
				d := time.Duration(temporary) * 300 * time.Millisecond
				if !sleep(ctx, d+time.Duration(rand.Int64N(int64(d)/5))) {
					return se
				}
				continue
			}
		}
		return se
	}
}

// Finish edits one message of an ended question: the same text, the status
// line under it, the keyboard gone. "Not modified" (already so) is success;
// a message that no longer exists is logged and skipped. Safe to repeat;
// blocks while the chat is paced.
func (c *Channel) Finish(ctx context.Context, ref askbridge.MessageRef, plan askbridge.Plan, status string) error {
	msgID, err := strconv.Atoi(ref.Message)
	if err != nil {
		return &askbridge.SendError{Kind: askbridge.Permanent, Reason: "not a Telegram message id: " + ref.Message}
	}
	text, prompt, err := c.finishedText(ctx, ref, plan, status)
	if err != nil {
		return &askbridge.SendError{Kind: askbridge.Temporary, Reason: err.Error(), Err: err}
	}
	params := &bot.EditMessageTextParams{
		ChatID: chatID(ref.Chat), MessageID: msgID, Text: text, ParseMode: models.ParseModeHTML,
		LinkPreviewOptions: &models.LinkPreviewOptions{IsDisabled: bot.True()},
	}
	if prompt {
		params.ReplyMarkup = noKeyboard
	}
	err = c.call(ctx, "edit message", ref.Chat, func(ctx context.Context) error {
		_, err := c.bot.EditMessageText(ctx, params)
		return err
	})
	switch {
	case err == nil, hasDescription(err, notModified):
		return nil
	case hasDescription(err, editNotFound):
		c.log.Warn("message to finish is gone", "question", plan.ID, "chat", ref.Chat, "message", ref.Message)
		return nil
	}
	return err
}

// finishedText works out what message ref showed, from the plan and where
// ref stands among the question's recorded messages: the prompt's parts come
// first (Send records them in order), reply boxes after. prompt is false for
// a reply box.
func (c *Channel) finishedText(ctx context.Context, ref askbridge.MessageRef, plan askbridge.Plan, status string) (string, bool, error) {
	parts := promptParts(plan)
	refs, err := c.store.Messages(ctx, plan.ID)
	if err != nil {
		return "", false, fmt.Errorf("telegram: finish: list messages: %w", err)
	}
	i := slices.Index(refs, ref)
	switch {
	case i < 0:
		// Not recorded (yet): the tapped message of a one-part prompt.
		return withStatus(parts[len(parts)-1], status), true, nil
	case i < len(parts):
		return withStatus(parts[i], status), true, nil
	}
	question := ""
	if len(plan.Sections) > 0 {
		question = plan.Sections[0].Question
	}
	return replyBoxClosed(question, status), false, nil
}

// sleep waits d or until ctx is done; it reports whether it slept fully.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// backoff is an exponential backoff with jitter for the run loops.
type backoff struct{ min, max, cur time.Duration }

func (b *backoff) next() time.Duration {
	b.cur = min(max(b.cur*2, b.min), b.max)
	return b.cur - time.Duration(rand.Int64N(int64(b.cur)/5+1))
}

func (b *backoff) reset() { b.cur = 0 }
