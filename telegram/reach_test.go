package telegram_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/enginetest"
	"github.com/askbridge/askbridge/internal/telegramtest"
	"github.com/askbridge/askbridge/locale"
	"github.com/askbridge/askbridge/telegram"
)

// leadChat is the chat of the ops leads, where the escalation step of
// these tests asks too.
const leadChat int64 = -100600

// escalation gives a request (JSON) a 15-minute timeout and one
// escalation step: the leads' chat, after 10 minutes.
func escalation(request string) string {
	return `{"timeoutSeconds":900,"escalate":[{"afterSeconds":600,"to":"telegram:-100600"}],` + strings.TrimPrefix(request, "{")
}

// escalatedRecord is question id, asked with request and escalation: shown
// in the ops group (place 0) and, by its step, in the leads' chat (place
// 1); nobody has seen it yet.
func escalatedRecord(t *testing.T, id, request string) engine.Record {
	t.Helper()
	req, err := askbridge.DecodeRequest([]byte(escalation(request)))
	if err != nil {
		t.Fatal(err)
	}
	place := func(chat int64, step int) askbridge.Place {
		target := askbridge.Target{Platform: telegram.Platform, Chat: fmt.Sprint(chat)}
		return askbridge.Place{Name: target.String(), Target: target, Step: step}
	}
	return engine.Record{ID: id, Status: askbridge.StatusPending, Request: req,
		Target: askbridge.Target{Platform: telegram.Platform, Chat: fmt.Sprint(opsGroup)}, Created: time.Now(),
		Places: []askbridge.Place{place(opsGroup, 0), place(leadChat, 1)}}
}

// personOf is a test user as the engine names them.
func personOf(u telegramtest.User) askbridge.Person {
	return askbridge.Person{Platform: telegram.Platform, ID: fmt.Sprint(u.ID), Name: u.FirstName}
}

// withoutSeen is the buttons of m but Seen, in order.
func withoutSeen(m telegramtest.Message, lang string) []string {
	return slices.DeleteFunc(buttonTexts(m), func(s string) bool { return s == locale.For(lang).Get("ButtonSeen") })
}

