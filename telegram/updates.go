package telegram

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/locale"
)

// updateDedupeTTL is how long an update_id is remembered. Telegram keeps
// an unconfirmed update for 24 hours (Bot API "Getting updates"), so a
// redelivery can come that late.
const updateDedupeTTL = 24 * time.Hour

// allowedUpdates are the update kinds the bridge asks Telegram for.
var allowedUpdates = []string{"message", "callback_query"}

// errClaimed is the error of an update another replica claimed and has
// not settled: it is in hand there, or that replica died with it.
var errClaimed = errors.New("claimed by another replica and not settled yet")

// updateClaimTTL is how long an update's first-seen mark lives before it
// is settled: a replica killed while handling an update leaves a claim
// that lapses after this, and the next poller handles the update then.
const updateClaimTTL = 20 * time.Second

// errUnhandled is the error of an update the engine could not handle: it
// could not reach the store and asked the person to try again.
var errUnhandled = errors.New("the engine could not handle it")

// handleUpdate hands one update to in: a callback query as a tap, a text
// message as a reply. An update_id seen before is skipped, so an update
// delivered twice (a webhook retry, a takeover) is handled once. It returns
// an error when the update was not handled, because the store could not be
// reached (by the dedupe or by the engine); the update keeps its first-seen
// mark in this replica's hands (see heldMarks) and must be offered again —
// by the poller's retry, or after giveBack by Telegram. A tap that was not
// handled has been answered "try again". A panic while handling is
// recovered: logged with its stack, the tap answered, the update counted as
// handled (it would panic again). Safe for concurrent use.
//
// The mark is set before the update is handed on, not after it was
// handled: during a poller hand-over the old poller finishes the update in
// hand while the new one fetches it again from the stored offset, and only
// the one that set the mark hands it to the engine. Marking after handling
// would let both do it (leaving exactly-once to the engine's own marks of
// taps and messages, which last 2 h where Telegram redelivers for 24 h).
// The cost: a failed update must have its mark undone before anyone else
// may take it (giveBack), and this replica keeps it meanwhile so that its
// own retries are not taken for duplicates. The mark is a claim of
// updateClaimTTL until the update was handled, then settled for
// updateDedupeTTL: a process killed between the mark and the end of the
// handling leaves a claim that lapses, and another poller, which never
// skips a claimed update that is not settled, handles it then. The engine
// gets no event id from this channel: this dedupe is the one that counts.
func (c *Channel) handleUpdate(ctx context.Context, in engine.Inbox, upd *models.Update) (err error) {
	if upd == nil {
		return nil
	}
	defer func() {
		if v := recover(); v != nil {
			engine.LogPanic(c.log, c.cfg.Panicked, "telegram update", v, "update", upd.ID)
			c.marks.drop(upd.ID)
			c.tryAgain(ctx, in, upd)
			err = nil
		}
	}()
	switch c.marks.take(upd.ID) {
	case markInHand:
		c.log.Debug("update in hand elsewhere in this replica", "update", upd.ID)
		return nil
	case markUnknown:
		first, err := c.coord.FirstSeen(ctx, Platform, c.updateKey(upd.ID), updateClaimTTL)
		if err != nil {
			c.tryAgain(ctx, in, upd)
			return fmt.Errorf("telegram: dedupe update %d: %w", upd.ID, err)
		}
		if !first {
			settled, err := c.coord.Settled(ctx, Platform, c.updateKey(upd.ID))
			if err != nil {
				c.tryAgain(ctx, in, upd)
				return fmt.Errorf("telegram: dedupe update %d: %w", upd.ID, err)
			}
			if !settled {
				// Claimed and not settled: another replica has it in
				// hand (a hand-over) or died with it. It is tried again
				// until it is settled or the claim lapses, never skipped.
				return fmt.Errorf("telegram: update %d: %w", upd.ID, errClaimed)
			}
			c.log.Debug("update seen before", "update", upd.ID)
			return nil
		}
		c.marks.hold(upd.ID)
	}
	handled := true
	switch {
	case upd.CallbackQuery != nil:
		handled = c.onTap(ctx, in, upd.CallbackQuery)
	case upd.Message != nil:
		handled = c.onMessage(ctx, in, upd.Message)
	}
	if !handled {
		c.marks.put(upd.ID)
		return fmt.Errorf("telegram: update %d: %w", upd.ID, errUnhandled)
	}
	if err := c.coord.Settle(ctx, Platform, c.updateKey(upd.ID), updateDedupeTTL); err != nil {
		// The claim lapses after updateClaimTTL: a redelivery after that
		// is handled again (the engine's end is first-writer-wins).
		c.log.Warn("settle the mark of a handled update", "update", upd.ID, "err", err)
	}
	c.marks.drop(upd.ID)
	return nil
}

