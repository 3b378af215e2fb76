package engine_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/testwait"
)

// rememberAsk is a one-question request of agent with remember under
// key "deploy:prod" (offers of 1 h and 24 h), to route to, with labels.
func rememberAsk(id, agent, to, labels string) string {
	if labels == "" {
		labels = `{"label":"Staging"},{"label":"Production"}`
	}
	return fmt.Sprintf(`{"id":%q,"agent":%q,"to":%q,"remember":{"key":"deploy:prod","offer":[3600,86400]},`+
		`"questions":[{"id":"deploy_target","header":"Target","question":"Where should build %s go?","options":[%s]}]}`, id, agent, to, id, labels)
}

var bob = askbridge.Person{Platform: "telegram", ID: "bob", Name: "Bob"}

// answered asks a remember request, has alice tap its second option and
// returns the result.
func answered(t *testing.T, h *harness, id, agent string) askbridge.Result {
	t.Helper()
	n := len(h.ch.sends())
	h.ask(rememberAsk(id, agent, "ops", ""))
	p := h.waitSent(n + 1)[n]
	if r := tap(h, p, 1, alice, id+"-tap"); r.Notice != engine.NoticeRecorded {
		t.Fatalf("tap: %v", r.Notice)
	}
	return h.result(id, 5*time.Second)
}

// keptBy answers id and keeps it for an hour as alice.
func keptBy(t *testing.T, h *harness, id, agent string) engine.StandingAnswer {
	t.Helper()
	answered(t, h, id, agent)
	out, err := h.engine.Keep(context.Background(), id, alice, time.Hour)
	if err != nil || out.Result != engine.KeepKept {
		t.Fatalf("keep = %+v, %v", out, err)
	}
	return out.Standing
}

// standingEvents reads the events of standing answers under key.
func (h *harness) standingEvents(key string) []askbridge.Event {
	h.t.Helper()
	evs, _, err := h.store.Events(context.Background(), "0", 100000, 0)
	if err != nil {
		h.t.Fatal(err)
	}
	var out []askbridge.Event
	for _, ev := range evs {
		if ev.Key == key {
			out = append(out, ev)
		}
	}
	return out
}

func TestStandingKeepAndUse(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{standing: true})
	ctx := context.Background()
	answered(t, h, "first", "")
	for _, tc := range []struct {
		name string
		by   askbridge.Person
		d    time.Duration
		want engine.KeepResult
	}{
		{"someone else", bob, time.Hour, engine.KeepNotYours},
		{"a duration not offered", alice, 2 * time.Hour, engine.KeepNoSuchDuration},
		{"the answerer", alice, time.Hour, engine.KeepKept},
		{"again", alice, time.Hour, engine.KeepAgain},
	} {
		out, err := h.engine.Keep(ctx, "first", tc.by, tc.d)
		if err != nil || out.Result != tc.want {
			t.Fatalf("%s: keep = %v, %v; want %v", tc.name, out.Result, err, tc.want)
		}
	}
	if evs := h.standingEvents("deploy:prod"); len(evs) != 1 || evs[0].Kind != askbridge.EventKept || evs[0].By != "telegram:alice" {
		t.Fatalf("events %+v; want one kept by telegram:alice", evs)
	}
	h.ask(rememberAsk("second", "", "ops", ""))
	r := h.result("second", 5*time.Second)
	if r.Status != askbridge.StatusAnswered || r.Via != askbridge.ViaStanding || r.AnsweredBy == nil || r.AnsweredBy.ID != "alice" ||
		r.Standing == nil || r.Standing.By.ID != "alice" || r.Answers.Answers["deploy_target"][0] != "Production" {
		t.Fatalf("result %+v", r)
	}
	if r.Standing.Until-r.Standing.Since != time.Hour.Milliseconds() {
		t.Errorf("standing %+v: want an hour", r.Standing)
	}
	h.waitHandled()
	if n := len(h.ch.sends()); n != 1 {
		t.Errorf("posted %d prompts; the standing answer should have shown nothing new", n)
	}
	evs := h.events("second")
	if last := evs[len(evs)-1]; last.Kind != askbridge.EventAnswered || last.Via != askbridge.ViaStanding {
		t.Errorf("events %+v; want answered via standing", evs)
	}
	s, found, err := h.store.PeekStanding(ctx, "", "deploy:prod", h.clock.Now())
	if err != nil || !found || s.Uses != 1 {
		t.Errorf("standing %+v found %v err %v; want one use", s, found, err)
	}
	list, err := h.engine.Standing(ctx)
	if err != nil || len(list) != 1 || list[0].Key != "deploy:prod" || list[0].Uses != 1 {
		t.Errorf("Standing() = %+v, %v", list, err)
	}
}