// newReachRig is a channel on a fake (o) with the ops group and the
// leads' chat.
func newReachRig(t *testing.T, o telegramtest.Options) (*telegramtest.Server, *telegram.Channel) {
	t.Helper()
	fake := telegramtest.New(o)
	t.Cleanup(fake.Close)
	fake.AddChat(opsGroup, "supergroup", "Ops")
	fake.AddChat(leadChat, "supergroup", "Leads")
	ch, err := telegram.New(telegram.Config{Token: fake.Token, APIURL: fake.URL, ChatPace: 1, GlobalPace: 1}, enginetest.NewMemCoord(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return fake, ch
}

// TestUpdateShowsWhoHasSeen: Update edits the prompt to show the plan as
// Send would post it now (the line saying who has seen it, the Seen
// button gone, the other buttons kept); doing it again, or on a message
// that is gone, succeeds without an edit.
func TestUpdateShowsWhoHasSeen(t *testing.T) {
	t.Parallel()
	fake, ch := newReachRig(t, telegramtest.Options{})
	ctx := context.Background()
	rec := escalatedRecord(t, "update-1", goldenShapes[0].request)
	open := rec.PlanFor(1, ch.Capabilities())
	refs, err := sendAll(ctx, ch, fmt.Sprint(leadChat), open)
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != 1 {
		t.Fatalf("%d parts, want 1", len(refs))
	}
	prompt := fake.BotMessages(leadChat)[0]
	if got := buttonTexts(prompt); !slices.Equal(got, []string{"Staging (Recommended)", "Production", "Other…", "Skip", "Seen"}) {
		t.Fatalf("buttons %q", got)
	}
	if want := "\n\nNo answer after 10 min, so this is asked here too."; !strings.HasSuffix(prompt.Text, want) {
		t.Errorf("the prompt does not end with %q:\n%s", want, prompt.Text)
	}

	rec.Acknowledged = &askbridge.Person{Platform: telegram.Platform, ID: "1001", Name: "<Alice> & @alice"}
	seen := rec.PlanFor(1, ch.Capabilities())
	if err := ch.Update(ctx, refs[0], seen); err != nil {
		t.Fatal(err)
	}
	m := fake.BotMessages(leadChat)[0]
	if m.HTML != telegram.PromptParts(seen)[0] || m.Edits != 1 {
		t.Errorf("after Update (%d edits) the prompt is not as Send would post it:\n%s", m.Edits, m.HTML)
	}
	// The name is the person's: escaped, and it mentions nobody.
	if want := "\n\nNo answer after 10 min, so this is asked here too.\nSeen by <Alice> & @\u2060alice"; !strings.HasSuffix(m.Text, want) {
		t.Errorf("the prompt does not end with %q:\n%s", want, m.Text)
	}
	if got, want := buttonTexts(m), withoutSeen(prompt, "en"); !slices.Equal(got, want) || len(m.Keyboard) != len(prompt.Keyboard) {
		t.Errorf("buttons %q in %d rows, want %q in %d", got, len(m.Keyboard), want, len(prompt.Keyboard))
	}
	if len(m.Mentions) != 0 || m.LinkPreview {
		t.Errorf("the updated prompt mentions %v, link preview %v", m.Mentions, m.LinkPreview)
	}

	// Again: Telegram's "message is not modified" is success.
	if err := ch.Update(ctx, refs[0], seen); err != nil {
		t.Errorf("update again: %v", err)
	}
	if m := fake.BotMessages(leadChat)[0]; m.Edits != 1 || m.EditCalls != 2 {
		t.Errorf("update again: %d edits in %d calls, want 1 in 2", m.Edits, m.EditCalls)
	}
	// A part the plan does not have is refused without a call.
	beyond := refs[0]
	beyond.Part = 1
	if err := ch.Update(ctx, beyond, seen); kindOf(err) != engine.Permanent {
		t.Errorf("a part the plan lacks: %v", err)
	}
	if m := fake.BotMessages(leadChat)[0]; m.EditCalls != 2 {
		t.Errorf("a part the plan lacks was edited (%d calls)", m.EditCalls)
	}
	// Gone: success.
	fake.DeleteMessage(leadChat, prompt.ID)
	if err := ch.Update(ctx, refs[0], open); err != nil {
		t.Errorf("update a deleted prompt: %v", err)
	}
}

// TestNotesKeepThePartsOfALongPrompt: the notes of a long prompt go on its
// last part without moving a line to another part, so Update edits only
// the last part, and the ended prompt keeps them above the status line.
func TestNotesKeepThePartsOfALongPrompt(t *testing.T) {
	t.Parallel()
	fake, ch := newReachRig(t, telegramtest.Options{})
	ctx := context.Background()
	rec := escalatedRecord(t, "long-seen", longRequest())
	bare := telegram.PromptParts(engine.BuildPlan(rec.ID, rec.Request, ch.Capabilities()))
	open := rec.PlanFor(1, ch.Capabilities())
	openParts := telegram.PromptParts(open)
	if len(bare) < 2 || len(openParts) != len(bare) || !slices.Equal(openParts[:len(bare)-1], bare[:len(bare)-1]) {
		t.Fatalf("the notes moved lines: %d parts without them, %d with", len(bare), len(openParts))
	}
	refs, err := sendAll(ctx, ch, fmt.Sprint(leadChat), open)
	if err != nil {
		t.Fatal(err)
	}
	rec.Acknowledged = &askbridge.Person{Platform: telegram.Platform, ID: "1001", Name: "Alice"}
	seen := rec.PlanFor(1, ch.Capabilities())
	for _, ref := range refs {
		if err := ch.Update(ctx, ref, seen); err != nil {
			t.Fatal(err)
		}
	}
	msgs := fake.BotMessages(leadChat)
	last := len(msgs) - 1
	for i, m := range msgs {
		wantEdits := 0 // the text of a part before the last is the same
		if i == last {
			wantEdits = 1
		}
		if m.Edits != wantEdits || m.HTML != telegram.PromptParts(seen)[i] {
			t.Errorf("part %d: %d edits, want %d; shows\n%s", i, m.Edits, wantEdits, m.HTML)
		}
	}
	if !strings.HasSuffix(msgs[last].Text, "\n\n"+strings.Join(seen.Notes, "\n")) || len(msgs[last].Keyboard) == 0 {
		t.Errorf("the last part does not end with the notes above its buttons:\n%s", msgs[last].Text)
	}
	end := ending(seen, rec.Request, askbridge.NoAnswer(rec.ID, askbridge.ReasonTimeout, ""))
	for _, ref := range refs {
		if err := ch.Finish(ctx, ref, end); err != nil {
			t.Fatal(err)
		}
	}
	ended := fake.BotMessages(leadChat)
	checkEnded(t, seen, end.Status, msgs, ended)
	if want := "\n\nNo answer after 10 min, so this is asked here too.\nSeen by Alice\n\nExpired"; !strings.HasSuffix(ended[last].Text, want) {
		t.Errorf("the ended last part does not end with %q:\n%s", want, ended[last].Text)
	}
}

// TestUpdateRefusals: Update makes one call and classifies a refusal as
// Finish does.
func TestUpdateRefusals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		opts  telegramtest.Options
		block string
		fail  bool
		kind  engine.ErrorKind
	}{
		{"kicked", telegramtest.Options{}, telegramtest.ErrKicked, false, engine.Permanent},
		{"429", telegramtest.Options{ChatRate: 0.1, ChatBurst: 1}, "", false, engine.RateLimited},
		{"502", telegramtest.Options{}, "", true, engine.Temporary},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake, ch := newReachRig(t, tt.opts)
			ctx := context.Background()
			rec := escalatedRecord(t, "refused", goldenShapes[0].request)
			refs, err := sendAll(ctx, ch, fmt.Sprint(leadChat), rec.PlanFor(1, ch.Capabilities()))
			if err != nil {
				t.Fatal(err)
			}
			fake.Block(leadChat, tt.block)
			if tt.fail {
				fake.FailNext("editMessageText", 0, 1)
			}
			rec.Acknowledged = &askbridge.Person{Platform: telegram.Platform, ID: "1001", Name: "Alice"}
			err = ch.Update(ctx, refs[0], rec.PlanFor(1, ch.Capabilities()))
			if kindOf(err) != tt.kind {
				t.Fatalf("error %v, want kind %d", err, tt.kind)
			}
			_, wait, reason := engine.Classify(err)
			switch tt.kind {
			case engine.Permanent:
				if reason != tt.block {
					t.Errorf("reason %q, want Telegram's %q", reason, tt.block)
				}
			case engine.RateLimited:
				if wait < time.Second {
					t.Errorf("retry after %s", wait)
				}
			}
			if m := fake.BotMessages(leadChat)[0]; m.Edits != 0 || m.EditCalls > 1 {
				t.Errorf("%d edits in %d calls, want none in at most one", m.Edits, m.EditCalls)
			}
		})
	}
}

