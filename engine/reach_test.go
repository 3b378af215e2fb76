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
	"github.com/askbridge/askbridge/internal/testwait"
)

// askIn is a one-question request shown in the places to (JSON), with the
// extra fields extra (JSON object members, or "").
func askIn(id, to, extra string) string {
	body := fmt.Sprintf(`{"id":%q,"to":%s,"timeoutSeconds":600,"questions":[{"id":"deploy_target","header":"Target","question":"Where should this deploy?","options":[{"label":"Staging"},{"label":"Production"}]}]`, id, to)
	if extra != "" {
		body += "," + extra
	}
	return body + "}"
}

// events reads every event of question id from the events stream.
func (h *harness) events(id string) []askbridge.Event {
	h.t.Helper()
	evs, _, err := h.store.Events(context.Background(), "0", 100000, 0)
	if err != nil {
		h.t.Fatal(err)
	}
	var out []askbridge.Event
	for _, ev := range evs {
		if ev.ID == id {
			out = append(out, ev)
		}
	}
	return out
}

func kinds(evs []askbridge.Event) []string {
	var out []string
	for _, ev := range evs {
		s := string(ev.Kind)
		if ev.To != "" {
			s += ":" + ev.To
		}
		out = append(out, s)
	}
	return out
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	waitWithin(t, 5*time.Second, what, cond)
}

// waitWithin polls cond for up to d.
func waitWithin(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	if !testwait.Until(d, cond) {
		t.Fatalf("never: %s", what)
	}
}

// seenButton is the index of p's Seen button.
func seenButton(p sentPrompt) int {
	return slices.IndexFunc(p.plan.Buttons(), func(b engine.Button) bool { return b.Choice.Kind == askbridge.ControlSeen })
}

func (f *fakeChannel) snapshot() (rem []reminder, deleted map[string]bool, updated map[string]engine.Plan) {
	f.mu.Lock()
	defer f.mu.Unlock()
	deleted, updated = map[string]bool{}, map[string]engine.Plan{}
	for k, v := range f.deleted {
		deleted[k] = v
	}
	for k, v := range f.updated {
		updated[k] = v
	}
	return slices.Clone(f.reminders), deleted, updated
}

// TestEngineSeveralPlaces: a question shown in two chats at once is
// answered in the second; every message in both is finished naming who
// answered and where, and the result says where.
func TestEngineSeveralPlaces(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	id := h.ask(askIn("places-1", `["telegram:a","ops"]`, ""))
	sent := h.waitSent(2)
	chats := []string{sent[0].chat, sent[1].chat}
	slices.Sort(chats)
	if !slices.Equal(chats, []string{"a", "ops-room"}) {
		t.Fatalf("shown in %v", chats)
	}
	var inOps sentPrompt
	for _, p := range sent {
		if p.chat == "ops-room" {
			inOps = p
		}
	}
	bob := askbridge.Person{Platform: "telegram", ID: "bob", Name: "Bob"}
	if r := h.engine.Tap(context.Background(), engine.Tap{EventID: "p1", Message: inOps.refs[0], Person: bob, Payload: inOps.plan.Buttons()[1].Payload}); r.Notice != engine.NoticeRecorded {
		t.Fatalf("tap told %s", r.Notice)
	}
	res := h.result(id, 2*time.Second)
	if res.Place != "ops" || res.AnsweredBy == nil || res.AnsweredBy.ID != "bob" {
		t.Fatalf("result %+v: want answered by bob in ops", res)
	}
	want := "Answered by Bob in ops: Production"
	for _, p := range sent {
		h.waitStatus(p.refs[0].Message, want)
	}
	evs := kinds(h.events(id))
	if !slices.Contains(evs, "requested") || !slices.Contains(evs, "answered") || slices.Index(evs, "delivered") < 0 {
		t.Errorf("events %v", evs)
	}
}

