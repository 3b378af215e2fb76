package email

import (
	"context"
	"crypto/x509"
	"errors"
	"github.com/askbridge/askbridge/internal/smtptest"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
)

// delivery is a delivery of question id to alice at place 0 whose Sent
// keeps what it is handed and answers more.
func delivery(id string, got *[]engine.MessageRef, more bool) engine.Delivery {
	req, err := askbridge.DecodeRequest([]byte(ask(id, `"email:`+alice+`"`, "")))
	if err != nil {
		panic(err)
	}
	return engine.Delivery{
		Chat: alice, Until: time.Now().Add(time.Hour), Plan: engine.BuildPlan(id, req, engine.Capabilities{}),
		Sent: func(ref engine.MessageRef) bool { *got = append(*got, ref); return more },
	}
}

// TestDeferredThenSent: a 451 to RCPT, then to the final dot, is retried
// by the engine and the email is then sent, once.
func TestDeferredThenSent(t *testing.T) {
	for _, f := range []smtptest.Faults{{Rcpt451: 2}, {Data451: 1}} {
		e := newEnv(t, smtptest.Options{})
		e.mail.SetFaults(f)
		m := &counter{}
		e.engine("r1", e.channel(e.config(), m, nil))
		e.agent.Ask(ask("q-451", `"email:`+alice+`"`, ""))
		e.waitMails(1)
		e.eventually("the delivery recorded", func() bool {
			refs, err := e.store.Messages(context.Background(), "q-451")
			return err == nil && len(refs) == 1
		})
		if n := len(e.mail.Received()); n != 1 || m.get(ResultDeferred) != f.Rcpt451+f.Data451 || m.get(ResultSent) != 1 {
			t.Fatalf("faults %+v: %d emails, metrics %v", f, n, m.n)
		}
	}
}

// TestDroppedMidData: a connection reset after DATA, before the final dot
// went out, is not a send: the mark is taken back, the engine retries,
// and exactly one email arrives.
func TestDroppedMidData(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out the engine's backoff")
	}
	e := newEnv(t, smtptest.Options{})
	e.mail.SetFaults(smtptest.Faults{Drop: 1})
	m := &counter{}
	e.engine("r1", e.channel(e.config(), m, nil))
	e.agent.Ask(ask("q-drop", `"email:`+alice+`"`, ""))
	e.waitMails(1)
	e.eventually("the delivery recorded", func() bool {
		refs, err := e.store.Messages(context.Background(), "q-drop")
		return err == nil && len(refs) == 1
	})
	if n := len(e.mail.Received()); n != 1 || m.get(ResultFailed) != 1 || m.get(ResultSent) != 1 {
		t.Fatalf("%d emails, metrics %v", n, m.n)
	}
}

// TestReplicaDiedAfterSend: a replica whose email was accepted but never
// recorded (Sent reports the record lost) leaves the mark; another
// replica that sends the same delivery again sends nothing and hands
// over the same message.
func TestReplicaDiedAfterSend(t *testing.T) {
	e := newEnv(t, smtptest.Options{})
	var first, second []engine.MessageRef
	dead := e.channel(e.config(), nil, nil)
	if err := dead.Send(context.Background(), delivery("q-dead", &first, false)); err != nil {
		t.Fatal(err)
	}
	m := &counter{}
	heir := e.channel(e.config(), m, nil)
	if err := heir.Send(context.Background(), delivery("q-dead", &second, true)); err != nil {
		t.Fatal(err)
	}
	if len(first) != 1 || len(second) != 1 || first[0] != second[0] {
		t.Fatalf("refs %v then %v", first, second)
	}
	if want := messageID("q-dead", 0, "prompt", "bridge.example"); second[0].Message != want || second[0].Chat != alice || second[0].Platform != Platform {
		t.Fatalf("ref %+v", second[0])
	}
	if n := len(e.mail.Received()); n != 1 || m.get(ResultResumed) != 1 {
		t.Fatalf("%d emails, metrics %v", n, m.n)
	}
	if err := heir.Send(context.Background(), engine.Delivery{Chat: alice, From: 1, Sent: func(engine.MessageRef) bool { t.Fatal("part 1 posted"); return false }}); err != nil {
		t.Fatal(err)
	}
}

