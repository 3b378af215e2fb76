package email

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/link"
)

// outgoing is one email to send once: the question and the mark that
// stands for it, and the email.
type outgoing struct {
	id string
	// mark names the send in the question's slot: "email:<place>",
	// "end:<place>", "remind:<place>:<n>" (the place's reminder n).
	mark string
	// value is what the mark of this try holds: the Message-ID and a
	// nonce of the try, so a try takes back its own mark and no other
	// (every try of one email has the same Message-ID).
	value string
	until time.Time
	env   envelope
	body  letter
}

// markGrace keeps a mark a day past the question's deadline: long after
// any replica could resume its delivery.
const markGrace = 24 * time.Hour

// markStore bounds the store calls made outside a send's own deadline
// (taking a mark back after the conversation ended).
const markStore = 5 * time.Second

// Send sends the prompt of d.Plan to the address d.Chat: one email, part
// 0, carrying the person's answer link. A d.From past 0 sends nothing. An
// email marked as sent for this place before (by a replica that died
// before recording it) is not sent again: its Message-ID is handed to
// d.Sent. A refusal is a *engine.SendError. Blocks for one SMTP
// conversation (Config.SendTimeout at most); safe for concurrent use.
func (c *Channel) Send(ctx context.Context, d engine.Delivery) error {
	if d.From > 0 {
		return nil
	}
	if addr, err := askbridge.ParseEmailAddress(d.Chat); err != nil || addr != d.Chat {
		return &engine.SendError{Kind: engine.Permanent, Err: err, Reason: fmt.Sprintf("%q is not an email address in its one form (bare, lower case, as alice@example.com)", d.Chat)}
	}
	person := askbridge.Person{Platform: Platform, ID: d.Chat}
	url, err := c.links.URL(link.Claims{ID: d.Plan.ID, Place: d.Place, Person: person, Until: d.Until})
	if err != nil {
		return &engine.SendError{Kind: engine.Permanent, Err: err, Reason: fmt.Sprintf("no answer link can be made for %s: %v", d.Chat, err)}
	}
	body, err := render(promptView(d.Plan, url))
	if err != nil {
		return fmt.Errorf("email: render: %w", err)
	}
	o := outgoing{
		id: d.Plan.ID, mark: "email:" + strconv.Itoa(d.Place), until: d.Until, body: body,
		env: envelope{To: d.Chat, MessageID: messageID(d.Plan.ID, d.Place, "prompt", c.domain)},
	}
	msgID, err := c.deliver(ctx, o)
	if err != nil {
		return err
	}
	d.Sent(engine.MessageRef{Platform: Platform, Chat: d.Chat, Message: msgID})
	return nil
}

// deliver sends o once, whatever the replicas do, and returns its
// Message-ID (the one recorded for it, when it was sent before).
//
// The store's mark is the record: it is set after the whole email is
// written to the server and before the final "." that commits it, so a
// replica that takes the delivery over finds it and sends nothing. The
// window that remains is a replica dying between the mark and the ".":
// the place then counts as sent with no email (at most once, never
// twice).
func (c *Channel) deliver(ctx context.Context, o outgoing) (string, error) {
	held, found, err := c.marks.SendMark(ctx, o.id, o.mark)
	if err != nil {
		return "", fmt.Errorf("email: read the send mark: %w", err)
	}
	if found {
		c.count(ResultResumed)
		c.log.Info("email sent before; not sent again", "question", o.id, "mark", o.mark, "message", markedID(held))
		return markedID(held), nil
	}
	o.env.From, o.env.Date = c.from, c.now()
	o.value = o.env.MessageID + " " + rand.Text()
	raw, err := compose(o.env, o.body)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	s, err := c.open(ctx)
	if err != nil {
		c.countErr(err)
		return "", err
	}
	c.setState(engine.StateConnected)
	msgID, polite, err := c.transact(ctx, s, o, raw)
	s.close(polite)
	return msgID, err
}

