package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/testwait"
)

// t0 is the fixed "now" of the tests: every time the store is handed is
// derived from it, so results and goldens are stable.
var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func sampleRequest(id string) askbridge.Request {
	return askbridge.Request{
		ID: id,
		To: askbridge.ToList{"telegram:42"},
		Questions: []askbridge.Question{{
			ID:       "deploy_target",
			Header:   "Target",
			Question: "Where should this deploy?",
			Options:  []askbridge.Option{{Label: "Staging (Recommended)", Description: "Safer default"}, {Label: "Production"}},
		}},
		TimeoutSeconds: 900,
	}
}

// newQ is a question created at created with the given timeout, shown on
// telegram chat 42, answerable by telegram:7.
func newQ(id string, created time.Time, timeout time.Duration) engine.NewQuestion {
	return engine.NewQuestion{
		ID:        id,
		Request:   sampleRequest(id),
		Target:    askbridge.Target{Platform: "telegram", Chat: "42"},
		Answerers: []string{"telegram:7"},
		Created:   created,
		Deadline:  created.Add(timeout),
	}
}

func answered(id string) askbridge.Result {
	return askbridge.Answered(id, map[string][]string{"deploy_target": {"Production"}},
		&askbridge.Person{Platform: "telegram", ID: "7", Name: "Ada"}, askbridge.ViaButton)
}

// sameJSON compares two values by their JSON encoding.
func sameJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustCreate(t testing.TB, s *Store, q engine.NewQuestion) {
	t.Helper()
	created, _, err := s.Create(ctxT(t), q)
	if err != nil || !created {
		t.Fatalf("Create(%s) = %v, %v; want created", q.ID, created, err)
	}
}

// TestConformance runs the whole suite against a real redis-server, a
// three-master Redis Cluster and the embedded server; under -short (the
// fast tier) against the redis-server alone.
func TestConformance(t *testing.T) {
	backends := allBackends()
	if !testing.Short() {
		// The bridge autopipelines the calls of a burst; the suite runs on
		// real servers once more with every call autopipelined.
		backends = append(backends, backendSingle.withAutoPipeline(), backendCluster.withAutoPipeline())
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			conformance(t, b)
		})
	}
}

// conformance is the suite every backend must pass.
func conformance(t *testing.T, b backend) {
	tests := []struct {
		name string
		run  func(t *testing.T, b backend)
	}{
		{"requests/entries", testRequestEntries},
		{"requests/max", testRequestMax},
		{"requests/oversize", testRequestOversize},
		{"agent/admit", testAdmit},
		{"cooldowns", testCooldowns},
		{"replay", testReplay},
		{"requests/block", testRequestBlock},
		{"requests/group-recreated", testRequestGroupRecreated},
		{"requests/claim-pacing", testRequestClaimPacing},
		{"create/idempotent", testCreateIdempotent},
		{"create/repairs-indexes", testCreateRepairs},
		{"create/holding", testCreateHolding},
		{"create/batch", testCreateBatch},
		{"end/first-writer-wins", testEnd},
		{"end/past-deadline", testEndPastDeadline},
		{"end/marked", testMarkAndEnd},
		{"reject", testReject},
		{"get", testGet},
		{"lookup", testLookup},
		{"sweep", testSweep},
		{"sweep/unknown-ids", testSweepUnknown},
		{"sweep/claims", testSweepClaims},
		{"sweep/next", testSweepNext},
		{"pending", testPending},
		{"messages", testMessages},
		{"messages/same-message", testMessagesSameMessage},
		{"messages/limit", testMessagesLimit},
		{"messages/legacy-list", testMessagesLegacyList},
		{"messages/either-replica", testMessagesEitherReplica},
		{"messages/shown-at-create", testMessagesShownAtCreate},
		{"messages/agent-place", testMessagesAgentPlace},
		{"indexes/prune", testIndexPrune},
		{"first-seen", testFirstSeen},
		{"leases", testLeases},
		{"leases/expiry", testLeaseExpiry},
		{"leases/text-cursor", testTextCursor},
		{"events", testEvents},
		{"events/block", testEventsBlock},
		{"events/maxlen", testEventsMaxLen},
		{"agent-protocol", testAgentProtocol},
		{"race/50-answers", testRace50Answers},
		{"race/answer-timeout-cancel", testRaceAnswerTimeoutCancel},
		{"race/2000-sweeps", testRaceSweeps},
		{"race/dead-consumer", testRaceDeadConsumer},
		{"vote", testVote},
		{"reach", testReach},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, b)
		})
	}
}

func testRequestEntries(t *testing.T, b backend) {
	s := newStore(t, b, Options{})
	ctx := ctxT(t)
	add := func(values ...any) string {
		id, err := s.rdb.XAdd(ctx, &redis.XAddArgs{Stream: s.k.Requests(), Values: values}).Result()
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	ask := add("ask", `{"questions":[]}`)
	cancel := add("cancel", "q-1")
	both := add("ask", "{}", "cancel", "q-1")
	neither := add("note", "hello")
	empty := add("cancel", "")
	extra := add("ask", "{}", "trace", "abc")
	answer := add("answer", `{"id":"q-1"}`, "trace", "abc")
	twice := add("answer", "{}", "cancel", "q-1")

	got, err := s.ReadRequests(ctx, 10, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []engine.Entry{
		{StreamID: ask, Ask: []byte(`{"questions":[]}`)},
		{StreamID: cancel, Cancel: "q-1"},
		{StreamID: both, Malformed: "entry has more than one of the fields ask, cancel, answer and revoke: ask, cancel"},
		{StreamID: neither, Malformed: "entry has none of the fields ask, cancel, answer and revoke"},
		{StreamID: empty, Malformed: "cancel entry names no question id"},
		{StreamID: extra, Ask: []byte(`{}`)},
		{StreamID: answer, Answer: []byte(`{"id":"q-1"}`)},
		{StreamID: twice, Malformed: "entry has more than one of the fields ask, cancel, answer and revoke: cancel, answer"},
	}
	if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
		t.Fatalf("entries:\n got %+v\nwant %+v", got, want)
	}
	// The first alone, the others together; a repeat is harmless.
	if err := s.AckRequest(ctx, got[0].StreamID); err != nil {
		t.Fatal(err)
	}
	var rest []string
	for _, e := range got[1:] {
		rest = append(rest, e.StreamID)
	}
	if err := s.AckRequest(ctx, rest...); err != nil {
		t.Fatal(err)
	}
	for _, e := range got {
		if err := s.AckRequest(ctx, e.StreamID); err != nil {
			t.Fatalf("repeated ack: %v", err)
		}
	}
	if err := s.AckRequest(ctx); err != nil {
		t.Fatalf("ack of nothing: %v", err)
	}
	if n := s.rdb.XLen(ctx, s.k.Requests()).Val(); n != 0 {
		t.Fatalf("acknowledged entries left in the stream: %d", n)
	}
	again, err := s.ReadRequests(ctx, 10, 0)
	if err != nil || len(again) != 0 {
		t.Fatalf("after ack: %v, %v", again, err)
	}
}

func testRequestMax(t *testing.T, b backend) {
	s := newStore(t, b, Options{})
	ctx := ctxT(t)
	for i := range 25 {
		s.rdb.XAdd(ctx, &redis.XAddArgs{Stream: s.k.Requests(), Values: []any{"cancel", strconv.Itoa(i)}})
	}
	var sizes []int
	var all []string
	for {
		got, err := s.ReadRequests(ctx, 10, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			break
		}
		sizes = append(sizes, len(got))
		for _, e := range got {
			all = append(all, e.Cancel)
		}
	}
	if !slices.Equal(sizes, []int{10, 10, 5}) {
		t.Fatalf("batch sizes %v, want [10 10 5]", sizes)
	}
	for i, id := range all {
		if id != strconv.Itoa(i) {
			t.Fatalf("entry %d is %q: order lost", i, id)
		}
	}
}

func testRequestBlock(t *testing.T, b backend) {
	s := newStore(t, b, Options{})
	ctx := ctxT(t)
	start := time.Now()
	got, err := s.ReadRequests(ctx, 10, 0)
	if err != nil || len(got) != 0 {
		t.Fatalf("empty stream: %v, %v", got, err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("block 0 waited %v: it must not block", d)
	}
	start = time.Now()
	if got, err = s.ReadRequests(ctx, 10, 300*time.Millisecond); err != nil || len(got) != 0 {
		t.Fatalf("blocking read of an empty stream: %v, %v", got, err)
	}
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Fatalf("block 300ms returned after %v", d)
	}
	// An entry added while a reader blocks wakes it.
	go func() {
		// Sleep: the entry must come while the reader blocks, which nothing
		// reports on every backend (the in-process one has no CLIENT LIST).
		time.Sleep(100 * time.Millisecond)
		s.rdb.XAdd(context.Background(), &redis.XAddArgs{Stream: s.k.Requests(), Values: []any{"cancel", "late"}})
	}()
	start = time.Now()
	got, err = s.ReadRequests(ctx, 10, 5*time.Second)
	if err != nil || len(got) != 1 || got[0].Cancel != "late" {
		t.Fatalf("woken read: %v, %v", got, err)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Fatalf("woken read took %v", d)
	}
}

func testRequestGroupRecreated(t *testing.T, b backend) {
	s := newStore(t, b, Options{})
	ctx := ctxT(t)
	if _, err := s.ReadRequests(ctx, 10, 0); err != nil {
		t.Fatal(err)
	}
	// Someone deletes the stream, group and all.
	s.rdb.Del(ctx, s.k.Requests())
	s.rdb.XAdd(ctx, &redis.XAddArgs{Stream: s.k.Requests(), Values: []any{"cancel", "after"}})
	got, err := s.ReadRequests(ctx, 10, 0)
	if err != nil {
		t.Fatalf("read after the group vanished: %v", err)
	}
	if len(got) != 1 || got[0].Cancel != "after" {
		t.Fatalf("got %+v, want the entry added after the stream was deleted", got)
	}
}

// testRequestClaimPacing: after a claim pass, the next one waits
// ClaimIdle/2 on the store's clock, even when an entry has since been idle
// long enough in Redis to be claimed.
func testRequestClaimPacing(t *testing.T, b backend) {
	clock := clockwork.NewFakeClockAt(t0)
	rs := replicas(t, b, 2, Options{ClaimIdle: 200 * time.Millisecond, Clock: clock})
	dead, heir := rs[0], rs[1]
	ctx := ctxT(t)
	// A pass over an empty pending entries list.
	if got, err := heir.ReadRequests(ctx, 10, 0); err != nil || len(got) != 0 {
		t.Fatalf("read of an empty stream: %v, %v", got, err)
	}
	id := dead.rdb.XAdd(ctx, &redis.XAddArgs{Stream: dead.k.Requests(), Values: []any{"cancel", "orphan"}}).Val()
	if got, err := dead.ReadRequests(ctx, 10, 0); err != nil || len(got) != 1 {
		t.Fatalf("dying consumer read %v, %v", got, err)
	}
	// Redis counts the idle time: wait until the entry is claimable.
	waitFor(t, func() bool {
		p, err := dead.rdb.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: dead.k.Requests(), Group: dead.opts.Group, Start: "-", End: "+", Count: 1}).Result()
		return err == nil && len(p) == 1 && p[0].Idle >= heir.opts.ClaimIdle
	})
	// The store's clock has not moved since the last pass: none is due.
	if got, err := heir.ReadRequests(ctx, 10, 0); err != nil || len(got) != 0 {
		t.Fatalf("claimed before the next pass was due: %v, %v", got, err)
	}
	clock.Advance(heir.opts.ClaimIdle / 2)
	got, err := heir.ReadRequests(ctx, 10, 0)
	if err != nil || len(got) != 1 || got[0].StreamID != id || got[0].Cancel != "orphan" {
		t.Fatalf("claim once due: %+v, %v", got, err)
	}
}