// racingMarks is the store, with another send of the same email marking
// it between this send's look and its own mark.
type racingMarks struct {
	Marks
	other string
}

func (r racingMarks) MarkSend(ctx context.Context, id, name, value string, ttl time.Duration) (string, bool, error) {
	if _, _, err := r.Marks.MarkSend(ctx, id, name, r.other, ttl); err != nil {
		return "", false, err
	}
	return r.Marks.MarkSend(ctx, id, name, value, ttl)
}

// TestMarkLost: a send that finds the mark taken when it is about to
// commit ends the transaction without the final dot (the server takes
// nothing) and hands over the message the mark holds.
func TestMarkLost(t *testing.T) {
	e := newEnv(t, smtptest.Options{})
	m := &counter{}
	ch := e.channel(e.config(), m, func(d *Deps) { d.Marks = racingMarks{Marks: e.store, other: "other@bridge.example try-b"} })
	var got []engine.MessageRef
	if err := ch.Send(context.Background(), delivery("q-lost", &got, true)); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Message != "other@bridge.example" {
		t.Fatalf("refs %v", got)
	}
	e.eventually("the connection closed", func() bool { return e.mail.ClosedCount() == 1 })
	if n, dots := len(e.mail.Received()), e.mail.DotCount(); n != 0 || dots != 0 {
		t.Fatalf("%d emails accepted, %d dots", n, dots)
	}
	if m.get(ResultResumed) != 1 || m.get(ResultSent) != 0 {
		t.Fatalf("metrics %v", m.n)
	}
}

// TestReplyLost: the server's reply to the final dot never comes in
// time: the email may have been sent, so it counts as sent, its mark is
// kept, and no replica sends it again.
func TestReplyLost(t *testing.T) {
	e := newEnv(t, smtptest.Options{})
	e.mail.SetFaults(smtptest.Faults{DotDelay: 1500 * time.Millisecond})
	cfg := e.config()
	cfg.SendTimeout = 700 * time.Millisecond
	m := &counter{}
	ch := e.channel(cfg, m, nil)
	var got []engine.MessageRef
	if err := ch.Send(context.Background(), delivery("q-lost-reply", &got, true)); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || m.get(ResultUnconfirmed) != 1 {
		t.Fatalf("refs %v, metrics %v", got, m.n)
	}
	e.waitMails(1)
	e.mail.SetFaults(smtptest.Faults{})
	var again []engine.MessageRef
	if err := e.channel(e.config(), nil, nil).Send(context.Background(), delivery("q-lost-reply", &again, true)); err != nil {
		t.Fatal(err)
	}
	if len(again) != 1 || again[0] != got[0] || len(e.mail.Received()) != 1 {
		t.Fatalf("refs %v then %v, %d emails", got, again, len(e.mail.Received()))
	}
}

// TestBadCredentials: a refused login is permanent, in the server's
// words, and the channel's state says so.
func TestBadCredentials(t *testing.T) {
	e := newEnv(t, smtptest.Options{})
	cfg := e.config()
	cfg.Password = "wrong"
	ch := e.channel(cfg, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- ch.Run(ctx, nil) }()
	e.eventually("bad credentials", func() bool { return ch.State() == engine.StateBadCredentials })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var got []engine.MessageRef
	err := ch.Send(context.Background(), delivery("q-creds", &got, true))
	kind, _, reason := engine.Classify(err)
	if kind != engine.Permanent || !strings.Contains(reason, "535 5.7.8 authentication credentials invalid") || len(got) != 0 {
		t.Fatalf("Send: %v (refs %v)", err, got)
	}
}

