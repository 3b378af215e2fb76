package discord

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/redact"
)

// Platform is the platform name in targets and message references.
const Platform = "discord"

// Channel shows questions in Discord channels and DMs and brings the
// answers back from button presses and replies. It is safe for concurrent
// use.
type Channel struct {
	cfg   Config
	coord engine.Coordinator
	log   *slog.Logger
	// rest carries every REST call; it never opens a gateway.
	rest   *discordgo.Session
	client *http.Client
	// lim is the REST transport's rate limiter, which also applies the
	// cooldowns other replicas share.
	lim *limiter
	// scrub takes the tokens out of every error that leaves the channel.
	scrub redact.Scrubber

	state atomic.Value // engine.ChannelState
	me    atomic.Pointer[discordgo.User]
	appID atomic.Value // string

	dmMu sync.Mutex
	dms  map[string]string // user id -> DM channel id

	// presses are the presses on messages of questions that had already
	// ended, which Finish may edit through.
	presses presses
}

var (
	_ engine.Channel     = (*Channel)(nil)
	_ engine.Notifier    = (*Channel)(nil)
	_ engine.PartCounter = (*Channel)(nil)
	_ engine.Updater     = (*Channel)(nil)
	_ engine.Reminder    = (*Channel)(nil)
)

// New makes the Discord channel. coord holds the gateway lease and
// remembers the presses the engine never sees (a custom_id this bridge did
// not make); log gets the channel's logs (the token is never logged). New
// does not connect: Run does.
func New(cfg Config, coord engine.Coordinator, log *slog.Logger) (*Channel, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if coord == nil {
		return nil, fmt.Errorf("discord: a Coordinator is required")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg = cfg.withDefaults()
	base, err := url.Parse(cfg.APIURL)
	if err != nil {
		return nil, fmt.Errorf("discord: APIURL: %w", err)
	}
	next := cfg.HTTPClient.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	client := *cfg.HTTPClient
	tr := &transport{base: base, next: next, lim: newLimiter()}
	client.Transport = tr
	c := &Channel{
		cfg: cfg, coord: coord, log: log.With("platform", Platform),
		client: &client, dms: map[string]string{}, scrub: newScrubber(cfg.bare()),
		lim: tr.lim,
	}
	tr.share = func(bucket string, d time.Duration) { engine.ShareCooldown(coord, Platform, bucket, d, c.log) }
	c.rest = c.newSession()
	c.state.Store(engine.StateConnecting)
	c.appID.Store(cfg.AppID)
	return c, nil
}

// newSession makes a discordgo session with the bridge's policies: REST
// through the rewriting, rate-limiting transport; no retry on 429 or 502
// (the engine retries, bounded and visibly); no reconnects of its own (Run
// owns them); no state cache; no logging of its own (errors come back to
// the caller, who logs them with slog).
func (c *Channel) newSession() *discordgo.Session {
	s, _ := discordgo.New(c.cfg.token()) // New never fails
	s.Client = c.client
	s.ShouldRetryOnRateLimit = false
	s.MaxRestRetries = 0
	s.ShouldReconnectOnError = false
	s.ShouldReconnectVoiceOnSessionError = false
	s.StateEnabled = false
	s.LogLevel = -1
	s.SyncEvents = true
	s.Identify.Intents = intents
	return s
}

// intents: messages in guild channels and DMs, with their text (the
// privileged MESSAGE_CONTENT intent, enabled in the developer portal).
// Button presses arrive without any intent.
const intents = discordgo.IntentsGuildMessages | discordgo.IntentsDirectMessages | discordgo.IntentMessageContent

// Platform is "discord".
func (c *Channel) Platform() string { return Platform }

// Capabilities: buttons 5 to a row, labels up to 80 characters, custom_id
// up to 100, messages up to 2000 characters, no reply box.
func (c *Channel) Capabilities() engine.Capabilities { return caps }

// State reports the connection state. Safe for concurrent use.
func (c *Channel) State() engine.ChannelState { return c.state.Load().(engine.ChannelState) }

func (c *Channel) setState(s engine.ChannelState) {
	if old := c.state.Swap(s); old != s {
		c.log.Info("discord state", "state", string(s))
	}
}

// Send posts d.Plan in d.Chat (a channel id, or "@<user id>" for a DM):
// the escaped text, cut between lines into messages of at most 2000
// characters, the buttons under the last one; no message pings anyone or
// shows an embed. It posts the parts from d.From on and hands
// each message to d.Sent as soon as Discord accepted it, with Part set to
// the part's index in the whole prompt. Each REST call is made once: a
// refusal comes back as a *engine.SendError (a 429 as RateLimited with
// Discord's retry_after); a call waits for a rate-limit bucket known to be
// empty only as long as ctx allows. Safe for concurrent use, and safe to
// repeat within Discord's nonce window (a few minutes): each part carries
// a nonce made from the question id, the channel and the part's index,
// enforced by Discord, so a part posted by a replica that died before
// recording it is returned again instead of being posted twice.
func (c *Channel) Send(ctx context.Context, d engine.Delivery) error {
	parts := renderParts(d.Plan)
	from := max(d.From, 0)
	if from >= len(parts) {
		return nil
	}
	channelID, err := c.resolveChat(ctx, d.Chat)
	if err != nil {
		return err
	}
	comps := components(d.Plan)
	for i := from; i < len(parts); i++ {
		ms := &discordgo.MessageSend{Content: parts[i], AllowedMentions: noPings(), Flags: noEmbeds}
		if i == len(parts)-1 {
			ms.Components = comps
		}
		m, err := c.post(ctx, channelID, ms, nonce(d.Plan.ID, channelID, i))
		if err != nil {
			return c.classify("send message", err)
		}
		if d.Sent != nil && !d.Sent(engine.MessageRef{Platform: Platform, Chat: channelID, Message: m.ID, Part: i}) {
			return nil
		}
	}
	return nil
}

// sendBody is a create-message body with the nonce fields discordgo's
// MessageSend lacks.
type sendBody struct {
	*discordgo.MessageSend
	Nonce        string `json:"nonce,omitempty"`
	EnforceNonce bool   `json:"enforce_nonce,omitempty"`
}

// post creates a message with an enforced nonce: if this bot created a
// message with the same nonce in the past few minutes, Discord returns
// that message and creates none.
func (c *Channel) post(ctx context.Context, channelID string, ms *discordgo.MessageSend, nonce string) (*discordgo.Message, error) {
	endpoint := discordgo.EndpointChannelMessages(channelID)
	body := sendBody{MessageSend: ms, Nonce: nonce, EnforceNonce: nonce != ""}
	raw, err := c.rest.RequestWithBucketID(http.MethodPost, endpoint, body, endpoint, discordgo.WithContext(ctx))
	if err != nil {
		return nil, err
	}
	var m discordgo.Message
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("decode created message: %w", err)
	}
	if m.ID == "" {
		return nil, fmt.Errorf("created message has no id")
	}
	return &m, nil
}

