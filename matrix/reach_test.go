package matrix_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/locale"
)

// editOf matches the bot's m.replace edit of event orig.
func editOf(orig id.EventID) func(*event.Event) bool {
	return func(ev *event.Event) bool {
		rel, _ := ev.Content.Raw["m.relates_to"].(map[string]any)
		return rel["rel_type"] == "m.replace" && rel["event_id"] == orig.String()
	}
}

// newBody is the body of an edit's new content.
func newBody(ev *event.Event) string {
	body, _ := ev.Content.Raw["m.new_content"].(map[string]any)["body"].(string)
	return body
}

// newAnswers is the answer ids of an edited poll's new content.
func newAnswers(ev *event.Event) []string {
	nc, _ := ev.Content.Raw["m.new_content"].(map[string]any)
	return answers(&event.Event{Content: event.Content{Raw: nc}})
}

// TestUpdateShowsSeen: a person replies "seen" to a poll of a request with
// reminders; the poll's fallback text is edited to say who has seen it,
// and the poll keeps its answers, then and when it ends (its Seen answer
// included, though the plan has dropped it).
func TestUpdateShowsSeen(t *testing.T) {
	e := newEnv(t, "seen")
	if err := e.alice.SetDisplayName(context.Background(), "Alice"); err != nil {
		t.Fatal(err)
	}
	e.syncing(e.start("r1"))
	qid := e.ask("qseen01", `"remindEverySeconds":600,`, pollQuestions)
	poll := e.next(ofType("org.matrix.msc3381.poll.start"))
	if n := len(answers(poll)); n != 4 {
		t.Fatalf("poll answers %v, want two options, Skip and Seen", answers(poll))
	}
	e.reply(e.alice, poll.ID, "seen", true)
	edit := e.next(editOf(poll.ID))
	seenBy := locale.For(locale.Default).Format("SeenBy", map[string]any{"Who": "Alice"})
	if body := newBody(edit); !strings.HasSuffix(body, "\n\n"+seenBy) {
		t.Errorf("edited text %q, want it to end with %q", body, seenBy)
	}
	if got := newAnswers(edit); !slices.Equal(got, answers(poll)) {
		t.Errorf("edited poll answers %v, want the poll's own %v", got, answers(poll))
	}
	e.vote(e.alice, poll.ID, answers(poll)[0])
	if res := e.Result(qid, 20*time.Second); !answered(res, "target", "Staging") {
		t.Fatalf("result %+v, want alice's Staging", res)
	}
	e.next(ofType("org.matrix.msc3381.poll.end"))
	if got := newAnswers(e.next(editOf(poll.ID))); !slices.Equal(got, answers(poll)) {
		t.Errorf("ended poll answers %v, want the poll's own %v", got, answers(poll))
	}
}

// TestSeenByReaction: a 👀 reaction on a prompt marks it seen as the
// reply word does: the prompt is edited to say who has seen it and the
// agent is told (an acknowledged event). A 👀 from someone who may not
// answer and any other reaction change nothing; nothing is said back to
// any reaction; after the end a 👀 does nothing.
func TestSeenByReaction(t *testing.T) {
	e := newEnv(t, "react")
	if err := e.alice.SetDisplayName(context.Background(), "Alice"); err != nil {
		t.Fatal(err)
	}
	e.syncing(e.start("r1"))
	qid := e.ask("qreact01", fmt.Sprintf(`"remindEverySeconds":600,"answerers":["matrix:%s"],`, e.alice.UserID), multiQuestions)
	prompt := e.next(ofType("m.room.message"))
	e.react(e.bob, prompt.ID, "\U0001F440")         // not an answerer
	e.react(e.alice, prompt.ID, "\U0001F389")       // 🎉: not Seen
	e.react(e.alice, prompt.ID, "\U0001F440\uFE0F") // 👀 with VS16
	edit := e.next(editOf(prompt.ID))
	seenBy := locale.For(locale.Default).Format("SeenBy", map[string]any{"Who": "Alice"})
	if body := newBody(edit); !strings.HasSuffix(body, "\n\n"+seenBy) {
		t.Errorf("edited text %q, want it to end with %q", body, seenBy)
	}
	acks := ofKind(e.events(qid), askbridge.EventAcknowledged)
	if len(acks) != 1 || acks[0].By != "matrix:"+e.alice.UserID.String() {
		t.Fatalf("acknowledged events %+v, want one, by alice", acks)
	}
	e.reply(e.alice, prompt.ID, "1", false)
	res := e.Result(qid, 20*time.Second)
	if by := res.AcknowledgedBy; !answered(res, "checks", "Unit") || by == nil || by.ID != e.alice.UserID.String() {
		t.Fatalf("result %+v, want Unit, seen by alice", res)
	}
	e.next(func(ev *event.Event) bool {
		return editOf(prompt.ID)(ev) && strings.Contains(newBody(ev), "Unit")
	})
	e.react(e.alice, prompt.ID, "\U0001F440") // after the end
	// The bot handles the room's events in order: whatever it said to
	// the reactions comes before its answer to this late reply.
	e.reply(e.alice, prompt.ID, "2", false)
	var said []string
	e.next(func(ev *event.Event) bool {
		if ev.Content.Raw["msgtype"] != "m.notice" {
			return false
		}
		body, _ := ev.Content.Raw["body"].(string)
		said = append(said, body)
		return body == en(engine.NoticeAlreadyAnswered)
	})
	if len(said) != 1 {
		t.Errorf("the bot said %q to the reactions, want nothing", said[:len(said)-1])
	}
	if acks := ofKind(e.events(qid), askbridge.EventAcknowledged); len(acks) != 1 {
		t.Errorf("%d acknowledged events, want one", len(acks))
	}
}

