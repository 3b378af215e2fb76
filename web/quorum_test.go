package web_test

// Quorum questions on the page (ask-user.md §6): the page is one voter,
// "web:web", among the answerers; the others vote through the engine as
// their platforms would.

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/webtest"
	"github.com/askbridge/askbridge/locale"
	"github.com/askbridge/askbridge/web"
)

// votesOf is the votes of a timeline entry as "who: labels" lines, with
// "(own words)" and "(abstained)".
func votesOf(e web.HistoryEntry) []string {
	var out []string
	for _, v := range e.Votes {
		line := v.By + ":"
		if v.Skipped {
			line += " (abstained)"
		}
		for _, a := range v.Answers {
			line += " " + strings.Join(a.Answer, "+")
			if a.OwnWords {
				line += " (own words)"
			}
		}
		out = append(out, line)
	}
	return out
}

// A vote of the page that does not end the question is counted (200, the
// notice Voted with its count), the list shows the tally, who has voted
// and the page's vote; a second vote is refused (409 AlreadyVoted) and
// the first stands; the deciding vote of another ends it, and the
// timeline keeps the votes. Each vote is a voted event with its voter.
func TestQuorumVotes(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{})
	s, res := b.OpenEvents(t, "", nil)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("events = %d", res.StatusCode)
	}
	id := b.Ask(t, webtest.QuorumQuestion("quorum-votes", ""))
	q, _ := b.WaitOpen(t, id).Listed(id)
	if q.Quorum != 2 || q.TallyLine != "Votes: 0 of 2 needed — Approve 0, Reject 0" || len(q.Notes) != 0 ||
		len(q.Tally) != 0 || len(q.Voters) != 0 || q.Voted || q.MyVote != nil || !q.MayAnswer {
		t.Fatalf("listed before any vote: %+v", q)
	}

	if sub := b.Vote(t, id, webtest.Alice, webtest.Change("Reject")); sub.Won || sub.Notice != engine.NoticeVoted {
		t.Fatalf("Alice's vote = %+v", sub)
	}
	if ev := s.Next(t, "voted", id); ev.Data["by"] != "telegram:1" {
		t.Errorf("Alice's voted event = %v", ev.Data)
	}

	code, out := b.Answer(t, id, map[string]any{"answers": webtest.Change("Approve")})
	if code != http.StatusOK {
		t.Fatalf("the page's vote = %d %v", code, out)
	}
	if out["notice"] != string(engine.NoticeVoted) || out["message"] != "Vote recorded (1 of 2 needed)." ||
		out["open"] != true || out["count"] != float64(1) || out["need"] != float64(2) || out["locale"] != "en" {
		t.Errorf("the page's vote reply = %v", out)
	}
	if _, ok := out["outcome"]; ok {
		t.Errorf("an open question's reply has an outcome: %v", out)
	}
	if r, _ := out["result"].(map[string]any); r["status"] != "pending" {
		t.Errorf("result = %v; want pending", out["result"])
	}
	if ev := s.Next(t, "voted", id); ev.Data["by"] != "web:web" {
		t.Errorf("the page's voted event = %v", ev.Data)
	}

	q = waitListed(t, b, id, "the page's vote", func(q webtest.ListedQuestion) bool { return q.Voted })
	if q.TallyLine != "Votes: 1 of 2 needed — Approve 1, Reject 1" || len(q.Notes) != 0 {
		t.Errorf("tally line, notes = %q, %q", q.TallyLine, q.Notes)
	}
	wantTally := []webtest.ListedTally{
		{Answers: []web.HistoryAnswer{{Answer: []string{"Reject"}}}, Count: 1},
		{Answers: []web.HistoryAnswer{{Answer: []string{"Approve"}}}, Count: 1},
	}
	if !sameJSON(q.Tally, wantTally) || q.Abstained != 0 {
		t.Errorf("tally = %s, abstained %d", mustJSON(t, q.Tally), q.Abstained)
	}
	if !slices.Equal(q.Voters, []string{"Alice", "web page"}) {
		t.Errorf("voters = %q", q.Voters)
	}
	if q.MyVote == nil || q.MyVote.By != "web page" || q.MyVote.Skipped || !sameJSON(q.MyVote.Answers, []web.HistoryAnswer{{Answer: []string{"Approve"}}}) {
		t.Errorf("my vote = %+v", q.MyVote)
	}
	// Names, never the others' answers.
	raw := string(mustJSON(t, q.Voters))
	if strings.Contains(raw, "Reject") || strings.Contains(raw, "telegram") {
		t.Errorf("voters say more than who: %s", raw)
	}

	// The page's first vote stands.
	for _, body := range []map[string]any{{"answers": webtest.Change("Reject")}, {"skip": true}} {
		code, out := b.Answer(t, id, body)
		if code != http.StatusConflict || out["notice"] != string(engine.NoticeAlreadyVoted) ||
			out["message"] != "You already answered; your first answer stands." || out["open"] != true {
			t.Errorf("second vote %v = %d %v; want 409 AlreadyVoted", body, code, out)
		}
	}
	if q, _ := b.Open(t).Listed(id); q.TallyLine != "Votes: 1 of 2 needed — Approve 1, Reject 1" {
		t.Errorf("after a second vote the tally is %q", q.TallyLine)
	}

	// Bob agrees with the page: it ends, answered.
	if sub := b.Vote(t, id, webtest.Bob, webtest.Change("Approve")); !sub.Won {
		t.Fatalf("Bob's vote = %+v; want the deciding one", sub)
	}
	s.Next(t, "answered", id)
	result := b.Result(t, id, 5*time.Second)
	if result.Status != askbridge.StatusAnswered || !webtest.SameAnswers(result.Answers.Answers, webtest.Change("Approve")) || len(result.Votes) != 3 {
		t.Fatalf("result = %+v", result)
	}
	e := b.WaitHistory(t, id)
	if e.Outcome != "answered" || e.Status != "Answered: Approve" || e.Quorum != 2 || len(e.Sections) != 1 ||
		!slices.Equal(e.Sections[0].Answer, []string{"Approve"}) {
		t.Errorf("entry = %s", mustJSON(t, e))
	}
	if got := votesOf(e); !slices.Equal(got, []string{"Alice: Reject", "web page: Approve", "Bob: Approve"}) {
		t.Errorf("entry votes = %q", got)
	}
	if _, listed := b.Open(t).Listed(id); listed {
		t.Error("still listed after the end")
	}
	code, out = b.Answer(t, id, map[string]any{"answers": webtest.Change("Reject")})
	if code != http.StatusConflict || out["outcome"] != "answered" || out["status"] != "Answered: Approve" || out["open"] != nil {
		t.Errorf("a vote after the end = %d %v", code, out)
	}
	wantNotice(t, out, engine.NoticeAlreadyAnswered, "en")
}