// TestEnginePlaceUndeliverable: one place refusing for good is an event
// naming it while the question stays open in the other, where it is
// answered; when every place refuses, the question ends undeliverable.
func TestEnginePlaceUndeliverable(t *testing.T) {
	t.Parallel()
	ch := newFakeChannel("telegram")
	ch.failChat = map[string]error{
		"gone":  &engine.SendError{Kind: engine.Permanent, Reason: "Bad Request: chat not found"},
		"gone2": &engine.SendError{Kind: engine.Permanent, Reason: "Forbidden: bot was kicked"},
	}
	h := newHarness(t, harnessOpts{ch: ch})
	id := h.ask(askIn("half-1", `["telegram:gone","ops"]`, ""))
	sent := h.waitSent(1)
	waitFor(t, "undeliverable event for the gone place", func() bool {
		return slices.Contains(kinds(h.events(id)), "undeliverable:telegram:gone")
	})
	if r := tap(h, sent[0], 0, alice, "h1"); r.Notice != engine.NoticeRecorded {
		t.Fatalf("tap in the place that works told %s", r.Notice)
	}
	if res := h.result(id, 2*time.Second); res.Status != askbridge.StatusAnswered {
		t.Fatalf("result %+v", res)
	}

	id2 := h.ask(askIn("half-2", `["telegram:gone","telegram:gone2"]`, ""))
	res := h.result(id2, 3*time.Second)
	if res.Status != askbridge.StatusNoAnswer || res.Reason != askbridge.ReasonUndeliverable ||
		!strings.Contains(res.Error, "telegram:gone") || !strings.Contains(res.Error, "telegram:gone2") {
		t.Fatalf("every place failed: result %+v", res)
	}
}

// TestEnginePlaceAnswerers: each place's route decides who may answer
// there, and the request's answerers narrow every place.
func TestEnginePlaceAnswerers(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	id := h.ask(askIn("who-1", `["telegram:a","telegram:b"]`, `"answerers":["telegram:carol"]`))
	sent := h.waitSent(2)
	if r := tap(h, sent[0], 0, alice, "w1"); r.Notice != engine.NoticeNotForYou {
		t.Fatalf("alice, not an answerer, told %s", r.Notice)
	}
	carol := askbridge.Person{Platform: "telegram", ID: "carol"}
	if r := tap(h, sent[1], 0, carol, "w2"); r.Notice != engine.NoticeRecorded {
		t.Fatalf("carol told %s", r.Notice)
	}
	h.result(id, 2*time.Second)
}

// TestEngineDMReplyJudgedInItsPlace: a plain reply (no reply-to) in the DM
// the bridge opened for carol, whose id is not the target's, is judged
// against carol's place, where she may answer, not against the first place
// on the platform, where she may not.
func TestEngineDMReplyJudgedInItsPlace(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	id := h.ask(askIn("dm-1", `["only-bob","only-@carol"]`, ""))
	sent := h.waitSent(2)
	h.waitHandled()
	dm := sent[1].refs[0].Chat
	if sent[0].refs[0].Chat == dm || dm != "dm-carol" {
		t.Fatalf("prompts in %s and %s, want carol's in her DM", sent[0].refs[0].Chat, dm)
	}
	carol := askbridge.Person{Platform: "telegram", ID: "carol"}
	if out := reply(h, dm, "", "2", carol); !out.Claimed {
		t.Fatalf("carol's reply in her DM not taken: %+v", out)
	}
	r := h.result(id, 2*time.Second)
	if r.Status != askbridge.StatusAnswered || r.AnsweredBy.ID != "carol" || r.Answers.Answers["deploy_target"][0] != "Production" {
		t.Fatalf("result %+v", r)
	}
}