// TestRemindRepliesToThePrompt: a reminder is posted as a reply to the
// prompt, its text escaped and pinging nobody, without a link preview; a
// prompt that is gone does not stop it; a refusal is a SendError.
func TestRemindRepliesToThePrompt(t *testing.T) {
	t.Parallel()
	fake, ch := newReachRig(t, telegramtest.Options{})
	ctx := context.Background()
	refs, err := sendAll(ctx, ch, fmt.Sprint(opsGroup), escalatedRecord(t, "remind-1", goldenShapes[0].request).PlanFor(0, ch.Capabilities()))
	if err != nil {
		t.Fatal(err)
	}
	prompt := refs[0]
	text := "Still waiting <for> you & @alice — see https://ci.example.com/4812"
	ref, err := ch.Remind(ctx, prompt, text)
	if err != nil {
		t.Fatal(err)
	}
	msgs := fake.BotMessages(opsGroup)
	if len(msgs) != 2 {
		t.Fatalf("%d messages, want the prompt and the reminder", len(msgs))
	}
	m := msgs[1]
	if want := (engine.MessageRef{Platform: telegram.Platform, Chat: fmt.Sprint(opsGroup), Message: fmt.Sprint(m.ID)}); ref != want {
		t.Errorf("Remind returned %+v, want %+v", ref, want)
	}
	if m.ReplyTo != msgs[0].ID || !m.ReplyOptional {
		t.Errorf("the reminder replies to %d (optional %v), want the prompt %d", m.ReplyTo, m.ReplyOptional, msgs[0].ID)
	}
	if want := "Still waiting <for> you & @\u2060alice — see https://ci.example.com/4812"; m.Text != want {
		t.Errorf("the reminder reads %q, want %q", m.Text, want)
	}
	if len(m.Mentions) != 0 || m.LinkPreview || len(m.Keyboard) != 0 {
		t.Errorf("the reminder mentions %v, link preview %v, buttons %v", m.Mentions, m.LinkPreview, m.Keyboard)
	}

	fake.DeleteMessage(opsGroup, msgs[0].ID)
	if _, err := ch.Remind(ctx, prompt, text); err != nil {
		t.Fatalf("remind under a deleted prompt: %v", err)
	}
	if m := fake.BotMessages(opsGroup)[1]; m.ReplyTo != 0 || m.ReplyAsked != msgs[0].ID {
		t.Errorf("the reminder under a deleted prompt replies to %d (asked %d)", m.ReplyTo, m.ReplyAsked)
	}

	fake.Block(opsGroup, telegramtest.ErrKicked)
	if _, err := ch.Remind(ctx, prompt, text); kindOf(err) != engine.Permanent {
		t.Errorf("remind in a chat the bot was kicked from: %v", err)
	}
	if n := fake.Stats().Sent; n != 3 {
		t.Errorf("%d messages sent, want 3", n)
	}
}

