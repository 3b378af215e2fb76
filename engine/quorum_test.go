package engine_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/enginetest"
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

// gate holds one call at a point until the test releases it: reached is
// closed when the call gets there, release lets it go on.
type gate struct{ reached, release chan struct{} }

func newGate() *gate { return &gate{reached: make(chan struct{}), release: make(chan struct{})} }

func (g *gate) pass() {
	close(g.reached)
	<-g.release
}

// heldVotes holds a replica's next vote, as a slow replica would, right
// after it marks the question finishing (afterMark) or right after the
// vote script answered (afterVote). Each gate holds one call.
type heldVotes struct {
	enginetest.Store
	afterMark, afterVote atomic.Pointer[gate]
}

func (h *heldVotes) MarkFinishing(ctx context.Context, id string, at time.Time) (bool, error) {
	added, err := h.Store.MarkFinishing(ctx, id, at)
	if g := h.afterMark.Swap(nil); g != nil {
		g.pass()
	}
	return added, err
}

func (h *heldVotes) Vote(ctx context.Context, id string, v askbridge.Vote, quorum, voters int, now time.Time) (engine.VoteResult, error) {
	r, err := h.Store.Vote(ctx, id, v, quorum, voters, now)
	if g := h.afterVote.Swap(nil); g != nil {
		g.pass()
	}
	return r, err
}

// TestQuorumDecidingVoteKeepsItsMark: two votes on two replicas, the
// second deciding. Each vote marks the question finishing before it is
// counted; the replica whose vote did not decide takes its mark back, and
// that must never take away the mark the deciding vote relies on: were
// the deciding replica to die before its edits land, the mark is what
// makes another replica edit the prompt, whose buttons would otherwise
// stay live on an ended question. B's edits are held (a replica dying
// mid-edit) while A's vote goes on; the mark must stay until B's edits
// land.
func TestQuorumDecidingVoteKeepsItsMark(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// interleave runs alice's vote on a and bob's deciding one on b.
		interleave func(t *testing.T, a, b *harness, ha, hb *heldVotes, p sentPrompt)
	}{
		// A marks, B finds the mark, A's vote is counted, B's decides,
		// then A takes its mark back.
		{"taken back after the decision", func(t *testing.T, a, b *harness, ha, _ *heldVotes, p sentPrompt) {
			g := newGate()
			ha.afterVote.Store(g)
			done := make(chan engine.TapReply)
			go func() { done <- tap(a, p, 1, person("alice"), "alice-vote") }()
			<-g.reached
			if r := tap(b, p, 1, person("bob"), "bob-vote"); r.Notice != engine.NoticeVoted {
				t.Errorf("bob's deciding vote told %s", r.Notice)
			}
			close(g.release)
			if r := <-done; r.Notice != engine.NoticeVoted {
				t.Errorf("alice's vote told %s", r.Notice)
			}
		}},
		// A marks, B finds the mark, A's vote is counted and A takes its
		// mark back, then B's vote decides.
		{"taken back before the decision", func(t *testing.T, a, b *harness, ha, hb *heldVotes, p sentPrompt) {
			ga, gb := newGate(), newGate()
			ha.afterMark.Store(ga)
			hb.afterMark.Store(gb)
			doneA, doneB := make(chan engine.TapReply), make(chan engine.TapReply)
			go func() { doneA <- tap(a, p, 1, person("alice"), "alice-vote") }()
			<-ga.reached
			go func() { doneB <- tap(b, p, 1, person("bob"), "bob-vote") }()
			<-gb.reached
			close(ga.release)
			if r := <-doneA; r.Notice != engine.NoticeVoted {
				t.Errorf("alice's vote told %s", r.Notice)
			}
			close(gb.release)
			if r := <-doneB; r.Notice != engine.NoticeVoted {
				t.Errorf("bob's deciding vote told %s", r.Notice)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clk := newClock()
			prefix := fmt.Sprintf("enginetest%d:", prefixSeq.Add(1))
			ha, hb := &heldVotes{}, &heldVotes{}
			chA, chB := newFakeChannel("telegram"), newFakeChannel("telegram")
			// B's edits hang, as those of a replica that dies before they land.
			chB.finishGate = make(chan struct{})
			a := newHarness(t, harnessOpts{prefix: prefix, replica: "a", clock: clk, ch: chA,
				wrap: func(s enginetest.Store) enginetest.Store { ha.Store = s; return ha }})
			b := newHarness(t, harnessOpts{prefix: prefix, replica: "b", clock: clk, ch: chB,
				wrap: func(s enginetest.Store) enginetest.Store { hb.Store = s; return hb }})
			released := false
			release := func() {
				if !released {
					released = true
					close(chB.finishGate)
				}
			}
			t.Cleanup(release)
			id := a.ask(quorumAsk("q-mark", 2, trio, ""))
			var p sentPrompt
			waitFor(t, "the prompt", func() bool {
				for _, ch := range []*fakeChannel{chA, chB} {
					if s := ch.sends(); len(s) == 1 {
						p = s[0]
						return true
					}
				}
				return false
			})

			tc.interleave(t, a, b, ha, hb, p)
			if res := a.result(id, 2*time.Second); res.Status != askbridge.StatusAnswered {
				t.Fatalf("result %+v", res)
			}
			waitFor(t, "the deciding replica's edits to start", func() bool { return chB.inFinish.Load() != 0 })
			marked := func() bool {
				ids, err := a.store.Unfinished(context.Background(), clk.Now().Add(time.Hour), 100)
				if err != nil {
					t.Fatal(err)
				}
				return slices.Contains(ids, id)
			}
			if !marked() {
				t.Fatal("the question ended and its edits have not landed, but it is no longer marked finishing: " +
					"were the deciding replica to die now, no other would edit its prompt")
			}
			release()
			waitFor(t, "the edits to land and the mark to go", func() bool {
				return chB.status(p.refs[0].Message) == "Answered: Reject" && !marked()
			})
		})
	}
}

