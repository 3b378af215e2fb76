package store

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
)

// TestCallbacks runs the callback queue's suite against a real
// redis-server, a three-master Redis Cluster and the embedded server, as
// TestConformance does.
func TestCallbacks(t *testing.T) {
	for _, b := range allBackends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			tests := []struct {
				name string
				run  func(t *testing.T, b backend)
			}{
				{"claim/lease", testCallbackClaim},
				{"claim/one-taker", testCallbackClaimOneTaker},
				{"nudge", testCallbackNudge},
				{"lifecycle", testCallbackLifecycle},
				{"refused", testCallbackRefused},
				{"missing-question", testCallbackMissingQuestion},
				{"give-up", testCallbackGiveUp},
				{"outlives-question", testCallbackOutlivesQuestion},
			}
			if b.cluster { // slots exist there only
				tests = append(tests, struct {
					name string
					run  func(t *testing.T, b backend)
				}{"one-slot", testCallbackOneSlot})
			}
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					tc.run(t, b)
				})
			}
		})
	}
}

const hookURL = "https://agents.example.com/hooks/askbridge?k=1"

func register(t *testing.T, s *Store, id string, due time.Time) {
	t.Helper()
	if err := s.RegisterCallbacks(ctxT(t), engine.CallbackRegistration{ID: id, URL: hookURL, Due: due, Now: t0, Keep: 48 * time.Hour}); err != nil {
		t.Fatal(err)
	}
}

func claim(t *testing.T, s *Store, now time.Time, max int) []string {
	t.Helper()
	ids, err := s.ClaimCallbacks(ctxT(t), now, 30*time.Second, max)
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(ids)
	return ids
}