// TestUpdateRepeatPostsOnce: the same update twice posts one edit; a text
// prompt's edit shows the notes.
func TestUpdateRepeatPostsOnce(t *testing.T) {
	r := newRoom(t, "update")
	p, _ := plan(t, "qupd001", textRequest)
	ref, err := r.send(t, p)
	if err != nil {
		t.Fatal(err)
	}
	p.Notes = append(p.Notes, "Seen by Alice")
	for range 2 {
		if err := r.ch.Update(context.Background(), ref, p); err != nil {
			t.Fatal(err)
		}
	}
	evs := r.fromBot(t, r.marker(t))
	if len(evs) != 2 {
		t.Fatalf("the bot posted %v, want the prompt and one edit", types(evs))
	}
	if body := newBody(evs[1]); !editOf(id.EventID(ref.Message))(evs[1]) || !strings.HasSuffix(body, "\n\nSeen by Alice") {
		t.Errorf("edit %v says %q, want the prompt with its note", relation(evs[1]), body)
	}
}

// TestQuorumTallyByVotes: a quorum question to two answerers, answered by
// poll votes: the first vote edits the tally in the fallback text, the
// second that agrees ends it.
func TestQuorumTallyByVotes(t *testing.T) {
	e := newEnv(t, "quorum")
	e.syncing(e.start("r1"))
	extra := fmt.Sprintf(`"quorum":2,"answerers":["matrix:%s","matrix:%s"],`, e.alice.UserID, e.bob.UserID)
	qid := e.ask("qquorum1", extra, pollQuestions)
	poll := e.next(ofType("org.matrix.msc3381.poll.start"))
	e.vote(e.alice, poll.ID, answers(poll)[1])
	edit := e.next(editOf(poll.ID))
	if body := newBody(edit); !strings.Contains(body, "Votes: 1 of 2") || !strings.Contains(body, "Production") {
		t.Errorf("edited text %q, want the tally of alice's vote", body)
	}
	if got := newAnswers(edit); !slices.Equal(got, answers(poll)) {
		t.Errorf("edited poll answers %v, want the poll's own %v", got, answers(poll))
	}
	e.vote(e.bob, poll.ID, answers(poll)[1])
	if res := e.Result(qid, 20*time.Second); !answered(res, "target", "Production") {
		t.Fatalf("result %+v, want Production by quorum", res)
	}
}

// redactionOf matches a redaction of event target.
func redactionOf(target id.EventID) func(*event.Event) bool {
	return func(ev *event.Event) bool {
		return ev.Type == event.EventRedaction && (ev.Redacts == target || ev.Content.Raw["redacts"] == target.String())
	}
}

