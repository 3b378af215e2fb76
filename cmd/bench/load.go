package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
)

// level is the web page path at one concurrency: c agents each asking one
// question after another, the web person answering each as it is
// delivered.
type level struct {
	c        int
	answered int
	elapsed  time.Duration
	cpu      time.Duration
	redis    perQuestion
	// redisCPU and benchCPU are what Redis and the bench itself (agents,
	// web person) used meanwhile, on the same cores.
	redisCPU, benchCPU time.Duration
	// syscalls is how many read and write system calls the bridge made.
	syscalls int64
	// lat is each question's ask (XADD) → result (BLPOP returns).
	lat []time.Duration
}

func (l level) qps() float64 { return float64(l.answered) / l.elapsed.Seconds() }

func (l level) cpuPer() time.Duration {
	if l.answered == 0 {
		return -1
	}
	return l.cpu / time.Duration(l.answered)
}

// webLevels runs the web page path at each concurrency of params.levels.
// The last (highest) level is the one profiled.
func (w *world) webLevels(ctx context.Context, m *measured) error {
	rt, _, err := roundTripCost(ctx, w.redis.Addr)
	if err != nil {
		return err
	}
	m.rtWeb = rt
	w.logf("web: one Redis round trip costs %s of CPU back to back now", rt)
	person, err := startWebPerson(ctx, w.bridge.addr, slices.Max(w.p.levels))
	if err != nil {
		return err
	}
	defer person.Close()
	var ids []string
	for i, c := range w.p.levels {
		l, lids, err := w.webLevel(ctx, person, c, i == len(w.p.levels)-1)
		ids = append(ids, lids...)
		m.counts.WebAsked += len(lids)
		m.counts.WebAnswered += l.answered
		if err != nil {
			return err
		}
		m.web = append(m.web, l)
		n := time.Duration(max(l.answered, 1))
		w.logf("web, %d at once: %d answered in %s (%.0f/s), p50 %s; per question: %.1f Redis commands, %.1f round trips, %.1f bridge system calls (read, write), CPU bridge %s, Redis %s, bench %s (commands: %s)",
			c, l.answered, l.elapsed.Round(time.Millisecond), l.qps(), pct(l.lat, 50).Round(10*time.Microsecond),
			l.redis.cmds, l.redis.trips, float64(l.syscalls)/float64(n), l.cpuPer(), l.redisCPU/n, l.benchCPU/n, l.redis.top)
	}
	m.counts.PageRefused = int(person.refused.Load())
	if r := person.reconnects.Load(); r > 0 {
		w.logf("web: the bridge ended the page's event stream %d times (it fell behind)", r)
	}
	extra, err := leftover(ctx, w.rdb, ids)
	m.counts.Extra += extra
	return err
}

func (w *world) webLevel(ctx context.Context, person *webPerson, c int, profile bool) (level, []string, error) {
	l := level{c: c}
	s0, err := snapshot(ctx, w.admin)
	if err != nil {
		return l, nil, err
	}
	cpu0, err := w.bridge.cpu()
	if err != nil {
		return l, nil, err
	}
	sys0 := w.bridge.syscalls()
	self0 := selfCPU()
	prof := func() error { return nil }
	if profile {
		prof = w.profile(ctx, "web", w.p.levelFor)
	}
	start := time.Now()
	end := start.Add(w.p.levelFor)
	var answered atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, c)
	idsOf := make([][]string, c)
	latOf := make([][]time.Duration, c)
	for i := range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; time.Now().Before(end); n++ {
				id := fmt.Sprintf("w%d-%d-%d", c, i, n)
				idsOf[i] = append(idsOf[i], id)
				person.expect(id)
				t0 := time.Now()
				if err := ask(ctx, w.rdb, id, "web", answerTimeout); err != nil {
					errs[i] = err
					return
				}
				r, err := result(ctx, w.rdb, id, time.Minute)
				if err != nil {
					errs[i] = err
					return
				}
				if r.Status != askbridge.StatusAnswered {
					errs[i] = fmt.Errorf("%s ended %s/%s, not answered", id, r.Status, r.Reason)
					return
				}
				latOf[i] = append(latOf[i], time.Since(t0))
				answered.Add(1)
			}
		}()
	}
	wg.Wait()
	l.elapsed = time.Since(start)
	cpu1, err := w.bridge.cpu()
	if err != nil {
		return l, nil, err
	}
	s1, err := snapshot(ctx, w.admin)
	if err != nil {
		return l, nil, err
	}
	l.answered = int(answered.Load())
	l.cpu = cpu1 - cpu0
	l.syscalls = w.bridge.syscalls() - sys0
	l.redisCPU, l.benchCPU = s1.cpu-s0.cpu, selfCPU()-self0
	l.redis = redisPer(s0, s1, l.answered)
	var ids []string
	for i := range c {
		ids = append(ids, idsOf[i]...)
		l.lat = append(l.lat, latOf[i]...)
	}
	if err := errors.Join(errs...); err != nil {
		return l, ids, err
	}
	return l, ids, prof()
}