// nonce names part i of question id in channel channelID in at most 25
// characters (Discord's limit): a digest, since ids may be longer. Discord
// checks a nonce against every message of the bot, whatever its channel,
// so the channel is part of it: a question asked in several channels
// (ask-user.md §5) posts each part once in each. The same question, channel
// and part always give the same nonce; nothing else is meant to.
func nonce(id, channelID string, part int) string {
	sum := sha256.Sum256([]byte(id + "\x00" + channelID + "\x00" + strconv.Itoa(part)))
	return "ab" + base64.RawURLEncoding.EncodeToString(sum[:])[:23]
}

// resolveChat turns a chat into a channel id, opening the DM channel for
// "@<user id>" (POST /users/@me/channels; remembered afterwards).
func (c *Channel) resolveChat(ctx context.Context, chat string) (string, error) {
	user, ok := strings.CutPrefix(chat, "@")
	if !ok {
		return chat, nil
	}
	c.dmMu.Lock()
	id, known := c.dms[user]
	c.dmMu.Unlock()
	if known {
		return id, nil
	}
	ch, err := c.rest.UserChannelCreate(user, discordgo.WithContext(ctx))
	if err != nil {
		return "", c.classify("open DM", err)
	}
	c.dmMu.Lock()
	c.dms[user] = ch.ID
	c.dmMu.Unlock()
	return ch.ID, nil
}