// TestNoStartTLS: a server that does not offer STARTTLS is refused before
// anything is said in clear text: no login, no email.
func TestNoStartTLS(t *testing.T) {
	e := newEnv(t, smtptest.Options{NoTLS: true})
	ch := e.channel(e.config(), nil, nil)
	var got []engine.MessageRef
	err := ch.Send(context.Background(), delivery("q-clear", &got, true))
	kind, _, reason := engine.Classify(err)
	if kind != engine.Permanent || !strings.Contains(reason, "does not offer STARTTLS") {
		t.Fatalf("Send: %v", err)
	}
	if len(got) != 0 || e.mail.MailCount() != 0 || len(e.mail.Received()) != 0 {
		t.Fatalf("refs %v, %d MAIL commands", got, e.mail.MailCount())
	}
	if _, found, _ := e.store.SendMark(context.Background(), "q-clear", "email:0"); found {
		t.Fatal("a send that never happened is marked")
	}
}

// TestImplicitTLS: smtps:// speaks TLS from the first byte, trusting the
// server through Config.CAFile; Run finds the server and says connected.
func TestImplicitTLS(t *testing.T) {
	e := newEnv(t, smtptest.Options{Implicit: true})
	cfg := e.config()
	cfg.SMTPURL, cfg.CAFile = "smtps://"+e.mail.Addr(), e.mail.CAFile()
	ch := e.channel(cfg, nil, func(d *Deps) { d.Roots = nil })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = ch.Run(ctx, nil) }()
	e.eventually("connected", func() bool { return ch.State() == engine.StateConnected })
	var got []engine.MessageRef
	if err := ch.Send(context.Background(), delivery("q-tls", &got, true)); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || len(e.waitMails(1)) != 1 {
		t.Fatalf("refs %v", got)
	}
}

// TestUntrustedServer: a certificate nobody trusts is a failure to
// connect (temporary), and nothing is sent.
func TestUntrustedServer(t *testing.T) {
	e := newEnv(t, smtptest.Options{})
	ch := e.channel(e.config(), nil, func(d *Deps) { d.Roots = x509.NewCertPool() })
	var got []engine.MessageRef
	err := ch.Send(context.Background(), delivery("q-untrusted", &got, true))
	var se *engine.SendError
	if !errors.As(err, &se) || se.Kind != engine.Temporary || e.mail.MailCount() != 0 {
		t.Fatalf("Send: %v", err)
	}
}

// lostReplyMarks is the store whose reply to MarkSend is lost after the
// mark is set.
type lostReplyMarks struct{ Marks }

func (l lostReplyMarks) MarkSend(ctx context.Context, id, name, value string, ttl time.Duration) (string, bool, error) {
	if _, _, err := l.Marks.MarkSend(ctx, id, name, value, ttl); err != nil {
		return "", false, err
	}
	return "", false, errors.New("redis: connection reset")
}

// TestMarkFailed: a mark the store cannot confirm stops the send before
// its final dot, and the mark, if it was set, is taken back, so the
// engine's next try sends the email.
func TestMarkFailed(t *testing.T) {
	e := newEnv(t, smtptest.Options{})
	ch := e.channel(e.config(), nil, func(d *Deps) { d.Marks = lostReplyMarks{Marks: e.store} })
	var got []engine.MessageRef
	if err := ch.Send(context.Background(), delivery("q-markfail", &got, true)); err == nil || len(got) != 0 {
		t.Fatalf("Send: %v, refs %v", err, got)
	}
	if _, found, err := e.store.SendMark(context.Background(), "q-markfail", "email:0"); err != nil || found {
		t.Fatalf("mark left: %v %v", found, err)
	}
	e.eventually("the connection closed", func() bool { return e.mail.ClosedCount() == 1 })
	if e.mail.DotCount() != 0 {
		t.Fatal("the final dot was sent")
	}
	if err := e.channel(e.config(), nil, nil).Send(context.Background(), delivery("q-markfail", &got, true)); err != nil || len(got) != 1 {
		t.Fatalf("the next try: %v, refs %v", err, got)
	}
	if n := len(e.waitMails(1)); n != 1 {
		t.Fatalf("%d emails", n)
	}
}