// TestRemindersAreRedactedAtTheEnd: reminders arrive as notices replying
// to the prompt, in its thread, pinging nobody, and are redacted when the
// question is answered.
func TestRemindersAreRedactedAtTheEnd(t *testing.T) {
	e := newEnv(t, "remind")
	e.syncing(e.start("r1"))
	qid := e.ask("qremind1", `"remindEverySeconds":60,"timeoutSeconds":3600,`, pollQuestions)
	poll := e.next(ofType("org.matrix.msc3381.poll.start"))
	var reminders []id.EventID
	for range 2 {
		e.clock.Advance(61 * time.Second)
		ev := e.next(func(ev *event.Event) bool {
			rel, _ := ev.Content.Raw["m.relates_to"].(map[string]any)
			return ev.Content.Raw["msgtype"] == "m.notice" && rel["event_id"] == poll.ID.String()
		})
		rel := ev.Content.Raw["m.relates_to"].(map[string]any)
		reply, _ := rel["m.in_reply_to"].(map[string]any)
		if rel["rel_type"] != "m.thread" || reply["event_id"] != poll.ID.String() {
			t.Errorf("reminder relates %v, want a reply in the prompt's thread", rel)
		}
		if m, ok := ev.Content.Raw["m.mentions"].(map[string]any); !ok || len(m) != 0 {
			t.Errorf("reminder mentions %v, want none", ev.Content.Raw["m.mentions"])
		}
		if body, _ := ev.Content.Raw["body"].(string); !strings.HasPrefix(body, "Still waiting") {
			t.Errorf("reminder says %q", body)
		}
		reminders = append(reminders, ev.ID)
	}
	e.vote(e.alice, poll.ID, answers(poll)[0])
	if res := e.Result(qid, 20*time.Second); !answered(res, "target", "Staging") {
		t.Fatalf("result %+v, want alice's Staging", res)
	}
	redacted := map[id.EventID]bool{}
	e.next(func(ev *event.Event) bool {
		for _, r := range reminders {
			if redactionOf(r)(ev) {
				redacted[r] = true
			}
		}
		return len(redacted) == len(reminders)
	})
}

// TestRemindAndDeleteRepeat: a reminder is a notice replying to the
// prompt; deleting it twice redacts it once and succeeds, and so does
// deleting an event the homeserver does not know.
func TestRemindAndDeleteRepeat(t *testing.T) {
	r := newRoom(t, "redact")
	p, _ := plan(t, "qredact1", textRequest)
	prompt, err := r.send(t, p)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rem, err := r.ch.Remind(ctx, prompt, "Still waiting")
	if err != nil {
		t.Fatal(err)
	}
	if rem.Platform != "matrix" || rem.Chat != prompt.Chat || rem.Message == "" || rem.Message == prompt.Message {
		t.Fatalf("Remind returned %+v, want a new event in the prompt's room", rem)
	}
	for range 2 {
		if err := r.ch.Delete(ctx, rem); err != nil {
			t.Fatal(err)
		}
	}
	gone := engine.MessageRef{Platform: "matrix", Chat: prompt.Chat, Message: "$nosuchevent"}
	if err := r.ch.Delete(ctx, gone); err != nil {
		t.Errorf("Delete of an unknown event: %v, want success", err)
	}
	evs := r.fromBot(t, r.marker(t))
	var redactions int
	for _, ev := range evs {
		if redactionOf(id.EventID(rem.Message))(ev) {
			redactions++
		}
	}
	if len(evs) < 2 || evs[1].ID.String() != rem.Message || redactions != 1 {
		t.Errorf("the bot posted %v, want the prompt, the reminder and one redaction of it", types(evs))
	}
}

// TestNotAnAnswerer: only alice may answer. Bob's vote leaves the
// question open and gets the "not for you" notice in the poll's thread,
// which does not name his answer; his reply in the thread is not taken as
// an answer and gets no notice (the engine leaves the text of people who
// may not answer alone: a room's chatter is none of its business). Then
// alice's vote answers.
func TestNotAnAnswerer(t *testing.T) {
	e := newEnv(t, "notyou")
	e.syncing(e.start("r1"))
	qid := e.ask("qnotyou1", fmt.Sprintf(`"answerers":["matrix:%s"],`, e.alice.UserID), pollQuestions)
	poll := e.next(ofType("org.matrix.msc3381.poll.start"))
	e.vote(e.bob, poll.ID, answers(poll)[1])
	if got := e.notice(poll.ID); got != en(engine.NoticeNotForYou) || strings.Contains(got, "Production") {
		t.Errorf("bob's vote got %q, want %q", got, en(engine.NoticeNotForYou))
	}
	e.reply(e.bob, poll.ID, "Production", true)
	e.NoResult(qid)
	e.vote(e.alice, poll.ID, answers(poll)[0])
	res := e.Result(qid, 20*time.Second)
	if by := res.AnsweredBy; !answered(res, "target", "Staging") || by == nil || by.ID != e.alice.UserID.String() {
		t.Fatalf("result %+v, want alice's Staging", res)
	}
	// The bot handles the room's events in order: whatever it said to
	// bob's reply comes before the notice of alice's vote.
	var said []string
	e.next(func(ev *event.Event) bool {
		if ev.Content.Raw["msgtype"] != "m.notice" {
			return false
		}
		body, _ := ev.Content.Raw["body"].(string)
		said = append(said, body)
		return body == en(engine.NoticeRecorded)
	})
	if len(said) != 1 {
		t.Errorf("the bot said %q before recording alice's vote, want nothing to bob's reply", said[:len(said)-1])
	}
}