func (c *Channel) updateKey(id int64) string { return fmt.Sprintf("update:%d:%d", c.botID, id) }

// giveBack undoes the first-seen mark of an update this replica could not
// handle and will not try again itself, so whoever gets it next (Telegram's
// webhook retry, the next poller) handles it. When the store cannot be
// reached the mark stays in this replica's hands: a redelivery here is
// handled, one elsewhere is skipped until the mark expires.
func (c *Channel) giveBack(id int64) {
	if !c.marks.held(id) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), forgetTimeout)
	defer cancel()
	if err := c.coord.ForgetSeen(ctx, Platform, c.updateKey(id)); err != nil {
		c.log.Error("forget the mark of an update given back unhandled; another replica would skip it", "update", id, "err", err)
		return
	}
	c.marks.drop(id)
}

// forgetTimeout bounds the ForgetSeen of an update given back.
const forgetTimeout = 5 * time.Second

// tryAgain answers the callback query of upd, if it has one that is not
// answered yet, with engine.NoticeTryAgain: the spinner stops and the
// person knows the tap did not count (yet). No question is known here (the
// engine was not asked, or did not answer), so the notice is in the
// bridge's default language.
func (c *Channel) tryAgain(ctx context.Context, in engine.Inbox, upd *models.Update) {
	if cq := upd.CallbackQuery; cq != nil && cq.ID != "" {
		c.answerOnce(ctx, cq.ID, engine.NoticeTryAgain.Text(in.Locale()))
	}
}

// handleTimely is handleUpdate that answers a tap "try again" when the
// handling takes longer than tapPatience (Redis hanging rather than
// refusing): Telegram clients stop waiting for an answer after a few
// seconds. The handling goes on; its own answer is then not sent.
//
// The tap is handled on the calling goroutine, with a timer that answers
// "try again" from its own goroutine only when it fires: a tap handled in
// time starts no goroutine and hands nothing over a channel, each of which
// would wake another thread of the process (issue 33's wake-up row).
func (c *Channel) handleTimely(ctx context.Context, in engine.Inbox, upd *models.Update) error {
	if upd == nil || upd.CallbackQuery == nil || upd.CallbackQuery.ID == "" {
		return c.handleUpdate(ctx, in, upd)
	}
	start := time.Now()
	fired := make(chan struct{})
	t := time.AfterFunc(c.tapPatience, func() {
		defer close(fired)
		// A timer that fires well after its time means this process was
		// stopped (SIGSTOP, a frozen VM) with the tap in hand: its claim
		// may have lapsed meanwhile and another replica answered the
		// tap, so a late "try again" would be a second answer, refused.
		if late := time.Since(start) - c.tapPatience; late > lateTimer {
			c.log.Warn("tap timer fired late (the process was paused); not answering try again", "update", upd.ID, "late", late)
			return
		}
		c.log.Warn("tap not handled in time; answered try again", "update", upd.ID)
		c.tryAgain(ctx, in, upd)
	})
	err := c.handleUpdate(ctx, in, upd)
	if !t.Stop() {
		<-fired // the "try again" is under way: it ends before ctx does
	}
	return err
}

// tapPatience is how long a tap may take before it is answered "try
// again": Telegram clients give up on the spinner after a few seconds, and
// Telegram refuses an answer that comes much later.
const tapPatience = 5 * time.Second

// lateTimer is how late the tap timer may fire before handleTimely takes
// it for a process that was paused rather than a slow store.
const lateTimer = 2 * time.Second

// markState is where an update's first-seen mark stands in this replica.
type markState int

const (
	// markUnknown: this replica holds no mark of the update; FirstSeen
	// decides.
	markUnknown markState = iota
	// markHeld: this replica set the mark and did not finish the update;
	// take has now put it in hand.
	markHeld
	// markInHand: another handler of this replica has the update in hand.
	markInHand
)

// heldMarks are the update first-seen marks this replica set for updates
// it has not handled: kept while the poller tries an update again, and when
// a mark could not be undone, so that this replica's own retry is not taken
// for a duplicate. Safe for concurrent use.
type heldMarks struct {
	mu  sync.Mutex
	ids map[int64]heldMark
}

type heldMark struct {
	inHand bool
	since  time.Time
}

