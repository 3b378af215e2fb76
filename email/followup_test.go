package email

import (
	"context"
	"github.com/askbridge/askbridge/internal/smtptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/engine"
)

// ended reads ended question id and its prompt to addr, as the finisher
// hands them to Finish.
func (e *env) ended(id string) (engine.MessageRef, engine.Ending) {
	e.t.Helper()
	ctx := context.Background()
	var rec engine.Record
	e.eventually("the question ended", func() bool {
		r, found, err := e.store.Get(ctx, id)
		rec = r
		return err == nil && found && r.Result != nil
	})
	refs, err := e.store.Messages(ctx, id)
	if err != nil || len(refs) == 0 {
		e.t.Fatalf("messages: %v %v", refs, err)
	}
	end := engine.Ending{
		Plan: rec.PlanFor(refs[0].Place, engine.Capabilities{}), Outcome: rec.Result.Outcome(),
		Status: engine.StatusLine(rec.Request, *rec.Result), Question: rec,
	}
	return refs[0], end
}

// TestNotifyEnd: with notifyEnd, the end of the question sends one
// follow-up, in reply to the prompt, saying how it ended and who
// answered; Finish repeated, on this replica or another, sends no more.
func TestNotifyEnd(t *testing.T) {
	e := newEnv(t, smtptest.Options{})
	ch := e.channel(e.config(), nil, nil)
	eng := e.engine("r1", ch)
	e.agent.Ask(ask("q-end", `"email:`+alice+`"`, `"notifyEnd":true`))
	prompt := parse(t, e.waitMails(1)[0].Raw)
	answer(t, eng, "q-end", 0, alice, "Production")
	mails := e.waitMails(2)
	p := parse(t, mails[1].Raw)
	promptID := prompt.Header.Get("Message-Id")
	if p.Header.Get("In-Reply-To") != promptID || p.Header.Get("References") != promptID ||
		p.Header.Get("Message-Id") != "<"+messageID("q-end", 0, "end", "bridge.example")+">" {
		t.Fatalf("follow-up headers %v", p.Header)
	}
	if got := p.Header.Get("Subject"); got != "Ended: Deploy: Where should v2.3 go?" {
		t.Errorf("subject %q", got)
	}
	for _, want := range []string{"This question has ended.", "Answered: Production", "Answered by " + alice + "."} {
		if !strings.Contains(p.Text, want) {
			t.Errorf("follow-up lacks %q:\n%s", want, p.Text)
		}
	}
	ref, end := e.ended("q-end")
	other := e.channel(e.config(), nil, nil)
	for _, c := range []*Channel{ch, ch, other} {
		if err := c.Finish(context.Background(), ref, end); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(e.mail.Received()); n != 2 {
		t.Fatalf("%d emails, want the prompt and one follow-up", n)
	}
}

// TestNoNotifyEnd: without notifyEnd, Finish sends nothing.
func TestNoNotifyEnd(t *testing.T) {
	e := newEnv(t, smtptest.Options{})
	ch := e.channel(e.config(), nil, nil)
	eng := e.engine("r1", ch)
	e.agent.Ask(ask("q-quiet", `"email:`+alice+`"`, ""))
	e.waitMails(1)
	answer(t, eng, "q-quiet", 0, alice, "Production")
	ref, end := e.ended("q-quiet")
	if err := ch.Finish(context.Background(), ref, end); err != nil {
		t.Fatal(err)
	}
	end.Question.Request.NotifyEnd = true
	reminder := ref
	reminder.Part = engine.ReminderPart(1)
	if err := ch.Finish(context.Background(), reminder, end); err != nil {
		t.Fatal(err)
	}
	if n := e.mail.MailCount(); n != 1 {
		t.Fatalf("%d emails begun, want the prompt alone", n)
	}
}

// TestReminder: a reminder is one short email with the same link, in
// reply to the prompt; the same reminder again sends nothing more.
func TestReminder(t *testing.T) {
	e := newEnv(t, smtptest.Options{})
	ch := e.channel(e.config(), nil, nil)
	e.engine("r1", ch)
	e.agent.Ask(ask("q-remind", `"email:`+alice+`"`, `"remindEverySeconds":60`))
	prompt := parse(t, e.waitMails(1)[0].Raw)
	e.clock.Advance(61 * time.Second)
	r := parse(t, e.waitMails(2)[1].Raw)
	promptID := prompt.Header.Get("Message-Id")
	if r.Header.Get("In-Reply-To") != promptID || r.Link != prompt.Link || !strings.HasPrefix(r.Header.Get("Subject"), "Reminder: Deploy:") {
		t.Fatalf("reminder headers %v, link %q (prompt's %q)", r.Header, r.Link, prompt.Link)
	}
	text, _, _ := strings.Cut(r.Text, "\n")
	if !strings.HasPrefix(text, "Still waiting for your answer") {
		t.Fatalf("reminder text %q", text)
	}
	var refs []engine.MessageRef
	e.eventually("the reminder recorded", func() bool {
		var err error
		refs, err = e.store.Messages(context.Background(), "q-remind")
		return err == nil && len(refs) == 2
	})
	var promptRef, reminderRef engine.MessageRef
	for _, ref := range refs {
		if ref.IsPrompt() {
			promptRef = ref
		} else {
			reminderRef = ref
		}
	}
	// A replica that sent the reminder and died before recording it: the
	// timer fires again on another, with other words ("11 min left"); the
	// reminder is the place's first still, so nothing is sent.
	again := e.channel(e.config(), nil, func(d *Deps) { d.Questions = unrecorded{Questions: e.store} })
	got, err := again.Remind(context.Background(), promptRef, "Still waiting for your answer: 11 min left.")
	if err != nil {
		t.Fatal(err)
	}
	if got.Message != strings.Trim(r.Header.Get("Message-Id"), "<>") || got.Message != reminderRef.Message {
		t.Fatalf("Remind again: %+v, recorded %+v", got, reminderRef)
	}
	if n := len(e.mail.Received()); n != 2 {
		t.Fatalf("%d emails, want the prompt and one reminder", n)
	}
	// The next reminder is a new email.
	next, err := ch.Remind(context.Background(), promptRef, text)
	if err != nil {
		t.Fatal(err)
	}
	if next.Message == reminderRef.Message || len(e.mail.Received()) != 3 {
		t.Fatalf("the second reminder %+v (first %+v), %d emails", next, reminderRef, len(e.mail.Received()))
	}
}

// unrecorded is the store as it stands when a replica died between
// sending a reminder and recording it: no reminder is recorded.
type unrecorded struct{ Questions }

func (u unrecorded) Messages(ctx context.Context, id string) ([]engine.MessageRef, error) {
	refs, err := u.Questions.Messages(ctx, id)
	return slices.DeleteFunc(refs, engine.MessageRef.IsReminder), err
}
