package chaos

import (
	"testing"
	"time"
)

// TestRedisConnectionsCut cuts every connection between the replicas and
// Redis twice during a burst of 150 questions tapped as they appear:
// every question ends exactly once with the person's answer, each prompt
// is posted once, every tap is answered once, and no buttons stay live.
func TestRedisConnectionsCut(t *testing.T) {
	const questions = 150
	e := newEnv(t, envOpts{proxy: true, chats: 30})
	e.start("a")
	e.start("b")
	e.start("c")
	e.waitPoller("")
	people := e.people()

	cuts := 0
	// Questions spread over six seconds, so the cuts land mid-burst.
	pace(6*time.Second, questions, func(i int) {
		e.ask(i, e.chatOf(i), 600)
		if i == questions/3 || i == 2*questions/3 {
			cuts += e.proxy.Cut()
		}
	})
	t.Logf("%d connections cut", cuts)
	if cuts == 0 {
		t.Fatal("no connection was cut: the test did not exercise the cuts")
	}
	e.ended(seq(questions), 60*time.Second)
	e.noLiveButtons(30 * time.Second)
	people.halt()
	e.stopAll()
	for i := range questions {
		e.answered(i)
	}
	e.shownOnce(seq(questions))
	if un := people.unanswered(); len(un) > 0 {
		t.Errorf("%d taps never answered: %v", len(un), head(un, 10))
	}
	taps, retried := people.taps()
	st := e.fake.Stats()
	t.Logf("taps %d (%d after try again), fake %+v", taps, retried, st)
	if st.AnswerRefused != 0 {
		t.Errorf("%d callback queries answered twice: a tap was handled twice", st.AnswerRefused)
	}
}