// testRequestOversize: an entry over MaxEntryBytes comes back as its size
// and the head of its ask (or answer), from a batch read and from a claim alike (its
// body never leaves Redis), and from the blocking read that wakes an idle
// replica, which takes it in full and measures it here.
func testRequestOversize(t *testing.T, b backend) {
	clock := clockwork.NewFakeClockAt(t0)
	rs := replicas(t, b, 2, Options{ClaimIdle: 200 * time.Millisecond, Clock: clock})
	dead, heir := rs[0], rs[1]
	ctx := ctxT(t)
	if _, err := dead.ReadRequests(ctx, 10, 0); err != nil { // creates the group
		t.Fatal(err)
	}
	big := `{"id":"too-big","questions":[` + strings.Repeat(" ", askbridge.MaxEntryBytes) + `]}`
	add := func(values ...any) string {
		t.Helper()
		id, err := dead.rdb.XAdd(ctx, &redis.XAddArgs{Stream: dead.k.Requests(), Values: values}).Result()
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	bigAsk := add("ask", big)
	bigExtra := add("cancel", "q-1", "junk", strings.Repeat("x", 1<<20))
	small := add("cancel", "q-2")
	// At the limit is not over it.
	edge := add("ask", strings.Repeat("a", askbridge.MaxEntryBytes-len("ask")))
	bigAnswer := add("answer", big)

	check := func(label string, e engine.Entry, id string, size int, head string) {
		t.Helper()
		if e.StreamID != id || e.Oversize != size || string(e.Ask) != head || e.Cancel != "" || e.Malformed != "" {
			t.Fatalf("%s: got {%s oversize %d ask %d bytes cancel %q malformed %q}, want {%s oversize %d ask %d bytes}",
				label, e.StreamID, e.Oversize, len(e.Ask), e.Cancel, e.Malformed, id, size, len(head))
		}
	}
	checkAnswer := func(label string, e engine.Entry) {
		t.Helper()
		if e.StreamID != bigAnswer || e.Oversize != len("answer")+len(big) || string(e.Answer) != big[:oversizeHead] || e.Ask != nil || e.Malformed != "" {
			t.Fatalf("%s: got {%s oversize %d answer %d bytes ask %d bytes malformed %q}, want {%s oversize %d answer %d bytes}",
				label, e.StreamID, e.Oversize, len(e.Answer), len(e.Ask), e.Malformed, bigAnswer, len("answer")+len(big), oversizeHead)
		}
	}
	got, err := dead.ReadRequests(ctx, 10, 0)
	if err != nil || len(got) != 5 {
		t.Fatalf("batch read: %d entries, %v", len(got), err)
	}
	checkAnswer("batch, big answer", got[4])
	check("batch, big ask", got[0], bigAsk, len("ask")+len(big), big[:oversizeHead])
	check("batch, big extra field", got[1], bigExtra, len("cancel")+len("q-1")+len("junk")+1<<20, "")
	if got[2].StreamID != small || got[2].Cancel != "q-2" || got[2].Oversize != 0 {
		t.Fatalf("batch, small entry: %+v", got[2])
	}
	if got[3].StreamID != edge || got[3].Oversize != 0 || len(got[3].Ask) != askbridge.MaxEntryBytes-len("ask") {
		t.Fatalf("batch, entry at the limit: oversize %d, ask %d bytes", got[3].Oversize, len(got[3].Ask))
	}

	// The dead consumer never acknowledged them: the heir's claim measures
	// them in Redis as well.
	waitFor(t, func() bool {
		p, err := dead.rdb.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: dead.k.Requests(), Group: dead.opts.Group, Start: "-", End: "+", Count: 1}).Result()
		return err == nil && len(p) == 1 && p[0].Idle >= heir.opts.ClaimIdle
	})
	clock.Advance(heir.opts.ClaimIdle)
	got, err = heir.ReadRequests(ctx, 10, 0)
	if err != nil || len(got) != 5 {
		t.Fatalf("claim: %d entries, %v", len(got), err)
	}
	checkAnswer("claim, big answer", got[4])
	check("claim, big ask", got[0], bigAsk, len("ask")+len(big), big[:oversizeHead])
	check("claim, big extra field", got[1], bigExtra, len("cancel")+len("q-1")+len("junk")+1<<20, "")

	// An idle replica blocked on the stream.
	type read struct {
		got []engine.Entry
		err error
	}
	done := make(chan read, 1)
	go func() {
		got, err := heir.ReadRequests(ctx, 10, 5*time.Second)
		done <- read{got, err}
	}()
	// Sleep: the push must land while the reader blocks, which nothing
	// reports on every backend; should the reader come late, the batch
	// read takes it, cut.
	time.Sleep(50 * time.Millisecond)
	late := add("ask", big)
	r := <-done
	if r.err != nil || len(r.got) != 1 {
		t.Fatalf("blocking read: %d entries, %v", len(r.got), r.err)
	}
	head := big
	if len(r.got[0].Ask) == oversizeHead {
		head = big[:oversizeHead]
	}
	check("blocking read", r.got[0], late, len("ask")+len(big), head)
}

// testAdmit: the cap of pending questions per agent holds under concurrent
// requests, counts a retried id once, frees a place when a question ends
// (by End or by Sweep) or its deadline passes, and keeps agents apart.
func testAdmit(t *testing.T, b backend) {
	s := newStore(t, b, Options{AgentIndex: true})
	ctx := ctxT(t)
	const max = 5
	var admitted sync.Map
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			id := fmt.Sprintf("adm-%d", i)
			ok, _, err := s.Admit(ctx, "bot", id, t0.Add(time.Hour), t0, max)
			if err != nil {
				t.Error(err)
			}
			if ok {
				admitted.Store(id, true)
			}
		})
	}
	wg.Wait()
	var in []string
	admitted.Range(func(k, _ any) bool { in = append(in, k.(string)); return true })
	slices.Sort(in)
	if len(in) != max {
		t.Fatalf("%d admitted at once under a cap of %d: %v", len(in), max, in)
	}
	if ok, n, err := s.Admit(ctx, "bot", in[0], t0.Add(time.Hour), t0, max); err != nil || !ok || n != max {
		t.Fatalf("retried id: admitted %v, %d pending, %v", ok, n, err)
	}
	if ok, n, err := s.Admit(ctx, "bot", "adm-extra", t0.Add(time.Hour), t0, max); err != nil || ok || n != max {
		t.Fatalf("one over the cap: admitted %v, %d pending, %v", ok, n, err)
	}
	if ok, _, err := s.Admit(ctx, "other-bot", "adm-other", t0.Add(time.Hour), t0, max); err != nil || !ok {
		t.Fatalf("another agent: admitted %v, %v", ok, err)
	}
	if ok, _, err := s.Admit(ctx, "", "adm-anon", t0.Add(time.Hour), t0, max); err != nil || !ok {
		t.Fatalf("no agent name: admitted %v, %v", ok, err)
	}

	// A question of the agent ends: its place is free.
	q := newQ(in[0], t0, time.Hour)
	q.Request.Agent = "bot"
	if _, _, err := s.Create(ctx, q); err != nil {
		t.Fatal(err)
	}
	if r, err := s.End(ctx, in[0], answered(in[0]), t0.Add(time.Minute)); err != nil || !r.Won {
		t.Fatalf("end: %+v, %v", r, err)
	}
	if ok, n, err := s.Admit(ctx, "bot", "adm-after-end", t0.Add(time.Hour), t0.Add(time.Minute), max); err != nil || !ok || n != max {
		t.Fatalf("after an end: admitted %v, %d pending, %v", ok, n, err)
	}
	// One times out through the sweep.
	q = newQ(in[1], t0, 30*time.Second)
	q.Request.Agent = "bot"
	if _, _, err := s.Create(ctx, q); err != nil {
		t.Fatal(err)
	}
	if won, err := s.Sweep(ctx, t0.Add(31*time.Second), 10); err != nil || len(won) != 1 {
		t.Fatalf("sweep: %d ended, %v", len(won), err)
	}
	if err := s.Unadmit(ctx, "bot", in[2]); err != nil {
		t.Fatal(err)
	}
	for i, id := range []string{"adm-after-sweep", "adm-after-unadmit"} {
		if ok, _, err := s.Admit(ctx, "bot", id, t0.Add(time.Hour), t0.Add(time.Minute), max); err != nil || !ok {
			t.Fatalf("place %d: admitted %v, %v", i, ok, err)
		}
	}
	if ok, _, err := s.Admit(ctx, "bot", "adm-full", t0.Add(time.Hour), t0.Add(time.Minute), max); err != nil || ok {
		t.Fatalf("full again: admitted %v, %v", ok, err)
	}
	// Past every deadline, the count is empty whatever was left in it.
	if ok, n, err := s.Admit(ctx, "bot", "adm-later", t0.Add(3*time.Hour), t0.Add(2*time.Hour), max); err != nil || !ok || n != 1 {
		t.Fatalf("past the deadlines: admitted %v, %d pending, %v", ok, n, err)
	}
	if _, _, err := s.Admit(ctx, "bot", "bad{id}", t0, t0, max); err == nil {
		t.Fatal("an invalid id was admitted")
	}
}

// testCooldowns: a cooldown one replica shares reaches the others that
// listen for its platform, its bucket whole; not the replica that shared
// it, nor listeners of another platform. (On a Cluster, shares may arrive
// in another order than they were made.)
func testCooldowns(t *testing.T, b backend) {
	rs := replicas(t, b, 2, Options{})
	a, other := rs[0], rs[1]
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	type heard struct {
		who, bucket string
		d           time.Duration
	}
	got := make(chan heard, 16)
	// Once both listen, a late repeat of a warm-up share is dropped.
	var warm atomic.Bool
	listen := func(s *Store, who, platform string) {
		go func() {
			_ = s.Cooldowns(ctx, platform, func(bucket string, d time.Duration) {
				if bucket != "warm-up" || !warm.Load() {
					got <- heard{who, bucket, d}
				}
			})
		}()
	}
	listen(other, "other/slack", "slack")
	listen(a, "a/slack", "slack")
	// Subscribing is asynchronous: each replica shares until the other's
	// listener hears (the last share below is other's, heard by a).
	for _, sh := range []struct {
		from *Store
		by   string
	}{{a, "other/slack"}, {other, "a/slack"}} {
		waitFor(t, func() bool {
			if err := sh.from.ShareCooldown(ctx, "slack", "warm-up", time.Millisecond); err != nil {
				t.Fatal(err)
			}
			select {
			case h := <-got:
				return h.bucket == "warm-up" && h.who == sh.by
			case <-time.After(20 * time.Millisecond):
				return false
			}
		})
	}
	warm.Store(true)
	for len(got) > 0 {
		<-got
	}
	// A warm-up share heard just as the warm-up ended is skipped too.
	next := func(within time.Duration) (heard, bool) {
		deadline := time.After(within)
		for {
			select {
			case h := <-got:
				if h.bucket != "warm-up" {
					return h, true
				}
			case <-deadline:
				return heard{}, false
			}
		}
	}
	shares := []struct {
		platform, bucket string
		d                time.Duration
	}{
		{"telegram", "42", time.Second},
		{"slack", "C024BE91L", 5 * time.Second},
		{"slack", "route with spaces", 1500 * time.Millisecond},
		{"slack", "too long", 3 * MaxCooldown},
	}
	for _, sh := range shares {
		if err := a.ShareCooldown(ctx, sh.platform, sh.bucket, sh.d); err != nil {
			t.Fatal(err)
		}
	}
	want := []heard{
		{"other/slack", "C024BE91L", 5 * time.Second},
		{"other/slack", "route with spaces", 1500 * time.Millisecond},
		{"other/slack", "too long", MaxCooldown},
	}
	var heardAll []heard
	for range want {
		h, ok := next(5 * time.Second)
		if !ok {
			t.Fatalf("heard %+v, want %+v", heardAll, want)
		}
		heardAll = append(heardAll, h)
	}
	for _, w := range want {
		if !slices.Contains(heardAll, w) {
			t.Fatalf("heard %+v, want %+v", heardAll, want)
		}
	}
	// Nothing else: the sharer does not hear itself, slack does not hear
	// telegram. A last share flushes anything that was on its way.
	if err := other.ShareCooldown(ctx, "slack", "last", time.Second); err != nil {
		t.Fatal(err)
	}
	h, ok := next(5 * time.Second)
	switch {
	case !ok:
		t.Fatal("the last cooldown was not heard")
	case h != (heard{"a/slack", "last", time.Second}):
		t.Fatalf("heard %+v, want only a's hearing of the last share", h)
	}
	if err := a.ShareCooldown(ctx, "bad platform", "x", time.Second); err == nil {
		t.Fatal("a platform name with a space was shared")
	}
	if _, _, _, _, ok := parseCooldown("origin slack -5 C1"); ok {
		t.Fatal("a negative wait parsed")
	}
}

