package chaos

import (
	"testing"
	"time"
)

// TestTelegramFailingCalls fails 30% of all Bot API calls with 502 Bad
// Gateway for ten seconds, from the start of a burst of 150 questions
// tapped as they appear: every question ends exactly once with the
// person's answer, each prompt is posted once, and no buttons stay live.
func TestTelegramFailingCalls(t *testing.T) {
	const questions = 150
	e := newEnv(t, envOpts{chats: 30, sendBudget: time.Minute})
	e.start("a")
	e.start("b")
	e.start("c")
	e.waitPoller("")
	people := e.people()

	// The platform fails for ten seconds, longer than the retries; the
	// questions come over the first five.
	over := e.front.FailFor(0.3, 10*time.Second)
	failing := time.Now()
	pace(5*time.Second, questions, func(i int) { e.ask(i, e.chatOf(i), 600) })
	<-over
	calls, failed := e.front.Counts()
	t.Logf("%d of %d Bot API calls failed with 502 in %s", failed, calls, time.Since(failing).Round(time.Millisecond))
	if failed == 0 {
		t.Fatal("no call failed: the test did not exercise the failures")
	}

	e.ended(seq(questions), 60*time.Second)
	e.noLiveButtons(30 * time.Second)
	people.halt()
	e.stopAll()
	for i := range questions {
		e.answered(i)
	}
	e.shownOnce(seq(questions))
	taps, retried := people.taps()
	st := e.fake.Stats()
	t.Logf("taps %d (%d after try again), fake %+v", taps, retried, st)
	if st.AnswerRefused != 0 {
		t.Errorf("%d callback queries answered twice: a tap was handled twice", st.AnswerRefused)
	}
}
