package email

import (
	"context"
	"fmt"
	"github.com/askbridge/askbridge/internal/smtptest"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/testwait"
)

// ask is a request to places to (JSON) with extra members (JSON, or "").
func ask(id, to, extra string) string {
	body := fmt.Sprintf(`{"id":%q,"to":%s,"agent":"deploy-bot","timeoutSeconds":600,`+
		`"context":"Release **v2.3** is ready. <script>alert(1)</script> See [the notes](https://example.com/notes?a=1&b=2).",`+
		`"questions":[{"id":"target","header":"Deploy","question":"Where should v2.3 go?","options":[`+
		`{"label":"Staging (Recommended)","description":"Try it first"},{"label":"Production","description":"Customers see it at once"}]}]`, id, to)
	if extra != "" {
		body += "," + extra
	}
	return body + "}"
}

// answer answers question id at place k as the person of address.
func answer(t *testing.T, eng *engine.Engine, id string, k int, address, label string) engine.Submitted {
	t.Helper()
	s, err := eng.Submit(context.Background(), id, engine.Answer{
		By: askbridge.Person{Platform: Platform, ID: address}, Via: askbridge.ViaLink, Place: k,
		Values: map[string][]string{"target": {label}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestPromptEmail: a question to an address is one email with a text and
// an HTML part, the headers of a machine's email, the context escaped and
// sanitised, the options, and a link that names the question, the place
// and the person; an answer through the link ends the question.
func TestPromptEmail(t *testing.T) {
	e := newEnv(t, smtptest.Options{})
	m := &counter{}
	eng := e.engine("r1", e.channel(e.config(), m, nil))
	e.agent.Ask(ask("q-prompt", `"email:`+alice+`"`, ""))
	mails := e.waitMails(1)
	if got := mails[0]; got.From != "ask@bridge.example" || len(got.To) != 1 || got.To[0] != alice {
		t.Fatalf("envelope %s → %v", got.From, got.To)
	}
	helo := e.mail.Helo()
	if helo != "bridge.example" {
		t.Errorf("EHLO %q, want the sender's domain", helo)
	}
	p := parse(t, mails[0].Raw)
	h := p.Header
	checks := map[string]string{
		"From": `"Ask Bridge" <ask@bridge.example>`, "To": "<" + alice + ">",
		"Subject": "Deploy: Where should v2.3 go?", "Auto-Submitted": "auto-generated",
		"X-Auto-Response-Suppress": "All", "Message-Id": "<" + messageID("q-prompt", 0, "prompt", "bridge.example") + ">",
	}
	for k, want := range checks {
		if got := h.Get(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
	if _, err := h.Date(); err != nil {
		t.Errorf("Date: %v", err)
	}
	for _, want := range []string{"Question from deploy-bot:", "<script>alert(1)</script>", "the notes (https://example.com/notes?a=1&b=2)",
		"[Deploy] Where should v2.3 go?", "1. Staging (Recommended) — Try it first", "2. Production — Customers see it at once", p.Link} {
		if !strings.Contains(p.Text, want) {
			t.Errorf("text part lacks %q:\n%s", want, p.Text)
		}
	}
	for _, want := range []string{"&lt;script&gt;alert(1)&lt;/script&gt;", `<strong>v2.3</strong>`,
		`<a href="https://example.com/notes?a=1&amp;b=2" rel="noopener noreferrer nofollow" target="_blank">the notes</a>`,
		"<strong>Staging (Recommended)</strong>", ">Answer</a>", `href="` + p.Link + `"`} {
		if !strings.Contains(p.HTML, want) {
			t.Errorf("HTML part lacks %q:\n%s", want, p.HTML)
		}
	}
	if strings.Contains(p.HTML, "<script") || strings.Contains(p.HTML, "<img") || strings.Contains(p.HTML, "src=") {
		t.Errorf("HTML part carries a script or loads something:\n%s", p.HTML)
	}
	c := e.claims(p)
	if c.ID != "q-prompt" || c.Place != 0 || c.Person != (askbridge.Person{Platform: Platform, ID: alice}) {
		t.Fatalf("link claims %+v", c)
	}
	if s := answer(t, eng, "q-prompt", 0, alice, "Production"); !s.Won {
		t.Fatalf("answer: %+v", s)
	}
	res := e.agent.Result("q-prompt", 5*time.Second)
	if res.AnsweredBy == nil || res.AnsweredBy.ID != alice || res.Answers == nil || res.Answers.Answers["target"][0] != "Production" {
		t.Fatalf("result %+v", res)
	}
	if m.get(ResultSent) != 1 {
		t.Errorf("metrics %v", m.n)
	}
}

// TestRefusedAddress: an address the server refuses ends a question with
// that one place undeliverable, with the server's words.
func TestRefusedAddress(t *testing.T) {
	e := newEnv(t, smtptest.Options{})
	e.mail.SetFaults(smtptest.Faults{Refuse: map[string]bool{alice: true}})
	e.engine("r1", e.channel(e.config(), nil, nil))
	e.agent.Ask(ask("q-refused", `"email:`+alice+`"`, ""))
	res := e.agent.Result("q-refused", 10*time.Second)
	if res.Reason != askbridge.ReasonUndeliverable || !strings.Contains(res.Error, "the mail server refused "+alice+": 550 5.1.1 no such user here") {
		t.Fatalf("result %+v", res)
	}
	if n := len(e.mail.Received()); n != 0 {
		t.Fatalf("%d emails accepted", n)
	}
}

// TestRefusedOneOfTwo: with two addresses, the refused one alone is
// undeliverable; the other gets its email and answers.
func TestRefusedOneOfTwo(t *testing.T) {
	e := newEnv(t, smtptest.Options{})
	e.mail.SetFaults(smtptest.Faults{Refuse: map[string]bool{bob: true}})
	eng := e.engine("r1", e.channel(e.config(), nil, nil))
	e.agent.Ask(ask("q-two", `["email:`+alice+`","email:`+bob+`"]`, ""))
	mails := e.waitMails(1)
	if mails[0].To[0] != alice {
		t.Fatalf("sent to %v", mails[0].To)
	}
	var ev askbridge.Event
	e.eventually("bob's place undeliverable", func() bool {
		evs, _, err := e.store.Events(context.Background(), "0", 1000, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range evs {
			if x.ID == "q-two" && x.Kind == askbridge.EventUndeliverable {
				ev = x
				return true
			}
		}
		return false
	})
	if ev.Chat != bob || !strings.Contains(ev.Error, "550 5.1.1 no such user here") {
		t.Fatalf("event %+v", ev)
	}
	e.agent.NoResult("q-two")
	if s := answer(t, eng, "q-two", 0, alice, "Staging (Recommended)"); !s.Won {
		t.Fatalf("answer %+v", s)
	}
	if res := e.agent.Result("q-two", 5*time.Second); res.AnsweredBy == nil || res.AnsweredBy.ID != alice {
		t.Fatalf("result %+v", res)
	}
}

// TestFirstAnswerWins: two addresses, two emails; the first answer wins
// and the other is told it was already answered.
func TestFirstAnswerWins(t *testing.T) {
	e := newEnv(t, smtptest.Options{})
	eng := e.engine("r1", e.channel(e.config(), nil, nil))
	e.agent.Ask(ask("q-race", `["email:`+alice+`","email:`+bob+`"]`, ""))
	mails := e.waitMails(2)
	places := map[string]int{}
	for _, m := range mails {
		c := e.claims(parse(t, m.Raw))
		places[c.Person.ID] = c.Place
	}
	if s := answer(t, eng, "q-race", places[bob], bob, "Production"); !s.Won {
		t.Fatalf("bob: %+v", s)
	}
	if s := answer(t, eng, "q-race", places[alice], alice, "Staging (Recommended)"); s.Won || s.Notice != engine.NoticeAlreadyAnswered {
		t.Fatalf("alice after bob: %+v", s)
	}
	if res := e.agent.Result("q-race", 5*time.Second); res.AnsweredBy == nil || res.AnsweredBy.ID != bob {
		t.Fatalf("result %+v", res)
	}
}

// TestEscalationToEmail: an escalation step to an address sends it its
// email when the step is due.
func TestEscalationToEmail(t *testing.T) {
	e := newEnv(t, smtptest.Options{})
	e.engine("r1", e.channel(e.config(), nil, nil))
	e.agent.Ask(ask("q-esc", `"email:`+alice+`"`, `"escalate":[{"afterSeconds":120,"to":"email:`+bob+`"}]`))
	e.waitMails(1)
	e.clock.Advance(121 * time.Second)
	mails := e.waitMails(2)
	p := parse(t, mails[1].Raw)
	if c := e.claims(p); mails[1].To[0] != bob || c.Person.ID != bob || c.Place != 1 {
		t.Fatalf("escalation email to %v, claims %+v", mails[1].To, c)
	}
	if !strings.Contains(p.Text, "No answer after 2 min") {
		t.Errorf("the escalation email does not say why:\n%s", p.Text)
	}
}

func (e *env) eventually(what string, cond func() bool) {
	e.t.Helper()
	testwait.For(e.t, 10*time.Second, what, cond)
}