// batchRun is the batch between its intake and its deadlines.
type batchRun struct {
	ids []string
	// done is when the bridge had taken in the whole batch.
	done time.Time
	// run numbers the batch's runs, from 0; only the first is profiled.
	run int
}

// batchResult is what the batch found.
type batchResult struct {
	n      int
	intake time.Duration
	// memPer is the growth of Redis's used_memory per pending question
	// (its request's stream entry while the bridge keeps it); rss is the
	// bridge's resident
	// memory; both with pending questions pending (all n, unless the
	// intake took longer than the timeout: then just before the first
	// deadline).
	memPer  float64
	rss     int64
	pending int
	// late is each question's result time (its endedAt) − its deadline,
	// in milliseconds.
	late []float64
	// timedOut counts questions that ended with exactly one timeout
	// result; extra counts results beyond one per question.
	timedOut, extra int
	// trips is the bridge's Redis round trips over the intake, by its own
	// count (redisCalls: a command or a pipeline each). reads is Redis's
	// reads meanwhile (total_reads_processed, less the bench's own: its
	// XADD pipelines, measured alike on a scratch stream, and its INFO and
	// XINFO calls); readsAll is the whole difference.
	trips, reads, readsAll int64
}

// batchStart pipelines n requests for the web page with the shortest
// timeout, waits until the bridge has taken them all in (read, created,
// shown, acknowledged: the consumer group has nothing left to read and
// nothing pending), and measures memory with all of them pending, and the
// round trips the intake took. run numbers the batch's runs (from 0).
func (w *world) batchStart(ctx context.Context, r *batchResult, run int) (*batchRun, error) {
	n := w.p.n
	b := &batchRun{ids: make([]string, n), run: run}
	for i := range b.ids {
		b.ids[i] = fmt.Sprintf("batch%d-%06d", run, i)
	}
	in, err := w.newIntake(ctx, b.ids, r)
	if err != nil {
		return nil, err
	}
	// The profile covers the first seconds of the intake (at least one).
	prof := func() error { return nil }
	if run == 0 {
		prof = w.profile(ctx, "intake", time.Duration(n/20000)*time.Second)
	}
	bridge0, err := w.bridge.cpu()
	if err != nil {
		return nil, err
	}
	sys0 := w.bridge.syscalls()
	calls0, err := w.bridge.redisCalls(ctx)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	go in.add(ctx, b.ids)
	if err := in.wait(ctx, start); err != nil {
		return nil, err
	}
	b.done = time.Now()
	bridge1, err := w.bridge.cpu()
	if err != nil {
		return nil, err
	}
	sys1 := w.bridge.syscalls()
	calls1, err := w.bridge.redisCalls(ctx)
	if err != nil {
		return nil, err
	}
	s1, err := snapshot(ctx, w.admin)
	if err != nil {
		return nil, err
	}
	if err := prof(); err != nil {
		return nil, err
	}
	if !in.measuredMem {
		if err := in.memory(ctx, n); err != nil {
			return nil, err
		}
	}
	r.n, r.intake = n, b.done.Sub(start)
	r.trips = calls1 - calls0
	// s1's own read is one; the bench's reads are taken off.
	r.readsAll = s1.reads - in.s0.reads - 1
	r.reads = r.readsAll - in.benchReads.Load() - in.addReads
	w.logf("batch: %.1f bridge round trips to Redis per 1,000 requests taken in (its own count); Redis reads %d per 1,000 (%d in all, the bench's own %d taken off)",
		intakeTrips(calls0, calls1, n), r.reads*1000/int64(n), r.readsAll, in.benchReads.Load()+in.addReads)
	w.logf("batch: %d requests taken in in %s (%.0f/s); per request: %.2f bridge system calls (read, write), CPU bridge %s, Redis %s (the bench's own writes included); Redis %.0f B per pending question (a request's stream entry alone: %.0f B), bridge RSS %.1f MiB at %d pending",
		n, r.intake.Round(time.Millisecond), float64(n)/r.intake.Seconds(), float64(sys1-sys0)/float64(n), (bridge1-bridge0)/time.Duration(n), (s1.cpu-in.s0.cpu)/time.Duration(n),
		r.memPer, in.entry, float64(r.rss)/(1<<20), r.pending)
	return b, nil
}

