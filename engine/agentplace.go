package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/askbridge/askbridge"
)

// agentPlace is the place an agent shows a question itself (target
// "mcp"): the form the MCP server puts in the agent's own client. The
// bridge posts nothing there; the MCP server reads the question from
// Redis and hands in what the person gave as an `answer` entry (intake's
// answer). As a channel it is local and premade, as the web page is: its
// one message (the question id) is recorded by the create, so the
// delivery bookkeeping and the delivered event work as for any place.
// Every engine has it (NewEngine); it needs no configuration and
// connects to nothing, so it is no platform of the bridge's readiness.
// It holds no state and is safe for concurrent use.
type agentPlace struct{}

var (
	_ Channel = agentPlace{}
	_ Premade = agentPlace{}
)

// Platform returns "mcp".
func (agentPlace) Platform() string { return askbridge.PlatformMCP }

// Capabilities: local (nothing is posted, so showing twice does no
// harm); the plan is never shown by the bridge, so nothing else matters.
func (agentPlace) Capabilities() Capabilities { return Capabilities{Local: true} }

// Send hands d.Sent the one message of the question (Premade) and posts
// nothing. It never fails and blocks only as long as d.Sent.
func (p agentPlace) Send(_ context.Context, d Delivery) error {
	if d.From == 0 {
		d.Sent(p.Premade(d.Chat, d.Plan.ID))
	}
	return nil
}

// Premade is the one message that shows question id in the agent's
// client: platform "mcp", no chat, message the question id.
func (agentPlace) Premade(chat, id string) MessageRef {
	return MessageRef{Platform: askbridge.PlatformMCP, Chat: chat, Message: id}
}

// Finish does nothing: the MCP server shows the end from the question's
// result.
func (agentPlace) Finish(context.Context, MessageRef, Ending) error { return nil }

// Run blocks until ctx is done: the answers come as answer entries, not
// through a connection.
func (agentPlace) Run(ctx context.Context, _ Inbox) error {
	<-ctx.Done()
	return nil
}

// State is always connected.
func (agentPlace) State() ChannelState { return StateConnected }

// answer hands in an answer entry: the answer (or skip) a person gave to a
// question in the agent's own client. It is taken as any answer is
// (Engine.submit), in the question's mcp place when it has one, else in
// none (Place -1), by a person who may answer every place of the question
// (Record.MayAnswerFromAgent). An entry that does not decode, names an
// unknown question, comes from someone who may not answer, or does not
// fit the question is refused with a rejected event, and the question
// stays open; an answer to a question that has ended changes nothing. It
// returns an error only for trouble with the store: the entry then stays
// pending and is handled again.
func (in *intake) answer(ctx context.Context, entry Entry) error {
	a, err := askbridge.DecodeAnswerEntry(entry.Answer)
	if err != nil {
		return in.refuseAnswer(ctx, answerID(entry), "", err.Error())
	}
	by := a.By.Platform + ":" + a.By.ID
	rec, found, err := in.store.Lookup(ctx, a.ID)
	switch {
	case err != nil:
		return fmt.Errorf("read question: %w", err)
	case !found:
		return in.refuseAnswer(ctx, a.ID, by, "no question "+quoteShort(a.ID)+" (no bridge has taken it yet, or it ended longer ago than the result retention)")
	case rec.Status != askbridge.StatusPending:
		in.log.Info("answer from the agent's client came after the end; it changes nothing", "question", a.ID, "by", by, "status", rec.Status)
		return nil
	case !rec.MayAnswerFromAgent(a.By):
		return in.refuseAnswer(ctx, a.ID, by, by+" may not answer this question")
	}
	place := rec.PlaceAt(askbridge.Target{Platform: askbridge.PlatformMCP})
	sub, err := in.submit(ctx, rec, Answer{By: a.By, Via: askbridge.ViaMCP, Skip: a.Skip, Values: a.Answers, Place: place})
	var verr *askbridge.ValidationError
	switch {
	case errors.As(err, &verr):
		return in.refuseAnswer(ctx, a.ID, by, err.Error())
	case err != nil:
		return fmt.Errorf("submit answer: %w", err)
	case sub.Notice == NoticeNotForYou:
		return in.refuseAnswer(ctx, a.ID, by, by+" may not answer this question")
	}
	in.log.Info("answer from the agent's client handed in", "question", a.ID, "by", by, "won", sub.Won, "notice", sub.Notice)
	return nil
}

// refuseAnswer publishes the rejected event of an answer entry: id is the
// question's id when the entry names a valid one, else the entry's; by
// who answered, when known; problem what is wrong, after "answer: ".
func (in *intake) refuseAnswer(ctx context.Context, id, by, problem string) error {
	in.log.Warn("answer from the agent's client refused", "question", id, "by", by, "problem", problem)
	ev := askbridge.Event{Kind: askbridge.EventRejected, ID: id, At: in.clock.Now(), By: by, Error: "answer: " + problem}
	if by != "" {
		ev.Platform = askbridge.PlatformMCP
	}
	return in.publish(ctx, ev)
}

// answerID is where the refusal of an answer entry is published: the
// question id it names when that is valid (read as far as the JSON
// parses, so an oversize entry's head will do), else the entry's id.
func answerID(entry Entry) string {
	if id := askbridge.RequestIDOf(entry.Answer); askbridge.ValidRequestID(id) {
		return id
	}
	return entry.StreamID
}

// oversizeAnswer refuses an answer entry over MaxEntryBytes.
func (in *intake) oversizeAnswer(ctx context.Context, entry Entry) error {
	return in.refuseAnswer(ctx, answerID(entry), "", fmt.Sprintf("entry is %d bytes; at most %d", entry.Oversize, askbridge.MaxEntryBytes))
}