func begin(t *testing.T, s *Store, id string, now time.Time) engine.CallbackAttempt {
	t.Helper()
	a, err := s.BeginCallback(ctxT(t), id, now, 24*time.Hour, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func finish(t *testing.T, s *Store, f engine.CallbackFinish) bool {
	t.Helper()
	ok, err := s.FinishCallback(ctxT(t), f)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// dueAt is the due time of id (zero when it is not in the due-set).
func dueAt(t *testing.T, s *Store, id string) time.Time {
	t.Helper()
	score, err := s.rdb.ZScore(ctxT(t), s.k.callbacks(), id).Result()
	if errors.Is(err, redis.Nil) {
		return time.Time{}
	}
	if err != nil {
		t.Fatal(err)
	}
	return time.UnixMilli(int64(score))
}

// A callback is handed out once due, and again only when its claim lapsed.
func testCallbackClaim(t *testing.T, b backend) {
	s := newStore(t, b, Options{})
	register(t, s, "c1", t0.Add(time.Minute))
	register(t, s, "c2", t0.Add(70*time.Second))
	if got := claim(t, s, t0, 10); len(got) != 0 {
		t.Fatalf("claimed %v before anything was due", got)
	}
	if got := claim(t, s, t0.Add(time.Minute), 10); !slices.Equal(got, []string{"c1"}) {
		t.Fatalf("claimed %v at c1's due time, want [c1]", got)
	}
	if got := claim(t, s, t0.Add(70*time.Second), 10); !slices.Equal(got, []string{"c2"}) {
		t.Fatalf("claimed %v, want [c2]: c1's claim lasts until %v", got, t0.Add(90*time.Second))
	}
	if got := claim(t, s, t0.Add(89*time.Second), 10); len(got) != 0 {
		t.Fatalf("claimed %v while both claims hold", got)
	}
	if got := claim(t, s, t0.Add(90*time.Second), 10); !slices.Equal(got, []string{"c1"}) {
		t.Fatalf("claimed %v once c1's claim lapsed, want [c1]", got)
	}
	if got := claim(t, s, t0.Add(10*time.Minute), 1); len(got) != 1 {
		t.Fatalf("claimed %v, want one (max 1)", got)
	}
}

// Two replicas claiming at once never take the same callback, and take
// them all.
func testCallbackClaimOneTaker(t *testing.T, b backend) {
	rs := replicas(t, b, 2, Options{})
	const n = 60
	for i := range n {
		register(t, rs[0], fmt.Sprintf("q%02d", i), t0)
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for _, s := range rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				ids, err := s.ClaimCallbacks(ctxT(t), t0, time.Minute, 4)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, id := range ids {
					seen[id]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != n {
		t.Errorf("claimed %d distinct callbacks, want %d", len(seen), n)
	}
	for id, c := range seen {
		if c != 1 {
			t.Errorf("%s was claimed %d times", id, c)
		}
	}
}

// A nudge only ever brings a registered callback forward.
func testCallbackNudge(t *testing.T, b backend) {
	s := newStore(t, b, Options{})
	ctx := ctxT(t)
	register(t, s, "n1", t0.Add(time.Hour))
	if err := s.NudgeCallbacks(ctx, t0.Add(time.Minute), "n1", "not-registered"); err != nil {
		t.Fatal(err)
	}
	if got := dueAt(t, s, "n1"); !got.Equal(t0.Add(time.Minute)) {
		t.Errorf("n1 due %v after the nudge, want %v", got, t0.Add(time.Minute))
	}
	if got := dueAt(t, s, "not-registered"); !got.IsZero() {
		t.Errorf("a nudge added an id never registered (due %v)", got)
	}
	if err := s.NudgeCallbacks(ctx, t0.Add(2*time.Hour), "n1"); err != nil {
		t.Fatal(err)
	}
	// A later nudge or registration keeps the earlier due time.
	register(t, s, "n1", t0.Add(3*time.Hour))
	if got := dueAt(t, s, "n1"); !got.Equal(t0.Add(time.Minute)) {
		t.Errorf("n1 due %v after a later nudge and registration, want %v kept", got, t0.Add(time.Minute))
	}
}

// A question's callback waits while it is pending, posts exactly its
// result JSON once it ended, retries under its attempt fence, and is done
// once delivered; the question hash shows each state.
func testCallbackLifecycle(t *testing.T, b backend) {
	s := newStore(t, b, Options{})
	ctx := ctxT(t)
	id := "life-1"
	q := newQ(id, t0, 15*time.Minute)
	register(t, s, id, q.Deadline.Add(5*time.Second))
	mustCreate(t, s, q)

	if a := begin(t, s, id, t0.Add(time.Second)); a.Step != engine.CallbackWait || !a.Until.Equal(q.Deadline) {
		t.Fatalf("pending question: %+v, want wait until %v", a, q.Deadline)
	}
	ended := t0.Add(time.Minute)
	if r, err := s.End(ctx, id, answered(id), ended); err != nil || !r.Won {
		t.Fatalf("End = %+v, %v", r, err)
	}
	pushed, err := s.rdb.LIndex(ctx, s.k.Result(id), 0).Result()
	if err != nil {
		t.Fatal(err)
	}
	a1 := begin(t, s, id, ended.Add(time.Second))
	if a1.Step != engine.CallbackPost || a1.Attempt != 1 || a1.URL != hookURL || string(a1.Body) != pushed || !a1.Ended.Equal(ended) {
		t.Fatalf("first attempt %+v (body %s), want attempt 1 posting %s", a1, a1.Body, pushed)
	}
	// Taken again while the first attempt is under way (brought forward
	// while claimed): no second attempt begins until the first is
	// recorded or its time (hold) is out.
	if a := begin(t, s, id, ended.Add(2*time.Second)); a.Step != engine.CallbackBusy || !a.Until.Equal(ended.Add(time.Second+time.Minute)) {
		t.Fatalf("begun again during the first attempt: %+v, want busy until %v", a, ended.Add(time.Second+time.Minute))
	}
	next := ended.Add(10 * time.Second)
	if !finish(t, s, engine.CallbackFinish{ID: id, Attempt: 1, State: engine.CallbackRetrying, Error: "503", Now: ended, Next: next}) {
		t.Fatal("the latest attempt's failure was not recorded")
	}
	if got := dueAt(t, s, id); !got.Equal(next) {
		t.Errorf("retry due %v, want %v", got, next)
	}
	if st := s.rdb.HGet(ctx, s.k.Question(id), "callback").Val(); st != "retrying" {
		t.Errorf("question hash callback = %q, want retrying", st)
	}
	a2 := begin(t, s, id, next)
	if a2.Step != engine.CallbackPost || a2.Attempt != 2 || string(a2.Body) != pushed {
		t.Fatalf("second attempt %+v", a2)
	}
	// The first attempt's taker comes back late: fenced out.
	if finish(t, s, engine.CallbackFinish{ID: id, Attempt: 1, State: engine.CallbackDelivered, Now: next}) {
		t.Error("a stale attempt's outcome was recorded")
	}
	if !finish(t, s, engine.CallbackFinish{ID: id, Attempt: 2, State: engine.CallbackDelivered, Now: next}) {
		t.Fatal("the delivery was not recorded")
	}
	if st := s.rdb.HGet(ctx, s.k.Question(id), "callback").Val(); st != "delivered" {
		t.Errorf("question hash callback = %q, want delivered", st)
	}
	if got := dueAt(t, s, id); !got.IsZero() {
		t.Errorf("delivered callback still due at %v", got)
	}
	if a := begin(t, s, id, next.Add(time.Second)); a.Step != engine.CallbackDone {
		t.Errorf("after delivery: %+v, want done", a)
	}
	// The same request registered again (a retried XADD) changes nothing.
	register(t, s, id, next)
	if a := begin(t, s, id, next.Add(time.Second)); a.Step != engine.CallbackDone {
		t.Errorf("registered again after delivery: %+v, want done", a)
	}
	if ttl := s.rdb.PTTL(ctx, s.k.callback(id)).Val(); ttl <= 0 || ttl > s.opts.Retention {
		t.Errorf("delivered registration expires in %v, want within the retention %v", ttl, s.opts.Retention)
	}
}

// A refused request's callback posts its error result.
func testCallbackRefused(t *testing.T, b backend) {
	s := newStore(t, b, Options{})
	ctx := ctxT(t)
	register(t, s, "bad-1", t0)
	res := askbridge.Refused("bad-1", errors.New("questions is required")).Stamp(t0, t0)
	if r, err := s.Reject(ctx, "bad-1", res, t0); err != nil || !r.Won {
		t.Fatalf("Reject = %+v, %v", r, err)
	}
	a := begin(t, s, "bad-1", t0)
	pushed := s.rdb.LIndex(ctx, s.k.Result("bad-1"), 0).Val()
	if a.Step != engine.CallbackPost || string(a.Body) != pushed || pushed == "" {
		t.Errorf("refused request: %+v (body %s), want a post of %s", a, a.Body, pushed)
	}
}

// A registration whose question never comes is dropped after a while.
func testCallbackMissingQuestion(t *testing.T, b backend) {
	s := newStore(t, b, Options{})
	register(t, s, "ghost", t0)
	if a := begin(t, s, "ghost", t0.Add(time.Minute)); a.Step != engine.CallbackWait || !a.Until.IsZero() {
		t.Errorf("before the grace: %+v, want wait", a)
	}
	if a := begin(t, s, "ghost", t0.Add(callbackMissingGrace+time.Second)); a.Step != engine.CallbackDone {
		t.Errorf("after the grace: %+v, want done", a)
	}
	if n := s.rdb.Exists(ctxT(t), s.k.callback("ghost")).Val(); n != 0 {
		t.Error("the registration of a question that never came is kept")
	}
}

// A callback is given up GiveUpAfter after its question ended.
func testCallbackGiveUp(t *testing.T, b backend) {
	s := newStore(t, b, Options{})
	ctx := ctxT(t)
	id := "late-1"
	register(t, s, id, t0)
	mustCreate(t, s, newQ(id, t0, time.Minute))
	if r, err := s.End(ctx, id, answered(id), t0.Add(time.Second)); err != nil || !r.Won {
		t.Fatalf("End = %+v, %v", r, err)
	}
	if a := begin(t, s, id, t0.Add(time.Second)); a.Step != engine.CallbackPost {
		t.Fatalf("first attempt %+v", a)
	}
	a := begin(t, s, id, t0.Add(time.Second+24*time.Hour))
	if a.Step != engine.CallbackGaveUp || a.Attempt != 1 {
		t.Fatalf("a day after the end: %+v, want gave up after 1 attempt", a)
	}
	if st := s.rdb.HGet(ctx, s.k.Question(id), "callback").Val(); st != "failed" {
		t.Errorf("question hash callback = %q, want failed", st)
	}
	if a := begin(t, s, id, t0.Add(25*time.Hour)); a.Step != engine.CallbackDone {
		t.Errorf("after giving up: %+v, want done", a)
	}
}

// A callback keeps its result once its first attempt began, even when the
// question hash expires first (a short retention).
func testCallbackOutlivesQuestion(t *testing.T, b backend) {
	s := newStore(t, b, Options{})
	ctx := ctxT(t)
	id := "short-1"
	register(t, s, id, t0)
	mustCreate(t, s, newQ(id, t0, time.Minute))
	if r, err := s.End(ctx, id, answered(id), t0.Add(time.Second)); err != nil || !r.Won {
		t.Fatalf("End = %+v, %v", r, err)
	}
	a1 := begin(t, s, id, t0.Add(time.Second))
	if err := s.rdb.Del(ctx, s.k.Question(id), s.k.Result(id)).Err(); err != nil {
		t.Fatal(err)
	}
	// The first attempt's taker died: the next begins once its hold (a
	// minute) is out.
	a2 := begin(t, s, id, t0.Add(2*time.Minute))
	if a2.Step != engine.CallbackPost || a2.Attempt != 2 || string(a2.Body) != string(a1.Body) {
		t.Errorf("after the question expired: %+v, want attempt 2 of the same body", a2)
	}
	if !finish(t, s, engine.CallbackFinish{ID: id, Attempt: 2, State: engine.CallbackDelivered, Now: t0.Add(2 * time.Minute)}) {
		t.Error("delivery not recorded")
	}
	if n := s.rdb.Exists(ctx, s.k.Question(id)).Val(); n != 0 {
		t.Error("recording the delivery brought the expired question hash back")
	}
}

// The registration lives in its question's Cluster slot (run on the
// cluster backend only).
func testCallbackOneSlot(t *testing.T, b backend) {
	s := newStore(t, b, Options{})
	ctx := ctxT(t)
	for _, id := range []string{"deploy-42", "1767322800000-0", "a.b:c_d"} {
		got, err := s.rdb.ClusterKeySlot(ctx, s.k.callback(id)).Result()
		if err != nil {
			t.Fatal(err)
		}
		if want := s.rdb.ClusterKeySlot(ctx, s.k.Question(id)).Val(); got != want {
			t.Errorf("%s is in slot %d, its question in %d", s.k.callback(id), got, want)
		}
	}
}
