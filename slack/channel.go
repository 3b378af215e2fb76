package slack

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/slack-go/slack"

	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/redact"
)

// Platform is the platform name of Slack, as in targets ("slack:C123").
const Platform = "slack"

// Channel is Slack as an engine.Channel: prompts as Block Kit messages,
// answers by button or by text in the thread. It is safe for concurrent
// use.
type Channel struct {
	cfg   Config
	api   *slack.Client
	coord engine.Coordinator
	log   *slog.Logger

	// gate holds back the calls to a channel a 429 limited (ratelimit.go).
	gate *gate
	// scrub takes the tokens, the signing secret and socket mode tickets
	// out of every error that leaves the channel.
	scrub redact.Scrubber

	state    atomic.Value // engine.ChannelState
	botUser  atomic.Value // string: the bot's own user id
	dms      sync.Map     // user id -> DM channel id
	inbox    atomic.Pointer[inboxRef]
	handling sync.WaitGroup
	// stopMu guards stopped, set when Run ends: no handling starts after.
	stopMu  sync.Mutex
	stopped bool
	// slots bounds the inbound events handled at once; an event waits at
	// most slotWait for one, then is shed for Slack to deliver again.
	slots    chan struct{}
	slotWait time.Duration
}

type inboxRef struct {
	ctx context.Context
	in  engine.Inbox
}

var (
	_ engine.Channel     = (*Channel)(nil)
	_ engine.Notifier    = (*Channel)(nil)
	_ engine.PartCounter = (*Channel)(nil)
	_ engine.Updater     = (*Channel)(nil)
	_ engine.Reminder    = (*Channel)(nil)
)

// New makes the Slack channel. It checks the configuration (cfg.Validate)
// and connects nothing; Run connects. coord deduplicates inbound events
// (Slack retries them).
func New(cfg Config, coord engine.Coordinator, logger *slog.Logger) (*Channel, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if coord == nil {
		return nil, errors.New("slack: a coordinator is required")
	}
	cfg = cfg.withDefaults()
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c := &Channel{cfg: cfg, coord: coord, log: logger.With("platform", Platform), slots: make(chan struct{}, maxHandling), slotWait: slotWait, gate: newGate(clockwork.NewRealClock()), scrub: newScrubber(cfg)}
	c.api = c.client()
	c.state.Store(engine.StateConnecting)
	c.botUser.Store("")
	return c, nil
}

