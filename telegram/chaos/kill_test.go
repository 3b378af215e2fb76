package chaos

import (
	"testing"
	"time"
)

// TestKillReplicasDuringBurst SIGKILLs one of three replicas every two
// seconds, the poller every other time, and starts it again, while 150
// questions arrive over about eight seconds and are tapped as they appear.
// Every question ends exactly once with the person's answer, each prompt
// is posted once, every tap is answered once, and no prompt keeps live
// buttons.
func TestKillReplicasDuringBurst(t *testing.T) {
	const questions = 150
	e := newEnv(t, envOpts{chats: 30})
	names := []string{"a", "b", "c"}
	for _, n := range names {
		e.start(n)
	}
	e.waitPoller("")
	people := e.people()

	k := e.killEvery(2*time.Second, func(kills int) string {
		if kills%2 == 0 {
			if name, _ := e.byProcName(e.poller()); name != "" {
				return name
			}
		}
		return names[kills%len(names)]
	})

	asked := time.Now()
	// About eight seconds in all, so the kills land in the burst.
	pace(8*time.Second, questions, func(i int) { e.ask(i, e.chatOf(i), 600) })
	// One more kill after the last question came, then the replicas are
	// left alone to finish.
	more := int(k.kills.Load()) + 1
	e.eventually(10*time.Second, "one more kill", func() bool { return int(k.kills.Load()) >= more })
	kills := k.halt()
	// Seconds after the last kill every question has ended; a question a
	// killed replica was delivering must not wait out a long lease.
	e.ended(seq(questions), 45*time.Second)
	t.Logf("%d questions ended in %s, %d kills", questions, time.Since(asked).Round(time.Millisecond), kills)
	if kills < 3 {
		t.Errorf("only %d kills during the burst: the test did not exercise them", kills)
	}
	e.noLiveButtons(30 * time.Second)
	people.halt()
	e.stopAll()

	for i := range questions {
		e.answered(i)
	}
	// At most one prompt posted again per kill (see shownAtMost).
	e.shownAtMost(seq(questions), kills)
	if un := people.unanswered(); len(un) > 0 {
		t.Errorf("%d taps never answered: %v", len(un), head(un, 10))
	}
	st := e.fake.Stats()
	taps, retried := people.taps()
	t.Logf("taps %d (%d after try again), fake %+v", taps, retried, st)
	// A poller killed after answering a tap and before settling its update
	// leaves a claim that lapses; the next poller handles the update again
	// (the engine's end is first-writer-wins, so the result is unchanged)
	// and its second answer is refused by Telegram. The poller handles one
	// update at a time: at most one such tap per kill.
	if st.AnswerRefused > kills {
		t.Errorf("%d callback queries answered twice in %d kills: a tap was handled twice without a kill between", st.AnswerRefused, kills)
	}
	if st.Answered+st.AnswerRefused < taps || st.Answered > taps {
		t.Errorf("%d callback queries answered, %d taps", st.Answered, taps)
	}
}