// TestEngineRemindersAndSeen: reminders come every remindEverySeconds
// under the prompt in every place, at most three, on the simulated clock;
// Seen stops them, edits every prompt, and is in the result; the end
// deletes the reminders.
func TestEngineRemindersAndSeen(t *testing.T) {
	t.Parallel()
	m := &reachCounter{}
	h := newHarness(t, harnessOpts{metrics: m})
	id := h.ask(askIn("remind-1", `["telegram:a","ops"]`, `"remindEverySeconds":60`))
	sent := h.waitSent(2)
	h.waitHandled()
	if got := sent[0].plan.Buttons(); got[len(got)-1].Choice.Kind != askbridge.ControlSeen {
		t.Fatalf("no Seen button: %+v", got)
	}
	remindersAfter := func(d time.Duration, want int) {
		t.Helper()
		h.advance(d)
		waitFor(t, fmt.Sprintf("%d reminders", want), func() bool {
			rem, _, _ := h.ch.snapshot()
			return len(rem) == want
		})
	}
	remindersAfter(59*time.Second, 0)
	remindersAfter(time.Second, 2)
	rem, _, _ := h.ch.snapshot()
	for _, r := range rem {
		if !strings.HasPrefix(r.text, "Still waiting for your answer — 9 min left") {
			t.Errorf("reminder says %q", r.text)
		}
		if r.under != sent[0].refs[0].Message && r.under != sent[1].refs[0].Message {
			t.Errorf("reminder under %s, not a prompt", r.under)
		}
	}
	remindersAfter(60*time.Second, 4)

	// Seen: no more reminders, every prompt says who saw it.
	if r := tap(h, sent[0], seenButton(sent[0]), alice, "seen-1"); r.Notice != engine.NoticeSeen {
		t.Fatalf("Seen told %s", r.Notice)
	}
	if r := tap(h, sent[1], seenButton(sent[1]), alice, "seen-2"); r.Notice != engine.NoticeAlreadySeen {
		t.Fatalf("second Seen told %s", r.Notice)
	}
	waitFor(t, "both prompts updated", func() bool {
		_, _, up := h.ch.snapshot()
		return len(up) == 2
	})
	_, _, up := h.ch.snapshot()
	for msg, p := range up {
		if !slices.Contains(p.Notes, "Seen by Alice") || slices.ContainsFunc(p.Buttons(), func(b engine.Button) bool { return b.Choice.Kind == askbridge.ControlSeen }) {
			t.Errorf("prompt %s updated to notes %v, buttons %+v", msg, p.Notes, p.Buttons())
		}
	}
	h.advance(2 * time.Minute)
	time.Sleep(50 * time.Millisecond) // no reminder must come: real time for a wrong one to
	if rem, _, _ := h.ch.snapshot(); len(rem) != 4 {
		t.Fatalf("%d reminders after Seen, want 4", len(rem))
	}

	if r := tap(h, sent[0], 1, alice, "answer"); r.Notice != engine.NoticeRecorded {
		t.Fatalf("answer told %s", r.Notice)
	}
	res := h.result(id, 2*time.Second)
	if res.AcknowledgedBy == nil || res.AcknowledgedBy.ID != "alice" {
		t.Fatalf("result %+v: want acknowledgedBy alice", res)
	}
	waitFor(t, "reminders deleted", func() bool {
		_, del, _ := h.ch.snapshot()
		return len(del) == 4
	})
	evs := kinds(h.events(id))
	if n := strings.Count(strings.Join(evs, " "), "reminded:"); n != 2 {
		t.Errorf("%d reminded events, want 2: %v", n, evs)
	}
	if !slices.ContainsFunc(evs, func(s string) bool { return strings.HasPrefix(s, "acknowledged:") }) {
		t.Errorf("no acknowledged event: %v", evs)
	}
	if got := m.counts(); got["reminded telegram"] != 4 || got["acknowledged telegram"] != 1 {
		t.Errorf("metrics counted %v; want 4 reminded and 1 acknowledged", got)
	}
}

// reachCounter counts what Metrics.Reached is told.
type reachCounter struct {
	panicCounter
	mu sync.Mutex
	n  map[string]int
}

func (r *reachCounter) Reached(kind askbridge.EventKind, platform string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == nil {
		r.n = map[string]int{}
	}
	r.n[string(kind)+" "+platform]++
}

func (r *reachCounter) counts() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for k, v := range r.n {
		out[k] = v
	}
	return out
}

