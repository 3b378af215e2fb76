package matrix_test

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix/event"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/dendritetest"
	"github.com/askbridge/askbridge/locale"
)

func en(n engine.Notice) string { return n.Text(locale.Default) }

func TestPollAnsweredByVote(t *testing.T) {
	e := newEnv(t, "vote")
	if err := e.alice.SetDisplayName(context.Background(), "Alice <A>"); err != nil {
		t.Fatal(err)
	}
	e.syncing(e.start("r1"))
	qid := e.ask("qvote01", "", pollQuestions)
	poll := e.next(ofType("org.matrix.msc3381.poll.start"))
	stablePoll(t, poll)
	e.vote(e.alice, poll.ID, answers(poll)[1])
	res := e.Result(qid, 20*time.Second)
	if by := res.AnsweredBy; !answered(res, "target", "Production") || by == nil || by.ID != e.alice.UserID.String() || by.Name != "Alice <A>" {
		t.Fatalf("result %+v (by %+v), want Production by alice, with her display name", res, by)
	}
	ended := e.next(ofType("org.matrix.msc3381.poll.end"))
	if rel, _ := ended.Content.Raw["m.relates_to"].(map[string]any); rel["event_id"] != poll.ID.String() {
		t.Errorf("poll end relates to %v, want the poll", rel)
	}
	if _, ok := ended.Content.Raw["m.poll.end"]; !ok || ended.Content.Raw["m.text"] != ended.Content.Raw["org.matrix.msc1767.text"] {
		t.Errorf("poll end as relayed %v, want m.poll.end and m.text beside the unstable keys", ended.Content.Raw)
	}
}

// stablePoll checks that poll, as the homeserver relayed it, carries its
// poll block and text under the stable keys too, equal to the unstable.
func stablePoll(t *testing.T, poll *event.Event) {
	t.Helper()
	raw := poll.Content.Raw
	if raw["org.matrix.msc3381.poll.start"] == nil || !reflect.DeepEqual(raw["m.poll.start"], raw["org.matrix.msc3381.poll.start"]) {
		t.Errorf("relayed poll blocks %v and %v, want both, equal", raw["org.matrix.msc3381.poll.start"], raw["m.poll.start"])
	}
	if text, _ := raw["m.text"].(string); text == "" || text != raw["org.matrix.msc1767.text"] {
		t.Errorf("relayed poll text %q, want it equal to %q", raw["m.text"], raw["org.matrix.msc1767.text"])
	}
}

// TestStableVote: a vote in the stable form (m.poll.response) answers a
// poll as the unstable one does.
func TestStableVote(t *testing.T) {
	e := newEnv(t, "stablevote")
	e.syncing(e.start("r1"))
	qid := e.ask("qstable1", "", pollQuestions)
	poll := e.next(ofType("org.matrix.msc3381.poll.start"))
	dendritetest.Send(t, e.bob, e.room, event.Type{Type: "m.poll.response", Class: event.MessageEventType}, map[string]any{
		"m.relates_to":    map[string]any{"rel_type": "m.reference", "event_id": poll.ID},
		"m.poll.response": map[string]any{"answers": []string{answers(poll)[0]}},
	})
	if res := e.Result(qid, 20*time.Second); !answered(res, "target", "Staging") {
		t.Fatalf("result %+v, want bob's Staging by a stable vote", res)
	}
}