// transact runs MAIL, RCPT and DATA on s, marking the send before the
// final ".". It returns the Message-ID sent or found marked, and whether
// the session may end with a polite QUIT.
func (c *Channel) transact(ctx context.Context, s *session, o outgoing, raw []byte) (string, bool, error) {
	if err := s.client.Mail(c.from.Address, nil); err != nil {
		return "", false, c.tryFailed(stageSender, o, err)
	}
	if err := s.client.Rcpt(o.env.To, nil); err != nil {
		return "", false, c.tryFailed(stageRecipient, o, err)
	}
	w, err := s.client.Data()
	if err != nil {
		return "", false, c.tryFailed(stageData, o, err)
	}
	// go-smtp's data writer puts no deadline on the writes.
	_ = s.conn.SetDeadline(time.Now().Add(c.timeout))
	if _, err := w.Write(raw); err != nil {
		return "", false, c.tryFailed(stageData, o, err)
	}
	held, first, err := c.marks.MarkSend(ctx, o.id, o.mark, o.value, max(time.Until(o.until), 0)+markGrace)
	switch {
	case err != nil:
		// Perhaps not marked: the "." is not sent (the connection
		// closes), and a mark the store may have set is taken back.
		c.count(ResultFailed)
		c.unmark(ctx, o)
		return "", false, fmt.Errorf("email: mark the send: %w", err)
	case !first && held != "":
		// Another send of the same email won the mark: this one
		// ends without its "." and the server drops it.
		c.count(ResultResumed)
		c.log.Info("email marked by another send; this one is dropped", "question", o.id, "mark", o.mark, "message", markedID(held))
		return markedID(held), false, nil
	case !first:
		c.count(ResultFailed)
		return "", false, fmt.Errorf("email: the send mark of question %s lapsed", o.id)
	}
	s.conn.armed.Store(true)
	return c.commit(ctx, s, o, w.Close())
}

// commit settles a send whose mark is set, given the result of sending
// the final "." and reading the reply.
func (c *Channel) commit(ctx context.Context, s *session, o outgoing, err error) (string, bool, error) {
	msgID := o.env.MessageID
	switch {
	case err == nil:
		c.count(ResultSent)
		c.log.Info("email sent", "question", o.id, "mark", o.mark, "message", msgID)
		return msgID, true, nil
	case s.conn.failed.Load(), isReply(err):
		// The "." never left this host, or the server answered it with
		// a refusal: the server did not take the email.
		c.unmark(ctx, o)
		return "", false, c.tryFailed(stageDot, o, err)
	}
	c.count(ResultUnconfirmed)
	c.log.Warn("the mail server's reply to an email was lost; it may have been sent, so it counts as sent", "question", o.id, "to", o.env.To, "message", msgID, "err", err)
	return msgID, false, nil
}

// unmark takes o's mark back: its email was not accepted.
func (c *Channel) unmark(ctx context.Context, o outgoing) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), markStore)
	defer cancel()
	if err := c.marks.ClearSend(ctx, o.id, o.mark, o.value); err != nil {
		// Left marked, the place counts as sent: at most once.
		c.log.Error("could not take back the mark of an email the server did not accept", "question", o.id, "mark", o.mark, "err", err)
	}
}

// tryFailed classifies err and counts the try.
func (c *Channel) tryFailed(st stage, o outgoing, err error) error {
	se := c.failure(st, o.env.To, err)
	c.count(result(se))
	return se
}

// countErr counts a try that failed with err, a *engine.SendError.
func (c *Channel) countErr(err error) {
	var se *engine.SendError
	if errors.As(err, &se) {
		c.count(result(se))
		return
	}
	c.count(ResultFailed)
}

// Finish sends nothing, and succeeds, unless the request asked for a
// follow-up (notifyEnd) and ref is a prompt: then one short email to its
// address says how the question ended and who answered, in reply to the
// prompt. The follow-up is marked like a prompt, so a repeat (on any
// replica) sends nothing more. Blocks for one SMTP conversation.
func (c *Channel) Finish(ctx context.Context, ref engine.MessageRef, end engine.Ending) error {
	rec := end.Question
	if !rec.Request.NotifyEnd || !ref.IsPrompt() || ref.Platform != Platform {
		return nil
	}
	person := askbridge.Person{Platform: Platform, ID: ref.Chat}
	url, err := c.links.URL(link.Claims{ID: rec.ID, Place: ref.Place, Person: person, Until: rec.Deadline})
	if err != nil {
		return &engine.SendError{Kind: engine.Permanent, Err: err, Reason: fmt.Sprintf("no answer link can be made for %s: %v", ref.Chat, err)}
	}
	body, err := render(endedView(end.Plan, end.Status, answeredBy(rec), url))
	if err != nil {
		return fmt.Errorf("email: render: %w", err)
	}
	place := strconv.Itoa(ref.Place)
	o := outgoing{
		id: rec.ID, mark: "end:" + place, until: rec.Deadline, body: body,
		env: envelope{To: ref.Chat, ReplyTo: ref.Message, MessageID: messageID(rec.ID, ref.Place, "end", c.domain)},
	}
	_, err = c.deliver(ctx, o)
	return err
}

