package telegram

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/askbridge/askbridge"
)

// updateDedupeTTL is how long an update_id is remembered. Telegram keeps
// an unconfirmed update for 24 hours (Bot API "Getting updates"), so a
// redelivery can come that late.
const updateDedupeTTL = 24 * time.Hour

// allowedUpdates are the update kinds the bridge asks Telegram for.
var allowedUpdates = []string{"message", "callback_query"}

// handleUpdate hands one update to in: a callback query as a tap, a text
// message as a reply. An update_id seen before is skipped, so an update
// delivered twice (a webhook retry, a takeover) is handled once. It returns
// an error only when the dedupe could not be checked; the update was then
// not handled and may be offered again. Safe for concurrent use.
func (c *Channel) handleUpdate(ctx context.Context, in askbridge.Inbox, upd *models.Update) error {
	if upd == nil {
		return nil
	}
	first, err := c.coord.FirstSeen(ctx, Platform, fmt.Sprintf("update:%d:%d", c.botID, upd.ID), updateDedupeTTL)
	if err != nil {
		return fmt.Errorf("telegram: dedupe update %d: %w", upd.ID, err)
	}
	if !first {
		c.log.Debug("update seen before", "update", upd.ID)
		return nil
	}
	switch {
	case upd.CallbackQuery != nil:
		c.onTap(ctx, in, upd.CallbackQuery)
	case upd.Message != nil:
		c.onMessage(ctx, in, upd.Message)
	}
	return nil
}

func personOf(u *models.User) askbridge.Person {
	name := strings.TrimSpace(u.FirstName + " " + u.LastName)
	if name == "" {
		name = u.Username
	}
	return askbridge.Person{Platform: Platform, ID: strconv.FormatInt(u.ID, 10), Name: name}
}

func isGroup(chat models.Chat) bool {
	return chat.Type == models.ChatTypeGroup || chat.Type == models.ChatTypeSupergroup
}

// onTap answers a callback query with the engine's notice (Telegram shows
// a spinner until it is answered), then does what the engine asks: open a
// reply box for "Other…", or clear the buttons of the tapped message of a
// question that had already ended. A tap that ended the question leaves
// every message to the engine's finisher.
func (c *Channel) onTap(ctx context.Context, in askbridge.Inbox, cq *models.CallbackQuery) {
	var chat models.Chat
	var msgID int
	switch {
	case cq.Message.Message != nil:
		chat, msgID = cq.Message.Message.Chat, cq.Message.Message.ID
	case cq.Message.InaccessibleMessage != nil:
		chat, msgID = cq.Message.InaccessibleMessage.Chat, cq.Message.InaccessibleMessage.MessageID
	}
	if cq.ID == "" {
		return
	}
	if msgID == 0 {
		// A button of an inline message: the bridge never sends those.
		c.answer(ctx, cq.ID, askbridge.NoticeUnknown)
		return
	}
	ref := askbridge.MessageRef{Platform: Platform, Chat: strconv.FormatInt(chat.ID, 10), Message: strconv.Itoa(msgID)}
	person := personOf(&cq.From)
	reply := in.Tap(ctx, askbridge.Tap{EventID: cq.ID, Message: ref, Person: person, Payload: cq.Data})
	c.answer(ctx, cq.ID, reply.Notice)
	switch reply.Action {
	case askbridge.TapOpenReply:
		if id, question := reply.QuestionID, reply.ReplyTo; id != "" {
			c.spawn(func(ctx context.Context) { c.openReplyBox(ctx, in, ref, chat, person, id, question) })
		}
	case askbridge.TapClear:
		if reply.Ending != nil {
			msg, end := reply.Message, *reply.Ending
			c.spawn(func(ctx context.Context) {
				if err := c.Finish(ctx, msg, end); err != nil {
					c.log.Warn("clear buttons of an ended question", "question", end.Plan.ID, "message", msg.Message, "err", err)
				}
			})
		}
	}
}

// answerTimeout bounds answerCallbackQuery: Telegram clients give up on
// the spinner after a few seconds.
const answerTimeout = 2 * time.Second