func TestTextAnsweredByReplies(t *testing.T) {
	e := newEnv(t, "replies")
	e.syncing(e.start("r1"))
	tests := []struct {
		name, id, questions, text string
		thread                    bool
		check                     func(askbridge.Result) bool
	}{
		{"multi by numbers", "qtext01", multiQuestions, "1, 3", false, func(r askbridge.Result) bool { return answered(r, "checks", "Unit", "Lint") }},
		{"multi by label in a thread", "qtext02", multiQuestions, "load", true, func(r askbridge.Result) bool { return answered(r, "checks", "Load") }},
		{"two questions", "qtext03", twoQuestions, "1: 2\n2: Tonight", true, func(r askbridge.Result) bool {
			return answered(r, "target", "Production") && answered(r, "window", "Tonight")
		}},
		{"free text", "qtext04", multiQuestions, "only the quick ones", false, func(r askbridge.Result) bool {
			return r.Outcome() == askbridge.OutcomeAnswered && strings.Contains(strings.Join(r.Answers.Answers["checks"], ""), "only the quick ones")
		}},
		{"skip", "qtext05", multiQuestions, "skip", true, func(r askbridge.Result) bool { return r.Outcome() == askbridge.OutcomeSkipped }},
	}
	for _, tc := range tests {
		qid := e.ask(tc.id, "", tc.questions)
		prompt := e.next(ofType("m.room.message"))
		e.reply(e.alice, prompt.ID, tc.text, tc.thread)
		if res := e.Result(qid, 20*time.Second); !tc.check(res) {
			t.Errorf("%s: result %+v", tc.name, res)
		}
		edit := e.next(func(ev *event.Event) bool {
			rel, _ := ev.Content.Raw["m.relates_to"].(map[string]any)
			return rel["rel_type"] == "m.replace" && rel["event_id"] == prompt.ID.String()
		})
		if body, _ := edit.Content.Raw["m.new_content"].(map[string]any)["body"].(string); strings.Contains(body, "Reply") {
			t.Errorf("%s: the ended prompt still says how to answer: %q", tc.name, body)
		}
	}
}

// TestLateVotes: votes after the question was answered get the "already
// answered" notice, once per person.
func TestLateVotes(t *testing.T) {
	e := newEnv(t, "late")
	e.syncing(e.start("r1"))
	qid := e.ask("qlate01", "", pollQuestions)
	poll := e.next(ofType("org.matrix.msc3381.poll.start"))
	e.vote(e.alice, poll.ID, answers(poll)[0])
	if res := e.Result(qid, 20*time.Second); !answered(res, "target", "Staging") {
		t.Fatalf("result %+v, want alice's Staging", res)
	}
	e.noticeSaying(poll.ID, en(engine.NoticeRecorded))
	e.vote(e.bob, poll.ID, answers(poll)[1])
	e.vote(e.bob, poll.ID, answers(poll)[1])
	e.noticeSaying(poll.ID, en(engine.NoticeAlreadyAnswered))
	var late []string
	for _, ev := range e.botEvents(e.marker()) {
		if ev.Content.Raw["body"] == en(engine.NoticeAlreadyAnswered) {
			late = append(late, ev.Content.Raw["body"].(string))
		}
	}
	if len(late) != 0 {
		t.Errorf("bob's second late vote got notices %q too, want the notice once", late)
	}
}

func TestTimeoutAndCancel(t *testing.T) {
	e := newEnv(t, "ends")
	e.syncing(e.start("r1"))
	qid := e.Ask(`{"id":"qend01","to":"matrix:` + e.room.String() + `","timeoutSeconds":30,"questions":` + pollQuestions + `}`)
	poll := e.next(ofType("org.matrix.msc3381.poll.start"))
	e.clock.Advance(31 * time.Second)
	if res := e.Result(qid, 20*time.Second); res.Outcome() != askbridge.OutcomeExpired {
		t.Fatalf("result %+v, want a timeout", res)
	}
	e.next(ofType("org.matrix.msc3381.poll.end"))
	edit := e.next(ofType("org.matrix.msc3381.poll.start"))
	if rel, _ := edit.Content.Raw["m.relates_to"].(map[string]any); rel["rel_type"] != "m.replace" || rel["event_id"] != poll.ID.String() {
		t.Errorf("after the end %v, want an edit of the poll", rel)
	}
	qid = e.ask("qend02", "", multiQuestions)
	prompt := e.next(ofType("m.room.message"))
	e.Cancel(qid)
	if res := e.Result(qid, 20*time.Second); res.Outcome() != askbridge.OutcomeCancelled {
		t.Fatalf("result %+v, want cancelled", res)
	}
	e.next(func(ev *event.Event) bool {
		rel, _ := ev.Content.Raw["m.relates_to"].(map[string]any)
		return rel["rel_type"] == "m.replace" && rel["event_id"] == prompt.ID.String()
	})
}