// The page's skip is an abstention (200 Abstained); when the others
// disagree the question ends without agreement: the event no_quorum
// reaches the page, and the timeline says "No agreement" with the votes.
func TestQuorumAbstainedNoAgreement(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{})
	s, _ := b.OpenEvents(t, "", nil)
	id := b.Ask(t, webtest.QuorumQuestion("quorum-abstain", ""))
	b.WaitOpen(t, id)

	code, out := b.Answer(t, id, map[string]any{"skip": true})
	if code != http.StatusOK || out["notice"] != string(engine.NoticeAbstained) || out["message"] != "Abstention recorded." || out["open"] != true {
		t.Fatalf("the page's skip = %d %v; want 200 Abstained", code, out)
	}
	if _, ok := out["count"]; ok {
		t.Errorf("an abstention has a count: %v", out)
	}
	s.Next(t, "voted", id)
	q := waitListed(t, b, id, "the abstention", func(q webtest.ListedQuestion) bool { return q.Voted })
	if q.Abstained != 1 || len(q.Tally) != 0 || !slices.Equal(q.Voters, []string{"web page"}) ||
		q.MyVote == nil || !q.MyVote.Skipped || len(q.MyVote.Answers) != 0 {
		t.Errorf("listed after the abstention: %s", mustJSON(t, q))
	}
	if q.TallyLine != "Votes: 0 of 2 needed — Approve 0, Reject 0, 1 abstained" {
		t.Errorf("tally line = %q", q.TallyLine)
	}

	if sub := b.Vote(t, id, webtest.Alice, webtest.Change("Approve")); sub.Won || sub.Notice != engine.NoticeVoted {
		t.Fatalf("Alice's vote = %+v", sub)
	}
	if sub := b.Vote(t, id, webtest.Bob, webtest.Change("Reject")); !sub.Won {
		t.Fatalf("Bob's vote = %+v; want it to end the question", sub)
	}
	s.Next(t, "no_quorum", id)
	if r := b.Result(t, id, 5*time.Second); r.Status != askbridge.StatusNoAnswer || r.Reason != askbridge.ReasonNoQuorum {
		t.Fatalf("result = %+v; want no_answer/no_quorum", r)
	}
	e := b.WaitHistory(t, id)
	if e.Outcome != "no_quorum" || e.Status != "No agreement" || len(e.Sections[0].Answer) != 0 || e.Sections[0].OwnWords {
		t.Errorf("entry = %s", mustJSON(t, e))
	}
	if got := votesOf(e); !slices.Equal(got, []string{"web page: (abstained)", "Alice: Approve", "Bob: Reject"}) {
		t.Errorf("entry votes = %q", got)
	}
	code, out = b.Answer(t, id, map[string]any{"answers": webtest.Change("Approve")})
	if code != http.StatusConflict || out["outcome"] != "no_quorum" || out["status"] != "No agreement" {
		t.Errorf("a vote after the end = %d %v", code, out)
	}
	wantNotice(t, out, engine.NoticeNoQuorum, "en")
}

