package store

import (
	"testing"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
)

// TestStandingScripts runs each script of standing answers on every
// backend (the Cluster in the full tier, where a key of another slot
// fails): an offer taken once and only by its person, a keep set once and
// never again after a revoke, a use decided once per question id, a
// revoke, and an end published once.
func TestStandingScripts(t *testing.T) {
	for _, b := range allBackends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			for _, agent := range []string{"", "ci {x}"} {
				standingScripts(t, newStore(t, b, Options{Retention: time.Hour}), agent)
			}
		})
	}
}

func standingScripts(t *testing.T, s *Store, agent string) {
	ctx := ctxT(t)
	alice := askbridge.Person{Platform: "telegram", ID: "alice"}
	bob := askbridge.Person{Platform: "telegram", ID: "bob"}
	o := engine.Offer{
		ID: "q1", Agent: agent, Key: "deploy:prod", Shape: "s1", By: alice, Answers: map[string][]string{"t": {"Yes"}},
		Durations: []time.Duration{time.Hour, 24 * time.Hour}, Ends: t0.Add(engine.OfferOpen), Target: askbridge.Target{Platform: "telegram", Chat: "c"},
	}
	if err := s.OpenOffer(ctx, o); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		by   askbridge.Person
		d    time.Duration
		at   time.Time
		want engine.TakeOutcome
	}{
		{bob, time.Hour, t0, engine.TakeNotYours},
		{alice, 2 * time.Hour, t0, engine.TakeNoSuchDuration},
		{alice, time.Hour, t0.Add(engine.OfferOpen), engine.TakeClosed},
		{alice, time.Hour, t0, engine.TakeDone},
		{alice, 24 * time.Hour, t0, engine.TakeAgain},
		{bob, time.Hour, t0, engine.TakeNotYours},
	} {
		got, _, err := s.TakeOffer(ctx, "q1", tc.by, tc.d, "g1", tc.at)
		if err != nil || got != tc.want {
			t.Fatalf("take by %s for %s = %v, %v; want %v", tc.by.ID, tc.d, got, err, tc.want)
		}
	}
	peeked, found, err := s.PeekOffer(ctx, "q1")
	if err != nil || !found || peeked.Kept == nil || peeked.Kept.Gen != "g1" || !peeked.Ends.Equal(o.Ends) {
		t.Fatalf("peek = %+v, %v, %v", peeked, found, err)
	}
	closed, found, err := s.CloseOffer(ctx, "q1")
	if err != nil || !found || closed.Kept == nil || !closed.Kept.Until.Equal(t0.Add(time.Hour)) {
		t.Fatalf("close = %+v, %v, %v", closed, found, err)
	}
	kept := *closed.Kept
	for i, want := range []bool{true, false} {
		if set, err := s.SetStanding(ctx, kept); err != nil || set != want {
			t.Fatalf("set #%d = %v, %v; want %v", i, set, err, want)
		}
	}
	if used, _, err := s.UseStanding(ctx, agent, "deploy:prod", "g1", "other shape", "r1", t0); err != nil || used {
		t.Fatalf("use of another shape = %v, %v", used, err)
	}
	if _, found, err := s.PeekOffer(ctx, "q1"); err != nil || found {
		t.Fatalf("peek of a closed offer = %v, %v", found, err)
	}
	// Edits of its message: one a minute, and none for another keep.
	for _, tc := range []struct {
		gen  string
		at   time.Time
		want bool
	}{{"g1", t0, true}, {"g1", t0.Add(59 * time.Second), false}, {"g0", t0.Add(time.Hour), false}, {"g1", t0.Add(time.Minute), true}} {
		if ok, err := s.PaceStandingEdit(ctx, agent, "deploy:prod", tc.gen, tc.at, time.Minute); err != nil || ok != tc.want {
			t.Fatalf("pace %s at %s = %v, %v; want %v", tc.gen, tc.at, ok, err, tc.want)
		}
	}
	used, a, err := s.UseStanding(ctx, agent, "deploy:prod", "g1", "s1", "r2", t0)
	if err != nil || !used || a.Uses != 1 || a.By.ID != "alice" {
		t.Fatalf("use = %v, %+v, %v", used, a, err)
	}
	// A revoke of another keep than the one standing (a newer keep
	// replaced the one its button showed) leaves it standing.
	if _, found, err := s.RevokeStanding(ctx, agent, "deploy:prod", "g0"); err != nil || found {
		t.Fatalf("revoke of another keep = %v, %v; want nothing revoked", found, err)
	}
	if _, found, err := s.PeekStanding(ctx, agent, "deploy:prod", t0); err != nil || !found {
		t.Fatalf("after a revoke of another keep: standing %v, %v", found, err)
	}
	if _, found, err := s.RevokeStanding(ctx, agent, "deploy:prod", "g1"); err != nil || !found {
		t.Fatalf("revoke = %v, %v", found, err)
	}
	// r2 decided before the revoke: the same decision again; r3 after.
	if used, _, err := s.UseStanding(ctx, agent, "deploy:prod", "g1", "s1", "r2", t0); err != nil || !used {
		t.Fatalf("use repeated = %v, %v", used, err)
	}
	if used, _, err := s.UseStanding(ctx, agent, "deploy:prod", "g1", "s1", "r3", t0); err != nil || used {
		t.Fatalf("use after revoke = %v, %v", used, err)
	}
	if set, err := s.SetStanding(ctx, kept); err != nil || set {
		t.Fatalf("a revoked keep set again = %v, %v", set, err)
	}
	if out, _, err := s.ExpireStanding(ctx, agent, "deploy:prod", "g1", t0.Add(2*time.Hour)); err != nil || out != engine.ExpireMoot {
		t.Fatalf("expire of a revoked one = %v, %v", out, err)
	}
	laterKeepEnds(t, s, kept)
	due, err := s.DueStandingTimers(ctx, t0.Add(3*time.Hour), time.Minute, 10)
	if err != nil || len(due) != 3 {
		t.Fatalf("due timers %+v, %v; want the offer's and two ends", due, err)
	}
	for _, d := range due {
		if err := s.StandingTimerDone(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
}

// laterKeepEnds sets a keep after kept, revoked, and ends it at its time,
// once.
func laterKeepEnds(t *testing.T, s *Store, kept engine.StandingAnswer) {
	ctx, agent := ctxT(t), kept.Agent
	later := kept
	later.Gen, later.Since, later.Until = "g2", t0.Add(time.Minute), t0.Add(2*time.Hour)
	if set, err := s.SetStanding(ctx, later); err != nil || !set {
		t.Fatalf("later keep = %v, %v", set, err)
	}
	for _, tc := range []struct {
		at   time.Time
		want engine.ExpireOutcome
	}{{t0.Add(time.Hour), engine.ExpireNotYet}, {t0.Add(2 * time.Hour), engine.ExpireDone}, {t0.Add(2 * time.Hour), engine.ExpireMoot}} {
		out, ex, err := s.ExpireStanding(ctx, agent, "deploy:prod", "g2", tc.at)
		if err != nil || out != tc.want || (out == engine.ExpireDone && ex.By.ID != "alice") {
			t.Fatalf("expire at %s = %v %+v, %v; want %v", tc.at, out, ex, err, tc.want)
		}
	}
}