// TestStandingOfferOnlyForOptions: free text, a skip and an answer given
// after the offer's 15 minutes keep nothing.
func TestStandingOfferOnlyForOptions(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{standing: true})
	ctx := context.Background()
	for _, tc := range []struct {
		id string
		a  engine.Answer
	}{
		{"free", engine.Answer{By: alice, Via: askbridge.ViaWeb, Values: map[string][]string{"deploy_target": {"somewhere else"}}}},
		{"skip", engine.Answer{By: alice, Via: askbridge.ViaWeb, Skip: true}},
	} {
		n := len(h.ch.sends())
		h.ask(rememberAsk(tc.id, "a", "ops", ""))
		h.waitSent(n + 1)
		if sub, err := h.engine.Submit(ctx, tc.id, tc.a); err != nil || !sub.Won {
			t.Fatalf("%s: submit = %+v, %v", tc.id, sub, err)
		}
		if out, err := h.engine.Keep(ctx, tc.id, alice, time.Hour); err != nil || out.Result != engine.KeepClosed {
			t.Errorf("%s: keep = %v, %v; want closed (no offer)", tc.id, out.Result, err)
		}
	}
	answered(t, h, "late", "a")
	h.advance(engine.OfferOpen + time.Second)
	testwait.For(t, 5*time.Second, "the offer's end timer fired", func() bool {
		n, err := h.agent.ZCard(ctx, h.prefix+"standing-timers").Result()
		return err == nil && n == 0
	})
	if out, err := h.engine.Keep(ctx, "late", alice, time.Hour); err != nil || out.Result != engine.KeepClosed {
		t.Errorf("late keep = %v, %v; want closed", out.Result, err)
	}
}

// TestStandingShownAsUsual: another shape, or a place the keeper may not
// answer in, is shown as usual.
func TestStandingShownAsUsual(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{standing: true})
	keptBy(t, h, "kept", "a")
	h.ask(rememberAsk("other-shape", "a", "ops", `{"label":"Staging"},{"label":"Production"},{"label":"Canary"}`))
	h.ask(rememberAsk("not-alice", "a", "only-bob", ""))
	h.ask(rememberAsk("other-agent", "b", "ops", ""))
	h.waitSent(4)
	for _, id := range []string{"other-shape", "not-alice", "other-agent"} {
		if n := h.resultCount(id); n != 0 {
			t.Errorf("%s has a result at once", id)
		}
	}
}

func TestStandingRevoke(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{standing: true})
	ctx := context.Background()
	keptBy(t, h, "kept", "a")
	discord := askbridge.Person{Platform: "discord", ID: "dave"}
	if out, err := h.engine.Revoke(ctx, "a", "deploy:prod", &discord); err != nil || !out.NotAllowed {
		t.Fatalf("revoke by someone of another platform = %+v, %v", out, err)
	}
	if out, err := h.engine.Revoke(ctx, "a", "deploy:prod", &alice); err != nil || !out.Revoked {
		t.Fatalf("revoke by the keeper = %+v, %v", out, err)
	}
	if out, err := h.engine.Revoke(ctx, "a", "deploy:prod", nil); err != nil || out.Revoked {
		t.Fatalf("revoke again = %+v, %v", out, err)
	}
	h.ask(rememberAsk("after", "a", "ops", ""))
	h.waitSent(2)

	// The stream entry, and a malformed one.
	keptBy(t, h, "kept2", "b")
	h.agent.XAdd(ctx, &redis.XAddArgs{Stream: h.prefix + "requests", Values: []any{"revoke", `{"agent":"b","key":"deploy:prod"}`}})
	bad := h.agent.XAdd(ctx, &redis.XAddArgs{Stream: h.prefix + "requests", Values: []any{"revoke", `{"key":"no spaces please"}`}}).Val()
	h.waitHandled()
	if _, found, err := h.store.PeekStanding(ctx, "b", "deploy:prod", h.clock.Now()); err != nil || found {
		t.Errorf("standing answer of b found %v (%v) after the revoke entry", found, err)
	}
	var revoked int
	for _, ev := range h.standingEvents("deploy:prod") {
		if ev.Kind == askbridge.EventRevoked {
			revoked++
		}
	}
	if revoked != 2 {
		t.Errorf("%d revoked events; want 2", revoked)
	}
	if evs := h.events(bad); len(evs) != 1 || evs[0].Kind != askbridge.EventRejected || !strings.Contains(evs[0].Error, "key") {
		t.Errorf("malformed revoke: events %+v", evs)
	}
}

func TestStandingExpires(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{standing: true})
	ctx := context.Background()
	keptBy(t, h, "kept", "a")
	h.advance(time.Hour + time.Second)
	testwait.For(t, 5*time.Second, "an expired event", func() bool {
		for _, ev := range h.standingEvents("deploy:prod") {
			if ev.Kind == askbridge.EventExpired && ev.Agent == "a" && ev.By == "telegram:alice" {
				return true
			}
		}
		return false
	})
	h.ask(rememberAsk("after", "a", "ops", ""))
	h.waitSent(2)
	if list, err := h.engine.Standing(ctx); err != nil || len(list) != 0 {
		t.Errorf("Standing() = %+v, %v after the end", list, err)
	}
}

