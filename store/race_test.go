package store

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
)

// testRace50Answers: 50 answers race for one question across five
// replicas: exactly one wins, and the other 49 learn who won and what.
func testRace50Answers(t *testing.T, b backend) {
	rs := replicas(t, b, 5, Options{})
	ctx := ctxT(t)
	mustCreate(t, rs[0], newQ("race", t0, time.Hour))
	results := make([]engine.EndResult, 50)
	errs := make([]error, 50)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := askbridge.Answered("race", map[string][]string{"deploy_target": {"Production"}},
				&askbridge.Person{Platform: "telegram", ID: strconv.Itoa(i)}, askbridge.ViaButton)
			<-start
			results[i], errs[i] = rs[i%len(rs)].End(ctx, "race", res, t0.Add(time.Duration(i)*time.Millisecond))
		}()
	}
	close(start)
	wg.Wait()
	var winner *engine.EndResult
	for i := range results {
		if errs[i] != nil {
			t.Fatalf("End %d: %v", i, errs[i])
		}
		if results[i].Won {
			if winner != nil {
				t.Fatalf("two winners: %s and %s", winner.Result.AnsweredBy.ID, results[i].Result.AnsweredBy.ID)
			}
			winner = &results[i]
		}
	}
	if winner == nil {
		t.Fatal("no winner")
	}
	for i, r := range results {
		if r.Won {
			continue
		}
		if !r.Found || !sameJSON(r.Result, winner.Result) {
			t.Fatalf("loser %d learned %+v, want the winner's %+v", i, r.Result, winner.Result)
		}
	}
	if n := rs[0].rdb.LLen(ctx, rs[0].k.Result("race")).Val(); n != 1 {
		t.Fatalf("result list holds %d results", n)
	}
}

// testRaceAnswerTimeoutCancel: an answer, the sweeper and a cancel race for
// each of 20 questions due now: exactly one outcome each, and exactly one
// result on its list. The answer and the cancel arrive a millisecond before
// the deadline (at the deadline they would end as a timeout whoever wins),
// the sweeper sweeps at it.
func testRaceAnswerTimeoutCancel(t *testing.T, b backend) {
	rs := replicas(t, b, 3, Options{})
	ctx := ctxT(t)
	const n = 20
	for i := range n {
		mustCreate(t, rs[0], newQ("q"+strconv.Itoa(i), t0, time.Second))
	}
	now := t0.Add(time.Second)
	before := now.Add(-time.Millisecond)
	var mu sync.Mutex
	wins := map[string][]string{}
	win := func(id, by string) {
		mu.Lock()
		wins[id] = append(wins[id], by)
		mu.Unlock()
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		id := "q" + strconv.Itoa(i)
		wg.Add(2)
		go func() {
			defer wg.Done()
			<-start
			r, err := rs[0].End(ctx, id, answered(id), before)
			if err != nil {
				t.Error(err)
			} else if r.Won {
				win(id, "answer")
			}
		}()
		go func() {
			defer wg.Done()
			<-start
			r, err := rs[1].End(ctx, id, askbridge.NoAnswer(id, askbridge.ReasonCancelled, ""), before)
			if err != nil {
				t.Error(err)
			} else if r.Won {
				win(id, "cancel")
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-start
		for {
			ended, err := rs[2].Sweep(ctx, now, 5)
			if err != nil {
				t.Error(err)
				return
			}
			for _, r := range ended {
				win(r.Record.ID, "timeout")
			}
			if rs[2].rdb.ZCard(ctx, rs[2].k.deadlines()).Val() == 0 {
				return
			}
		}
	}()
	close(start)
	wg.Wait()
	outcomes := map[string]int{}
	for i := range n {
		id := "q" + strconv.Itoa(i)
		if len(wins[id]) != 1 {
			t.Fatalf("%s won by %v, want exactly one", id, wins[id])
		}
		outcomes[wins[id][0]]++
		if l := rs[0].rdb.LLen(ctx, rs[0].k.Result(id)).Val(); l != 1 {
			t.Fatalf("%s: %d results on the list", id, l)
		}
		rec, _, err := rs[0].Get(ctx, id)
		if err != nil || rec.Result == nil {
			t.Fatalf("%s: %+v, %v", id, rec, err)
		}
		want := map[string]askbridge.Outcome{"answer": askbridge.OutcomeAnswered, "cancel": askbridge.OutcomeCancelled, "timeout": askbridge.OutcomeExpired}[wins[id][0]]
		if rec.Result.Outcome() != want {
			t.Fatalf("%s: stored outcome %s, winner %s", id, rec.Result.Outcome(), wins[id][0])
		}
	}
	t.Logf("outcomes: %v", outcomes)
}

// testRaceSweeps: 2,000 due questions swept by three concurrent sweepers:
// every one expires exactly once.
func testRaceSweeps(t *testing.T, b backend) {
	rs := replicas(t, b, 3, Options{})
	ctx := ctxT(t)
	const n = 2000
	var wg sync.WaitGroup
	work := make(chan int)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				q := newQ("sw"+strconv.Itoa(i), t0, time.Duration(1+i%50)*time.Second)
				q.Answerers = nil
				if _, _, err := rs[w%3].Create(ctx, q); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	// Not yet due: nothing is swept.
	if ended, err := rs[0].Sweep(ctx, t0, 100); err != nil || len(ended) != 0 {
		t.Fatalf("sweep before any deadline: %d, %v", len(ended), err)
	}
	now := t0.Add(time.Minute)
	var total atomic.Int64
	seen := sync.Map{}
	var dups atomic.Int64
	for _, s := range rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				ended, err := s.Sweep(ctx, now, 100)
				if err != nil {
					t.Error(err)
					return
				}
				for _, r := range ended {
					total.Add(1)
					if _, loaded := seen.LoadOrStore(r.Record.ID, true); loaded {
						dups.Add(1)
					}
				}
				if len(ended) == 0 && s.rdb.ZCard(ctx, s.k.deadlines()).Val() == 0 {
					return
				}
			}
		}()
	}
	wg.Wait()
	if total.Load() != n || dups.Load() != 0 {
		t.Fatalf("swept %d with %d duplicates, want %d exactly once", total.Load(), dups.Load(), n)
	}
}

