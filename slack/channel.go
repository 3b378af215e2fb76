package slack

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slack-go/slack"

	"github.com/askbridge/askbridge"
)

// Platform is the platform name of Slack, as in targets ("slack:C123").
const Platform = "slack"

// DefaultAPIURL is Slack's Web API base; slack-go appends the method name,
// so it ends with '/'.
const DefaultAPIURL = "https://slack.com/api/"

// Config configures the Slack channel. BotToken is required, and one of
// AppToken (socket mode) or SigningSecret (HTTP mode).
type Config struct {
	// BotToken (xoxb-…) calls the Web API.
	BotToken string
	// AppToken (xapp-…) turns socket mode on: inbound events come over a
	// websocket every replica opens.
	AppToken string
	// SigningSecret checks the requests of HTTP mode (used when AppToken
	// is empty).
	SigningSecret string
	// APIURL is the Web API base (default DefaultAPIURL); it must end
	// with '/'.
	APIURL string
	// HTTPClient calls the Web API (default: a client with a 30 s timeout).
	HTTPClient *http.Client
	// PingInterval is how long socket mode waits for Slack's websocket
	// ping before it reconnects (default 30 s, the library's).
	PingInterval time.Duration
	// RetryMin and RetryMax bound the backoff between reconnects
	// (defaults 1 s and 1 min).
	RetryMin, RetryMax time.Duration
	// HandleTimeout bounds the handling of one inbound event after it was
	// acknowledged (default 30 s).
	HandleTimeout time.Duration
	// Now is the clock for the signature replay window; tests pass their
	// own (default time.Now).
	Now func() time.Time
}

// Channel is Slack as an askbridge.Channel: prompts as Block Kit messages,
// answers by button or by text in the thread. It is safe for concurrent
// use.
type Channel struct {
	cfg   Config
	api   *slack.Client
	store askbridge.Store
	log   *slog.Logger

	state    atomic.Value // askbridge.ChannelState
	botUser  atomic.Value // string: the bot's own user id
	dms      sync.Map     // user id -> DM channel id
	inbox    atomic.Pointer[inboxRef]
	handling sync.WaitGroup
	// stopMu guards stopped, set when Run ends: no handling starts after.
	stopMu  sync.Mutex
	stopped bool
	// slots bounds the inbound events handled at once.
	slots chan struct{}
}

type inboxRef struct {
	ctx context.Context
	in  askbridge.Inbox
}

var (
	_ askbridge.Channel  = (*Channel)(nil)
	_ askbridge.Notifier = (*Channel)(nil)
)