// testReplay: the stored result is pushed again only once the list is
// empty, only for an ended question, and only for a new ask: not for the
// entry that created the question handled again, nor for the ask a cancel
// came before; the list expires with the hash.
func testReplay(t *testing.T, b backend) {
	s := newStore(t, b, Options{Retention: time.Hour})
	ctx := ctxT(t)
	if pushed, err := s.Replay(ctx, "replay-unknown", "9-0"); err != nil || pushed {
		t.Fatalf("unknown id: %v, %v", pushed, err)
	}
	q := newQ("replay", t0, 15*time.Minute)
	q.Entry = "5-0"
	mustCreate(t, s, q)
	if pushed, err := s.Replay(ctx, "replay", "6-0"); err != nil || pushed {
		t.Fatalf("pending question: %v, %v", pushed, err)
	}
	if _, err := s.End(ctx, "replay", answered("replay"), t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if pushed, err := s.Replay(ctx, "replay", "6-0"); err != nil || pushed {
		t.Fatalf("result still waiting: %v, %v", pushed, err)
	}
	first := s.rdb.LPop(ctx, s.k.Result("replay")).Val()
	// The entry that created the question, handled again, is no new ask.
	if pushed, err := s.Replay(ctx, "replay", "5-0"); err != nil || pushed {
		t.Fatalf("the creating entry again: %v, %v", pushed, err)
	}
	if pushed, err := s.Replay(ctx, "replay", "6-0"); err != nil || !pushed {
		t.Fatalf("result taken, asked again: %v, %v", pushed, err)
	}
	if got := s.rdb.LRange(ctx, s.k.Result("replay"), 0, -1).Val(); len(got) != 1 || got[0] != first {
		t.Fatalf("replayed %q, want %q once", got, first)
	}
	if ttl := s.rdb.PTTL(ctx, s.k.Result("replay")).Val(); ttl <= 0 || ttl > time.Hour {
		t.Fatalf("replayed list expires in %s, want within the retention", ttl)
	}

	// A cancel that came before its ask: the ask that follows is not a
	// new one. A refused request asked again gets its error again.
	cancelled := askbridge.NoAnswer("early", askbridge.ReasonCancelled, "").Stamp(t0, t0)
	if _, err := s.Reject(ctx, "early", cancelled, t0); err != nil {
		t.Fatal(err)
	}
	s.rdb.Del(ctx, s.k.Result("early"))
	if pushed, err := s.Replay(ctx, "early", "7-0"); err != nil || pushed {
		t.Fatalf("the ask a cancel came before: %v, %v", pushed, err)
	}
	if _, err := s.Reject(ctx, "refused", askbridge.Refused("refused", errors.New("no questions")), t0); err != nil {
		t.Fatal(err)
	}
	s.rdb.Del(ctx, s.k.Result("refused"))
	if pushed, err := s.Replay(ctx, "refused", "8-0"); err != nil || !pushed {
		t.Fatalf("a refused request asked again: %v, %v", pushed, err)
	}
	if _, err := s.Replay(ctx, "bad{id}", ""); err == nil {
		t.Fatal("an invalid id was replayed")
	}
}

// testCreateBatch: a batch creates the new questions with their leases,
// leaves known ones as they are (a pending one keeps its deadline, an
// ended one gets none), and fails an invalid one alone, each outcome as
// CreateHolding gives it.
func testCreateBatch(t *testing.T, b backend) {
	s := newStore(t, b, Options{Retention: time.Hour})
	ctx := ctxT(t)
	mustCreate(t, s, newQ("batch-pending", t0, 15*time.Minute))
	mustCreate(t, s, newQ("batch-ended", t0, 15*time.Minute))
	if _, err := s.End(ctx, "batch-ended", answered("batch-ended"), t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	later := t0.Add(time.Hour)
	calls := []*engine.CreateCall{
		{Question: newQ("batch-1", later, 15*time.Minute), Holder: "replica-a/1", TTL: time.Minute},
		{Question: newQ("batch-pending", later, 15*time.Minute), Holder: "replica-a/2", TTL: time.Minute},
		{Question: newQ("bad{id}", later, 15*time.Minute), Holder: "replica-a/3", TTL: time.Minute},
		{Question: newQ("batch-ended", later, 15*time.Minute), Holder: "replica-a/4", TTL: time.Minute},
		{Question: newQ("batch-2", later, 15*time.Minute), TTL: time.Minute},
	}
	for i := range 20 {
		calls = append(calls, &engine.CreateCall{Question: newQ(fmt.Sprintf("batch-many-%d", i), later, 15*time.Minute), Holder: "replica-a/5", TTL: time.Minute})
	}
	s.CreateHoldingBatch(ctx, calls)
	c := calls
	if c[0].Err != nil || !c[0].Created || c[0].Lease.Token != 1 || c[0].Lease.Holder != "replica-a/1" {
		t.Fatalf("new question: %+v", *c[0])
	}
	if c[1].Err != nil || c[1].Created || c[1].Existing.Status != askbridge.StatusPending || c[1].Lease.Token != 0 {
		t.Fatalf("pending question: %+v", *c[1])
	}
	if c[2].Err == nil || c[2].Created {
		t.Fatalf("invalid id: %+v", *c[2])
	}
	if c[3].Err != nil || c[3].Created || c[3].Existing.Status != askbridge.StatusAnswered {
		t.Fatalf("ended question: %+v", *c[3])
	}
	if c[4].Err != nil || !c[4].Created || c[4].Lease.Token != 0 {
		t.Fatalf("new question without a holder: %+v", *c[4])
	}
	for _, call := range c[5:] {
		if call.Err != nil || !call.Created || call.Lease.Token != 1 {
			t.Fatalf("%s: %+v", call.Question.ID, *call)
		}
	}
	// Deadlines: the new ones scheduled, the pending one kept, the ended
	// one not rescheduled.
	score := func(id string) (float64, bool) {
		v, err := s.rdb.ZScore(ctx, s.k.deadlines(), id).Result()
		return v, err == nil
	}
	if v, ok := score("batch-1"); !ok || v != float64(later.Add(15*time.Minute).UnixMilli()) {
		t.Fatalf("batch-1 deadline %v, %v", v, ok)
	}
	if v, ok := score("batch-pending"); !ok || v != float64(t0.Add(15*time.Minute).UnixMilli()) {
		t.Fatalf("the pending question's deadline moved: %v, %v", v, ok)
	}
	if _, ok := score("batch-ended"); ok {
		t.Fatal("the ended question was scheduled again")
	}
	// The lease taken is the one AcquireLease sees.
	if other, ok, err := s.AcquireLease(ctx, QuestionLease(LeaseDeliver, "batch-1"), "replica-b/1", time.Minute); err != nil || ok || other.Holder != "replica-a/1" {
		t.Fatalf("the batch's lease: %+v %v %v", other, ok, err)
	}
	s.CreateHoldingBatch(ctx, nil) // nothing to do, no error to give
}

func testCreateIdempotent(t *testing.T, b backend) {
	s := newStore(t, b, Options{Retention: time.Hour})
	ctx := ctxT(t)
	q := newQ("idem", t0, 15*time.Minute)
	created, rec, err := s.Create(ctx, q)
	if err != nil || !created {
		t.Fatalf("first Create: %v, %v", created, err)
	}
	if rec.Status != askbridge.StatusPending || !rec.Deadline.Equal(q.Deadline) {
		t.Fatalf("first Create record %+v", rec)
	}
	// A redelivered request computes a later deadline; nothing may change.
	again := newQ("idem", t0.Add(time.Minute), 15*time.Minute)
	created, existing, err := s.Create(ctx, again)
	if err != nil || created {
		t.Fatalf("second Create: %v, %v; want created false", created, err)
	}
	if existing.ID != "idem" || existing.Status != askbridge.StatusPending ||
		!existing.Created.Equal(q.Created) || !existing.Deadline.Equal(q.Deadline) ||
		existing.Request.Questions[0].Header != "Target" || existing.Target != q.Target ||
		!slices.Equal(existing.Answerers, q.Answerers) {
		t.Fatalf("existing record %+v", existing)
	}
	if n := s.rdb.Exists(ctx, s.k.Question("idem")).Val(); n != 1 {
		t.Fatalf("%d question hashes", n)
	}
	if n := s.rdb.ZCard(ctx, s.k.deadlines()).Val(); n != 1 {
		t.Fatalf("%d deadlines, want 1", n)
	}
	if sc := s.rdb.ZScore(ctx, s.k.deadlines(), "idem").Val(); int64(sc) != q.Deadline.UnixMilli() {
		t.Fatalf("deadline score %v, want the first deadline %d", sc, q.Deadline.UnixMilli())
	}
	ttl := s.rdb.PTTL(ctx, s.k.Question("idem")).Val()
	if ttl <= 75*time.Minute-time.Minute || ttl > 75*time.Minute {
		t.Fatalf("hash ttl %v, want deadline - created + retention = 75m", ttl)
	}
}

// testCreateRepairs plays the crash windows of Create: the hash stored
// without its deadline, and a stale deadline of an ended question.
func testCreateRepairs(t *testing.T, b backend) {
	s := newStore(t, b, Options{})
	ctx := ctxT(t)
	q := newQ("crash", t0, time.Minute)
	mustCreate(t, s, q)
	s.rdb.ZRem(ctx, s.k.deadlines(), "crash")

	// The redelivered request repairs the deadline, with the stored one.
	created, _, err := s.Create(ctx, newQ("crash", t0.Add(10*time.Second), time.Minute))
	if err != nil || created {
		t.Fatalf("repeat Create: %v, %v", created, err)
	}
	if sc, err := s.rdb.ZScore(ctx, s.k.deadlines(), "crash").Result(); err != nil || int64(sc) != q.Deadline.UnixMilli() {
		t.Fatalf("deadline after repair: %v, %v; want %d", sc, err, q.Deadline.UnixMilli())
	}
	ended, err := s.Sweep(ctx, q.Deadline, 10)
	if err != nil || len(ended) != 1 {
		t.Fatalf("the repaired question expires: %v, %v", ended, err)
	}

	// A repeat for an ended question leaves no stale index member.
	if _, _, err := s.Create(ctx, newQ("crash", t0, time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.rdb.ZScore(ctx, s.k.deadlines(), "crash").Result(); !errors.Is(err, redis.Nil) {
		t.Fatalf("the deadlines zset still holds the ended question (%v)", err)
	}
}

// testCreateHolding: the replica that creates a question holds its
// delivery lease from that step on, as if AcquireLease had taken it; a
// repeat creates nothing and takes no lease.
func testCreateHolding(t *testing.T, b backend) {
	s := newStore(t, b, Options{})
	ctx := ctxT(t)
	q := newQ("held", t0, 15*time.Minute)
	name := QuestionLease(LeaseDeliver, "held")
	created, _, lease, err := s.CreateHolding(ctx, q, "replica-a/1", time.Minute)
	if err != nil || !created || lease.Name != name || lease.Holder != "replica-a/1" || lease.Token == 0 {
		t.Fatalf("CreateHolding: %v %+v %v", created, lease, err)
	}
	if other, ok, err := s.AcquireLease(ctx, name, "replica-b/1", time.Minute); err != nil || ok || other.Holder != "replica-a/1" || other.Token != lease.Token {
		t.Fatalf("another replica took the lease: %+v %v %v", other, ok, err)
	}
	if ok, err := s.RenewLease(ctx, lease, time.Minute); err != nil || !ok {
		t.Fatalf("renew: %v %v", ok, err)
	}
	again, existing, none, err := s.CreateHolding(ctx, q, "replica-b/2", time.Minute)
	if err != nil || again || existing.Status != askbridge.StatusPending || none.Token != 0 {
		t.Fatalf("repeat: %v %+v %+v %v", again, existing, none, err)
	}
	if err := s.ReleaseLease(ctx, lease); err != nil {
		t.Fatal(err)
	}
	next, ok, err := s.AcquireLease(ctx, name, "replica-b/3", time.Minute)
	if err != nil || !ok || next.Token <= lease.Token {
		t.Fatalf("after release: %+v %v %v; want a newer token than %d", next, ok, err, lease.Token)
	}
	// The counter is a field of the question hash, not a key of its own.
	if n := s.rdb.Exists(ctx, s.k.fence(name)).Val(); n != 0 {
		t.Fatalf("a fencing counter key for %s exists", name)
	}
	if got := s.rdb.HGet(ctx, s.k.Question(q.ID), fenceField(LeaseDeliver)).Val(); got != strconv.FormatInt(next.Token, 10) {
		t.Fatalf("question hash counter %q, want %d", got, next.Token)
	}
	// A question that is gone has no lease to take, and taking it leaves
	// no hash behind that would read as a question.
	gone := QuestionLease(LeaseFinish, "never-created")
	if l, ok, err := s.AcquireLease(ctx, gone, "replica-a/4", time.Minute); err != nil || ok || l.Holder != "" {
		t.Fatalf("lease on a missing question: %+v %v %v", l, ok, err)
	}
	if n := s.rdb.Exists(ctx, s.k.Question("never-created"), s.k.lease(gone)).Val(); n != 0 {
		t.Fatalf("a lease on a missing question left %d keys", n)
	}
}

func testEnd(t *testing.T, b backend) {
	s := newStore(t, b, Options{Retention: time.Hour})
	ctx := ctxT(t)
	q := newQ("end", t0, 15*time.Minute)
	mustCreate(t, s, q)
	ref := engine.MessageRef{Platform: "telegram", Chat: "42", Message: "1001"}
	if _, err := s.AddMessage(ctx, "end", ref); err != nil {
		t.Fatal(err)
	}
	now := t0.Add(time.Minute)
	r, err := s.End(ctx, "end", answered("end"), now)
	if err != nil || !r.Won || !r.Found {
		t.Fatalf("End: %+v, %v", r, err)
	}
	want := answered("end").Stamp(t0, now)
	if !sameJSON(r.Result, want) {
		t.Fatalf("winner's result %+v, want %+v", r.Result, want)
	}
	if r.Record.Status != askbridge.StatusAnswered || r.Record.Result == nil {
		t.Fatalf("winner's record %+v", r.Record)
	}
	if len(r.Messages) != 1 || r.Messages[0] != ref {
		t.Fatalf("winner's messages %+v, want %+v", r.Messages, ref)
	}
	lost, err := s.End(ctx, "end", askbridge.NoAnswer("end", askbridge.ReasonCancelled, ""), now.Add(time.Second))
	if err != nil || lost.Won || !lost.Found || lost.Messages != nil {
		t.Fatalf("second End: %+v, %v", lost, err)
	}
	if lost.Result.Status != askbridge.StatusAnswered || lost.Result.EndedAt != now.UnixMilli() {
		t.Fatalf("the loser must learn what won: %+v", lost.Result)
	}
	if n := s.rdb.LLen(ctx, s.k.Result("end")).Val(); n != 1 {
		t.Fatalf("result list holds %d results", n)
	}
	if n := s.rdb.Exists(ctx, s.k.messages("end")).Val(); n != 0 {
		t.Fatal("the messages are kept in the question hash, yet the legacy list exists")
	}
	for _, k := range []string{s.k.Question("end"), s.k.Result("end")} {
		if ttl := s.rdb.PTTL(ctx, k).Val(); ttl <= 0 || ttl > time.Hour {
			t.Fatalf("%s ttl %v, want the retention", k, ttl)
		}
	}
	for _, k := range []string{s.k.deadlines(), s.k.chat("telegram", "42")} {
		if _, err := s.rdb.ZScore(ctx, k, "end").Result(); !errors.Is(err, redis.Nil) {
			t.Fatalf("%s still holds the ended question (%v)", k, err)
		}
	}
	unknown, err := s.End(ctx, "nope", answered("nope"), now)
	if err != nil || unknown.Found || unknown.Won {
		t.Fatalf("End of an unknown id: %+v, %v", unknown, err)
	}
	if _, err := s.End(ctx, "end", askbridge.Result{Status: askbridge.StatusPending}, now); err == nil {
		t.Fatal("End with a pending result must be refused")
	}
}

// testEndPastDeadline: an ending that is not a timeout wins as itself up to
// the last millisecond before the deadline; from the deadline on (the
// sweeper lagging, Redis briefly down) it ends the question as the timeout
// Sweep would have written, once, and the call reports that it won with the
// timeout. A timeout handed in explicitly is stored as given.
func testEndPastDeadline(t *testing.T, b backend) {
	s := newStore(t, b, Options{})
	ctx := ctxT(t)
	const timeout = 15 * time.Minute
	deadline := t0.Add(timeout)
	tests := []struct {
		name string
		res  func(id string) askbridge.Result
		at   time.Time
		want func(id string) askbridge.Result // before stamping
	}{
		{"answer-before", answered, deadline.Add(-time.Millisecond), answered},
		{"answer-at", answered, deadline, timeoutResult},
		{"answer-after", answered, deadline.Add(time.Second), timeoutResult},
		{"skip-after", func(id string) askbridge.Result { return askbridge.NoAnswer(id, askbridge.ReasonSkipped, "") },
			deadline.Add(time.Second), timeoutResult},
		{"cancel-after", func(id string) askbridge.Result { return askbridge.NoAnswer(id, askbridge.ReasonCancelled, "") },
			deadline.Add(time.Second), timeoutResult},
		{"undeliverable-after", func(id string) askbridge.Result {
			return askbridge.NoAnswer(id, askbridge.ReasonUndeliverable, "telegram: chat not found")
		}, deadline.Add(time.Second), timeoutResult},
		{"timeout-after", func(id string) askbridge.Result { return askbridge.NoAnswer(id, askbridge.ReasonTimeout, "swept late") },
			deadline.Add(time.Second), func(id string) askbridge.Result { return askbridge.NoAnswer(id, askbridge.ReasonTimeout, "swept late") }},
	}
	for _, tt := range tests {
		id := tt.name
		mustCreate(t, s, newQ(id, t0, timeout))
		ref := engine.MessageRef{Platform: "telegram", Chat: "42", Message: id}
		if _, err := s.AddMessage(ctx, id, ref); err != nil {
			t.Fatal(err)
		}
		want := tt.want(id).Stamp(t0, tt.at)
		r, err := s.End(ctx, id, tt.res(id), tt.at)
		if err != nil || !r.Won || !r.Found {
			t.Fatalf("%s: End = %+v, %v; want won", id, r, err)
		}
		if got, _ := json.Marshal(r.Result); !sameJSON(r.Result, want) {
			t.Fatalf("%s: End result %s, want %s", id, got, mustJSON(t, want))
		}
		if r.Record.Status != want.Status || r.Record.Result == nil || !sameJSON(*r.Record.Result, want) {
			t.Fatalf("%s: End record %+v, want status %s and result %s", id, r.Record, want.Status, mustJSON(t, want))
		}
		sameAsGo(t, resultList(t, s, id), want) // pushed exactly once, byte for byte
		// The question is off the indexes, so the sweeper has nothing
		// left to do, and a later ending learns the timeout.
		for _, k := range []string{s.k.deadlines(), s.k.chat("telegram", "42")} {
			if _, err := s.rdb.ZScore(ctx, k, id).Result(); !errors.Is(err, redis.Nil) {
				t.Fatalf("%s: %s still holds the ended question (%v)", id, k, err)
			}
		}
		again, err := s.End(ctx, id, answered(id), tt.at.Add(time.Second))
		if err != nil || again.Won || !sameJSON(again.Result, want) {
			t.Fatalf("%s: later End = %+v, %v; want lost to %+v", id, again, err, want)
		}
		if n := s.rdb.LLen(ctx, s.k.Result(id)).Val(); n != 1 {
			t.Fatalf("%s: result list holds %d results", id, n)
		}
	}
	if swept, err := s.Sweep(ctx, deadline.Add(time.Hour), 100); err != nil || len(swept) != 0 {
		t.Fatalf("sweep after the late endings: %+v, %v", swept, err)
	}
	// What a late End writes is what the sweeper writes, but for the id.
	mustCreate(t, s, newQ("swept", t0, timeout))
	swept, err := s.Sweep(ctx, deadline.Add(time.Second), 100)
	if err != nil || len(swept) != 1 {
		t.Fatalf("sweep: %+v, %v", swept, err)
	}
	late, _, err := s.Get(ctx, "answer-after")
	if err != nil || late.Result == nil {
		t.Fatalf("Get: %+v, %v", late, err)
	}
	late.Result.ID = "swept"
	if !sameJSON(*late.Result, swept[0].Result) {
		t.Fatalf("late End stored %+v, the sweeper %+v", *late.Result, swept[0].Result)
	}
}

func testReject(t *testing.T, b backend) {
	s := newStore(t, b, Options{Retention: time.Hour})
	ctx := ctxT(t)
	res := askbridge.Refused("bad", errors.New("questions must contain 1 to 3 questions"))
	r, err := s.Reject(ctx, "bad", res, t0)
	if err != nil || !r.Won || !r.Found {
		t.Fatalf("Reject: %+v, %v", r, err)
	}
	if r.Result.Status != askbridge.StatusError || r.Result.Error != res.Error || r.Result.CreatedAt != t0.UnixMilli() || r.Result.EndedAt != t0.UnixMilli() {
		t.Fatalf("rejected result %+v", r.Result)
	}
	if v := s.rdb.LRange(ctx, s.k.Result("bad"), 0, -1).Val(); len(v) != 1 {
		t.Fatalf("result list %v", v)
	}
	again, err := s.Reject(ctx, "bad", res, t0.Add(time.Second))
	if err != nil || again.Won || again.Result.EndedAt != t0.UnixMilli() {
		t.Fatalf("repeated Reject: %+v, %v", again, err)
	}
	if n := s.rdb.LLen(ctx, s.k.Result("bad")).Val(); n != 1 {
		t.Fatalf("result list holds %d results after a repeat", n)
	}
	mustCreate(t, s, newQ("known", t0, time.Minute))
	known, err := s.Reject(ctx, "known", askbridge.Refused("known", errors.New("x")), t0)
	if err != nil || known.Won || !known.Found || known.Record.Status != askbridge.StatusPending {
		t.Fatalf("Reject of a pending id: %+v, %v", known, err)
	}
	if n := s.rdb.Exists(ctx, s.k.Result("known")).Val(); n != 0 {
		t.Fatal("Reject of a known id pushed a result")
	}
}

func testGet(t *testing.T, b backend) {
	s := newStore(t, b, Options{})
	ctx := ctxT(t)
	if _, found, err := s.Get(ctx, "missing"); err != nil || found {
		t.Fatalf("Get(missing) = %v, %v", found, err)
	}
	q := newQ("get", t0, time.Minute)
	q.Target = askbridge.Target{Platform: "web"}
	q.Answerers = nil
	mustCreate(t, s, q)
	r, found, err := s.Get(ctx, "get")
	if err != nil || !found {
		t.Fatalf("Get = %v, %v", found, err)
	}
	if r.Status != askbridge.StatusPending || r.Target != q.Target || len(r.Answerers) != 0 ||
		!r.Created.Equal(t0) || !r.Deadline.Equal(q.Deadline) || r.Result != nil ||
		fmt.Sprint(r.Request) != fmt.Sprint(q.Request) {
		t.Fatalf("record %+v", r)
	}
	if _, _, err := s.Get(ctx, "a{b}"); err == nil {
		t.Fatal("an id with braces must be refused")
	}
}

// testLookup: Lookup serves what Get reads, for every shape of question
// Create stores, from memory on the replica that created it and from Redis
// on another; once the question ended, it reads the end.
func testLookup(t *testing.T, b backend) {
	s := newStore(t, b, Options{})
	other := New(s.rdb, s.opts)
	ctx := ctxT(t)
	plain := newQ("lk-plain", t0, time.Hour)
	web := newQ("lk-web", t0, time.Hour)
	web.Target, web.Answerers = askbridge.Target{Platform: "web", Chat: "web"}, []string{}
	named := newQ("lk-named", t0, time.Hour)
	named.Places = []askbridge.Place{{Name: "oncall", Target: named.Target, Answerers: named.Answerers}}
	several := newQ("lk-several", t0, time.Hour)
	several.Entry = "1-1"
	several.Places = []askbridge.Place{
		{Name: "telegram:42", Target: several.Target, Answerers: several.Answerers},
		{Name: "ops", Target: askbridge.Target{Platform: "slack", Chat: "C0OPS"}},
		{Name: "discord:9", Target: askbridge.Target{Platform: "discord", Chat: "9"}, Answerers: []string{"discord:1"}, Step: 1},
	}
	for _, q := range []engine.NewQuestion{plain, web, named, several} {
		mustCreate(t, s, q)
		got, found, err := s.Lookup(ctx, q.ID)
		if err != nil || !found {
			t.Fatalf("Lookup(%s) = %v, %v", q.ID, found, err)
		}
		want, _, err := s.Get(ctx, q.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !sameJSON(got, want) {
			t.Fatalf("Lookup(%s) from memory = %s\nGet reads %s", q.ID, mustJSON(t, got), mustJSON(t, want))
		}
		if got, found, err := other.Lookup(ctx, q.ID); err != nil || !found || !sameJSON(got, want) {
			t.Fatalf("Lookup(%s) on another replica = %s, %v, %v; want %s", q.ID, mustJSON(t, got), found, err, mustJSON(t, want))
		}
	}
	// Cached on the other replica too, now: a Get would say the same.
	if _, err := s.End(ctx, "lk-plain", answered("lk-plain"), t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got, found, err := s.Lookup(ctx, "lk-plain"); err != nil || !found || got.Status != askbridge.StatusAnswered || got.Result == nil {
		t.Fatalf("Lookup after the end on the replica that ended it = %+v, %v, %v; want answered", got, found, err)
	}
	// The other replica's memory is a moment old: pending, which End then
	// settles (first writer wins).
	if got, _, _ := other.Lookup(ctx, "lk-plain"); got.Status != askbridge.StatusPending {
		t.Fatalf("the other replica's Lookup = %s; want its remembered pending", got.Status)
	}
	r, err := other.End(ctx, "lk-plain", answered("lk-plain"), t0.Add(2*time.Minute))
	if err != nil || r.Won || r.Result.Status != askbridge.StatusAnswered {
		t.Fatalf("End on the other replica = %+v, %v; want lost to the first", r, err)
	}
	if got, _, _ := other.Lookup(ctx, "lk-plain"); got.Status != askbridge.StatusAnswered {
		t.Fatalf("the other replica's Lookup after its End = %s; want answered", got.Status)
	}
	if _, found, err := s.Lookup(ctx, "lk-missing"); err != nil || found {
		t.Fatalf("Lookup(missing) = %v, %v", found, err)
	}
}

// testMarkAndEnd: MarkAndEnd leaves the question marked finishing and
// ended, first writer wins, as MarkFinishing then End do; a repeat finds
// the mark made; an unknown id is marked (the caller takes it back) and
// not found.
func testMarkAndEnd(t *testing.T, b backend) {
	s := newStore(t, b, Options{})
	ctx := ctxT(t)
	mustCreate(t, s, newQ("me", t0, time.Hour))
	ref := engine.MessageRef{Platform: "telegram", Chat: "42", Message: "900"}
	if _, err := s.AddMessage(ctx, "me", ref); err != nil {
		t.Fatal(err)
	}
	now := t0.Add(time.Minute)
	added, r, err := s.MarkAndEnd(ctx, "me", answered("me"), now)
	if err != nil || !added || !r.Won || !slices.Equal(r.Messages, []engine.MessageRef{ref}) {
		t.Fatalf("MarkAndEnd = %v, %+v, %v; want added, won, with the message", added, r, err)
	}
	if score, err := s.rdb.ZScore(ctx, s.k.finishing(), "me").Result(); err != nil || score != float64(now.UnixMilli()) {
		t.Fatalf("finishing mark %v, %v; want %d", score, err, now.UnixMilli())
	}
	if _, err := s.rdb.ZScore(ctx, s.k.deadlines(), "me").Result(); !errors.Is(err, redis.Nil) {
		t.Fatalf("the ended question is still in the deadlines (%v)", err)
	}
	if n := s.rdb.LLen(ctx, s.k.Result("me")).Val(); n != 1 {
		t.Fatalf("%d results pushed", n)
	}
	added, r, err = s.MarkAndEnd(ctx, "me", askbridge.NoAnswer("me", askbridge.ReasonCancelled, ""), now.Add(time.Second))
	if err != nil || added || r.Won || !r.Found || r.Result.Status != askbridge.StatusAnswered {
		t.Fatalf("second MarkAndEnd = %v, %+v, %v; want the mark found, lost to the answer", added, r, err)
	}
	added, r, err = s.MarkAndEnd(ctx, "me-unknown", answered("me-unknown"), now)
	if err != nil || !added || r.Found || r.Won {
		t.Fatalf("MarkAndEnd of an unknown id = %v, %+v, %v; want marked, not found", added, r, err)
	}
	if _, _, err := s.MarkAndEnd(ctx, "a{b}", answered("a{b}"), now); err == nil {
		t.Fatal("an id with braces must be refused")
	}
}

// SweepNext says when the next deadline comes: none while nothing is
// pending, the earliest deadline after now when fewer than max were due,
// and now when max were (more may be).
func testSweepNext(t *testing.T, b backend) {
	s := newStore(t, b, Options{})
	ctx := ctxT(t)
	if ended, next, err := s.SweepNext(ctx, t0, 10); err != nil || len(ended) != 0 || !next.IsZero() {
		t.Fatalf("nothing pending: %v, %v, %v; want no next deadline", ended, next, err)
	}
	for i := range 3 {
		mustCreate(t, s, newQ(fmt.Sprintf("n%d", i), t0, time.Duration(30+i)*time.Second))
	}
	if ended, next, err := s.SweepNext(ctx, t0.Add(time.Second), 10); err != nil || len(ended) != 0 || !next.Equal(t0.Add(30*time.Second)) {
		t.Fatalf("none due: %v, %v, %v; want the first deadline %v", ended, next, err, t0.Add(30*time.Second))
	}
	ended, next, err := s.SweepNext(ctx, t0.Add(30*time.Second), 10)
	if err != nil || len(ended) != 1 || !next.Equal(t0.Add(31*time.Second)) {
		t.Fatalf("one due: %d ended, next %v, %v; want 1 and %v", len(ended), next, err, t0.Add(31*time.Second))
	}
	now := t0.Add(time.Minute)
	if ended, next, err := s.SweepNext(ctx, now, 1); err != nil || len(ended) != 1 || !next.Equal(now) {
		t.Fatalf("a full batch: %d ended, next %v, %v; want 1 and now", len(ended), next, err)
	}
	if ended, next, err := s.SweepNext(ctx, now, 10); err != nil || len(ended) != 1 || !next.IsZero() {
		t.Fatalf("the last: %d ended, next %v, %v; want 1 and none", len(ended), next, err)
	}
}

// Sweeps at once, of one replica or two, claim different due questions;
// a claim not settled lapses after sweepHold and the question is due
// again; the end still decides by the question's deadline.
func testSweepClaims(t *testing.T, b backend) {
	a := newStore(t, b, Options{})
	other := New(a.rdb, a.opts)
	ctx := ctxT(t)
	for i := range 10 {
		mustCreate(t, a, newQ(fmt.Sprintf("c%d", i), t0, time.Duration(i+1)*time.Second))
	}
	now := t0.Add(time.Minute)
	first, err := a.claimDue(ctx, now, 4)
	if err != nil || len(first) != 4 {
		t.Fatalf("claim 4 = %v, %v", first, err)
	}
	for i, z := range first {
		// Oldest first, with their deadlines.
		if z.Member != fmt.Sprintf("c%d", i) || z.Score != float64(t0.Add(time.Duration(i+1)*time.Second).UnixMilli()) {
			t.Fatalf("claimed %v, want c0..c3 with their deadlines", first)
		}
	}
	second, err := other.claimDue(ctx, now, 100)
	if err != nil || len(second) != 6 || second[0].Member != "c4" {
		t.Fatalf("the other replica's claim = %v, %v; want c4..c9", second, err)
	}
	if again, err := a.claimDue(ctx, now, 100); err != nil || len(again) != 0 {
		t.Fatalf("a claim while all are held = %v, %v", again, err)
	}
	// The other replica settles its own.
	ended, err := other.Sweep(ctx, now.Add(sweepHold+time.Millisecond), 100)
	if err != nil {
		t.Fatal(err)
	}
	// Its claim lapsed along with the first's: the sweep got them all,
	// each ended once, as timeouts.
	if len(ended) != 10 {
		t.Fatalf("a sweep after the claims lapsed ended %d, want 10", len(ended))
	}
	for _, r := range ended {
		if !r.Won || r.Result.Reason != askbridge.ReasonTimeout {
			t.Fatalf("ended %+v", r)
		}
	}
	if n := a.rdb.ZCard(ctx, a.k.deadlines()).Val(); n != 0 {
		t.Fatalf("%d deadlines left", n)
	}
	// A claim larger than one ZADD's arguments takes (unpack's limit) is
	// made all the same. The claim reads only the zset, so members alone
	// (ids of no question) stand for the due questions.
	big := make([]redis.Z, 4500)
	for i := range big {
		big[i] = redis.Z{Score: float64(t0.UnixMilli()), Member: fmt.Sprintf("big%04d", i)}
	}
	if err := a.rdb.ZAdd(ctx, a.k.deadlines(), big...).Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := a.claimDue(ctx, now, 5000); err != nil || len(got) != 4500 {
		t.Fatalf("claim of 4,500 = %d, %v", len(got), err)
	}
	if again, err := other.claimDue(ctx, now, 5000); err != nil || len(again) != 0 {
		t.Fatalf("claim after a claim of 4,500 = %d, %v; want none", len(again), err)
	}
	if err := a.rdb.Del(ctx, a.k.deadlines()).Err(); err != nil {
		t.Fatal(err)
	}
	// A claim held by a sweep that has not ended them yet keeps them from
	// another sweep until it lapses.
	mustCreate(t, a, newQ("held", t0, time.Second))
	if c, err := a.claimDue(ctx, now, 10); err != nil || len(c) != 1 {
		t.Fatalf("claim = %v, %v", c, err)
	}
	if got, err := other.Sweep(ctx, now.Add(sweepHold-time.Millisecond), 10); err != nil || len(got) != 0 {
		t.Fatalf("a sweep within the hold ended %v, %v", got, err)
	}
	if got, err := other.Sweep(ctx, now.Add(sweepHold), 10); err != nil || len(got) != 1 || got[0].Record.ID != "held" {
		t.Fatalf("a sweep after the hold = %v, %v; want held", got, err)
	}
}

func testSweep(t *testing.T, b backend) {
	s := newStore(t, b, Options{})
	ctx := ctxT(t)
	for i := 1; i <= 5; i++ {
		mustCreate(t, s, newQ("s"+strconv.Itoa(i), t0, time.Duration(i)*time.Second))
	}
	if _, err := s.End(ctx, "s1", answered("s1"), t0.Add(500*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	now := t0.Add(2500 * time.Millisecond)
	ended, err := s.Sweep(ctx, now, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(ended) != 1 || ended[0].Record.ID != "s2" || !ended[0].Won {
		t.Fatalf("swept %+v, want s2 alone (s1 was answered)", ended)
	}
	want := askbridge.NoAnswer("s2", askbridge.ReasonTimeout, "").Stamp(t0, now)
	if !sameJSON(ended[0].Result, want) {
		t.Fatalf("timeout result %+v, want %+v", ended[0].Result, want)
	}
	// Marked finishing before it ended, in the same round trip, so a
	// replica that dies before editing leaves the edits to another.
	if marked, err := s.Unfinished(ctx, now, 10); err != nil || !slices.Equal(marked, []string{"s2"}) {
		t.Fatalf("marked finishing %v, %v; want s2", marked, err)
	}
	if again, err := s.Sweep(ctx, now, 100); err != nil || len(again) != 0 {
		t.Fatalf("second sweep: %v, %v", again, err)
	}
	if n := s.rdb.ZCard(ctx, s.k.deadlines()).Val(); n != 3 {
		t.Fatalf("%d deadlines left, want 3", n)
	}
	late := t0.Add(time.Hour)
	first, err := s.Sweep(ctx, late, 2)
	if err != nil || len(first) != 2 {
		t.Fatalf("sweep max 2: %v, %v", first, err)
	}
	rest, err := s.Sweep(ctx, late, 2)
	if err != nil || len(rest) != 1 {
		t.Fatalf("sweep of the rest: %v, %v", rest, err)
	}
	if n := s.rdb.ZCard(ctx, s.k.deadlines()).Val(); n != 0 {
		t.Fatalf("%d deadlines left", n)
	}
	for _, id := range []string{"s2", "s3", "s4", "s5"} {
		if n := s.rdb.LLen(ctx, s.k.Result(id)).Val(); n != 1 {
			t.Fatalf("%s: %d results", id, n)
		}
	}
}

// testSweepUnknown: an id in the deadlines zset without a question is a
// leftover (removed) once older than the grace, but may be a Create whose
// hash is still on its way (kept) when recent.
func testSweepUnknown(t *testing.T, b backend) {
	s := newStore(t, b, Options{})
	ctx := ctxT(t)
	s.rdb.ZAdd(ctx, s.k.deadlines(),
		redis.Z{Score: float64(t0.Add(-time.Hour).UnixMilli()), Member: "old"},
		redis.Z{Score: float64(t0.Add(-time.Second).UnixMilli()), Member: "recent"})
	ended, err := s.Sweep(ctx, t0, 10)
	if err != nil || len(ended) != 0 {
		t.Fatalf("sweep of unknown ids: %v, %v", ended, err)
	}
	members := s.rdb.ZRange(ctx, s.k.deadlines(), 0, -1).Val()
	if !slices.Equal(members, []string{"recent"}) {
		t.Fatalf("deadlines %v, want [recent]", members)
	}
}

// testPending: Pending counts the questions created and not yet ended, by
// End, Sweep or not at all (Reject never makes one pending), and a repeated
// Create counts once.
func testPending(t *testing.T, b backend) {
	s := newStore(t, b, Options{})
	ctx := ctxT(t)
	pending := func(want int64) {
		t.Helper()
		if n, err := s.Pending(ctx); err != nil || n != want {
			t.Fatalf("Pending = %d, %v; want %d", n, err, want)
		}
	}
	pending(0)
	for i, id := range []string{"p1", "p2", "p3", "p4"} {
		mustCreate(t, s, newQ(id, t0, time.Duration(i+1)*time.Minute))
	}
	pending(4)
	if created, _, err := s.Create(ctx, newQ("p2", t0.Add(time.Second), time.Minute)); err != nil || created {
		t.Fatalf("repeat Create: %v, %v", created, err)
	}
	pending(4)
	if _, err := s.Reject(ctx, "bad", askbridge.Refused("bad", errors.New("no questions")), t0); err != nil {
		t.Fatal(err)
	}
	pending(4)
	if r, err := s.End(ctx, "p3", answered("p3"), t0.Add(time.Second)); err != nil || !r.Won {
		t.Fatalf("End: %+v, %v", r, err)
	}
	if r, err := s.End(ctx, "p3", answered("p3"), t0.Add(2*time.Second)); err != nil || r.Won {
		t.Fatalf("second End: %+v, %v", r, err)
	}
	pending(3)
	if ended, err := s.Sweep(ctx, t0.Add(2*time.Minute), 10); err != nil || len(ended) != 2 {
		t.Fatalf("sweep: %v, %v", ended, err)
	}
	pending(1)
	// A repeat of an ended question's Create does not count it again.
	if created, _, err := s.Create(ctx, newQ("p1", t0, time.Minute)); err != nil || created {
		t.Fatalf("repeat Create of an ended question: %v, %v", created, err)
	}
	pending(1)
	if ended, err := s.Sweep(ctx, t0.Add(time.Hour), 10); err != nil || len(ended) != 1 || ended[0].Record.ID != "p4" {
		t.Fatalf("last sweep: %v, %v", ended, err)
	}
	pending(0)
}

// testMessagesLegacyList: a question stored before the messages moved into
// its hash (no msgs field) keeps them in the legacy list through a rolling
// upgrade: AddMessage appends there, Messages, End and Vote read it, and the
// end sets its expiry.
func testMessagesLegacyList(t *testing.T, b backend) {
	s := newStore(t, b, Options{})
	ctx := ctxT(t)
	for _, id := range []string{"old", "old-vote"} {
		mustCreate(t, s, newQ(id, t0, time.Hour))
		// As an earlier version stored it: no msgs field, one message in
		// the list.
		if err := s.rdb.HDel(ctx, s.k.Question(id), fieldMessages).Err(); err != nil {
			t.Fatal(err)
		}
		old := engine.MessageRef{Platform: "telegram", Chat: "42", Message: "500"}
		raw, _ := json.Marshal(old)
		if err := s.rdb.RPush(ctx, s.k.messages(id), raw).Err(); err != nil {
			t.Fatal(err)
		}
	}
	r1 := engine.MessageRef{Platform: "telegram", Chat: "42", Message: "500"}
	r2 := engine.MessageRef{Platform: "telegram", Chat: "42", Message: "501", Part: 1}
	for _, ref := range []engine.MessageRef{r1, r2, r2} {
		if _, err := s.AddMessage(ctx, "old", ref); err != nil {
			t.Fatal(err)
		}
	}
	if refs, err := s.Messages(ctx, "old"); err != nil || !slices.Equal(refs, []engine.MessageRef{r1, r2}) {
		t.Fatalf("Messages(old) = %v, %v; want %v", refs, err, []engine.MessageRef{r1, r2})
	}
	if has, _ := s.rdb.HExists(ctx, s.k.Question("old"), fieldMessages).Result(); has {
		t.Fatal("a legacy question gained the msgs field")
	}
	r, err := s.End(ctx, "old", answered("old"), t0.Add(time.Minute))
	if err != nil || !r.Won || !slices.Equal(r.Messages, []engine.MessageRef{r1, r2}) {
		t.Fatalf("End(old) = %+v, %v; want won with %v", r, err, []engine.MessageRef{r1, r2})
	}
	if ttl := s.rdb.PTTL(ctx, s.k.messages("old")).Val(); ttl <= 0 || ttl > s.opts.Retention {
		t.Fatalf("legacy list ttl %v after the end, want the retention", ttl)
	}
	lost, err := s.End(ctx, "old", askbridge.NoAnswer("old", askbridge.ReasonCancelled, ""), t0.Add(2*time.Minute))
	if err != nil || lost.Won || !lost.Found {
		t.Fatalf("second End(old) = %+v, %v", lost, err)
	}
	// A vote that decides a legacy question returns its messages too.
	for _, voter := range []string{"7", "8"} {
		vote := askbridge.Vote{By: askbridge.Person{Platform: "telegram", ID: voter}, Answers: map[string][]string{"deploy_target": {"Production"}}, At: t0.UnixMilli()}
		v, err := s.Vote(ctx, "old-vote", vote, 2, 2, t0.Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if voter == "8" && (!v.End.Won || !slices.Equal(v.End.Messages, []engine.MessageRef{r1})) {
			t.Fatalf("deciding vote = %+v; want won with %v", v, []engine.MessageRef{r1})
		}
	}
}

// testMessagesEitherReplica: a message recorded by the replica that
// created the question (its record in memory: one round trip) and one
// recorded by another replica (two) are recorded and indexed alike, a
// message in a DM chat indexing that chat too; a message of an ended
// question is recorded but not put in a chat index.
func testMessagesEitherReplica(t *testing.T, b backend) {
	s := newStore(t, b, Options{})
	other := New(s.rdb, s.opts)
	ctx := ctxT(t)
	mustCreate(t, s, newQ("er", t0, time.Hour))
	for i, st := range []*Store{s, other} {
		in := engine.MessageRef{Platform: "telegram", Chat: "42", Message: fmt.Sprint(300 + i)}
		dm := engine.MessageRef{Platform: "telegram", Chat: fmt.Sprint(700 + i), Message: fmt.Sprint(400 + i)}
		for _, ref := range []engine.MessageRef{in, dm} {
			status, err := st.AddMessage(ctx, "er", ref)
			if err != nil || status != askbridge.StatusPending {
				t.Fatalf("replica %d: AddMessage(%v) = %q, %v", i, ref, status, err)
			}
			if id, found, err := s.QuestionByMessage(ctx, ref); err != nil || !found || id != "er" {
				t.Fatalf("replica %d: QuestionByMessage(%v) = %q, %v, %v", i, ref, id, found, err)
			}
			// As long as the question hash lives: to its deadline plus
			// the retention.
			want := time.Until(t0.Add(time.Hour)) + s.opts.Retention
			if ttl := s.rdb.PTTL(ctx, s.k.message(ref)).Val(); ttl < want-time.Minute || ttl > want+time.Second {
				t.Fatalf("replica %d: message key ttl %v, want %v (the deadline plus the retention)", i, ttl, want)
			}
		}
		if ids, err := s.OpenInChat(ctx, "telegram", dm.Chat); err != nil || !slices.Equal(ids, []string{"er"}) {
			t.Fatalf("replica %d: OpenInChat(DM) = %v, %v", i, ids, err)
		}
	}
	refs, err := s.Messages(ctx, "er")
	if err != nil || len(refs) != 4 {
		t.Fatalf("Messages = %v, %v; want 4", refs, err)
	}
	if _, err := s.End(ctx, "er", answered("er"), t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	late := engine.MessageRef{Platform: "telegram", Chat: "799", Message: "500"}
	if status, err := other.AddMessage(ctx, "er", late); err != nil || status != askbridge.StatusAnswered {
		t.Fatalf("AddMessage after the end = %q, %v; want answered", status, err)
	}
	if n := s.rdb.Exists(ctx, s.k.chat("telegram", "799")).Val(); n != 0 {
		t.Fatal("a message of an ended question was put in its chat's index")
	}
	if status, err := s.AddMessage(ctx, "nope", late); err != nil || status != "" {
		t.Fatalf("AddMessage of an unknown id = %q, %v", status, err)
	}
}

// The one message of a question in the agent's own client (platform mcp)
// is recorded like any other, shown at create or added later, on the
// replica that holds the question's record or another, but gets no
// message → question key and no chat index: nothing looks it up.
func testMessagesAgentPlace(t *testing.T, b backend) {
	s := newStore(t, b, Options{})
	other := New(s.rdb, s.opts)
	ctx := ctxT(t)
	own := askbridge.Target{Platform: askbridge.PlatformMCP}
	shown := engine.MessageRef{Platform: askbridge.PlatformMCP, Message: "ap1"}
	q := newQ("ap1", t0, time.Hour)
	q.Target = own
	q.Shown = []engine.MessageRef{shown}
	mustCreate(t, s, q)
	// Shown in the agent's client as a second place, recorded by either
	// replica.
	mustCreate(t, s, newQ("ap2", t0, time.Hour))
	added := engine.MessageRef{Platform: askbridge.PlatformMCP, Message: "ap2", Place: 1}
	for _, st := range []*Store{s, other} {
		if status, err := st.AddMessage(ctx, "ap2", added); err != nil || status != askbridge.StatusPending {
			t.Fatalf("AddMessage = %q, %v", status, err)
		}
	}
	for id, ref := range map[string]engine.MessageRef{"ap1": shown, "ap2": added} {
		if refs, err := s.Messages(ctx, id); err != nil || !slices.Contains(refs, ref) {
			t.Fatalf("Messages(%s) = %v, %v; want %v among them", id, refs, err, ref)
		}
		if n := s.rdb.Exists(ctx, s.k.message(ref)).Val(); n != 0 {
			t.Fatalf("%s: the agent's client's message got a message key", id)
		}
	}
	if n := s.rdb.Exists(ctx, s.k.chat(askbridge.PlatformMCP, "")).Val(); n != 0 {
		t.Fatal("the agent's client got a chat index")
	}
	if r, err := s.End(ctx, "ap1", answered("ap1"), t0.Add(time.Minute)); err != nil || !r.Won || !slices.Equal(r.Messages, []engine.MessageRef{shown}) {
		t.Fatalf("End(ap1) = %+v, %v; want won with its one message", r, err)
	}
}

// Messages shown at create (NewQuestion.Shown) are recorded and indexed
// as AddMessage records them, in the create's round trip; a create that
// finds the question records none.
func testMessagesShownAtCreate(t *testing.T, b backend) {
	s := newStore(t, b, Options{MaxMessages: 3})
	ctx := ctxT(t)
	page := engine.MessageRef{Platform: "web", Chat: "web", Message: "sc"}
	dm := engine.MessageRef{Platform: "telegram", Chat: "701", Message: "9"}
	again := dm
	again.Part = 1
	q := newQ("sc", t0, time.Hour)
	q.Shown = []engine.MessageRef{page, dm, again}
	mustCreate(t, s, q)
	refs, err := s.Messages(ctx, "sc")
	if err != nil || !slices.Equal(refs, []engine.MessageRef{page, dm}) {
		t.Fatalf("Messages = %v, %v; want the page's and the DM, once each", refs, err)
	}
	// Indexed as AddMessage indexes: the DM's message → question key,
	// living as long as the question, and the DM chat's index; none for
	// the page's (unindexed).
	if id, found, err := s.QuestionByMessage(ctx, dm); err != nil || !found || id != "sc" {
		t.Fatalf("QuestionByMessage(DM) = %q, %v, %v", id, found, err)
	}
	want := s.rdb.PTTL(ctx, s.k.Question("sc")).Val()
	if ttl := s.rdb.PTTL(ctx, s.k.message(dm)).Val(); ttl < want-time.Minute || ttl > want+time.Second {
		t.Fatalf("message key ttl %v, want %v (the question hash's)", ttl, want)
	}
	if n := s.rdb.Exists(ctx, s.k.message(page)).Val(); n != 0 {
		t.Fatal("the page's message got a message key")
	}
	if ids, err := s.OpenInChat(ctx, "telegram", dm.Chat); err != nil || !slices.Equal(ids, []string{"sc"}) {
		t.Fatalf("OpenInChat(DM) = %v, %v", ids, err)
	}
	// Recording a shown message again changes nothing; another is added.
	if status, err := s.AddMessage(ctx, "sc", page); err != nil || status != askbridge.StatusPending {
		t.Fatalf("AddMessage(shown) = %q, %v", status, err)
	}
	later := engine.MessageRef{Platform: "telegram", Chat: "42", Message: "10"}
	if _, err := s.AddMessage(ctx, "sc", later); err != nil {
		t.Fatal(err)
	}
	if refs, _ := s.Messages(ctx, "sc"); !slices.Equal(refs, []engine.MessageRef{page, dm, later}) {
		t.Fatalf("Messages after AddMessage = %v", refs)
	}
	// A create that finds the question records nothing it was given.
	q.Shown = []engine.MessageRef{{Platform: "telegram", Chat: "702", Message: "11"}}
	if created, _, err := s.Create(ctx, q); err != nil || created {
		t.Fatalf("Create again = %v, %v", created, err)
	}
	if refs, _ := s.Messages(ctx, "sc"); len(refs) != 3 {
		t.Fatalf("Messages after a repeated create = %v", refs)
	}
	// The end hands every shown message to the finisher.
	r, err := s.End(ctx, "sc", answered("sc"), t0.Add(time.Minute))
	if err != nil || !r.Won || !slices.Equal(r.Messages, []engine.MessageRef{page, dm, later}) {
		t.Fatalf("End = %+v, %v", r, err)
	}
	// More than MaxMessages shown is refused whole: nothing is stored.
	over := newQ("sc-over", t0, time.Hour)
	for i := range 4 {
		over.Shown = append(over.Shown, engine.MessageRef{Platform: "telegram", Chat: "42", Message: fmt.Sprint(20 + i)})
	}
	if _, _, err := s.Create(ctx, over); !errors.Is(err, ErrTooManyMessages) {
		t.Fatalf("Create with 4 shown, 3 kept = %v, want ErrTooManyMessages", err)
	}
	if _, found, _ := s.Get(ctx, "sc-over"); found {
		t.Fatal("a refused create stored the question")
	}
}

func testMessages(t *testing.T, b backend) {
	s := newStore(t, b, Options{})
	ctx := ctxT(t)
	mustCreate(t, s, newQ("m1", t0, time.Hour))
	mustCreate(t, s, newQ("m2", t0.Add(time.Second), time.Hour))
	// Open in its target's chat from its creation, before any message is
	// recorded: a tap that comes before the record finds it.
	if ids, err := s.OpenInChat(ctx, "telegram", "42"); err != nil || !slices.Equal(ids, []string{"m1", "m2"}) {
		t.Fatalf("OpenInChat before any message = %v, %v", ids, err)
	}
	r1 := engine.MessageRef{Platform: "telegram", Chat: "42", Message: "100"}
	r2 := engine.MessageRef{Platform: "telegram", Chat: "42", Message: "101"}
	r3 := engine.MessageRef{Platform: "telegram", Chat: "42", Message: "102"}
	for _, step := range []struct {
		id  string
		ref engine.MessageRef
	}{{"m1", r1}, {"m1", r2}, {"m1", r1}, {"m2", r3}, {"m2", r3}} {
		if _, err := s.AddMessage(ctx, step.id, step.ref); err != nil {
			t.Fatal(err)
		}
	}
	refs, err := s.Messages(ctx, "m1")
	if err != nil || !slices.Equal(refs, []engine.MessageRef{r1, r2}) {
		t.Fatalf("Messages(m1) = %v, %v", refs, err)
	}
	if refs, _ := s.Messages(ctx, "none"); len(refs) != 0 {
		t.Fatalf("Messages(none) = %v", refs)
	}
	for ref, want := range map[engine.MessageRef]string{r1: "m1", r2: "m1", r3: "m2"} {
		id, found, err := s.QuestionByMessage(ctx, ref)
		if err != nil || !found || id != want {
			t.Fatalf("QuestionByMessage(%v) = %q, %v, %v", ref, id, found, err)
		}
		if ttl := s.rdb.PTTL(ctx, s.k.message(ref)).Val(); ttl <= 0 {
			t.Fatalf("message key without expiry: %v", ttl)
		}
	}
	if _, found, _ := s.QuestionByMessage(ctx, engine.MessageRef{Platform: "telegram", Chat: "42", Message: "999"}); found {
		t.Fatal("unknown message found")
	}
	if ttl := s.rdb.PTTL(ctx, s.k.chat("telegram", "42")).Val(); ttl <= 0 {
		t.Fatalf("chat index without expiry: %v", ttl)
	}
	ids, err := s.OpenInChat(ctx, "telegram", "42")
	if err != nil || !slices.Equal(ids, []string{"m1", "m2"}) {
		t.Fatalf("OpenInChat = %v, %v", ids, err)
	}
	if _, err := s.End(ctx, "m1", answered("m1"), t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	ids, _ = s.OpenInChat(ctx, "telegram", "42")
	if !slices.Equal(ids, []string{"m2"}) {
		t.Fatalf("OpenInChat after End = %v", ids)
	}
	// A late message of an ended question is still found by its message.
	late := engine.MessageRef{Platform: "discord", Chat: "9", Message: "77"}
	if status, err := s.AddMessage(ctx, "m1", late); err != nil || status == askbridge.StatusPending || status == "" {
		t.Fatalf("AddMessage of an ended question = %q, %v; want its ended status", status, err)
	}
	if id, found, _ := s.QuestionByMessage(ctx, late); !found || id != "m1" {
		t.Fatalf("late message: %q %v", id, found)
	}
	if ids, _ := s.OpenInChat(ctx, "discord", "9"); len(ids) != 0 {
		t.Fatalf("ended question indexed as open: %v", ids)
	}
	// An unknown question records nothing.
	if status, err := s.AddMessage(ctx, "ghost", engine.MessageRef{Platform: "slack", Chat: "C1", Message: "1.2"}); err != nil || status != "" {
		t.Fatalf("AddMessage of an unknown question = %q, %v", status, err)
	}
	if _, found, _ := s.QuestionByMessage(ctx, engine.MessageRef{Platform: "slack", Chat: "C1", Message: "1.2"}); found {
		t.Fatal("a message of an unknown question was indexed")
	}
	if ids, err := s.OpenInChat(ctx, "slack", "nothing"); err != nil || ids == nil || len(ids) != 0 {
		t.Fatalf("OpenInChat of an empty chat = %#v, %v", ids, err)
	}
}

// testMessagesSameMessage: a message is recorded once by its platform, chat
// and message: a repeat of the same ref changes nothing, and a ref that
// differs only in Part is the same message, whose first record wins. The
// repeats come once the question holds MaxMessages messages, so a repeat
// taken for a new message would fail with ErrTooManyMessages.
func testMessagesSameMessage(t *testing.T, b backend) {
	s := newStore(t, b, Options{MaxMessages: 4})
	ctx := ctxT(t)
	mustCreate(t, s, newQ("parts", t0, time.Hour))
	first := engine.MessageRef{Platform: "telegram", Chat: "42", Message: "500", Part: 1}
	zero := engine.MessageRef{Platform: "telegram", Chat: "42", Message: "501"}
	box := engine.MessageRef{Platform: "telegram", Chat: "42", Message: "502", Part: engine.PartReplyBox}
	// "50" is a prefix of the other message ids: another message all the same.
	short := engine.MessageRef{Platform: "telegram", Chat: "42", Message: "50", Part: 2}
	for _, ref := range []engine.MessageRef{
		first, first, // the same ref twice
		zero, box, short,
		{Platform: "telegram", Chat: "42", Message: "500", Part: 2}, // first, with another part
		{Platform: "telegram", Chat: "42", Message: "500"},          // first, with part 0
		{Platform: "telegram", Chat: "42", Message: "501", Part: 3}, // zero, with a part
		{Platform: "telegram", Chat: "42", Message: "502"},          // box, with part 0
	} {
		if _, err := s.AddMessage(ctx, "parts", ref); err != nil {
			t.Fatalf("AddMessage(%+v): %v", ref, err)
		}
	}
	refs, err := s.Messages(ctx, "parts")
	if err != nil || !slices.Equal(refs, []engine.MessageRef{first, zero, box, short}) {
		t.Fatalf("Messages = %+v, %v; want each message once, as first recorded", refs, err)
	}
	for _, ref := range refs {
		other := ref
		other.Part = 7
		if id, found, err := s.QuestionByMessage(ctx, other); err != nil || !found || id != "parts" {
			t.Fatalf("QuestionByMessage(%+v) = %q, %v, %v; the part is not part of the message's identity", other, id, found, err)
		}
	}
}

func testMessagesLimit(t *testing.T, b backend) {
	s := newStore(t, b, Options{MaxMessages: 3})
	ctx := ctxT(t)
	mustCreate(t, s, newQ("lim", t0, time.Hour))
	for i := range 3 {
		if _, err := s.AddMessage(ctx, "lim", engine.MessageRef{Platform: "web", Chat: "", Message: strconv.Itoa(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.AddMessage(ctx, "lim", engine.MessageRef{Platform: "web", Message: "2"}); err != nil {
		t.Fatalf("repeat at the limit: %v", err)
	}
	_, err := s.AddMessage(ctx, "lim", engine.MessageRef{Platform: "web", Message: "3"})
	if !errors.Is(err, ErrTooManyMessages) {
		t.Fatalf("fourth message: %v, want ErrTooManyMessages", err)
	}
}

// testIndexPrune: members of expired (unknown) questions in a chat index
// are pruned once older than the grace by the store's clock, kept while
// recent.
func testIndexPrune(t *testing.T, b backend) {
	clock := clockwork.NewFakeClockAt(t0)
	s := newStore(t, b, Options{Clock: clock})
	ctx := ctxT(t)
	old := float64(t0.Add(-unknownGrace).UnixMilli())
	recent := float64(t0.Add(-unknownGrace + time.Millisecond).UnixMilli())
	chat := s.k.chat("telegram", "5")
	s.rdb.ZAdd(ctx, chat, redis.Z{Score: old, Member: "gone"}, redis.Z{Score: recent, Member: "coming"})
	ids, err := s.OpenInChat(ctx, "telegram", "5")
	if err != nil || len(ids) != 0 {
		t.Fatalf("OpenInChat = %v, %v", ids, err)
	}
	if members := s.rdb.ZRange(ctx, chat, 0, -1).Val(); !slices.Equal(members, []string{"coming"}) {
		t.Fatalf("chat index %v, want [coming]", members)
	}
	clock.Advance(time.Millisecond)
	if ids, err := s.OpenInChat(ctx, "telegram", "5"); err != nil || len(ids) != 0 {
		t.Fatalf("OpenInChat = %v, %v", ids, err)
	}
	if n := s.rdb.ZCard(ctx, chat).Val(); n != 0 {
		t.Fatalf("chat index holds %d members once all are past the grace", n)
	}
}

func testFirstSeen(t *testing.T, b backend) {
	s := newStore(t, b, Options{})
	ctx := ctxT(t)
	var wg sync.WaitGroup
	var mu sync.Mutex
	firsts := 0
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := s.FirstSeen(ctx, "telegram", "update-1", time.Minute)
			if err != nil {
				t.Error(err)
			}
			if ok {
				mu.Lock()
				firsts++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if firsts != 1 {
		t.Fatalf("%d callers saw the event first, want 1", firsts)
	}
	if ok, _ := s.FirstSeen(ctx, "discord", "update-1", time.Minute); !ok {
		t.Fatal("the same id on another platform is another event")
	}
	if ok, _ := s.FirstSeen(ctx, "slack", "e", 100*time.Millisecond); !ok {
		t.Fatal("first")
	}
	// The embedded server expires keys every 100ms: a check may come
	// before it has.
	if !testwait.Until(5*time.Second, func() bool {
		ok, _ := s.FirstSeen(ctx, "slack", "e", 100*time.Millisecond)
		return ok
	}) {
		t.Fatal("the mark must expire after its ttl")
	}
	// A handler that failed forgets the mark, so the retry is first again.
	if ok, _ := s.FirstSeen(ctx, "telegram", "failed-1", time.Minute); !ok {
		t.Fatal("first")
	}
	for range 2 { // safe to repeat
		if err := s.ForgetSeen(ctx, "telegram", "failed-1"); err != nil {
			t.Fatal(err)
		}
	}
	if ok, err := s.FirstSeen(ctx, "telegram", "failed-1", time.Minute); err != nil || !ok {
		t.Fatalf("after ForgetSeen: first = %v, %v; want true", ok, err)
	}
	// A claim in hand is not settled; once settled it is, for its new
	// life, and still not first.
	if settled, err := s.Settled(ctx, "telegram", "failed-1"); err != nil || settled {
		t.Fatalf("claim in hand: settled = %v, %v", settled, err)
	}
	if settled, err := s.Settled(ctx, "telegram", "never-seen"); err != nil || settled {
		t.Fatalf("no mark: settled = %v, %v", settled, err)
	}
	for range 2 {
		if err := s.Settle(ctx, "telegram", "failed-1", time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	if settled, err := s.Settled(ctx, "telegram", "failed-1"); err != nil || !settled {
		t.Fatalf("after Settle: settled = %v, %v", settled, err)
	}
	if ok, _ := s.FirstSeen(ctx, "telegram", "failed-1", time.Minute); ok {
		t.Fatal("a settled event was first again")
	}
	if ttl := s.rdb.PTTL(ctx, s.k.seen("telegram", "failed-1")).Val(); ttl <= time.Minute {
		t.Fatalf("settled mark lives %v, want its new hour", ttl)
	}
}

func testLeases(t *testing.T, b backend) {
	rs := replicas(t, b, 2, Options{})
	a, c := rs[0], rs[1]
	ctx := ctxT(t)
	la, ok, err := a.AcquireLease(ctx, "telegram:bot1", "a", time.Minute)
	if err != nil || !ok || la.Holder != "a" || la.Token < 1 {
		t.Fatalf("acquire: %+v, %v, %v", la, ok, err)
	}
	if ttl := a.rdb.PTTL(ctx, a.k.fence("telegram:bot1")).Val(); ttl <= time.Minute {
		t.Fatalf("fencing counter ttl %v, want the lease ttl plus the retention", ttl)
	}
	other, ok, err := c.AcquireLease(ctx, "telegram:bot1", "c", time.Minute)
	if err != nil || ok || other.Holder != "a" || other.Token != la.Token {
		t.Fatalf("acquire of a held lease: %+v, %v, %v", other, ok, err)
	}
	if ok, err := a.RenewLease(ctx, la, time.Minute); err != nil || !ok {
		t.Fatalf("renew: %v, %v", ok, err)
	}
	if ok, _ := c.RenewLease(ctx, engine.Lease{Name: la.Name, Holder: "c", Token: la.Token}, time.Minute); ok {
		t.Fatal("another holder renewed the lease")
	}
	if ok, err := a.SetCursor(ctx, "telegram:bot1", 41, la); err != nil || !ok {
		t.Fatalf("set cursor: %v, %v", ok, err)
	}
	if v, found, err := c.Cursor(ctx, "telegram:bot1"); err != nil || !found || v != 41 {
		t.Fatalf("cursor = %v, %v, %v", v, found, err)
	}
	if _, found, _ := c.Cursor(ctx, "none"); found {
		t.Fatal("unknown cursor found")
	}
	if _, err := a.SetCursor(ctx, "other", 1, la); err == nil {
		t.Fatal("a cursor fenced by a lease of another name must be refused")
	}
	// Re-acquiring draws a new token: the old one is fenced off.
	la2, ok, err := a.AcquireLease(ctx, "telegram:bot1", "a", time.Minute)
	if err != nil || !ok || la2.Token <= la.Token {
		t.Fatalf("re-acquire: %+v, %v, %v", la2, ok, err)
	}
	if ok, _ := a.SetCursor(ctx, "telegram:bot1", 99, la); ok {
		t.Fatal("a stale token wrote the cursor")
	}
	if err := a.ReleaseLease(ctx, la); err != nil {
		t.Fatal(err)
	}
	if ok, _ := a.RenewLease(ctx, la2, time.Minute); !ok {
		t.Fatal("releasing with a stale token released the current lease")
	}
	if err := a.ReleaseLease(ctx, la2); err != nil {
		t.Fatal(err)
	}
	if err := a.ReleaseLease(ctx, la2); err != nil {
		t.Fatalf("repeated release: %v", err)
	}
	lc, ok, err := c.AcquireLease(ctx, "telegram:bot1", "c", time.Minute)
	if err != nil || !ok || lc.Token <= la2.Token {
		t.Fatalf("acquire after release: %+v, %v, %v", lc, ok, err)
	}
	if ok, _ := a.SetCursor(ctx, "telegram:bot1", 100, la2); ok {
		t.Fatal("the former holder wrote the cursor")
	}
	if ok, _ := c.SetCursor(ctx, "telegram:bot1", 42, lc); !ok {
		t.Fatal("the holder could not write the cursor")
	}
	if v, _, _ := a.Cursor(ctx, "telegram:bot1"); v != 42 {
		t.Fatalf("cursor = %d, want 42", v)
	}
}

// testTextCursor: a text cursor (a Matrix since token) is written only by
// the current holder of the lease of its name, as an integer one is.
func testTextCursor(t *testing.T, b backend) {
	rs := replicas(t, b, 2, Options{})
	a, c := rs[0], rs[1]
	ctx := ctxT(t)
	const name = "matrix:@bot:example.org"
	la, ok, err := a.AcquireLease(ctx, name, "a", time.Minute)
	if err != nil || !ok {
		t.Fatalf("acquire: %+v, %v, %v", la, ok, err)
	}
	if _, found, err := c.TextCursor(ctx, name); err != nil || found {
		t.Fatalf("unwritten text cursor: found %v, %v", found, err)
	}
	if ok, err := a.SetTextCursor(ctx, name, "s72594_4483_1934", la); err != nil || !ok {
		t.Fatalf("set text cursor: %v, %v", ok, err)
	}
	if v, found, err := c.TextCursor(ctx, name); err != nil || !found || v != "s72594_4483_1934" {
		t.Fatalf("text cursor = %q, %v, %v", v, found, err)
	}
	if _, err := a.SetTextCursor(ctx, "other", "x", la); err == nil {
		t.Fatal("a text cursor fenced by a lease of another name must be refused")
	}
	if err := a.ReleaseLease(ctx, la); err != nil {
		t.Fatal(err)
	}
	lc, ok, err := c.AcquireLease(ctx, name, "c", time.Minute)
	if err != nil || !ok {
		t.Fatalf("acquire after release: %+v, %v, %v", lc, ok, err)
	}
	if ok, _ := a.SetTextCursor(ctx, name, "stale", la); ok {
		t.Fatal("the former holder wrote the text cursor")
	}
	if ok, _ := c.SetTextCursor(ctx, name, "s72595_4483_1934", lc); !ok {
		t.Fatal("the holder could not write the text cursor")
	}
	if v, _, _ := a.TextCursor(ctx, name); v != "s72595_4483_1934" {
		t.Fatalf("text cursor = %q, want the holder's", v)
	}
	if v, _, _ := a.Cursor(ctx, name); v != 0 {
		t.Fatalf("the text cursor wrote the integer cursor: %d", v)
	}
}

func testLeaseExpiry(t *testing.T, b backend) {
	rs := replicas(t, b, 2, Options{})
	ctx := ctxT(t)
	la, ok, err := rs[0].AcquireLease(ctx, "poller", "a", 100*time.Millisecond)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	// The embedded server expires keys every 100ms: a try may come before
	// it has.
	var lc engine.Lease
	testwait.Until(5*time.Second, func() bool {
		lc, ok, err = rs[1].AcquireLease(ctx, "poller", "c", time.Minute)
		return err != nil || ok
	})
	if err != nil || !ok || lc.Token <= la.Token {
		t.Fatalf("acquire after expiry: %+v, %v, %v", lc, ok, err)
	}
	if ok, _ := rs[0].RenewLease(ctx, la, time.Minute); ok {
		t.Fatal("an expired lease was renewed")
	}
}

func testEvents(t *testing.T, b backend) {
	s := newStore(t, b, Options{})
	ctx := ctxT(t)
	evs, next, err := s.Events(ctx, "$", 10, 0)
	if err != nil || len(evs) != 0 || next != "0-0" {
		t.Fatalf("Events($) on an empty stream = %v, %q, %v", evs, next, err)
	}
	published := []askbridge.Event{
		{Kind: "requested", ID: "q1", At: t0, Platform: "telegram", Chat: "42"},
		{Kind: "delivered", ID: "q1", At: t0.Add(time.Second), Platform: "telegram", Chat: "42", Message: "100"},
		{Kind: "answered", ID: "q1", At: t0.Add(2 * time.Second), Platform: "telegram", Chat: "42", By: "telegram:7"},
		{Kind: "rejected", ID: "q2", At: t0.Add(3 * time.Second), Error: "questions must contain 1 to 3 questions"},
	}
	for _, ev := range published[:2] {
		if err := s.Publish(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	// "$" resolved now: the events published next are not lost.
	_, next, err = s.Events(ctx, "$", 10, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range published[2:] {
		if err := s.Publish(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	evs, next2, err := s.Events(ctx, next, 10, 0)
	if err != nil || len(evs) != 2 || evs[0].Kind != "answered" || evs[1].Kind != "rejected" {
		t.Fatalf("events after $ = %+v, %v", evs, err)
	}
	if next2 != evs[1].StreamID {
		t.Fatalf("next id %q, want the last event's %q", next2, evs[1].StreamID)
	}
	all, _, err := s.Events(ctx, "0", 10, 0)
	if err != nil || len(all) != 4 {
		t.Fatalf("all events = %v, %v", all, err)
	}
	for i, ev := range all {
		if ev.StreamID == "" {
			t.Fatalf("event %d without its stream id", i)
		}
		ev.StreamID = ""
		if !ev.At.Equal(published[i].At) {
			t.Fatalf("event %d at %v, want %v", i, ev.At, published[i].At)
		}
		ev.At = published[i].At
		if ev != published[i] {
			t.Fatalf("event %d = %+v, want %+v", i, ev, published[i])
		}
	}
	some, nx, err := s.Events(ctx, "0", 3, 0)
	if err != nil || len(some) != 3 || nx != some[2].StreamID {
		t.Fatalf("max 3: %d events, next %q, %v", len(some), nx, err)
	}
	none, same, err := s.Events(ctx, next2, 10, 0)
	if err != nil || len(none) != 0 || same != next2 {
		t.Fatalf("nothing new: %v, %q, %v", none, same, err)
	}
}

func testEventsBlock(t *testing.T, b backend) {
	s := newStore(t, b, Options{})
	ctx := ctxT(t)
	start := time.Now()
	evs, next, err := s.Events(ctx, "$", 10, 200*time.Millisecond)
	if err != nil || len(evs) != 0 {
		t.Fatalf("blocking read = %v, %v", evs, err)
	}
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Fatalf("block 200ms returned after %v", d)
	}
	go func() {
		// Sleep: the event must come while the reader blocks, which nothing
		// reports on every backend (the in-process one has no CLIENT LIST).
		time.Sleep(100 * time.Millisecond)
		_ = s.Publish(context.Background(), askbridge.Event{Kind: "expired", ID: "q", At: t0})
	}()
	evs, _, err = s.Events(ctx, next, 10, 5*time.Second)
	if err != nil || len(evs) != 1 || evs[0].Kind != "expired" {
		t.Fatalf("woken read = %+v, %v", evs, err)
	}
}

func testEventsMaxLen(t *testing.T, b backend) {
	s := newStore(t, b, Options{EventsMaxLen: 10})
	ctx := ctxT(t)
	for i := range 600 {
		if err := s.Publish(ctx, askbridge.Event{Kind: "delivered", ID: strconv.Itoa(i), At: t0}); err != nil {
			t.Fatal(err)
		}
	}
	// MAXLEN ~ trims whole macro nodes (100 entries by default): the
	// stream stays near the cap, never near the 600 published.
	if n := s.rdb.XLen(ctx, s.k.Events()).Val(); n < 10 || n > 200 {
		t.Fatalf("events stream holds %d entries with a cap of 10", n)
	}
}