// testRaceDeadConsumer: a replica takes an entry and dies before
// acknowledging it; another claims it after ClaimIdle, once.
func testRaceDeadConsumer(t *testing.T, b backend) {
	rs := replicas(t, b, 3, Options{ClaimIdle: 500 * time.Millisecond})
	dead, heir, third := rs[0], rs[1], rs[2]
	ctx := ctxT(t)
	id := dead.rdb.XAdd(ctx, &redis.XAddArgs{Stream: dead.k.Requests(), Values: []any{"cancel", "orphan"}}).Val()
	taken := time.Now()
	got, err := dead.ReadRequests(ctx, 10, 0)
	if err != nil || len(got) != 1 {
		t.Fatalf("dying consumer read %v, %v", got, err)
	}
	// Before the idle time nobody else gets it.
	var handled []string
	early, err := heir.ReadRequests(ctx, 10, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(early) > 0 {
		if time.Since(taken) < heir.opts.ClaimIdle {
			t.Fatalf("claimed before the idle time: %v", early)
		}
		handled = append(handled, heir.opts.Consumer) // this machine was slow
		if err := heir.AckRequest(ctx, early[0].StreamID); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(handled) == 0 && time.Now().Before(deadline) {
		for _, s := range []*Store{heir, third} {
			got, err := s.ReadRequests(ctx, 10, 50*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range got {
				if e.StreamID != id || e.Cancel != "orphan" {
					t.Fatalf("unexpected entry %+v", e)
				}
				handled = append(handled, s.opts.Consumer)
				if err := s.AckRequest(ctx, e.StreamID); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	// Well past the idle time, nobody gets it again.
	// Sleep: the server compares its own idle time with ClaimIdle, which
	// no clock of the test moves, and nothing comes to wait on.
	time.Sleep(time.Second)
	for _, s := range []*Store{heir, third} {
		got, err := s.ReadRequests(ctx, 10, 0)
		if err != nil {
			t.Fatal(err)
		}
		for range got {
			handled = append(handled, s.opts.Consumer)
		}
	}
	if len(handled) != 1 {
		t.Fatalf("the orphaned entry was handled by %v, want exactly one consumer", handled)
	}
	if p := dead.rdb.XPending(ctx, dead.k.Requests(), dead.opts.Group).Val(); p.Count != 0 {
		t.Fatalf("%d entries still pending", p.Count)
	}
}