// TestDeleteReminder: Delete deletes a reminder; one already gone is
// success, one older than Telegram lets a bot delete is a permanent
// refusal, a 429 is rate limited.
func TestDeleteReminder(t *testing.T) {
	t.Parallel()
	fake, ch := newReachRig(t, telegramtest.Options{})
	ctx := context.Background()
	prompt := engine.MessageRef{Platform: telegram.Platform, Chat: fmt.Sprint(opsGroup), Message: "1"}
	remind := func() engine.MessageRef {
		t.Helper()
		ref, err := ch.Remind(ctx, prompt, "Still waiting")
		if err != nil {
			t.Fatal(err)
		}
		return ref
	}
	first := remind()
	if err := ch.Delete(ctx, first); err != nil {
		t.Fatal(err)
	}
	if n := len(fake.BotMessages(opsGroup)); n != 0 || fake.Stats().Deleted != 1 {
		t.Errorf("%d messages left, %d deleted", n, fake.Stats().Deleted)
	}
	if err := ch.Delete(ctx, first); err != nil {
		t.Errorf("delete again: %v", err)
	}

	old := remind()
	id := fake.BotMessages(opsGroup)[0].ID
	fake.Age(opsGroup, id, telegramtest.DeleteWindow)
	err := ch.Delete(ctx, old)
	if _, _, reason := engine.Classify(err); kindOf(err) != engine.Permanent || reason != telegramtest.ErrCantDelete {
		t.Errorf("delete a reminder 48 hours old: %v", err)
	}
	if n := len(fake.BotMessages(opsGroup)); n != 1 {
		t.Errorf("%d messages left, want the old reminder", n)
	}
	if err := ch.Delete(ctx, engine.MessageRef{Platform: telegram.Platform, Chat: fmt.Sprint(opsGroup), Message: "x"}); kindOf(err) != engine.Permanent {
		t.Errorf("delete a message that is no Telegram message: %v", err)
	}
	if fake.Stats().Deleted != 1 {
		t.Errorf("%d deleted, want 1", fake.Stats().Deleted)
	}

	t.Run("429", func(t *testing.T) {
		t.Parallel()
		fake, ch := newReachRig(t, telegramtest.Options{ChatRate: 0.1, ChatBurst: 1})
		ref, err := ch.Remind(ctx, prompt, "Still waiting")
		if err != nil {
			t.Fatal(err)
		}
		err = ch.Delete(ctx, ref)
		if _, wait, _ := engine.Classify(err); kindOf(err) != engine.RateLimited || wait < time.Second {
			t.Errorf("delete over the limit: %v", err)
		}
		if fake.Stats().Deleted != 0 {
			t.Error("a rate-limited delete deleted")
		}
	})
}