// The page's vote decides: 200 with the outcome, as any answer that ends
// a question; a vote in the page's own words that makes agreement
// impossible ends it without agreement, and its words are not repeated.
func TestQuorumDecidedByThePage(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{})
	agreed := b.Ask(t, webtest.QuorumQuestion("quorum-agreed", ""))
	apart := b.Ask(t, webtest.QuorumQuestion("quorum-apart", ""))
	b.WaitOpen(t, agreed, apart)

	b.Vote(t, agreed, webtest.Alice, webtest.Change("Approve"))
	code, out := b.Answer(t, agreed, map[string]any{"answers": webtest.Change(" approve ")})
	if code != http.StatusOK || out["outcome"] != "answered" || out["status"] != "Answered: Approve" ||
		out["notice"] != string(engine.NoticeVoted) || out["message"] != "Vote recorded (2 of 2 needed)." || out["open"] != nil {
		t.Fatalf("the deciding vote = %d %v", code, out)
	}
	var r askbridge.Result
	if err := json.Unmarshal(mustJSON(t, out["result"]), &r); err != nil || len(r.Votes) != 2 || r.Votes[1].By.Platform != "web" {
		t.Errorf("reply result = %+v (%v); want both votes", r, err)
	}

	b.Vote(t, apart, webtest.Alice, webtest.Change("Approve"))
	b.Vote(t, apart, webtest.Bob, webtest.Change("Reject"))
	code, out = b.Answer(t, apart, map[string]any{"answers": webtest.Change("Wait for Monday")})
	if code != http.StatusOK || out["outcome"] != "no_quorum" || out["status"] != "No agreement" {
		t.Fatalf("the vote that made agreement impossible = %d %v", code, out)
	}
	e := b.WaitHistory(t, apart)
	if got := votesOf(e); !slices.Equal(got, []string{"Alice: Approve", "Bob: Reject", "web page:  (own words)"}) {
		t.Errorf("entry votes = %q", got)
	}
	if strings.Contains(string(mustJSON(t, e)), "Monday") {
		t.Errorf("the timeline repeats free text: %s", mustJSON(t, e))
	}
}

// A Thai quorum question: the notices and the tally are in Thai.
func TestQuorumThai(t *testing.T) {
	t.Parallel()
	th := locale.For("th")
	b := webtest.Start(t, webtest.Options{})
	id := b.Ask(t, webtest.QuorumQuestion("quorum-thai", `,"locale":"th"`))
	b.WaitOpen(t, id)
	code, out := b.Answer(t, id, map[string]any{"answers": webtest.Change("Approve")})
	if want := engine.NoticeVoted.TextCount("th", 1, 2); code != http.StatusOK || out["message"] != want || out["locale"] != "th" {
		t.Errorf("Thai vote = %d %v; want %q", code, out, want)
	}
	if !strings.HasPrefix(out["message"].(string), "บันทึกคะแนนแล้ว") {
		t.Errorf("Thai vote message = %q", out["message"])
	}
	code, out = b.Answer(t, id, map[string]any{"skip": true})
	if code != http.StatusConflict || out["message"] != th.Get("NoticeAlreadyVoted") {
		t.Errorf("Thai second vote = %d %v", code, out)
	}
	q := waitListed(t, b, id, "the page's vote", func(q webtest.ListedQuestion) bool { return q.Voted })
	if !strings.HasPrefix(q.TallyLine, "คะแนน: 1 จาก 2") {
		t.Errorf("Thai tally line = %q", q.TallyLine)
	}
}