// intake is the batch while the bridge takes it in: Redis before it, and
// the memory figures it puts in r.
type intake struct {
	w *world
	n int
	r *batchResult
	// entry is the memory of one request's stream entry; read0 is what the
	// consumer group had read, and s0 what Redis had, before the batch.
	entry float64
	read0 int64
	s0    redisSnap
	// addReads is how many reads Redis made of the same XADD pipelines on
	// a scratch stream (entryBytes): the bench's adding's share of
	// total_reads_processed. benchReads counts the bench's other calls
	// during the intake (INFO, XINFO GROUPS), one read each.
	addReads   int64
	benchReads atomic.Int64
	// measuredMem is set once memory has taken the figures.
	measuredMem bool
	// added is set once every request was added; addErr then has nil, or
	// has the error that stopped the adding.
	added  atomic.Bool
	addErr chan error
}

// newIntake measures Redis before the batch of ids.
func (w *world) newIntake(ctx context.Context, ids []string, r *batchResult) (*intake, error) {
	in := &intake{w: w, n: len(ids), r: r, addErr: make(chan error, 1)}
	var err error
	if in.entry, in.addReads, err = w.entryBytes(ctx, ids); err != nil {
		return nil, err
	}
	if in.read0, err = w.groupRead(ctx); err != nil {
		return nil, err
	}
	if in.s0, err = snapshot(ctx, w.admin); err != nil {
		return nil, err
	}
	return in, nil
}

// add adds the requests of ids to the requests stream, 1,000 to a
// pipeline, then reports on addErr.
func (in *intake) add(ctx context.Context, ids []string) {
	for from := 0; from < in.n; from += 1000 {
		pipe := in.w.rdb.Pipeline()
		for _, id := range ids[from:min(from+1000, in.n)] {
			pipe.XAdd(ctx, xadd(id, "web", batchTimeout))
		}
		if _, err := pipe.Exec(ctx); err != nil {
			in.addErr <- err
			return
		}
	}
	in.added.Store(true)
	in.addErr <- nil
}

// memory takes the memory figures with k questions taken in. All n
// requests were added by then; the n-k not yet read are still entries of
// the stream, and are taken out.
func (in *intake) memory(ctx context.Context, k int) error {
	in.benchReads.Add(1)
	s1, err := snapshot(ctx, in.w.admin)
	if err != nil {
		return err
	}
	if in.r.rss, err = in.w.bridge.rss(); err != nil {
		return err
	}
	in.r.pending, in.measuredMem = k, true
	in.r.memPer = in.entry + (float64(s1.usedMemory-in.s0.usedMemory)-in.entry*float64(in.n))/float64(max(k, 1))
	return nil
}

// wait waits until every request was added and the bridge has taken them
// all in, for at most 10 minutes from start. When that takes longer than
// the batch's timeout, it takes the memory figures before the first
// deadline.
func (in *intake) wait(ctx context.Context, start time.Time) error {
	for {
		if !sleep(ctx, 5*time.Millisecond) {
			return ctx.Err()
		}
		select {
		case err := <-in.addErr:
			if err != nil {
				return err
			}
		default:
		}
		if !in.added.Load() {
			continue
		}
		in.benchReads.Add(1)
		g, err := in.w.group(ctx)
		if err != nil {
			return err
		}
		if g.EntriesRead-in.read0 >= int64(in.n) && g.Pending == 0 {
			return nil
		}
		// The first deadline comes batchTimeout after the first question
		// was created, which is after start: measure memory before it, with
		// what has been taken in so far.
		if !in.measuredMem && time.Since(start) > (batchTimeout-1)*time.Second {
			if err := in.memory(ctx, int(g.EntriesRead-in.read0-g.Pending)); err != nil {
				return err
			}
			in.w.logf("batch: intake slower than the timeout; memory measured with %d of %d taken in", in.r.pending, in.n)
		}
		if time.Since(start) > 10*time.Minute {
			return fmt.Errorf("intake of %d requests not done after 10 minutes (%d read, %d pending)", in.n, g.EntriesRead-in.read0, g.Pending)
		}
	}
}

// entryBytes is the memory one request's stream entry takes: the same
// requests added to a scratch stream, which is then deleted. (The bridge
// leaves entries in the requests stream once handled.) reads is how many
// reads Redis made of them (total_reads_processed): a big pipeline
// arrives in several.
func (w *world) entryBytes(ctx context.Context, ids []string) (perEntry float64, reads int64, err error) {
	const scratch = "bench:scratch"
	s0, err := snapshot(ctx, w.admin)
	if err != nil {
		return 0, 0, err
	}
	for from := 0; from < len(ids); from += 1000 {
		pipe := w.admin.Pipeline()
		for _, id := range ids[from:min(from+1000, len(ids))] {
			a := xadd(id, "web", batchTimeout)
			a.Stream = scratch
			pipe.XAdd(ctx, a)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return 0, 0, err
		}
	}
	s1, err := snapshot(ctx, w.admin)
	if err != nil {
		return 0, 0, err
	}
	if err := w.admin.Del(ctx, scratch).Err(); err != nil {
		return 0, 0, err
	}
	return float64(s1.usedMemory-s0.usedMemory) / float64(len(ids)), s1.reads - s0.reads - 1, nil
}