// endings records the Ending of every message a channel finishes.
type endings struct {
	*fakeChannel
	mu  sync.Mutex
	got []engine.Ending
}

func (e *endings) Finish(ctx context.Context, ref engine.MessageRef, end engine.Ending) error {
	e.mu.Lock()
	e.got = append(e.got, end)
	e.mu.Unlock()
	return e.fakeChannel.Finish(ctx, ref, end)
}

// TestQuorumTallyKeepsFreeTextOut: the tally every message of a quorum
// question shows, open and ended, counts an answer in a person's own
// words as "Other" (the catalog's word) and never repeats the words
// (ask-user.md §3: free text is never echoed), with several questions and
// with several options chosen beside free text; the same tallies are
// counted together.
func TestQuorumTallyKeepsFreeTextOut(t *testing.T) {
	t.Parallel()
	var ends *endings
	h := newHarness(t, harnessOpts{channel: func(f *fakeChannel) engine.Channel {
		ends = &endings{fakeChannel: f}
		return ends
	}})
	two := `[{"id":"target","header":"Target","question":"Where?","options":[{"label":"Staging"},{"label":"Production"}]},
		{"id":"checks","header":"Checks","question":"Which checks?","multiSelect":true,"options":[{"label":"Unit"},{"label":"Load"}]}]`
	four := append(slices.Clone(trio), "telegram:dave")
	id := h.ask(quorumAsk("q-words", 2, four, two))
	p := h.waitSent(1)[0]
	secret := []string{"after the freeze", "ship on friday", "only if Bob agrees", "ask legal"}
	vote(h, p, "alice", "1: Staging\n2: Unit, "+secret[0])
	vote(h, p, "bob", "1: "+secret[1]+"\n2: Load")
	vote(h, p, "carol", "1: Staging\n2: unit, "+secret[2])
	const open = "Votes: 1 of 2 needed — Staging / Unit + Other 2, Other / Load 1"
	waitFor(t, "the tally on the prompt", func() bool {
		_, _, up := h.ch.snapshot()
		return slices.Contains(up[p.refs[0].Message].Notes, open)
	})
	vote(h, p, "dave", "1: Production\n2: Unit, Load, "+secret[3])
	if res := h.result(id, 2*time.Second); res.Status != askbridge.StatusNoAnswer || res.Reason != askbridge.ReasonNoQuorum {
		t.Fatalf("result %+v", res)
	}
	h.waitStatus(p.refs[0].Message, "No agreement")
	ends.mu.Lock()
	end := ends.got[0]
	ends.mu.Unlock()
	const ended = "Votes: 1 of 2 needed — Staging / Unit + Other 2, Other / Load 1, Production / Unit + Load + Other 1"
	if !slices.Contains(end.Plan.Notes, ended) {
		t.Errorf("the ended prompt's notes %q, want %q among them", end.Plan.Notes, ended)
	}
	_, _, up := h.ch.snapshot()
	shown := strings.Join(append(slices.Clone(end.Plan.Notes), up[p.refs[0].Message].Notes...), "\n") + end.Status
	for _, words := range secret {
		if strings.Contains(strings.ToLower(shown), strings.ToLower(words)) {
			t.Errorf("%q is shown: %s", words, shown)
		}
	}

	// One multi-select question, in Thai: free text beside an option, and
	// alone.
	multi := `[{"id":"checks","header":"Checks","question":"Which?","multiSelect":true,"options":[{"label":"Unit"},{"label":"Load"}]}]`
	id = h.ask(strings.Replace(quorumAsk("q-words-th", 2, trio, multi), `"quorum"`, `"locale":"th","quorum"`, 1))
	p = h.waitSent(2)[1]
	vote(h, p, "alice", "Unit, "+secret[0])
	vote(h, p, "bob", secret[1])
	const thai = "คะแนน: 1 จาก 2 ที่ต้องการ — Unit 0, Load 0, Unit + อื่น ๆ 1, อื่น ๆ 1"
	waitFor(t, "the Thai tally on the prompt", func() bool {
		_, _, up := h.ch.snapshot()
		return slices.Contains(up[p.refs[0].Message].Notes, thai)
	})
	h.engine.Cancel(context.Background(), id)
}
