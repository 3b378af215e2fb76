package store

import (
	"slices"
	"testing"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
)

// testVote: the agreement rule as the vote script decides it, on every
// backend: a vote counts once per person; the quorum-th equal answer ends
// it answered with every vote; an abstention agrees with nobody; agreement
// becoming impossible ends it no_quorum; a vote after the end changes
// nothing; a vote at the deadline ends it as a timeout.
func testVote(t *testing.T, b backend) {
	s := newStore(t, b, Options{})
	ctx := ctxT(t)
	vote := func(id, who string, vals ...string) engine.VoteResult {
		t.Helper()
		v := askbridge.Vote{By: askbridge.Person{Platform: "telegram", ID: who}, At: t0.UnixMilli()}
		if len(vals) == 0 {
			v.Skipped = true
		} else {
			v.Answers = map[string][]string{"deploy_target": vals}
		}
		r, err := s.Vote(ctx, id, v, 2, 3, t0.Add(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	mustCreate(t, s, newQ("v1", t0, time.Minute))
	if r := vote("v1", "a", "Production"); r.Outcome != engine.VoteRecorded || len(r.End.Record.Votes) != 1 {
		t.Fatalf("first vote: %+v", r)
	}
	if r := vote("v1", "a", "Staging"); r.Outcome != engine.VoteAgain {
		t.Fatalf("second vote of a: %+v", r)
	}
	r := vote("v1", "b", "production")
	if r.Outcome != engine.VoteDecided || r.End.Result.Status != askbridge.StatusAnswered ||
		!slices.Equal(r.End.Result.Answers.Answers["deploy_target"], []string{"Production"}) || len(r.End.Result.Votes) != 2 {
		t.Fatalf("deciding vote: %+v", r)
	}
	if n := s.rdb.ZScore(ctx, s.k.deadlines(), "v1").Err(); n == nil {
		t.Fatal("an ended question kept its deadline")
	}
	if r := vote("v1", "c", "Production"); r.Outcome != engine.VoteClosed || r.End.Won {
		t.Fatalf("vote after the end: %+v", r)
	}

	mustCreate(t, s, newQ("v2", t0, time.Minute))
	vote("v2", "a")
	vote("v2", "b", "Staging")
	if r := vote("v2", "c", "Production"); r.Outcome != engine.VoteDecided || r.End.Result.Reason != askbridge.ReasonNoQuorum || len(r.End.Result.Votes) != 3 {
		t.Fatalf("no agreement: %+v", r)
	}

	// A vote at the deadline ends it as a timeout that carries the votes
	// given in time, as end.lua's timeouts do.
	mustCreate(t, s, newQ("v3", t0, 2*time.Second))
	vote("v3", "a", "Production")
	late := askbridge.Vote{By: askbridge.Person{Platform: "telegram", ID: "b"}, At: t0.UnixMilli(), Answers: map[string][]string{"deploy_target": {"Production"}}}
	if r, err := s.Vote(ctx, "v3", late, 2, 3, t0.Add(2*time.Second)); err != nil || r.Outcome != engine.VoteDecided ||
		r.End.Result.Reason != askbridge.ReasonTimeout || len(r.End.Result.Votes) != 1 {
		t.Fatalf("vote at the deadline: %+v, %v", r, err)
	}
	if r, err := s.Vote(ctx, "nope", askbridge.Vote{Skipped: true}, 2, 3, t0); err != nil || r.Outcome != engine.VoteClosed || r.End.Found {
		t.Fatalf("vote on an unknown id: %+v, %v", r, err)
	}

	// A cancel of a quorum question carries its votes too.
	mustCreate(t, s, newQ("v4", t0, time.Minute))
	vote("v4", "a", "Staging")
	er, err := s.End(ctx, "v4", askbridge.NoAnswer("v4", askbridge.ReasonCancelled, ""), t0.Add(time.Second))
	if err != nil || len(er.Result.Votes) != 1 {
		t.Fatalf("cancelled with votes %+v, %v", er.Result, err)
	}
}

// testReach: Seen once, places that fail, timers handed out once at a time
// and announced once, on every backend.
func testReach(t *testing.T, b backend) {
	s := newStore(t, b, Options{})
	ctx := ctxT(t)
	q := newQ("r1", t0, time.Minute)
	q.Places = []askbridge.Place{
		{Name: "telegram:42", Target: q.Target}, {Name: "ops", Target: askbridge.Target{Platform: "slack", Chat: "C1"}},
		{Name: "lead", Target: askbridge.Target{Platform: "slack", Chat: "C2"}, Step: 1},
	}
	q.Timers = []engine.Timer{{ID: "r1", Name: "r1", At: t0.Add(10 * time.Second)}, {ID: "r1", Name: "e1", At: t0.Add(20 * time.Second)}}
	mustCreate(t, s, q)
	rec, _, err := s.Get(ctx, "r1")
	if err != nil || len(rec.Places) != 3 || rec.Places[2].Step != 1 {
		t.Fatalf("places %+v, %v", rec.Places, err)
	}

	alice := askbridge.Person{Platform: "slack", ID: "U1", Name: "Alice"}
	if won, rec, found, err := s.Acknowledge(ctx, "r1", alice); err != nil || !won || !found || rec.Acknowledged == nil || rec.Acknowledged.ID != "U1" {
		t.Fatalf("acknowledge: %v %+v %v %v", won, rec.Acknowledged, found, err)
	}
	if won, _, _, err := s.Acknowledge(ctx, "r1", askbridge.Person{Platform: "slack", ID: "U2"}); err != nil || won {
		t.Fatalf("second acknowledge won: %v %v", won, err)
	}

	if failed, status, err := s.PlaceFailed(ctx, "r1", 1, "channel_not_found", 2); err != nil || !slices.Equal(failed, []int{1}) || status != askbridge.StatusPending {
		t.Fatalf("place failed: %v %s %v", failed, status, err)
	}
	if failed, _, err := s.PlaceFailed(ctx, "r1", 0, "chat not found", 2); err != nil || !slices.Equal(failed, []int{0, 1}) {
		t.Fatalf("both places failed: %v %v", failed, err)
	}

	due, err := s.DueTimers(ctx, t0.Add(15*time.Second), 5*time.Second, 10)
	if err != nil || len(due) != 1 || due[0].Name != "r1" {
		t.Fatalf("due at 15 s: %+v, %v", due, err)
	}
	// Handed out: not again until the hold has passed.
	if again, _ := s.DueTimers(ctx, t0.Add(19*time.Second), 5*time.Second, 10); len(again) != 0 {
		t.Fatalf("handed out again within the hold: %+v", again)
	}
	due, err = s.DueTimers(ctx, t0.Add(21*time.Second), 5*time.Second, 10)
	if err != nil || len(due) != 2 {
		t.Fatalf("due at 21 s (the step, and the reminder back): %+v, %v", due, err)
	}
	if first, err := s.FireOnce(ctx, "r1", "r1"); err != nil || !first {
		t.Fatalf("fire once: %v %v", first, err)
	}
	if first, _ := s.FireOnce(ctx, "r1", "r1"); first {
		t.Fatal("fired twice")
	}
	rec, _, _ = s.Get(ctx, "r1")
	if !slices.Equal(rec.Fired, []string{"r1"}) {
		t.Fatalf("fired %v", rec.Fired)
	}
	for _, tm := range due {
		if err := s.TimerDone(ctx, tm); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RetryTimer(ctx, due[0], t0); err != nil {
		t.Fatal(err)
	}
	if left, _ := s.DueTimers(ctx, t0.Add(time.Hour), time.Second, 10); len(left) != 0 {
		t.Fatalf("timers left after done (a retry must not bring one back): %+v", left)
	}
	res, err := s.End(ctx, "r1", answered("r1"), t0.Add(30*time.Second))
	if err != nil || res.Result.AcknowledgedBy == nil || res.Result.AcknowledgedBy.ID != "U1" {
		t.Fatalf("result without acknowledgedBy: %+v %v", res.Result, err)
	}
}