// client makes a Web API client whose calls to a channel pass the
// channel's rate-limit gate; its library log goes to the channel's logger
// at debug level.
func (c *Channel) client() *slack.Client {
	hc := *c.cfg.HTTPClient
	next := hc.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	hc.Transport = &gatedTransport{next: next, gate: c.gate, share: func(channel string, d time.Duration) {
		engine.ShareCooldown(c.coord, Platform, channel, d, c.log)
	}}
	opts := []slack.Option{slack.OptionAPIURL(c.cfg.APIURL), slack.OptionHTTPClient(&hc), slack.OptionLog(libLog(c.log))}
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
func (c *Channel) Capabilities() engine.Capabilities {
	return engine.Capabilities{
		Buttons:        true,
		ButtonsPerRow:  0,
		MaxButtonLabel: maxButtonLabel,
		PayloadBytes:   maxButtonValue,
		ReplyBox:       false,
	}
}

// State reports the connection state. Safe for concurrent use.
func (c *Channel) State() engine.ChannelState { return c.state.Load().(engine.ChannelState) }

func (c *Channel) setState(s engine.ChannelState) {
	if old := c.state.Swap(s); old != s {
		c.log.Info("state", "state", string(s))
	}
}

// Send posts d.Plan in d.Chat, a channel id (C…, G…, D…) or a user id
// (U…, W…) whose DM it opens first, from part d.From on, handing each
// message to d.Sent as soon as Slack has it. It makes one try of each call:
// a refusal is returned as a *engine.SendError (a 429 as RateLimited
// with Slack's Retry-After), and the engine goes on from the first part not
// posted. Each message carries metadata naming the question and the part,
// which Find looks for. Safe for concurrent use; not safe to repeat.
func (c *Channel) Send(ctx context.Context, d engine.Delivery) error {
	msgs := render(d.Plan)
	from := max(d.From, 0)
	if from >= len(msgs) {
		return nil
	}
	channel, err := c.conversation(ctx, d.Chat)
	if err != nil {
		return err
	}
	for part := from; part < len(msgs); part++ {
		m := msgs[part]
		opts := append(quiet(), slack.MsgOptionText(m.Text, false), slack.MsgOptionBlocks(m.Blocks...),
			slack.MsgOptionMetadata(promptMetadata(d.Plan.ID, part)))
		_, ts, err := c.api.PostMessageContext(ctx, channel, opts...)
		if err != nil {
			return fmt.Errorf("slack: post message: %w", c.classify(err))
		}
		if !d.Sent(engine.MessageRef{Platform: Platform, Chat: channel, Message: ts, Part: part}) {
			return nil
		}
	}
	return nil
}

// conversation turns a target chat into a channel id, opening the DM of a
// user id.
func (c *Channel) conversation(ctx context.Context, chat string) (string, error) {
	if chat == "" {
		return "", &engine.SendError{Kind: engine.Permanent, Reason: "channel_not_found", Err: errors.New("slack: no channel given")}
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
		return "", &engine.SendError{Kind: engine.Temporary, Reason: "conversations.open returned no channel"}
	}
	c.dms.Store(chat, ch.ID)
	return ch.ID, nil
}

// Finish edits one message of an ended question with chat.update to part
// ref.Part of end.Plan, ended (renderEnded): the instructions and the
// buttons removed, a context block with end.Status (after the plan's
// notes on the last part) added, the question kept; and on the last part
// end.Offer, the keep buttons, while the offer to keep the answer is open
// (renderEnding). A message that is gone (message_not_found) counts as
// done; a part the plan does not have is a Permanent error. Safe for
// concurrent use and to repeat.
func (c *Channel) Finish(ctx context.Context, ref engine.MessageRef, end engine.Ending) error {
	return c.edit(ctx, ref, renderEnding(end), "message_not_found")
}

// Update edits part ref.Part of an open prompt in place with chat.update
// to show that part of p exactly as Send posts it (render): p's notes
// ("Seen by …") and p's buttons (no Seen once someone pressed it) on the
// last part. Its metadata stays as Send posted it. A message that is gone
// (message_not_found, cant_update_message) counts as done; a part the
// plan does not have is a Permanent error; other refusals are classified
// as Finish's are. Safe for concurrent use and to repeat.
func (c *Channel) Update(ctx context.Context, ref engine.MessageRef, p engine.Plan) error {
	return c.edit(ctx, ref, render(p), "message_not_found", "cant_update_message")
}

// edit replaces message ref with part ref.Part of msgs (chat.update). A
// refusal whose code is one of gone counts as done; any other is returned
// classified.
func (c *Channel) edit(ctx context.Context, ref engine.MessageRef, msgs []message, gone ...string) error {
	if ref.Part < 0 || ref.Part >= len(msgs) {
		return &engine.SendError{Kind: engine.Permanent, Reason: fmt.Sprintf("no part %d in a prompt of %d messages", ref.Part, len(msgs))}
	}
	m := msgs[ref.Part]
	opts := append(quiet(), slack.MsgOptionText(m.Text, false), slack.MsgOptionBlocks(m.Blocks...))
	_, _, _, err := c.api.UpdateMessageContext(ctx, ref.Chat, ref.Message, opts...)
	if err != nil {
		if slices.Contains(gone, errorCode(err)) {
			return nil
		}
		return fmt.Errorf("slack: update message: %w", c.classify(err))
	}
	return nil
}

// Notify posts text (escaped) in chat, in the thread of replyTo when it is
// set. Safe for concurrent use; not safe to repeat.
func (c *Channel) Notify(ctx context.Context, chat, replyTo, text string) error {
	_, err := c.post(ctx, chat, replyTo, text)
	return err
}

// Remind posts text (plain, escaped) as a reply in the thread of the
// prompt message (thread_ts is its ts), unfurling nothing like every post
// of the channel, and returns the reply: its channel and ts. It makes one
// try; a refusal is a *engine.SendError (a prompt that is gone,
// thread_not_found, is Permanent). Safe for concurrent use; not safe to
// repeat.
func (c *Channel) Remind(ctx context.Context, prompt engine.MessageRef, text string) (engine.MessageRef, error) {
	ts, err := c.post(ctx, prompt.Chat, prompt.Message, text)
	if err != nil {
		return engine.MessageRef{}, err
	}
	return engine.MessageRef{Platform: Platform, Chat: prompt.Chat, Message: ts}, nil
}

// post posts text (escaped) in channel, in the thread of thread when it
// is set, and returns the message's ts.
func (c *Channel) post(ctx context.Context, channel, thread, text string) (string, error) {
	opts := append(quiet(), slack.MsgOptionText(Escape(text), false))
	if thread != "" {
		opts = append(opts, slack.MsgOptionTS(thread))
	}
	_, ts, err := c.api.PostMessageContext(ctx, channel, opts...)
	if err != nil {
		return "", fmt.Errorf("slack: post message: %w", c.classify(err))
	}
	return ts, nil
}

// Delete deletes a message the bot posted (chat.delete): a reminder. A
// message already gone (message_not_found) counts as done; other refusals
// are classified (cant_delete_message is Permanent). Safe for concurrent
// use and to repeat.
func (c *Channel) Delete(ctx context.Context, ref engine.MessageRef) error {
	if _, _, err := c.api.DeleteMessageContext(ctx, ref.Chat, ref.Message); err != nil {
		if errorCode(err) == "message_not_found" {
			return nil
		}
		return fmt.Errorf("slack: delete message: %w", c.classify(err))
	}
	return nil
}

// quiet are the options of every message the channel posts or edits:
// links and media are never unfurled (ask-user.md §7: links are shown,
// never previewed). Neither link_names nor parse is ever sent, so Slack
// links no name on its own; the text is escaped, so it holds no mention
// either.
func quiet() []slack.MsgOption {
	return []slack.MsgOption{slack.MsgOptionDisableLinkUnfurl(), slack.MsgOptionDisableMediaUnfurl()}
}

// Errors Slack answers with that no retry can fix (Slack's chat.postMessage,
// chat.update, chat.delete and conversations.open references).
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
	"thread_not_found": true, "cant_delete_message": true,
	"compliance_exports_prevent_deletion": true,
}

