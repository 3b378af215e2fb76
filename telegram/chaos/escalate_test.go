package chaos

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/internal/testwait"
)

// TestEscalationStepSurvivesKill: the replica firing an escalation step
// is SIGKILLed after it decided to post the step and before the post
// reached Telegram. The other replica fires the step once the dead one's
// hold lapses: the step's prompt is posted exactly once, its event
// published once, and an answer there ends the question everywhere.
func TestEscalationStepSurvivesKill(t *testing.T) {
	e := newEnv(t, envOpts{chats: 2})
	e.start("a")
	e.start("b")
	e.waitPoller("")
	first, lead := e.chats[0], e.chats[1]
	held, release := e.front.Hold(strconv.FormatInt(lead, 10))
	defer release()

	id := e.agent().Ask(t, fmt.Sprintf(`{"id":"esc-kill","to":"telegram:%d","timeoutSeconds":120,
		"escalate":[{"afterSeconds":2,"to":"telegram:%d"}],
		"questions":[{"id":"pick","header":"Pick","question":"Question 0?","options":[{"label":"Left"},{"label":"Right"}]}]}`, first, lead))
	var firer string
	select {
	case firer = <-held:
	case <-time.After(20 * time.Second):
		t.Fatal("the escalation step was never posted")
	}
	name, p := e.byProcName(firer)
	if p == nil {
		t.Fatalf("no replica %q", firer)
	}
	p.kill()
	// Gone, and its held call with it: the front drops a call whose
	// caller went away.
	e.eventually(10*time.Second, "the killed replica's held call dropped", func() bool { return e.front.Dropped() > 0 })
	release()
	t.Logf("killed %s (%s) as it posted the step", name, firer)

	e.eventually(30*time.Second, "the step posted in the lead's chat", func() bool {
		return len(e.fake.BotMessages(lead)) > 0
	})
	// Sleep: no second post must come, and nothing reports one that will
	// not: real time for a wrong one to, past the dead replica's hold.
	time.Sleep(3 * time.Second)
	if n := len(e.fake.BotMessages(lead)); n != 1 {
		t.Fatalf("the step was posted %d times in the lead's chat", n)
	}
	if n := len(e.fake.BotMessages(first)); n != 1 {
		t.Fatalf("the prompt was posted %d times in the first chat", n)
	}
	step := e.fake.BotMessages(lead)[0]
	e.eventually(10*time.Second, "the step recorded", func() bool { return e.recorded(step) })
	if q := e.tap(step, "Right"); e.notice(q, 10*time.Second).Text == "" {
		t.Fatal("the tap in the lead's chat was not answered")
	}
	var res askbridge.Result
	var err error
	testwait.Until(10*time.Second, func() bool { _, res, err = e.results(id); return err != nil || res.Status != "" })
	if err != nil || res.Status != "answered" || res.Place != fmt.Sprintf("telegram:%d", lead) {
		t.Fatalf("result %+v (%v): want answered in the lead's chat", res, err)
	}
	e.noLiveButtons(20 * time.Second)
	evs, _, err := e.check.Events(t.Context(), "0", 1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	escalated := 0
	for _, ev := range evs {
		if ev.ID == id && ev.Kind == "escalated" {
			escalated++
		}
	}
	if escalated != 1 {
		t.Errorf("%d escalated events, want 1", escalated)
	}
}