// take reports where id's mark stands and puts a held one in hand.
func (h *heldMarks) take(id int64) markState {
	h.mu.Lock()
	defer h.mu.Unlock()
	m, ok := h.ids[id]
	switch {
	case !ok:
		return markUnknown
	case m.inHand:
		return markInHand
	}
	m.inHand = true
	h.ids[id] = m
	return markHeld
}

// hold records a mark this replica just set, in hand. Marks older than
// the dedupe (their Redis key has expired) are dropped on the way.
func (h *heldMarks) hold(id int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	if h.ids == nil {
		h.ids = map[int64]heldMark{}
	}
	for k, m := range h.ids {
		if now.Sub(m.since) > updateDedupeTTL {
			delete(h.ids, k)
		}
	}
	h.ids[id] = heldMark{inHand: true, since: now}
}

// put takes the mark of an update that was not handled out of hand; this
// replica still holds it.
func (h *heldMarks) put(id int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if m, ok := h.ids[id]; ok {
		m.inHand = false
		h.ids[id] = m
	}
}

// held reports whether this replica holds id's mark out of hand.
func (h *heldMarks) held(id int64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	m, ok := h.ids[id]
	return ok && !m.inHand
}

// drop forgets id: handled, or its mark undone.
func (h *heldMarks) drop(id int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.ids, id)
}

// onceSet remembers keys for a while, so something is done once per key
// (answer a callback query, tell a person to try again) across the tries of
// one update. Safe for concurrent use.
type onceSet struct {
	mu     sync.Mutex
	keys   map[string]time.Time
	pruned time.Time
}

// onceTTL is how long a key is remembered: longer than Telegram accepts an
// answer to a callback query, and than the poller's tries of one update
// usually last.
const onceTTL = 15 * time.Minute

