package engine_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
)

func TestAnswerKey(t *testing.T) {
	t.Parallel()
	same := [][2]map[string][]string{
		{{"q": {"Blue"}}, {"q": {"  blue "}}},
		{{"q": {"Unit", "Load"}}, {"q": {"Load", "Unit"}}},
		{{"a": {"X"}, "b": {"Y"}}, {"b": {"Y"}, "a": {"X"}}},
		{{"q": {"new  york"}}, {"q": {"New York"}}},
		{{"q": {"Unit", "Unit"}}, {"q": {"Unit"}}},
	}
	for _, p := range same {
		if engine.AnswerKey(p[0]) != engine.AnswerKey(p[1]) {
			t.Errorf("%v and %v should agree", p[0], p[1])
		}
	}
	differ := [][2]map[string][]string{
		{{"q": {"Blue"}}, {"q": {"Green"}}},
		{{"q": {"Unit"}}, {"q": {"Unit", "Load"}}},
		{{"a": {"X"}, "b": {"Y"}}, {"a": {"Y"}, "b": {"X"}}},
	}
	for _, p := range differ {
		if engine.AnswerKey(p[0]) == engine.AnswerKey(p[1]) {
			t.Errorf("%v and %v should not agree", p[0], p[1])
		}
	}
}

// quorumAsk is a request for quorum of the people of answerers.
func quorumAsk(id string, quorum int, answerers []string, questions string) string {
	if questions == "" {
		questions = `[{"id":"go","header":"Go","question":"Ship it?","options":[{"label":"Approve"},{"label":"Reject"}]}]`
	}
	var quoted []string
	for _, a := range answerers {
		quoted = append(quoted, fmt.Sprintf("%q", a))
	}
	return fmt.Sprintf(`{"id":%q,"to":"ops","timeoutSeconds":600,"quorum":%d,"answerers":[%s],"questions":%s}`, id, quorum, strings.Join(quoted, ","), questions)
}

func person(id string) askbridge.Person {
	return askbridge.Person{Platform: "telegram", ID: id, Name: strings.ToUpper(id[:1]) + id[1:]}
}

var trio = []string{"telegram:alice", "telegram:bob", "telegram:carol"}

// vote answers question id as who in a text reply to its prompt p.
func vote(h *harness, p sentPrompt, who, text string) engine.ReplyOutcome {
	return h.engine.Reply(context.Background(), engine.TextReply{
		EventID: fmt.Sprint(p.refs[0].Message, "-", who, "-", text), Message: engine.MessageRef{Platform: "telegram", Chat: p.chat, Message: "m-" + who},
		ReplyTo: p.refs[0].Message, Person: person(who), Text: text,
	})
}

// TestQuorumAgreement: two of three agreeing end the question answered
// with every vote; the tally is shown while it is open; the third voter,
// late, is told; a second vote of one person does not count.
func TestQuorumAgreement(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	id := h.ask(quorumAsk("q-agree", 2, trio, ""))
	p := h.waitSent(1)[0]
	if !slices.Contains(p.plan.Notes, "Votes: 0 of 2 needed — Approve 0, Reject 0") {
		t.Fatalf("first post without the tally: %v", p.plan.Notes)
	}
	if r := tap(h, p, 1, person("alice"), "a1"); r.Notice != engine.NoticeVoted || r.Text() != "Vote recorded (1 of 2 needed)." {
		t.Fatalf("alice's vote told %s %q", r.Notice, r.Text())
	}
	if r := tap(h, p, 0, person("alice"), "a2"); r.Notice != engine.NoticeAlreadyVoted {
		t.Fatalf("alice's second vote told %s", r.Notice)
	}
	if r := tap(h, p, 0, askbridge.Person{Platform: "telegram", ID: "dave"}, "d1"); r.Notice != engine.NoticeNotForYou {
		t.Fatalf("dave, not a voter, told %s", r.Notice)
	}
	waitFor(t, "the tally on the prompt", func() bool {
		_, _, up := h.ch.snapshot()
		pl, ok := up[p.refs[0].Message]
		return ok && slices.Contains(pl.Notes, "Votes: 1 of 2 needed — Approve 0, Reject 1")
	})
	if out := vote(h, p, "bob", "reject"); !out.Claimed || out.Respond != "" {
		t.Fatalf("bob's deciding vote: %+v", out)
	}
	res := h.result(id, 2*time.Second)
	if res.Status != askbridge.StatusAnswered || res.Answers.Answers["go"][0] != "Reject" || len(res.Votes) != 2 ||
		res.Votes[0].By.ID != "alice" || res.Votes[1].By.ID != "bob" || res.Votes[1].At == 0 {
		t.Fatalf("result %+v", res)
	}
	if r := tap(h, p, 0, person("carol"), "c1"); r.Notice != engine.NoticeAlreadyAnswered {
		t.Fatalf("carol, late, told %s", r.Notice)
	}
	h.waitStatus(p.refs[0].Message, "Answered: Reject")
	evs := kinds(h.events(id))
	if n := strings.Count(strings.Join(evs, " "), "voted"); n != 2 {
		t.Errorf("%d voted events: %v", n, evs)
	}
}