// TestEngineEscalation: a two-step ladder fires in order on the simulated
// clock, each step showing the question in its places with the line saying
// why, until someone presses Seen; the second step never comes.
func TestEngineEscalation(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	id := h.ask(askIn("esc-1", `"ops"`, `"escalate":[{"afterSeconds":120,"to":"telegram:lead"},{"afterSeconds":300,"to":["telegram:boss","telegram:cto"]}]`))
	if first := h.waitSent(1)[0]; first.chat != "ops-room" || len(first.plan.Notes) != 0 {
		t.Fatalf("first shown in %s with notes %v", first.chat, first.plan.Notes)
	}
	h.waitHandled()
	h.advance(2 * time.Minute)
	lead := h.waitSent(2)[1]
	if lead.chat != "lead" || !slices.Contains(lead.plan.Notes, "No answer after 2 min, so this is asked here too.") {
		t.Fatalf("step 1 shown in %s with notes %v", lead.chat, lead.plan.Notes)
	}
	// The lead has seen it: step 2 does not come.
	if r := tap(h, lead, seenButton(lead), alice, "seen"); r.Notice != engine.NoticeSeen {
		t.Fatalf("Seen told %s", r.Notice)
	}
	h.advance(4 * time.Minute)
	time.Sleep(100 * time.Millisecond) // step 2 must not come: real time for a wrong one to
	if n := len(h.ch.sends()); n != 2 {
		t.Fatalf("shown %d times; step 2 came after Seen", n)
	}
	h.engine.Cancel(context.Background(), id)
	evs := kinds(h.events(id))
	if !slices.Contains(evs, "escalated:telegram:lead") || slices.ContainsFunc(evs, func(s string) bool { return strings.HasPrefix(s, "escalated:telegram:boss") }) {
		t.Errorf("events %v", evs)
	}
}

// TestEngineSeenByText: "seen" (or a language's word) in reply to a prompt
// acknowledges; in a request without reminders or escalation it is an
// answer in the person's own words.
func TestEngineSeenByText(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	id := h.ask(askIn("seen-text", `"ops"`, `"remindEverySeconds":120`))
	sent := h.waitSent(1)
	out := reply(h, "ops-room", sent[0].refs[0].Message, "รับทราบ", alice)
	if !out.Claimed || out.Respond != "Marked as seen. The question stays open." {
		t.Fatalf("seen reply: %+v", out)
	}
	rec, _, _ := h.store.Get(context.Background(), id)
	if rec.Acknowledged == nil || rec.Status != askbridge.StatusPending {
		t.Fatalf("after seen: %+v", rec)
	}
	id2 := h.ask(askIn("seen-text-2", `"ops"`, ""))
	sent = h.waitSent(2)
	reply(h, "ops-room", sent[1].refs[0].Message, "seen", alice)
	if res := h.result(id2, 2*time.Second); res.Status != askbridge.StatusAnswered || res.Answers.Answers["deploy_target"][0] != "seen" {
		t.Fatalf("seen without reminders: %+v", res)
	}
}