// first reports whether key is new, and remembers it.
func (o *onceSet) first(key string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := time.Now()
	if o.keys == nil {
		o.keys = map[string]time.Time{}
	}
	if now.Sub(o.pruned) > onceTTL {
		for k, at := range o.keys {
			if now.Sub(at) > onceTTL {
				delete(o.keys, k)
			}
		}
		o.pruned = now
	}
	if _, ok := o.keys[key]; ok {
		return false
	}
	o.keys[key] = now
	return true
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
// a spinner until it is answered; a query is answered once, so a tap tried
// again after "try again" is not answered twice), then does what the engine
// asks: open a reply box for "Other…", or clear the buttons of the tapped
// message of a question that had already ended. A tap that ended the
// question leaves every message to the engine's finisher; a duplicate is
// left to the delivery that got there first. It reports false when the
// engine could not handle the tap.
func (c *Channel) onTap(ctx context.Context, in engine.Inbox, cq *models.CallbackQuery) bool {
	var chat models.Chat
	var msgID int
	switch {
	case cq.Message.Message != nil:
		chat, msgID = cq.Message.Message.Chat, cq.Message.Message.ID
	case cq.Message.InaccessibleMessage != nil:
		chat, msgID = cq.Message.InaccessibleMessage.Chat, cq.Message.InaccessibleMessage.MessageID
	}
	if cq.ID == "" {
		return true
	}
	if msgID == 0 {
		// A button of an inline message: the bridge never sends those, so
		// no question (and no language) is known.
		c.answerOnce(ctx, cq.ID, engine.NoticeUnknown.Text(in.Locale()))
		return true
	}
	ref := engine.MessageRef{Platform: Platform, Chat: strconv.FormatInt(chat.ID, 10), Message: strconv.Itoa(msgID)}
	person := personOf(&cq.From)
	reply := in.Tap(ctx, engine.Tap{Message: ref, Person: person, Payload: cq.Data})
	if tapFailed(reply) {
		c.answerOnce(ctx, cq.ID, reply.Text())
		return false
	}
	if reply.Action == engine.TapDuplicate {
		return true
	}
	c.answerOnce(ctx, cq.ID, reply.Text())
	switch reply.Action {
	case engine.TapOpenReply:
		if id, question, tag := reply.QuestionID, reply.ReplyTo, reply.Locale; id != "" {
			c.spawn(func(ctx context.Context) { c.openReplyBox(ctx, in, ref, chat, person, id, question, tag) })
		}
	}
	return true
}

// tapFailed and replyFailed report whether the engine could not handle a
// tap or a reply because it could not reach the store: it then did nothing
// and forgot its own first-seen mark of the event (Retry). A panic the
// engine recovered is not among them: the same update would fail again.
func tapFailed(r engine.TapReply) bool { return r.Retry }

func replyFailed(o engine.ReplyOutcome) bool { return o.Retry }

// answerOnce answers a callback query unless this replica answered it
// before (Telegram refuses a second answer).
func (c *Channel) answerOnce(ctx context.Context, id string, notice string) {
	if c.once.first("answer:" + id) {
		c.answer(ctx, id, notice)
	}
}

// answerTimeout bounds answerCallbackQuery: Telegram clients give up on
// the spinner after a few seconds.
const answerTimeout = 2 * time.Second

func (c *Channel) answer(ctx context.Context, id string, notice string) {
	ctx, cancel := context.WithTimeout(ctx, answerTimeout)
	defer cancel()
	_, err := c.bot.AnswerCallbackQuery(ctx, &bot.AnswerCallbackQueryParams{
		CallbackQueryID: id, Text: cutText(notice, noticeChars),
	})
	if err != nil {
		c.log.Warn("answer callback query", "err", wrap("answer callback query", c.scrub.Err(err)))
	}
}

// openReplyBox posts a force-reply message under the tapped prompt, asking
// question in the words of catalog tag (the question's), and attaches it to
// question id, so the reply to it answers. In a group the box is selective:
// it opens only for the tapper, who is mentioned.
func (c *Channel) openReplyBox(ctx context.Context, in engine.Inbox, prompt engine.MessageRef, chat models.Chat, who askbridge.Person, id, question, tag string) {
	group := isGroup(chat)
	w := locale.For(tag)
	params := &bot.SendMessageParams{
		ChatID: chatID(prompt.Chat), ParseMode: models.ParseModeHTML,
		Text:               replyBoxText(w, question, who, group),
		LinkPreviewOptions: &models.LinkPreviewOptions{IsDisabled: bot.True()},
		ReplyMarkup: &models.ForceReply{ForceReply: true, Selective: group,
			InputFieldPlaceholder: cutText(w.Get("ReplyBoxPlaceholder"), placeholderChars)},
	}
	if mid, err := strconv.Atoi(prompt.Message); err == nil {
		params.ReplyParameters = &models.ReplyParameters{MessageID: mid, AllowSendingWithoutReply: true}
	}
	var msg *models.Message
	err := engine.PostOwn(ctx, func(ctx context.Context) error {
		var err error
		msg, err = c.sendMessage(ctx, prompt.Chat, params)
		return err
	})
	if err != nil {
		c.log.Warn("open reply box", "question", id, "err", err)
		return
	}
	box := refOf(msg)
	box.Part = engine.PartReplyBox
	if err := in.Attach(ctx, id, box); err != nil {
		c.log.Error("attach reply box", "question", id, "err", err)
	}
}

// onMessage hands a text message to the engine and posts its response
// (a correction, or a request to reply to one question) as a reply. It
// reports false when the engine could not handle the message; its request
// to try again is posted once, however often the message is tried.
func (c *Channel) onMessage(ctx context.Context, in engine.Inbox, m *models.Message) bool {
	if m.Text == "" || m.From == nil {
		// Not text, or posted by a channel or an anonymous admin: no person.
		return true
	}
	ref := engine.MessageRef{Platform: Platform, Chat: strconv.FormatInt(m.Chat.ID, 10), Message: strconv.Itoa(m.ID)}
	r := engine.TextReply{
		Message: ref, Person: personOf(m.From),
		Text: c.stripBotName(m.Text), FromBot: m.From.IsBot,
	}
	if m.ReplyToMessage != nil && m.ReplyToMessage.ID != 0 {
		r.ReplyTo = strconv.Itoa(m.ReplyToMessage.ID)
	}
	out := in.Reply(ctx, r)
	failed := replyFailed(out)
	if out.Respond != "" && (!failed || c.once.first("try again:"+r.EventID)) {
		c.spawn(func(ctx context.Context) {
			err := engine.PostOwn(ctx, func(ctx context.Context) error {
				return c.Notify(ctx, ref.Chat, ref.Message, out.Respond)
			})
			if err != nil {
				c.log.Warn("respond to a reply", "chat", ref.Chat, "err", err)
			}
		})
	}
	return !failed
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

// spawn runs fn in the background, tracked so Run waits for it. A panic
// in fn is logged with its stack and goes no further.
func (c *Channel) spawn(fn func(context.Context)) {
	c.effects.Add(1)
	go func() {
		defer c.effects.Done()
		defer func() {
			if v := recover(); v != nil {
				engine.LogPanic(c.log, c.cfg.Panicked, "telegram background work", v)
			}
		}()
		ctx, cancel := context.WithTimeout(context.Background(), effectTimeout)
		defer cancel()
		fn(ctx)
	}()
}