// TestQuorumImpossible: agreement that can no longer be reached ends the
// question no_quorum at once, with the votes; abstentions count as votes
// that agree with nobody.
func TestQuorumImpossible(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	three := `[{"id":"env","header":"Env","question":"Where?","options":[{"label":"Dev"},{"label":"Staging"},{"label":"Prod"}]}]`
	id := h.ask(quorumAsk("q-split", 2, trio, three))
	p := h.waitSent(1)[0]
	tap(h, p, 0, person("alice"), "a")
	tap(h, p, 1, person("bob"), "b")
	if r := tap(h, p, 2, person("carol"), "c"); r.Notice != engine.NoticeNoQuorum {
		t.Fatalf("carol's vote, which made agreement impossible, told %s", r.Notice)
	}
	res := h.result(id, 2*time.Second)
	if res.Status != askbridge.StatusNoAnswer || res.Reason != askbridge.ReasonNoQuorum || len(res.Votes) != 3 {
		t.Fatalf("three different answers: result %+v", res)
	}
	h.waitStatus(p.refs[0].Message, "No agreement")

	// An abstention and two different answers: no agreement either.
	id = h.ask(quorumAsk("q-abstain", 2, trio, ""))
	p = h.waitSent(2)[1]
	if out := vote(h, p, "alice", "skip"); out.Respond != "Abstention recorded." {
		t.Fatalf("alice's skip: %+v", out)
	}
	if r := tap(h, p, 0, person("bob"), "b2"); r.Notice != engine.NoticeVoted {
		t.Fatalf("bob told %s", r.Notice)
	}
	tap(h, p, 1, person("carol"), "c2")
	res = h.result(id, 2*time.Second)
	if res.Reason != askbridge.ReasonNoQuorum || len(res.Votes) != 3 || !res.Votes[0].Skipped {
		t.Fatalf("abstention: result %+v", res)
	}
}

// TestQuorumFreeTextAndOrder: free text agrees ignoring case and blanks,
// multi-select answers in any order; a 2-of-4 tie is broken by the next
// vote.
func TestQuorumFreeTextAndOrder(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	four := append(slices.Clone(trio), "telegram:dave")
	id := h.ask(quorumAsk("q-free", 2, four, ""))
	p := h.waitSent(1)[0]
	vote(h, p, "alice", "Ship on Friday")
	vote(h, p, "bob", "Approve")
	if out := vote(h, p, "carol", "  ship on  friday "); out.Respond != "" {
		t.Fatalf("carol's agreeing free text: %+v", out)
	}
	res := h.result(id, 2*time.Second)
	if res.Status != askbridge.StatusAnswered || res.Answers.Answers["go"][0] != "Ship on Friday" {
		t.Fatalf("free text: result %+v", res)
	}

	multi := `[{"id":"checks","header":"Checks","question":"Which?","multiSelect":true,"options":[{"label":"Unit"},{"label":"Load"},{"label":"Fuzz"}]}]`
	id = h.ask(quorumAsk("q-multi", 2, four, multi))
	p = h.waitSent(2)[1]
	vote(h, p, "alice", "1, 2")
	vote(h, p, "bob", "3")
	vote(h, p, "carol", "Load, unit")
	res = h.result(id, 2*time.Second)
	if res.Status != askbridge.StatusAnswered || !slices.Equal(res.Answers.Answers["checks"], []string{"Unit", "Load"}) || len(res.Votes) != 3 {
		t.Fatalf("multi-select: result %+v", res)
	}
}