// TestNotesOnAFullPart: on a prompt that fills its one part to the limit,
// the notes still go on that part (a second part would be a message the
// prompt was never posted with), and Telegram takes it, open and ended.
func TestNotesOnAFullPart(t *testing.T) {
	t.Parallel()
	fake, ch := newReachRig(t, telegramtest.Options{})
	ctx := context.Background()
	request := func(n int) string {
		return fmt.Sprintf(`{"context":%q,"questions":[{"id":"a","header":"H","question":"Q?","options":[{"label":"A"},{"label":"B"}]}]}`, strings.Repeat("x", n))
	}
	// The longest context that leaves the prompt in one part.
	split := sort.Search(askbridge.MaxContextChars+1, func(n int) bool {
		return len(telegram.PromptParts(escalatedRecord(t, "full", request(n)).PlanFor(1, ch.Capabilities()))) > 1
	})
	if split > askbridge.MaxContextChars {
		t.Fatal("no context fills a part")
	}
	rec := escalatedRecord(t, "full", request(split-1))
	open := rec.PlanFor(1, ch.Capabilities())
	rec.Acknowledged = &askbridge.Person{Platform: telegram.Platform, ID: "1001", Name: strings.Repeat("A", 64) + " " + strings.Repeat("Z", 64)}
	seen := rec.PlanFor(1, ch.Capabilities())
	if parts := telegram.PromptParts(seen); len(parts) != 1 {
		t.Fatalf("the notes took the prompt to %d parts", len(parts))
	}
	refs, err := sendAll(ctx, ch, fmt.Sprint(leadChat), open)
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.Update(ctx, refs[0], seen); err != nil {
		t.Fatalf("Telegram refused the prompt with its notes: %v", err)
	}
	// The longest status line a one-question answer has: its longest label,
	// by someone with the longest name, in a place with the longest name.
	end := engine.Ending{Plan: seen, Outcome: askbridge.OutcomeAnswered, Status: fmt.Sprintf("Answered by %s in %s: %s",
		strings.Repeat("B", 129), strings.Repeat("p", askbridge.MaxToChars), strings.Repeat("L", 64))}
	if err := ch.Finish(ctx, refs[0], end); err != nil {
		t.Fatalf("Telegram refused the ended prompt with its notes: %v", err)
	}
	m := fake.BotMessages(leadChat)[0]
	if !strings.Contains(m.Text, "\n"+strings.Join(seen.Notes, "\n")+"\n\n"+end.Status) || m.Edits != 2 {
		t.Errorf("the ended prompt (%d edits):\n%s", m.Edits, m.Text)
	}
}