// group is the one consumer group of the requests stream (the bridge's).
func (w *world) group(ctx context.Context) (redis.XInfoGroup, error) {
	gs, err := w.admin.XInfoGroups(ctx, requestsKey()).Result()
	if err != nil {
		return redis.XInfoGroup{}, fmt.Errorf("bench: XINFO GROUPS: %w", err)
	}
	if len(gs) != 1 {
		return redis.XInfoGroup{}, fmt.Errorf("bench: the requests stream has %d consumer groups, want 1", len(gs))
	}
	return gs[0], nil
}

func (w *world) groupRead(ctx context.Context) (int64, error) {
	g, err := w.group(ctx)
	return g.EntriesRead, err
}

// batchFinish waits for every question of the batch to end by its
// deadline, then reads each one's result and deadline.
func (w *world) batchFinish(ctx context.Context, b *batchRun, r *batchResult) error {
	// The profile covers the first seconds of the deadlines.
	first := b.done.Add(-r.intake).Add(batchTimeout * time.Second)
	if !sleep(ctx, time.Until(first)) {
		return ctx.Err()
	}
	prof := func() error { return nil }
	if b.run == 0 {
		prof = w.profile(ctx, "timeouts", max(r.intake/2, time.Second))
	}
	// Every deadline is at most batchTimeout after the intake ended.
	if !sleep(ctx, time.Until(b.done.Add(batchTimeout*time.Second+500*time.Millisecond))) {
		return ctx.Err()
	}
	if err := prof(); err != nil {
		return err
	}
	if err := w.awaitResults(ctx, b.ids); err != nil {
		return err
	}
	if err := w.readResults(ctx, b.ids, r); err != nil {
		return err
	}
	w.logf("batch: %d timed out; lateness p50 %.0f ms, p99 %.0f ms, max %.0f ms",
		r.timedOut, pctf(r.late, 50), pctf(r.late, 99), slices.Max(r.late))
	return nil
}

// awaitResults waits until every question of ids has a result, for at most
// 2 minutes, checking every 250 ms.
func (w *world) awaitResults(ctx context.Context, ids []string) error {
	missing := ids
	giveUp := time.Now().Add(2 * time.Minute)
	for len(missing) > 0 {
		var still []string
		for from := 0; from < len(missing); from += 1000 {
			part := missing[from:min(from+1000, len(missing))]
			pipe := w.admin.Pipeline()
			cmds := make([]*redis.IntCmd, len(part))
			for i, id := range part {
				cmds[i] = pipe.Exists(ctx, resultKey(id))
			}
			if _, err := pipe.Exec(ctx); err != nil {
				return err
			}
			for i, c := range cmds {
				if c.Val() == 0 {
					still = append(still, part[i])
				}
			}
		}
		missing = still
		if len(missing) == 0 {
			break
		}
		if time.Now().After(giveUp) {
			return fmt.Errorf("%d of %d questions had no result 2 minutes after their deadlines", len(missing), len(ids))
		}
		if !sleep(ctx, 250*time.Millisecond) {
			return ctx.Err()
		}
	}
	return nil
}

// readResults reads the result and the deadline of each question of ids
// into r: how late each ended, how many timed out once, and the results
// beyond one.
func (w *world) readResults(ctx context.Context, ids []string, r *batchResult) error {
	for from := 0; from < len(ids); from += 1000 {
		part := ids[from:min(from+1000, len(ids))]
		pipe := w.admin.Pipeline()
		results := make([]*redis.StringSliceCmd, len(part))
		deadlines := make([]*redis.StringCmd, len(part))
		for i, id := range part {
			results[i] = pipe.LRange(ctx, resultKey(id), 0, -1)
			deadlines[i] = pipe.HGet(ctx, questionKey(id), "deadline")
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return err
		}
		for i, id := range part {
			got := results[i].Val()
			if len(got) > 1 {
				r.extra += len(got) - 1
			}
			var res askbridge.Result
			if len(got) == 0 || json.Unmarshal([]byte(got[0]), &res) != nil {
				return fmt.Errorf("%s: unreadable result %q", id, got)
			}
			deadline, err := strconv.ParseInt(deadlines[i].Val(), 10, 64)
			if err != nil {
				return fmt.Errorf("%s: deadline %q: %w", id, deadlines[i].Val(), err)
			}
			if res.Reason == askbridge.ReasonTimeout && len(got) == 1 {
				r.timedOut++
			}
			r.late = append(r.late, float64(res.EndedAt-deadline))
		}
	}
	return nil
}