// TestQuorumRefusals: a quorum the answerers cannot reach is refused,
// naming the field.
func TestQuorumRefusals(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	for i, tc := range []struct{ body, want string }{
		{quorumAsk("q-bad-1", 4, trio, ""), "quorum (4) is more than the 3 people allowed to answer"},
		{`{"id":"q-bad-2","to":"ops","quorum":2,"questions":[{"id":"go","header":"Go","question":"Ship?","options":[{"label":"A"},{"label":"B"}]}]}`, "quorum needs the people who may answer"},
		{quorumAsk("q-bad-3", 1, trio, ""), "quorum must be at least 2"},
		{strings.Replace(quorumAsk("q-bad-4", 2, trio, ""), `"quorum":2`, `"quorum":"two"`, 1), "quorum must be an integer"},
	} {
		res := h.result(h.ask(tc.body), 2*time.Second)
		if res.Status != askbridge.StatusError || !strings.Contains(res.Error, tc.want) {
			t.Errorf("case %d: result %q, want %q", i, res.Error, tc.want)
		}
	}
}

// TestQuorumConcurrentVotes: three people vote at the same instant through
// two replicas, 200 times: each question has exactly one outcome, decided
// by the last vote, and every vote is in its votes.
func TestQuorumConcurrentVotes(t *testing.T) {
	t.Parallel()
	const questions = 200
	ch := newFakeChannel("telegram")
	a := newHarness(t, harnessOpts{ch: ch, replica: "a"})
	b := newHarness(t, harnessOpts{ch: ch, replica: "b", prefix: a.prefix})
	three := `[{"id":"env","header":"Env","question":"Where?","options":[{"label":"Dev"},{"label":"Staging"},{"label":"Prod"}]}]`
	ids := make([]string, questions)
	for i := range questions {
		// Even: three of three must agree, and do. Odd: two of three,
		// and all differ. Either way only the last vote decides.
		q := 3
		if i%2 == 1 {
			q = 2
		}
		ids[i] = a.ask(quorumAsk(fmt.Sprint("q-race-", i), q, trio, three))
	}
	sent := a.waitSent(questions)
	byID := map[string]sentPrompt{}
	for _, p := range sent {
		byID[p.plan.ID] = p
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, id := range ids {
		p := byID[id]
		for j, who := range []string{"alice", "bob", "carol"} {
			button := 1
			if i%2 == 1 {
				button = j
			}
			h := []*harness{a, b}[(i+j)%2]
			wg.Go(func() {
				<-start
				tap(h, p, button, person(who), fmt.Sprint(id, who))
			})
		}
	}
	close(start)
	wg.Wait()
	for i, id := range ids {
		res := a.result(id, 5*time.Second)
		if n := a.resultCount(id); n != 0 {
			t.Errorf("%s: %d more results", id, n)
		}
		want := askbridge.StatusAnswered
		if i%2 == 1 {
			want = askbridge.StatusNoAnswer
		}
		var voters []string
		for _, v := range res.Votes {
			voters = append(voters, v.By.ID)
		}
		slices.Sort(voters)
		if res.Status != want || !slices.Equal(voters, []string{"alice", "bob", "carol"}) {
			t.Errorf("%s: %s with votes of %v; want %s with all three", id, res.Status, voters, want)
		}
	}
}