// Finish edits one message of an ended question: components removed (but
// the keep buttons of end.Offer, on the last part), part
// ref.Part of end.Plan kept as its text without the instructions (the same
// split as Send's, so the part is the one the message showed), its notes,
// and end.Status under it, in one PATCH (nothing is read back from
// Discord). A message already in that state gets the same content again;
// a deleted message or channel is logged and counts as success. Safe to
// repeat and to call concurrently.
func (c *Channel) Finish(ctx context.Context, ref engine.MessageRef, end engine.Ending) error {
	content, ok := endedPart(end.Plan, ref.Part, end.Status)
	if !ok {
		return noSuchPart(ref)
	}
	comps := []discordgo.MessageComponent{}
	// The offer to keep the answer (ask-user.md §9) takes the place of the
	// buttons, under the last part.
	if end.Offer != nil && ref.Part == len(layout(end.Plan))-1 {
		comps = append(comps, rowsComponents(end.Offer.Rows)...)
	}
	err := c.edit(ctx, ref, end.Plan.ID, content, comps)
	if code := restCode(err); code == codeMissingAccess || code == codeMissingPermissions {
		return c.editThroughPress(ctx, ref, content, comps, err)
	}
	return err
}

// editThroughPress edits message ref to content and comps through the latest press
// on it, when the bot may no longer edit it in its channel (refused, the
// refusal): an acknowledged press edits its @original, the pressed
// message, with no permission in the channel. A press not acknowledged
// yet is waited for (a temporary error: the finisher tries again); with
// no press, the refusal stands.
func (c *Channel) editThroughPress(ctx context.Context, ref engine.MessageRef, content string, comps []discordgo.MessageComponent, refused error) error {
	i, acked := c.presses.on(ref.Message, time.Now())
	if i == nil {
		return refused
	}
	if !acked {
		return &engine.SendError{Kind: engine.Temporary, Reason: "discord: the edit is refused; the press on the message is not acknowledged yet, to edit it through the press"}
	}
	_, err := c.rest.InteractionResponseEdit(i, &discordgo.WebhookEdit{Content: &content, Components: &comps, AllowedMentions: noPings()}, discordgo.WithContext(ctx))
	if err != nil {
		return c.classify("edit through a press", err)
	}
	return nil
}

// Update edits message ref, part ref.Part of an open prompt, to show p:
// the part's text exactly as Send posts it for p (p.Notes under the last
// part) and p's buttons on the last part (none on the others), in one
// PATCH that pings no one and shows no embed. Safe to repeat and to call
// concurrently; a deleted message or channel counts as success. A refusal
// is a *engine.SendError, classified as Finish classifies it.
func (c *Channel) Update(ctx context.Context, ref engine.MessageRef, p engine.Plan) error {
	parts := renderParts(p)
	if ref.Part < 0 || ref.Part >= len(parts) {
		return noSuchPart(ref)
	}
	comps := []discordgo.MessageComponent{}
	if ref.Part == len(parts)-1 {
		comps = append(comps, components(p)...)
	}
	return c.edit(ctx, ref, p.ID, parts[ref.Part], comps)
}

