package chaos

import (
	"syscall"
	"testing"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
)

// TestRedisRestartKeepsQuestions crashes Redis (SIGKILL; AOF on, fsync on
// every write) with questions pending and starts it again from its
// append-only file: taps after the restart answer the questions asked
// before it, a question asked after it is shown and answered, and a
// deadline set before it still fires (the replicas' clocks are moved past
// it, as time would).
func TestRedisRestartKeepsQuestions(t *testing.T) {
	const pending = 10
	srv, err := startAOF(t.TempDir())
	if err != nil {
		t.Fatalf("the chaos suite needs redis-server on the PATH: %v", err)
	}
	t.Cleanup(srv.Close)
	e := newEnv(t, envOpts{redis: srv.Addr, chats: 5})
	a, b := e.start("a"), e.start("b")
	e.waitPoller("")

	// Questions 0..9 wait for a tap; question 10 waits for its deadline.
	short := pending
	for i := range pending {
		e.ask(i, e.chatOf(i), 600)
	}
	e.ask(short, e.chatOf(short), askbridge.MinTimeout)
	for i := range pending + 1 {
		e.prompt(i)
	}
	// Two are answered before the crash.
	for i := range 2 {
		if n := e.notice(e.tap(e.prompt(i), choice(i)), 10*time.Second); n.Text != en(engine.NoticeRecorded) {
			t.Errorf("question %d before the restart: notice %q", i, n.Text)
		}
	}
	e.ended([]int{0, 1}, 10*time.Second)

	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	if n, err := e.rdb.ZCard(t.Context(), e.prefix+"deadlines").Result(); err != nil || n != pending-2+1 {
		t.Fatalf("after the restart %d questions are pending (%v), want %d", n, err, pending-2+1)
	}

	// Taps after the restart answer the questions asked before it.
	for i := 2; i < pending; i++ {
		if n := e.notice(e.tap(e.prompt(i), choice(i)), 20*time.Second); n.Text != en(engine.NoticeRecorded) {
			t.Errorf("question %d after the restart: notice %q", i, n.Text)
		}
	}
	// A question asked after the restart is shown and answered.
	after := pending + 1
	e.ask(after, e.chatOf(after), 600)
	if n := e.notice(e.tap(e.prompt(after), choice(after)), 20*time.Second); n.Text != en(engine.NoticeRecorded) {
		t.Errorf("question %d asked after the restart: notice %q", after, n.Text)
	}
	e.ended(append(seq(pending), after), 20*time.Second)

	// The deadline set before the restart fires.
	a.signal(syscall.SIGUSR1)
	b.signal(syscall.SIGUSR1)
	e.ended([]int{short}, 20*time.Second)
	e.noLiveButtons(20 * time.Second)
	e.stopAll()

	for i := range pending {
		e.answered(i)
	}
	e.answered(after)
	if c, r, err := e.results(qid(short)); err != nil || c != 1 || r.Status != askbridge.StatusNoAnswer || r.Reason != askbridge.ReasonTimeout {
		t.Errorf("question %d: %d results (%v), first %+v; want one timeout", short, c, err, r)
	}
	e.shownOnce(append(seq(pending+1), after))
	if st := e.fake.Stats(); st.AnswerRefused != 0 {
		t.Errorf("%d callback queries answered twice", st.AnswerRefused)
	}
}