// answeredBy names who answered, when the status line does not already
// (it does when the question had several places).
func answeredBy(rec engine.Record) string {
	res := rec.Result
	if res == nil || res.AnsweredBy == nil || res.Place != "" {
		return ""
	}
	return res.AnsweredBy.Display()
}

// Remind sends a short email with text and the same answer link, in reply
// to the prompt, and returns it. It is marked by its text, so a reminder
// fired again with the same words sends nothing more (and returns the
// same reference). A refusal is a *engine.SendError. Blocks on Redis and
// for one SMTP conversation.
func (c *Channel) Remind(ctx context.Context, prompt engine.MessageRef, text string) (engine.MessageRef, error) {
	rec, err := c.question(ctx, prompt)
	if err != nil {
		return engine.MessageRef{}, err
	}
	person := askbridge.Person{Platform: Platform, ID: prompt.Chat}
	url, err := c.links.URL(link.Claims{ID: rec.ID, Place: prompt.Place, Person: person, Until: rec.Deadline})
	if err != nil {
		return engine.MessageRef{}, &engine.SendError{Kind: engine.Permanent, Err: err, Reason: fmt.Sprintf("no answer link can be made for %s: %v", prompt.Chat, err)}
	}
	body, err := render(reminderView(rec.PlanFor(prompt.Place, c.Capabilities()), text, url))
	if err != nil {
		return engine.MessageRef{}, fmt.Errorf("email: render: %w", err)
	}
	n, err := c.remindersBefore(ctx, rec.ID, prompt.Place)
	if err != nil {
		return engine.MessageRef{}, err
	}
	// Reminder n+1 of the place: a timer fired again after a replica died
	// between sending it and recording it finds its mark and sends
	// nothing, though its words ("12 min left") have changed.
	kind := "remind:" + strconv.Itoa(prompt.Place) + ":" + strconv.Itoa(n+1)
	o := outgoing{
		id: rec.ID, mark: kind, until: rec.Deadline, body: body,
		env: envelope{To: prompt.Chat, ReplyTo: prompt.Message, MessageID: messageID(rec.ID, prompt.Place, kind, c.domain)},
	}
	msgID, err := c.deliver(ctx, o)
	if err != nil {
		return engine.MessageRef{}, err
	}
	return engine.MessageRef{Platform: Platform, Chat: prompt.Chat, Message: msgID, Place: prompt.Place}, nil
}

// remindersBefore counts the reminders recorded in place k of question
// id.
func (c *Channel) remindersBefore(ctx context.Context, id string, k int) (int, error) {
	refs, err := c.qs.Messages(ctx, id)
	if err != nil {
		return 0, fmt.Errorf("email: list the question's messages: %w", err)
	}
	n := 0
	for _, r := range refs {
		if r.Place == k && r.IsReminder() {
			n++
		}
	}
	return n, nil
}

// question reads the open question prompt shows.
func (c *Channel) question(ctx context.Context, prompt engine.MessageRef) (engine.Record, error) {
	id, found, err := c.qs.QuestionByMessage(ctx, prompt)
	if err != nil {
		return engine.Record{}, fmt.Errorf("email: find the question of %s: %w", prompt.Message, err)
	}
	var rec engine.Record
	if found {
		if rec, found, err = c.qs.Get(ctx, id); err != nil {
			return engine.Record{}, fmt.Errorf("email: read question %s: %w", id, err)
		}
	}
	if !found {
		return engine.Record{}, &engine.SendError{Kind: engine.Permanent, Reason: fmt.Sprintf("email %s shows no open question", prompt.Message)}
	}
	return rec, nil
}

// markedID is the Message-ID a mark holds (before the try's nonce).
func markedID(value string) string {
	id, _, _ := strings.Cut(value, " ")
	return id
}