// Errors that mean the bot token itself is bad.
var credentialErrors = map[string]bool{
	"invalid_auth": true, "not_authed": true, "account_inactive": true,
	"token_revoked": true, "token_expired": true,
}

// classify turns a slack-go error into a SendError: a 429 is RateLimited
// with Slack's Retry-After, a permanent error code is Permanent with the
// code as the reason, anything else Temporary. The secrets are taken out
// of the error first (see scrubber).
func (c *Channel) classify(err error) *engine.SendError {
	err = c.scrub.Err(err)
	var rl *slack.RateLimitedError
	if errors.As(err, &rl) {
		return &engine.SendError{Kind: engine.RateLimited, RetryAfter: rl.RetryAfter, Reason: "ratelimited", Err: err}
	}
	code := errorCode(err)
	if credentialErrors[code] {
		c.setState(engine.StateBadCredentials)
	}
	if permanentErrors[code] {
		return &engine.SendError{Kind: engine.Permanent, Reason: code, Err: err}
	}
	reason := code
	if reason == "" {
		reason = err.Error()
	}
	return &engine.SendError{Kind: engine.Temporary, Reason: reason, Err: err}
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

// Parts is how many messages the prompt of p takes; its buttons are on the
// last.
func (c *Channel) Parts(p engine.Plan) int { return len(render(p)) }