// TestEngineSeenByMark: a mark on a prompt (a reaction) acknowledges as
// the Seen button does, once per mark; it never answers: a question
// without reminders or escalation offers no Seen, and a message of no
// question or an ended one is told so, not acknowledged.
func TestEngineSeenByMark(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	ctx := context.Background()
	id := h.ask(askIn("seen-mark", `"ops"`, `"remindEverySeconds":120`))
	sent := h.waitSent(1)
	mark := func(p sentPrompt, who askbridge.Person, event string) engine.Notice {
		t.Helper()
		n, err := h.engine.MarkSeen(ctx, engine.SeenMark{EventID: event, Message: p.refs[0], Person: who})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := mark(sent[0], alice, "m1"); n != engine.NoticeSeen {
		t.Fatalf("first mark told %s", n)
	}
	if n := mark(sent[0], alice, "m1"); n != engine.NoticeDuplicate {
		t.Errorf("the same mark again told %s, want Duplicate", n)
	}
	if n := mark(sent[0], bob, "m2"); n != engine.NoticeAlreadySeen {
		t.Errorf("bob's mark told %s, want AlreadySeen", n)
	}
	rec, _, _ := h.store.Get(ctx, id)
	if rec.Acknowledged == nil || rec.Acknowledged.ID != "alice" || rec.Status != askbridge.StatusPending {
		t.Fatalf("after the mark: %+v", rec)
	}
	if !slices.Contains(kinds(h.events(id)), string(askbridge.EventAcknowledged)+":telegram:ops-room") {
		t.Errorf("events %v, want acknowledged", kinds(h.events(id)))
	}
	id2 := h.ask(askIn("seen-mark-2", `"ops"`, ""))
	sent = h.waitSent(2)
	if n := mark(sent[1], alice, "m3"); n != engine.NoticeUnknown {
		t.Errorf("a mark on a question without Seen told %s, want Unknown", n)
	}
	if rec, _, _ := h.store.Get(ctx, id2); rec.Acknowledged != nil || rec.Status != askbridge.StatusPending {
		t.Errorf("a question without Seen after a mark: %+v", rec)
	}
	gone := sentPrompt{refs: []engine.MessageRef{{Platform: "telegram", Chat: "ops-room", Message: "999999"}}}
	if n := mark(gone, alice, "m4"); n != engine.NoticeUnknown {
		t.Errorf("a mark on a message of no question told %s, want Unknown", n)
	}
	h.engine.Cancel(ctx, id)
	h.result(id, 2*time.Second)
	if n := mark(sent[0], bob, "m5"); n != engine.NoticeCancelled {
		t.Errorf("a mark on an ended question told %s, want Cancelled", n)
	}
}

// TestEngineReachRefusals: every bad combination is refused naming the
// field.
func TestEngineReachRefusals(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	for i, tc := range []struct{ to, extra, want string }{
		{`["ops","ops"]`, "", "to[1] repeats to[0]"},
		{`["a","b","c","d","e","f"]`, "", "to must list 1 to 5 places"},
		{`[]`, "", "to must list 1 to 5 places"},
		{`["ops","telegram:ops-room"]`, "", "leads to telegram:ops-room"},
		{`["ops","nowhere"]`, "", `to[1]: unknown route "nowhere"`},
		{`"ops"`, `"escalate":[{"afterSeconds":60,"to":"nowhere"}]`, `escalate[0].to: unknown route "nowhere"`},
		{`"ops"`, `"remindEverySeconds":30`, "remindEverySeconds must be at least 60"},
		{`"ops"`, `"remindEverySeconds":600`, "remindEverySeconds (600) must be below timeoutSeconds (600)"},
		{`"ops"`, `"escalate":[]`, "escalate must be a list of 1 to 3 steps"},
		{`"ops"`, `"escalate":[{"afterSeconds":60,"to":"telegram:x"},{"afterSeconds":60,"to":"telegram:y"}]`, "escalate[1].afterSeconds (60) must be greater than escalate[0].afterSeconds (60)"},
		{`"ops"`, `"escalate":[{"afterSeconds":700,"to":"telegram:x"}]`, "escalate[0].afterSeconds (700) must be below timeoutSeconds (600)"},
		{`"ops"`, `"escalate":[{"to":"telegram:x"}]`, "escalate[0].afterSeconds is required"},
		{`"ops"`, `"escalate":[{"afterSeconds":60}]`, "escalate[0].to is required"},
		{`"ops"`, `"escalate":[{"afterSeconds":60,"to":"ops"}]`, "escalate[0].to (ops) leads to telegram:ops-room"},
		{`"ops"`, `"escalate":[{"afterSeconds":60,"to":"telegram:x","when":1}]`, `escalate[0]."when" is not a known field`},
	} {
		id := h.ask(askIn(fmt.Sprint("bad-reach-", i), tc.to, tc.extra))
		res := h.result(id, 2*time.Second)
		if res.Status != askbridge.StatusError || !strings.Contains(res.Error, tc.want) {
			t.Errorf("to %s %s: result %q, want an error with %q", tc.to, tc.extra, res.Error, tc.want)
		}
	}
}

// TestEngineTimersOnceAcrossReplicas: two replicas share 1,000 questions
// with reminders and a two-step ladder; every timer fires exactly once
// (counted from the events stream and from what was posted), and no
// question ends with a live prompt.
func TestEngineTimersOnceAcrossReplicas(t *testing.T) {
	t.Parallel()
	const questions = 1000
	ch := newFakeChannel("telegram")
	clock := newClock()
	// A hold of 7 s: a timer in hand (due again at now+7s) is told from
	// the timers still to come (multiples of 30 s from the asks).
	const hold = 7 * time.Second
	a := newHarness(t, harnessOpts{ch: ch, replica: "a", clock: clock, timerHold: hold})
	b := newHarness(t, harnessOpts{ch: ch, replica: "b", prefix: a.prefix, clock: clock, timerHold: hold})
	// settled: no timer due or coming back within 2 s, and none fired or
	// removed for 300 ms (so none in hand). A timer that met another of
	// its question on the other replica comes back a second later: the
	// clock moves on by a second when all is quiet but such a timer.
	lastCard, quietSince := int64(-1), time.Now()
	settled := func() bool {
		ctx := context.Background()
		card, err := a.agent.ZCard(ctx, a.prefix+"timers").Result()
		if err != nil {
			t.Fatal(err)
		}
		if card != lastCard {
			lastCard, quietSince = card, time.Now()
			return false
		}
		if time.Since(quietSince) < 300*time.Millisecond {
			return false
		}
		soon, err := a.agent.ZCount(ctx, a.prefix+"timers", "-inf", fmt.Sprint(clock.Now().Add(2*time.Second).UnixMilli())).Result()
		if err != nil {
			t.Fatal(err)
		}
		if soon > 0 {
			clock.Advance(time.Second)
			quietSince = time.Now()
			return false
		}
		return true
	}
	ids := make([]string, questions)
	for i := range questions {
		ids[i] = a.ask(askIn(fmt.Sprint("many-", i), `"ops"`, `"remindEverySeconds":60,"escalate":[{"afterSeconds":90,"to":"telegram:lead"},{"afterSeconds":150,"to":"telegram:boss"}]`))
	}
	a.waitSent(questions)
	a.waitHandled()
	for range 4 {
		if err := clock.BlockUntilContext(context.Background(), 2*engineTickers); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Minute)
		// Let both replicas fire what is due before the clock moves on.
		// Generous: a pass over 1,000 questions under -race on a shared
		// machine takes seconds.
		waitWithin(t, time.Minute, "timers fired", settled)
	}
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			h := []*harness{a, b}[i%2]
			h.engine.Cancel(context.Background(), id)
		})
	}
	wg.Wait()
	rem, _, _ := ch.snapshot()
	// 3 reminders (60, 120, 180 s) in the places shown by then: ops from
	// the start, lead from 90 s, boss from 150 s.
	wantReminders := questions * (1 + 2 + 3)
	if len(rem) != wantReminders {
		t.Errorf("%d reminders posted, want %d", len(rem), wantReminders)
		debugReminders(t, a, ids)
	}
	if n := len(ch.sends()); n != questions*3 {
		t.Errorf("%d prompts posted, want %d", n, questions*3)
	}
	evs, _, err := a.store.Events(context.Background(), "0", 1000000, 0)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, ev := range evs {
		count[string(ev.Kind)]++
	}
	if count["reminded"] != questions*3 || count["escalated"] != questions*2 {
		t.Errorf("events %v: want %d reminded and %d escalated", count, questions*3, questions*2)
	}
	waitWithin(t, time.Minute, "every prompt finished and every reminder deleted", func() bool {
		_, del, _ := ch.snapshot()
		ch.mu.Lock()
		defer ch.mu.Unlock()
		return len(del) == wantReminders && len(ch.finished) == questions*3
	})
}