func (c *Channel) answer(ctx context.Context, id string, notice askbridge.Notice) {
	ctx, cancel := context.WithTimeout(ctx, answerTimeout)
	defer cancel()
	_, err := c.bot.AnswerCallbackQuery(ctx, &bot.AnswerCallbackQueryParams{
		CallbackQueryID: id, Text: cutText(string(notice), noticeChars),
	})
	if err != nil {
		c.log.Warn("answer callback query", "err", wrap("answer callback query", err))
	}
}

// openReplyBox posts a force-reply message under the tapped prompt, asking
// question, and attaches it to question id, so the reply to it answers. In
// a group the box is selective: it opens only for the tapper, who is
// mentioned.
func (c *Channel) openReplyBox(ctx context.Context, in askbridge.Inbox, prompt askbridge.MessageRef, chat models.Chat, who askbridge.Person, id, question string) {
	group := isGroup(chat)
	params := &bot.SendMessageParams{
		ChatID: chatID(prompt.Chat), ParseMode: models.ParseModeHTML,
		Text: replyBoxText(question, who, group),
		ReplyMarkup: &models.ForceReply{ForceReply: true, Selective: group,
			InputFieldPlaceholder: cutText("Your answer", placeholderChars)},
	}
	if mid, err := strconv.Atoi(prompt.Message); err == nil {
		params.ReplyParameters = &models.ReplyParameters{MessageID: mid, AllowSendingWithoutReply: true}
	}
	var msg *models.Message
	err := askbridge.PostOwn(ctx, func(ctx context.Context) error {
		var err error
		msg, err = c.sendMessage(ctx, prompt.Chat, params)
		return err
	})
	if err != nil {
		c.log.Warn("open reply box", "question", id, "err", err)
		return
	}
	box := refOf(msg)
	box.Part = askbridge.PartReplyBox
	if err := in.Attach(ctx, id, box); err != nil {
		c.log.Error("attach reply box", "question", id, "err", err)
	}
}

// onMessage hands a text message to the engine and posts its response
// (a correction, or a request to reply to one question) as a reply.
func (c *Channel) onMessage(ctx context.Context, in askbridge.Inbox, m *models.Message) {
	if m.Text == "" || m.From == nil {
		// Not text, or posted by a channel or an anonymous admin: no person.
		return
	}
	ref := askbridge.MessageRef{Platform: Platform, Chat: strconv.FormatInt(m.Chat.ID, 10), Message: strconv.Itoa(m.ID)}
	r := askbridge.TextReply{
		EventID: ref.Chat + ":" + ref.Message, Message: ref, Person: personOf(m.From),
		Text: c.stripBotName(m.Text), FromBot: m.From.IsBot,
	}
	if m.ReplyToMessage != nil && m.ReplyToMessage.ID != 0 {
		r.ReplyTo = strconv.Itoa(m.ReplyToMessage.ID)
	}
	out := in.Reply(ctx, r)
	if out.Respond != "" {
		c.spawn(func(ctx context.Context) {
			err := askbridge.PostOwn(ctx, func(ctx context.Context) error {
				return c.Notify(ctx, ref.Chat, ref.Message, out.Respond)
			})
			if err != nil {
				c.log.Warn("respond to a reply", "chat", ref.Chat, "err", err)
			}
		})
	}
}

// stripBotName turns "/skip@this_bot" into "/skip": in groups Telegram
// clients add the bot's name to a command.
func (c *Channel) stripBotName(text string) string {
	name, _ := c.username.Load().(string)
	if name == "" || !strings.HasPrefix(text, "/") {
		return text
	}
	word, rest, _ := strings.Cut(text, " ")
	if cmd, at, ok := strings.Cut(word, "@"); ok && strings.EqualFold(at, name) {
		if rest == "" {
			return cmd
		}
		return cmd + " " + rest
	}
	return text
}

// effectTimeout bounds the work a tap or reply starts in the background.
const effectTimeout = 2 * time.Minute

// spawn runs fn in the background, tracked so Run waits for it.
func (c *Channel) spawn(fn func(context.Context)) {
	c.effects.Add(1)
	go func() {
		defer c.effects.Done()
		ctx, cancel := context.WithTimeout(context.Background(), effectTimeout)
		defer cancel()
		fn(ctx)
	}()
}