// noSuchPart refuses a message said to show a part its prompt does not
// have (a reply box, which Discord never has): a prompt's parts come from
// its plan, so such a part cannot be shown. Repeating cannot help.
func noSuchPart(ref engine.MessageRef) error {
	return &engine.SendError{Kind: engine.Permanent, Reason: fmt.Sprintf("discord: message %s shows part %d, which the prompt does not have", ref.Message, ref.Part)}
}

// edit replaces the content and components of message ref in one PATCH,
// pinging no one and showing no embed. A deleted message or channel is
// logged and counts as success.
func (c *Channel) edit(ctx context.Context, ref engine.MessageRef, question, content string, comps []discordgo.MessageComponent) error {
	edit := &discordgo.MessageEdit{ID: ref.Message, Channel: ref.Chat, Content: &content, Components: &comps, AllowedMentions: noPings(), Flags: noEmbeds}
	if _, err := c.rest.ChannelMessageEditComplex(edit, discordgo.WithContext(ctx)); err != nil {
		if gone(err) {
			c.log.Warn("message to edit is gone; skipped", "chat", ref.Chat, "message", ref.Message, "question", question)
			return nil
		}
		return c.classify("edit message", err)
	}
	return nil
}

// gone reports a deleted message or channel.
func gone(err error) bool {
	code := restCode(err)
	return code == codeUnknownMessage || code == codeUnknownChannel
}

// Notify posts text in chat as a reply to message replyTo (when set),
// escaped, pinging nobody, not even the person replied to. Not safe to
// repeat; safe for concurrent use.
func (c *Channel) Notify(ctx context.Context, chat, replyTo, text string) error {
	channelID, err := c.resolveChat(ctx, chat)
	if err != nil {
		return err
	}
	if _, err := c.rest.ChannelMessageSendComplex(channelID, reply(channelID, replyTo, text), discordgo.WithContext(ctx)); err != nil {
		return c.classify("send reply", err)
	}
	return nil
}

// Remind posts text as a reply to prompt, a message of a prompt, in its
// channel: escaped, pinging nobody (not even the prompt's author), showing
// no embed, and posted as a plain message should the prompt be gone by
// then (fail_if_not_exists false). It returns the message posted (the
// engine sets its Part and Place). One try, not safe to repeat: a refusal
// is a *engine.SendError. Safe for concurrent use.
func (c *Channel) Remind(ctx context.Context, prompt engine.MessageRef, text string) (engine.MessageRef, error) {
	m, err := c.rest.ChannelMessageSendComplex(prompt.Chat, reply(prompt.Chat, prompt.Message, text), discordgo.WithContext(ctx))
	if err != nil {
		return engine.MessageRef{}, c.classify("send reminder", err)
	}
	return engine.MessageRef{Platform: Platform, Chat: prompt.Chat, Message: m.ID}, nil
}

// Delete deletes a message the bot posted (a reminder; a bot may always
// delete its own messages). A deleted message or channel counts as
// success, so it is safe to repeat; safe for concurrent use.
func (c *Channel) Delete(ctx context.Context, ref engine.MessageRef) error {
	err := c.rest.ChannelMessageDelete(ref.Chat, ref.Message, discordgo.WithContext(ctx))
	if err != nil && !gone(err) {
		return c.classify("delete message", err)
	}
	return nil
}

// reply is a message of plain text: escaped, cut to a message, pinging
// nobody and showing no embed, as a reply to message replyTo in channel
// channelID when replyTo is set (posted as a plain message if replyTo is
// gone).
func reply(channelID, replyTo, text string) *discordgo.MessageSend {
	ms := &discordgo.MessageSend{Content: cutTo(escape(text), maxContent), AllowedMentions: noPings(), Flags: noEmbeds}
	if replyTo != "" {
		no := false
		ms.Reference = &discordgo.MessageReference{MessageID: replyTo, ChannelID: channelID, FailIfNotExists: &no}
	}
	return ms
}

// Parts is how many messages the prompt of p takes; its buttons are on the
// last.
func (c *Channel) Parts(p engine.Plan) int { return len(layout(p)) }