func debugReminders(t *testing.T, h *harness, ids []string) {
	for _, id := range ids {
		refs, _ := h.store.Messages(context.Background(), id)
		n := 0
		for _, r := range refs {
			if r.IsReminder() {
				n++
			}
		}
		if n != 6 {
			t.Logf("%s: %d reminders: %+v", id, n, refs)
			return
		}
	}
}

// TestReached: a place of `to` is reached at once; a place of an
// escalation step once the step's timer has fired, or, before the record
// says so, once a prompt is recorded in it (a reminder is no prompt).
// Messages are read only when the record does not say.
func TestReached(t *testing.T) {
	rec := engine.Record{Places: []askbridge.Place{
		{Name: "telegram:42", Target: askbridge.Target{Platform: "telegram", Chat: "42"}},
		{Name: "web", Target: askbridge.Target{Platform: "web"}, Step: 1},
		{Name: "slack:C1", Target: askbridge.Target{Platform: "slack", Chat: "C1"}, Step: 2},
	}}
	prompt := func(k int) engine.MessageRef { return engine.MessageRef{Platform: "x", Message: "m", Place: k} }
	reminder := func(k int) engine.MessageRef {
		return engine.MessageRef{Platform: "x", Message: "r", Place: k, Part: engine.ReminderPart(1)}
	}
	cases := []struct {
		name  string
		fired []string
		refs  []engine.MessageRef
		k     int
		want  bool
		reads bool
	}{
		{"a place of to", nil, nil, 0, true, false},
		{"a step not taken", nil, []engine.MessageRef{prompt(0)}, 1, false, true},
		{"a step fired", []string{"e1"}, nil, 1, true, false},
		{"another step fired", []string{"e2"}, []engine.MessageRef{prompt(2)}, 1, false, true},
		{"a step's prompt recorded before it is marked fired", nil, []engine.MessageRef{prompt(0), prompt(1)}, 1, true, true},
		{"only a reminder in the place", nil, []engine.MessageRef{reminder(1)}, 1, false, true},
		{"no such place", []string{"e1"}, nil, 3, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := rec
			r.Fired = tc.fired
			read := false
			got, err := r.Reached(tc.k, func() ([]engine.MessageRef, error) { read = true; return tc.refs, nil })
			if err != nil || got != tc.want || read != tc.reads {
				t.Errorf("Reached(%d) = %v, %v, messages read %v; want %v, read %v", tc.k, got, err, read, tc.want, tc.reads)
			}
		})
	}
	if _, err := rec.Reached(1, func() ([]engine.MessageRef, error) { return nil, fmt.Errorf("redis down") }); err == nil {
		t.Error("an error reading the messages was not returned")
	}
}