// New makes the Slack channel. It checks the configuration and connects
// nothing; Run connects. st is used to deduplicate events (Slack retries
// them) and to find which part of a long prompt a message is.
func New(cfg Config, st askbridge.Store, logger *slog.Logger) (*Channel, error) {
	if cfg.BotToken == "" {
		return nil, errors.New("slack: the bot token is required")
	}
	if cfg.AppToken == "" && cfg.SigningSecret == "" {
		return nil, errors.New("slack: the app token (socket mode) or the signing secret (HTTP mode) is required")
	}
	if st == nil {
		return nil, errors.New("slack: a store is required")
	}
	if cfg.APIURL == "" {
		cfg.APIURL = DefaultAPIURL
	}
	if !strings.HasSuffix(cfg.APIURL, "/") {
		return nil, fmt.Errorf("slack: the API URL %q must end with '/'", cfg.APIURL)
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	if cfg.PingInterval <= 0 {
		cfg.PingInterval = 30 * time.Second
	}
	if cfg.RetryMin <= 0 {
		cfg.RetryMin = time.Second
	}
	if cfg.RetryMax <= 0 {
		cfg.RetryMax = time.Minute
	}
	if cfg.HandleTimeout <= 0 {
		cfg.HandleTimeout = 30 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c := &Channel{cfg: cfg, store: st, log: logger.With("platform", Platform), slots: make(chan struct{}, 64)}
	c.api = c.client()
	c.state.Store(askbridge.StateConnecting)
	c.botUser.Store("")
	return c, nil
}

// client makes a Web API client; its library log goes to the channel's
// logger at debug level.
func (c *Channel) client() *slack.Client {
	opts := []slack.Option{slack.OptionAPIURL(c.cfg.APIURL), slack.OptionHTTPClient(c.cfg.HTTPClient), slack.OptionLog(libLog(c.log))}
	if c.cfg.AppToken != "" {
		opts = append(opts, slack.OptionAppLevelToken(c.cfg.AppToken))
	}
	return slack.New(c.cfg.BotToken, opts...)
}

func libLog(l *slog.Logger) *log.Logger {
	return slog.NewLogLogger(l.Handler(), slog.LevelDebug)
}

// Platform returns "slack".
func (c *Channel) Platform() string { return Platform }

// Capabilities: one actions block of buttons, labels and values within
// Block Kit's limits, no reply box (text answers go in the thread).
func (c *Channel) Capabilities() askbridge.Capabilities {
	return askbridge.Capabilities{
		Buttons:        true,
		ButtonsPerRow:  0,
		MaxButtonLabel: maxButtonLabel,
		PayloadBytes:   maxButtonValue,
		MessageChars:   maxSectionChars,
		ReplyBox:       false,
	}
}

// State reports the connection state. Safe for concurrent use.
func (c *Channel) State() askbridge.ChannelState { return c.state.Load().(askbridge.ChannelState) }

func (c *Channel) setState(s askbridge.ChannelState) {
	if old := c.state.Swap(s); old != s {
		c.log.Info("state", "state", string(s))
	}
}

// Send posts plan in chat: a channel id (C…, G…, D…) or a user id (U…,
// W…), whose DM it opens first. It returns every message it posted, also
// when a later part failed. A rate limit on the first message is returned
// as a RateLimited *askbridge.SendError for the engine to wait out; on a
// later part Send waits itself (up to ctx), as the first parts are out.
// Safe for concurrent use; not safe to repeat.
func (c *Channel) Send(ctx context.Context, chat string, plan askbridge.Plan) ([]askbridge.MessageRef, error) {
	channel, err := c.conversation(ctx, chat)
	if err != nil {
		return nil, err
	}
	var refs []askbridge.MessageRef
	for _, m := range render(plan) {
		for {
			_, ts, err := c.api.PostMessageContext(ctx, channel,
				slack.MsgOptionText(m.Text, false), slack.MsgOptionBlocks(m.Blocks...),
				slack.MsgOptionDisableLinkUnfurl(), slack.MsgOptionDisableMediaUnfurl())
			if err == nil {
				refs = append(refs, askbridge.MessageRef{Platform: Platform, Chat: channel, Message: ts})
				break
			}
			se := c.classify(err)
			if se.Kind == askbridge.RateLimited && len(refs) > 0 {
				if !sleep(ctx, se.RetryAfter) {
					return refs, fmt.Errorf("slack: post message: %w", ctx.Err())
				}
				continue
			}
			return refs, fmt.Errorf("slack: post message: %w", se)
		}
	}
	return refs, nil
}

// conversation turns a target chat into a channel id, opening the DM of a
// user id.
func (c *Channel) conversation(ctx context.Context, chat string) (string, error) {
	if chat == "" {
		return "", &askbridge.SendError{Kind: askbridge.Permanent, Reason: "channel_not_found", Err: errors.New("slack: no channel given")}
	}
	if chat[0] != 'U' && chat[0] != 'W' {
		return chat, nil
	}
	if id, ok := c.dms.Load(chat); ok {
		return id.(string), nil
	}
	ch, _, _, err := c.api.OpenConversationContext(ctx, &slack.OpenConversationParameters{Users: []string{chat}})
	if err != nil {
		return "", fmt.Errorf("slack: open DM: %w", c.classify(err))
	}
	if ch == nil || ch.ID == "" {
		return "", &askbridge.SendError{Kind: askbridge.Temporary, Reason: "conversations.open returned no channel"}
	}
	c.dms.Store(chat, ch.ID)
	return ch.ID, nil
}

// Finish edits one message of an ended question with chat.update: the
// buttons removed, a context block with the status line added, the text
// kept. A deleted message is a Permanent error the engine logs. Safe for
// concurrent use and to repeat.
func (c *Channel) Finish(ctx context.Context, ref askbridge.MessageRef, plan askbridge.Plan, status string) error {
	msgs := render(plan)
	part := 0
	if len(msgs) > 1 {
		part = c.partOf(ctx, plan.ID, ref)
	}
	m := finished(msgs[part], status)
	_, _, _, err := c.api.UpdateMessageContext(ctx, ref.Chat, ref.Message,
		slack.MsgOptionText(m.Text, false), slack.MsgOptionBlocks(m.Blocks...))
	if err != nil {
		return fmt.Errorf("slack: update message: %w", c.classify(err))
	}
	return nil
}

// partOf finds which message of a long prompt ref is, from the order the
// engine recorded them in; 0 when it cannot tell.
func (c *Channel) partOf(ctx context.Context, id string, ref askbridge.MessageRef) int {
	refs, err := c.store.Messages(ctx, id)
	if err != nil {
		c.log.Warn("list the messages of a question", "question", id, "err", err)
		return 0
	}
	n := 0
	for _, r := range refs {
		if r.Platform != Platform {
			continue
		}
		if r == ref {
			return n
		}
		n++
	}
	return 0
}

// Notify posts text (escaped) in chat, in the thread of replyTo when it is
// set. Safe for concurrent use; not safe to repeat.
func (c *Channel) Notify(ctx context.Context, chat, replyTo, text string) error {
	opts := []slack.MsgOption{slack.MsgOptionText(Escape(text), false), slack.MsgOptionDisableLinkUnfurl()}
	if replyTo != "" {
		opts = append(opts, slack.MsgOptionTS(replyTo))
	}
	if _, _, err := c.api.PostMessageContext(ctx, chat, opts...); err != nil {
		return fmt.Errorf("slack: post message: %w", c.classify(err))
	}
	return nil
}

// Errors Slack answers with that no retry can fix (Slack's chat.postMessage,
// chat.update and conversations.open references).
var permanentErrors = map[string]bool{
	"channel_not_found": true, "not_in_channel": true, "is_archived": true,
	"account_inactive": true, "invalid_auth": true, "not_authed": true,
	"token_revoked": true, "token_expired": true, "no_permission": true,
	"missing_scope": true, "restricted_action": true, "user_not_found": true,
	"user_disabled": true, "cannot_dm_bot": true, "msg_too_long": true,
	"invalid_blocks": true, "invalid_blocks_format": true, "no_text": true,
	"message_not_found": true, "cant_update_message": true,
	"edit_window_closed": true, "team_access_not_granted": true,
	"ekm_access_denied": true, "channel_is_archived": true,
}

// Errors that mean the bot token itself is bad.
var credentialErrors = map[string]bool{
	"invalid_auth": true, "not_authed": true, "account_inactive": true,
	"token_revoked": true, "token_expired": true,
}

// classify turns a slack-go error into a SendError: a 429 is RateLimited
// with Slack's Retry-After, a permanent error code is Permanent with the
// code as the reason, anything else Temporary.
func (c *Channel) classify(err error) *askbridge.SendError {
	var rl *slack.RateLimitedError
	if errors.As(err, &rl) {
		return &askbridge.SendError{Kind: askbridge.RateLimited, RetryAfter: rl.RetryAfter, Reason: "ratelimited", Err: err}
	}
	code := errorCode(err)
	if credentialErrors[code] {
		c.setState(askbridge.StateBadCredentials)
	}
	if permanentErrors[code] {
		return &askbridge.SendError{Kind: askbridge.Permanent, Reason: code, Err: err}
	}
	reason := code
	if reason == "" {
		reason = err.Error()
	}
	return &askbridge.SendError{Kind: askbridge.Temporary, Reason: reason, Err: err}
}

// errorCode is the `error` of Slack's {"ok":false,"error":"…"} body, or "".
func errorCode(err error) string {
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		return se.Err
	}
	var sp *slack.SlackErrorResponse
	if errors.As(err, &sp) {
		return sp.Err
	}
	return ""
}

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
