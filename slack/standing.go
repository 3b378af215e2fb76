package slack

import (
	"context"
	"fmt"

	"github.com/slack-go/slack"

	"github.com/askbridge/askbridge/engine"
)

// Standing answers (ask-user.md §9) on Slack: the offer to keep an answer
// is an actions block at the end of the ended message's last part (Finish
// shows Ending.Offer, RemoveOffer edits it away); a standing answer is
// shown by a message of its own in the channel or DM it was kept in, with
// a Revoke button. Their presses are block_actions like any other: the
// engine decides, and the notice goes to the presser alone
// (chat.postEphemeral).

var (
	_ engine.OfferShower    = (*Channel)(nil)
	_ engine.StandingShower = (*Channel)(nil)
)

// What the standing answers' buttons are, in their block_id
// ("askbridge_offer") and action_id ("askbridge_offer_0"). Slack: a
// block_id is at most 255 characters and unique in its message, an
// action_id at most 255 and unique in its block.
const (
	offerKind    = "offer"
	standingKind = "standing"
)

// RemoveOffer edits message ref of an ended question with chat.update to
// show end without the offer to keep its answer: what Finish shows. One
// try (a refusal is a *engine.SendError); a message that is gone counts as
// done. Safe for concurrent use and to repeat.
func (c *Channel) RemoveOffer(ctx context.Context, ref engine.MessageRef, end engine.Ending) error {
	end.Offer = nil
	return c.Finish(ctx, ref, end)
}

// ShowStanding posts the message of standing answer s (chat.postMessage)
// in the channel it was kept in, or the DM of a user id, with its Revoke
// button, and returns it. One try (a refusal is a *engine.SendError); not
// safe to repeat (it posts again). Safe for concurrent use.
func (c *Channel) ShowStanding(ctx context.Context, s engine.StandingAnswer) (engine.MessageRef, error) {
	channel, err := c.conversation(ctx, s.Target.Chat)
	if err != nil {
		return engine.MessageRef{}, err
	}
	m := renderStanding(engine.ViewStanding(s, engine.StandingKept, c.Capabilities()))
	opts := append(quiet(), slack.MsgOptionText(m.Text, false), slack.MsgOptionBlocks(m.Blocks...))
	_, ts, err := c.api.PostMessageContext(ctx, channel, opts...)
	if err != nil {
		return engine.MessageRef{}, fmt.Errorf("slack: post standing answer: %w", c.classify(err))
	}
	return engine.MessageRef{Platform: Platform, Chat: channel, Message: ts}, nil
}

// EditStanding edits message ref of standing answer s with chat.update to
// show it in state: its use count, or that it was revoked or ended (the
// Revoke button then gone). One try (a refusal is a *engine.SendError); a
// message that is gone (message_not_found, cant_update_message) counts as
// done. Safe for concurrent use and to repeat.
func (c *Channel) EditStanding(ctx context.Context, ref engine.MessageRef, s engine.StandingAnswer, state engine.StandingState) error {
	m := renderStanding(engine.ViewStanding(s, state, c.Capabilities()))
	ref.Part = 0
	return c.edit(ctx, ref, []message{m}, "message_not_found", "cant_update_message")
}

// renderStanding is a standing answer's message: its text (escaped) in
// sections, then its buttons (Revoke while it stands).
func renderStanding(v engine.StandingView) message {
	blocks := sections(v.Text)
	blocks = append(blocks, rowsBlocks(standingKind, v.Rows)...)
	return message{Text: splitEscaped(v.Text, maxTextChars)[0], Blocks: blocks}
}

// renderEnding is every message of an ended question (renderEnded), with
// the offer to keep its answer, when it has one, on the last part: its
// keep buttons at the end of the part, or, with no buttons or no block
// left for them, its hint on the line after the status line.
func renderEnding(end engine.Ending) []message {
	msgs := renderEnded(end.Plan, end.Status)
	o := end.Offer
	if o == nil {
		return msgs
	}
	last := len(msgs) - 1
	if rows := rowsBlocks(offerKind, o.Rows); len(rows) > 0 && len(msgs[last].Blocks)+len(rows) <= maxBlocks {
		msgs[last].Blocks = append(msgs[last].Blocks, rows...)
		return msgs
	}
	if o.Hint != "" {
		msgs[last] = renderEnded(end.Plan, end.Status+"\n"+o.Hint)[last]
	}
	return msgs
}

// rowsBlocks renders rows of buttons (an offer's keep buttons, a standing
// answer's Revoke) of kind as actions blocks of at most
// maxActionElements, labels cut to maxButtonLabel; none for no rows.
// The payloads are askbridge.PayloadLen bytes, far within a value's
// maxButtonValue.
func rowsBlocks(kind string, rows [][]engine.Button) []slack.Block {
	var out []slack.Block
	var elems []slack.BlockElement
	flush := func() {
		if len(elems) > 0 {
			blockID := actionIDPrefix + kind
			if len(out) > 0 {
				blockID = fmt.Sprintf("%s_%d", blockID, len(out))
			}
			out = append(out, slack.NewActionBlock(blockID, elems...))
			elems = nil
		}
	}
	n := 0
	for _, row := range rows {
		for _, b := range row {
			label := engine.CutLabel(b.Label, maxButtonLabel)
			elems = append(elems, slack.NewButtonBlockElement(fmt.Sprintf("%s%s_%d", actionIDPrefix, kind, n), b.Payload, slack.NewTextBlockObject(slack.PlainTextType, label, false, false)))
			n++
			if len(elems) == maxActionElements {
				flush()
			}
		}
	}
	flush()
	return out
}