// TestEngineTapBeforeTheStepsRecord: a tap on an escalation step's prompt
// that comes the instant it is posted, before it is recorded, answers: the
// step's chat is indexed before its prompt goes out, so the inbox finds
// the question and adopts the message (as for the first places, which the
// create indexes).
func TestEngineTapBeforeTheStepsRecord(t *testing.T) {
	t.Parallel()
	ch := newFakeChannel("telegram")
	tapped := make(chan engine.TapReply, 1)
	var h *harness
	bob := askbridge.Person{Platform: "telegram", ID: "bob"}
	ch.beforeSent = func(ref engine.MessageRef) {
		if ref.Chat != "lead" {
			return
		}
		s := ch.sends()
		p := s[len(s)-1]
		tapped <- h.engine.Tap(context.Background(), engine.Tap{EventID: "early-step", Message: ref, Person: bob, Payload: p.plan.Buttons()[1].Payload})
	}
	h = newHarness(t, harnessOpts{ch: ch})
	id := h.ask(askIn("step-tap", `"ops"`, `"escalate":[{"afterSeconds":60,"to":"telegram:lead"}]`))
	h.waitSent(1)
	h.waitHandled()
	h.advance(time.Minute)
	if r := <-tapped; r.Notice != engine.NoticeRecorded {
		t.Fatalf("tap on the step's prompt before its record: %q, want %q", r.Notice, engine.NoticeRecorded)
	}
	if res := h.result(id, 2*time.Second); res.AnsweredBy == nil || res.AnsweredBy.ID != "bob" || res.Answers.Answers["deploy_target"][0] != "Production" {
		t.Fatalf("result %+v", res)
	}
}
