package matrix

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/id"

	"github.com/askbridge/askbridge/engine"
)

var (
	_ engine.Updater  = (*Channel)(nil)
	_ engine.Reminder = (*Channel)(nil)
)

// Update edits prompt ref (part 0) of an open question to show p, with an
// m.replace edit: a text prompt gets p's text as Send would post it now
// (p.Notes after the instructions: "Seen by Alice", a quorum's tally); a
// poll gets p's text as its fallback and keeps the answers it was posted
// with (read back from the homeserver), so every vote still maps to the
// choice it was cast for — a Seen answer stays in the poll, and a vote
// for it after someone has seen the question is told so. The edit's
// transaction id is derived from the question, the part and a hash of the
// new content, so a repeat of the same update posts nothing new within
// the homeserver's memory. A prompt that is gone is success. One try per
// call; a refusal is a *engine.SendError. Safe to repeat.
func (c *Channel) Update(ctx context.Context, ref engine.MessageRef, p engine.Plan) error {
	if ref.Part != 0 {
		return &engine.SendError{Kind: engine.Permanent, Reason: fmt.Sprintf("event %s shows part %d, which a Matrix prompt of %s does not have", ref.Message, ref.Part, p.ID)}
	}
	typ, content := typeMessage, textContent(joinText(promptLines(p), false, ""), msgText)
	if p.Mode == engine.ModeButtons {
		typ, content = typePollStart, pollContent(p, "")
		if err := c.keepAnswers(ctx, ref, content); err != nil {
			return c.gone(err, ref, p.ID)
		}
	}
	_, err := c.send(ctx, ref.Chat, typ, txnID(p.ID, ref.Part, "update-"+hashOf(content)), editContent(ref.Message, content))
	return c.gone(err, ref, p.ID)
}

// keepAnswers sets the poll blocks of content (a poll's new content, both
// keys) to that of poll ref as it was posted (its unstable block, or its
// stable one when it has no other), read back from the homeserver: an
// edit of a poll changes its text, never its answers, so every vote maps
// to the choice it was cast for. A refusal is a *engine.SendError (a
// 404's tells the caller the poll is gone).
func (c *Channel) keepAnswers(ctx context.Context, ref engine.MessageRef, content map[string]any) error {
	orig, err := c.cli.GetEvent(ctx, id.RoomID(ref.Chat), id.EventID(ref.Message))
	if se := c.refused("read poll", ref.Chat, err); se != nil {
		return se
	}
	start, ok := orig.Content.Raw[keyPollStart]
	if !ok {
		start, ok = orig.Content.Raw[keyPollStartStable]
	}
	if ok {
		content[keyPollStart], content[keyPollStartStable] = start, start
	}
	return nil
}

// Remind posts text as an m.notice replying to prompt, in the prompt's
// thread (where the channel's other notices go), pinging nobody, and
// returns the event it posted (the engine sets Part and Place). Its
// transaction id is derived from the prompt event (which names the
// question) and a hash of text, which says how long is left, so a retry
// after a lost reply posts nothing new. One try; a refusal is a
// *engine.SendError. Not safe to repeat with another text.
func (c *Channel) Remind(ctx context.Context, prompt engine.MessageRef, text string) (engine.MessageRef, error) {
	txn := txnID(prompt.Message, prompt.Part, "remind-"+hashOf(text))
	ev, err := c.send(ctx, prompt.Chat, typeMessage, txn, noticeContent(prompt.Message, text))
	if err != nil {
		return engine.MessageRef{}, err
	}
	return engine.MessageRef{Platform: Platform, Chat: prompt.Chat, Message: ev}, nil
}

// Delete redacts event ref, which the bot posted (a reminder), with a
// transaction id derived from the event, waiting out the room's rate limit
// first. An event the homeserver does not know (404) is success; redacting
// one already redacted succeeds on the homeserver. One try; a refusal is
// a *engine.SendError. Safe to repeat.
func (c *Channel) Delete(ctx context.Context, ref engine.MessageRef) error {
	if err := c.waitCooldown(ctx, ref.Chat); err != nil {
		return &engine.SendError{Kind: engine.Temporary, Reason: err.Error(), Err: wrap("redact", err)}
	}
	_, err := c.cli.RedactEvent(ctx, id.RoomID(ref.Chat), id.EventID(ref.Message), mautrix.ReqRedact{TxnID: txnID(ref.Message, 0, "redact")})
	if err != nil && notFound(err) {
		c.log.Debug("event to redact is gone", "room", ref.Chat, "event", ref.Message)
		return nil
	}
	if se := c.refused("redact", ref.Chat, err); se != nil {
		return se
	}
	return nil
}

// hashOf is a short hash of v's JSON (map keys sorted), for transaction
// ids that change with what an event says.
func hashOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(fmt.Sprint(v))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}
