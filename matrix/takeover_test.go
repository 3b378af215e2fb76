package matrix_test

import (
	"fmt"
	"testing"
	"time"

	"maunium.net/go/mautrix/event"

	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/dendritetest"
	"github.com/askbridge/askbridge/internal/testwait"
)

// TestTakeover: two replicas, one syncer. The syncer is stopped, or
// killed, while votes arrive; the standby takes over within the lease's
// life and every vote is counted once: no result lost, no notice doubled.
func TestTakeover(t *testing.T) {
	for _, crash := range []bool{false, true} {
		name := "stopped"
		if crash {
			name = "killed"
		}
		t.Run(name, func(t *testing.T) { takeover(t, name, crash) })
	}
}

// takeover runs TestTakeover with the syncer stopped, or killed (its lease
// kept until it expires).
func takeover(t *testing.T, name string, crash bool) {
	// A homeserver of its own: after the other case's replicas, the
	// shared one's SQLite has answered this setup's room creation with
	// 500s for seconds on a loaded CI machine.
	dendritetest.SkipShort(t)
	e := newEnvOn(t, dendritetest.Start(t), "takeover-"+name)
	r1, r2 := e.start("r1"), e.start("r2")
	var holder, standby *replica
	testwait.For(t, 10*time.Second, "one syncer and one standby", func() bool {
		s1, s2 := r1.ch.State(), r2.ch.State()
		switch {
		case s1 == engine.StateConnected && s2 == engine.StateStandby:
			holder, standby = r1, r2
		case s2 == engine.StateConnected && s1 == engine.StateStandby:
			holder, standby = r2, r1
		default:
			return false
		}
		return true
	})
	const n = 4
	var ids []string
	var polls []*event.Event
	for i := range n {
		ids = append(ids, e.ask(fmt.Sprintf("qtake%02d", i), "", pollQuestions))
		polls = append(polls, e.next(ofType("org.matrix.msc3381.poll.start")))
	}
	e.vote(e.alice, polls[0].ID, answers(polls[0])[1])
	if crash {
		holder.ch.Crash()
	}
	go holder.stop() // stopped while the votes below arrive
	for i := 1; i < n; i++ {
		e.vote(e.alice, polls[i].ID, answers(polls[i])[1])
	}
	for i, qid := range ids {
		if res := e.Result(qid, 30*time.Second); !answered(res, "target", "Production") {
			t.Errorf("question %d: %+v, want Production", i, res)
		}
	}
	// The standby took the lease over (LeaseTTL 1.5 s + RenewEvery 0.3 s
	// after the holder's last renewal); how fast is not a unit test's to
	// judge on a shared machine.
	testwait.For(t, 10*time.Second, "the standby syncing", func() bool { return standby.ch.State() == engine.StateConnected })
	e.NoResult(ids...)
	recorded := map[string]int{}
	for _, ev := range e.botEvents(e.marker()) {
		rel, _ := ev.Content.Raw["m.relates_to"].(map[string]any)
		if ev.Content.Raw["body"] == en(engine.NoticeRecorded) {
			recorded[fmt.Sprint(rel["event_id"])]++
		}
	}
	for i, p := range polls {
		if recorded[p.ID.String()] > 1 {
			t.Errorf("poll %d: the vote was recorded %d times", i, recorded[p.ID.String()])
		}
	}
}