// TestStandingKeepReply: "keep 1h" in reply to the ended prompt keeps it.
func TestStandingKeepReply(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{standing: true})
	answered(t, h, "kept", "a")
	p := h.ch.sends()[0]
	out := h.engine.Reply(context.Background(), engine.TextReply{
		Message: engine.MessageRef{Platform: "telegram", Chat: "ops-room", Message: "r1"}, ReplyTo: p.refs[0].Message, Person: alice, Text: "Keep 1h",
	})
	if !out.Claimed || out.Respond != engine.NoticeKept.Text("en") {
		t.Fatalf("reply = %+v", out)
	}
	h.ask(rememberAsk("again", "a", "ops", ""))
	if r := h.result("again", 5*time.Second); r.Via != askbridge.ViaStanding {
		t.Errorf("result %+v", r)
	}
}

func TestStandingRefusals(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{standing: true, standingMax: time.Hour})
	off := newHarness(t, harnessOpts{})
	for _, tc := range []struct {
		h    *harness
		id   string
		body string
		want []string
	}{
		{h, "cap", rememberAsk("cap", "a", "ops", ""), []string{"remember.offer", "ASKUSER_STANDING_MAX"}},
		{h, "quorum", strings.Replace(rememberAsk("quorum", "a", "ops", ""), `"agent"`, `"quorum":2,"agent"`, 1), []string{"remember", "quorum"}},
		{off, "off", rememberAsk("off", "a", "ops", ""), []string{"remember", "not turned on"}},
	} {
		tc.h.ask(tc.body)
		r := tc.h.result(tc.id, 5*time.Second)
		for _, w := range tc.want {
			if r.Status != askbridge.StatusError || !strings.Contains(r.Error, w) {
				t.Errorf("%s: result %+v; want an error naming %q", tc.id, r, w)
			}
		}
	}
}

// TestStandingUseRacesRevoke: on two replicas, a request and a revoke at
// once, a thousand times: every request gets one result, and none is
// answered by a standing answer whose revoke had returned before the
// request was pushed.
func TestStandingUseRacesRevoke(t *testing.T) {
	if testing.Short() {
		t.Skip("the full tier runs the race of a use against a revoke")
	}
	t.Parallel()
	prefix := fmt.Sprintf("enginetest%d:", prefixSeq.Add(1))
	clock := newClock()
	a := newHarness(t, harnessOpts{standing: true, prefix: prefix, replica: "a", clock: clock})
	b := newHarness(t, harnessOpts{standing: true, prefix: prefix, replica: "b", clock: clock})
	ctx := context.Background()
	shape := askbridge.Shape([]askbridge.Question{{ID: "deploy_target", Options: []askbridge.Option{{Label: "Staging"}, {Label: "Production"}}}})
	base := clock.Now()
	used := 0
	for i := range 1000 {
		s := engine.StandingAnswer{
			Agent: "race", Key: "deploy:prod", Shape: shape, Answers: map[string][]string{"deploy_target": {"Production"}},
			By: alice, Since: base.Add(time.Duration(i) * time.Millisecond), Until: base.Add(time.Hour), Gen: fmt.Sprintf("g%d", i),
			Target: askbridge.Target{Platform: "telegram", Chat: "ops-room"},
		}
		if set, err := a.store.SetStanding(ctx, s); err != nil || !set {
			t.Fatalf("round %d: set = %v, %v", i, set, err)
		}
		id := fmt.Sprintf("race-%d", i)
		revoke := func() {
			revoker := []*harness{a, b}[i%2]
			if _, err := revoker.engine.Revoke(ctx, "race", "deploy:prod", nil); err != nil {
				t.Error(err)
			}
		}
		// A third of the rounds, the revoke returns before the request is
		// pushed; the others, it runs while the request is taken in.
		revokedFirst := i%3 == 0
		var wg sync.WaitGroup
		if revokedFirst {
			revoke()
		}
		a.ask(rememberAsk(id, "race", "ops", ""))
		if !revokedFirst {
			wg.Add(1)
			go func() { defer wg.Done(); revoke() }()
		}
		wg.Wait()
		var rec engine.Record
		testwait.For(t, 10*time.Second, "the request handled", func() bool {
			got, found, err := a.store.Get(ctx, id)
			rec = got
			return err == nil && found
		})
		if rec.Status == askbridge.StatusPending {
			// Shown as usual: cancelled, for its one result.
			if _, err := b.engine.Cancel(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
		r := a.result(id, 10*time.Second)
		if r.Via == askbridge.ViaStanding && revokedFirst {
			t.Fatalf("round %d: answered by a standing answer revoked before the request", i)
		}
		if r.Via == askbridge.ViaStanding {
			used++
		}
		if n := a.resultCount(id); n != 0 {
			t.Fatalf("round %d: %d more results after the first", i, n)
		}
	}
	t.Logf("%d of 1000 requests answered by the standing answer", used)
	if used == 0 {
		t.Error("no request was answered by the standing answer: the race was never run")
	}
}
