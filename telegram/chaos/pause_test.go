package chaos

import (
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/askbridge/askbridge/engine"
)

// TestPausedPollerNeverPollsBeside SIGSTOPs the replica that polls
// Telegram for longer than its poller lease, lets people tap meanwhile,
// and SIGCONTs it. The other replica takes the polling over and handles
// the taps; the paused one, resumed, never polls beside it (no getUpdates
// of it after the other's first), and no update is handled twice (each
// tap answered once, each question ended once).
func TestPausedPollerNeverPollsBeside(t *testing.T) {
	const questions = 12
	e := newEnv(t, envOpts{chats: questions})
	e.start("a")
	e.start("b")
	first := e.waitPoller("")
	_, paused := e.byProcName(first)
	for i := range questions {
		e.ask(i, e.chatOf(i), 600)
	}
	var queries []string
	tap := func(i int) {
		queries = append(queries, e.tap(e.prompt(i), choice(i)))
	}
	// Before the pause.
	for i := range 4 {
		tap(i)
	}
	e.ended(seq(4), 10*time.Second)
	// Paused while it waits in its long poll: once the getUpdates that
	// confirms the four taps has reached Telegram. (Paused between its
	// lease check and sending the next getUpdates, a process sends that
	// request when it resumes: a window of a few instructions no client
	// can close, which a loaded machine widened enough for the pause to
	// land in it now and then.)
	e.eventually(10*time.Second, "the four taps' updates confirmed", func() bool { return e.fake.Pending() == 0 })

	paused.signal(syscall.SIGSTOP)
	pausedAt := time.Now()
	for i := 4; i < 8; i++ {
		tap(i)
	}
	// The other replica takes the lease once it has expired, and handles
	// the taps made meanwhile.
	second := e.waitPoller(first)
	e.ended([]int{4, 5, 6, 7}, 20*time.Second)

	paused.signal(syscall.SIGCONT)
	pause := time.Since(pausedAt)
	// The resumed replica finds its lease gone; taps go on being handled.
	for i := 8; i < questions; i++ {
		tap(i)
	}
	e.ended(seq(questions), 20*time.Second)
	for _, q := range queries {
		if n := e.notice(q, 10*time.Second); n.Text != en(engine.NoticeRecorded) {
			t.Errorf("tap %s told %q", q, n.Text)
		}
	}
	e.noLiveButtons(20 * time.Second)
	e.eventually(20*time.Second, "every update confirmed", func() bool { return e.fake.Pending() == 0 })
	// Read before the replicas stop: the one that stops first hands the
	// lease on.
	polls := e.front.Polls()
	e.stopAll()

	for i := range questions {
		e.answered(i)
	}
	took := slices.Index(polls, second)
	if took < 0 {
		t.Fatalf("%s never polled: %v", second, polls)
	}
	for i, who := range polls[took:] {
		if who != second {
			t.Errorf("getUpdates %d of %d came from %s after %s had taken over", took+i, len(polls), who, second)
		}
	}
	st := e.fake.Stats()
	t.Logf("paused %s, took over %s; fake %+v", first, second, st)
	// One conflict is the paused poller's own getUpdates, left open while
	// it was stopped, which the new poller's supersedes (as Telegram does).
	if st.Conflicts > 1 {
		t.Errorf("%d getUpdates conflicts: two replicas polled at once", st.Conflicts)
	}
	// Every tap is answered once. The one update the paused replica had in
	// hand is handled again by the other only when its claim (20 s) ran out
	// before the paused replica settled it (a slow machine: the handling
	// began before the pause): then its second answer is the one Telegram
	// refuses, and the result is unchanged (reliability.md, 3). No other
	// update is handled twice.
	if st.Answered != questions {
		t.Errorf("%d taps answered, want %d", st.Answered, questions)
	}
	if st.AnswerRefused > 1 {
		t.Errorf("%d taps answered again (paused %s): more than the one update the paused replica had in hand", st.AnswerRefused, pause)
	}
}
