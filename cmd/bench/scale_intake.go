package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
)

// scaleChunk is how many reads go in one pipeline.
const scaleChunk = 1000

// addChunk is how many requests go in one pipeline of the intake. The
// timeouts are whole seconds from the moment a request is taken in, so
// the deadlines of requests taken in together fall together: small
// pipelines keep each such lump small, and the deadlines even second by
// second (1,000 to a pipeline gave up to twice the mean in one second).
const addChunk = 100

// intake adds the requests of ids, addChunk to a pipeline, question i
// aimed to end at t0 + i × window ÷ len(ids): its timeout is that instant
// less the time its pipeline is sent, rounded to the second (the protocol's timeout is whole seconds
// from the moment the bridge takes the request in). Requests are added
// while fewer than backlog wait unread, so each is taken in soon after it
// is added. It returns once every question exists.
func (w *scaleWorld) intake(ctx context.Context, ids []string, t0 time.Time, r *scaleResult) error {
	step := float64(w.o.window) / float64(len(ids))
	start := time.Now()
	w.logf("intake: %d requests to %q, deadlines from %s to %s", len(ids), w.o.to,
		t0.UTC().Format("15:04:05"), t0.Add(w.o.window).UTC().Format("15:04:05"))
	for from := 0; from < len(ids); from += addChunk {
		if from%scaleChunk == 0 {
			if err := w.waitBacklog(ctx); err != nil {
				return err
			}
		}
		now := time.Now()
		pipe := w.rdb.Pipeline()
		for i := from; i < min(from+addChunk, len(ids)); i++ {
			target := t0.Add(time.Duration(float64(i) * step))
			secs := int(math.Round(target.Sub(now).Seconds()))
			if secs < askbridge.MinTimeout {
				secs = askbridge.MinTimeout
				r.clamped++
			}
			pipe.XAdd(ctx, xadd(ids[i], w.o.to, secs))
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return fmt.Errorf("intake: XADD: %w", err)
		}
		if n := from + addChunk; n%100_000 == 0 {
			w.logf("intake: %d added (%.0f/s)", n, float64(n)/time.Since(start).Seconds())
		}
	}
	if err := w.waitCreated(ctx, ids, t0); err != nil {
		return err
	}
	if err := w.waitAcked(ctx, t0); err != nil {
		return err
	}
	r.intake = time.Since(start)
	w.logf("intake: %d taken in in %s (%.0f/s); %d timeouts raised to the least, %d s", len(ids), r.intake.Round(time.Millisecond),
		float64(len(ids))/r.intake.Seconds(), r.clamped, askbridge.MinTimeout)
	return nil
}

// waitBacklog waits until fewer than backlog requests wait in the
// stream. A replica deletes each request it has acknowledged, so the
// stream's length is what is unread or still in hand (XINFO GROUPS's lag
// is not known once entries were deleted).
func (w *scaleWorld) waitBacklog(ctx context.Context) error {
	for {
		n, err := w.rdb.XLen(ctx, requestsKey()).Result()
		if err != nil {
			return fmt.Errorf("intake: XLEN: %w", err)
		}
		if n < int64(w.o.backlog) {
			return nil
		}
		if !sleep(ctx, 10*time.Millisecond) {
			return ctx.Err()
		}
	}
}

// waitAcked waits until the replicas have acknowledged (and so deleted)
// the requests, each shown first, but for about a second of the agents'
// own, or until t0 comes. A request a killed replica held waits for another to
// claim it (ASKUSER_CLAIM_IDLE, 30 s).
func (w *scaleWorld) waitAcked(ctx context.Context, t0 time.Time) error {
	for time.Until(t0) > time.Second {
		n, err := w.rdb.XLen(ctx, requestsKey()).Result()
		if err != nil {
			return fmt.Errorf("intake: XLEN: %w", err)
		}
		if float64(n) <= max(w.o.rate, 10) {
			return nil
		}
		if !sleep(ctx, 100*time.Millisecond) {
			return ctx.Err()
		}
	}
	w.logf("intake: the first deadline came before the replicas acknowledged every request")
	return nil
}

// waitCreated waits until the question of every id exists, checking from
// the first one missing. Past t0, when the first deadlines come, it stops
// waiting and the memory figures are taken with what was taken in.
func (w *scaleWorld) waitCreated(ctx context.Context, ids []string, t0 time.Time) error {
	next := 0
	for next < len(ids) {
		part := ids[next:min(next+5*scaleChunk, len(ids))]
		pipe := w.rdb.Pipeline()
		cmds := make([]*redis.IntCmd, len(part))
		for i, id := range part {
			cmds[i] = pipe.Exists(ctx, questionKey(id))
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return err
		}
		missing := false
		for i, c := range cmds {
			if c.Val() == 0 {
				next, missing = next+i, true
				break
			}
		}
		if !missing {
			next += len(part)
			continue
		}
		if time.Until(t0) < time.Second {
			w.logf("intake: the first deadline came with %d of %d questions created (in order; some later ones may be too)", next, len(ids))
			return nil
		}
		if !sleep(ctx, 200*time.Millisecond) {
			return ctx.Err()
		}
	}
	return nil
}

// leftovers counts results still on the agents' result lists after each
// agent took its one: results pushed twice.
func (w *scaleWorld) leftovers(ctx context.Context, ids []string) (int64, error) {
	var n int64
	for from := 0; from < len(ids); from += scaleChunk {
		pipe := w.rdb.Pipeline()
		var cmds []*redis.IntCmd
		for _, id := range ids[from:min(from+scaleChunk, len(ids))] {
			cmds = append(cmds, pipe.LLen(ctx, resultKey(id)))
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return 0, err
		}
		for _, c := range cmds {
			n += c.Val()
		}
	}
	return n, nil
}

// scaleEnded is how the pending questions ended: each result list read
// whole (LRANGE), with its question's deadline.
type scaleEnded struct {
	// once: exactly one result, a timeout; none: no result; doubled: more
	// than one; otherwise: one result that is not a timeout.
	once, none, doubled, otherwise int
	// late is each result's endedAt − its deadline, ms.
	late []float64
	// first and last deadline (unix ms); peak is the most in one second.
	first, last int64
	peak        int
}

// ends waits until every pending question has a result (or 3 minutes past
// the last deadline), then reads every result list whole.
func (w *scaleWorld) ends(ctx context.Context, ids []string, lastDeadline time.Time, r *scaleResult) error {
	giveUp := lastDeadline.Add(3 * time.Minute)
	missing := ids
	for len(missing) > 0 && time.Now().Before(giveUp) {
		still, err := w.withoutResult(ctx, missing)
		if err != nil {
			return err
		}
		missing = still
		if len(missing) > 0 && !sleep(ctx, 500*time.Millisecond) {
			return ctx.Err()
		}
	}
	w.logf("results: reading %d result lists", len(ids))
	e := &r.ended
	perSec := map[int64]int{}
	for from := 0; from < len(ids); from += 5 * scaleChunk {
		if err := w.readEnds(ctx, ids[from:min(from+5*scaleChunk, len(ids))], e, perSec); err != nil {
			return err
		}
	}
	for _, n := range perSec {
		e.peak = max(e.peak, n)
	}
	w.logf("results: %d ended once by timeout, %d without a result, %d with more than one, %d otherwise; lateness p50 %.0f ms, p99 %.0f ms, max %.0f ms",
		e.once, e.none, e.doubled, e.otherwise, quantile(e.late, 50), quantile(e.late, 99), quantile(e.late, 100))
	return nil
}

// withoutResult is the ids of part whose result list does not exist.
func (w *scaleWorld) withoutResult(ctx context.Context, ids []string) ([]string, error) {
	var still []string
	for from := 0; from < len(ids); from += 5 * scaleChunk {
		part := ids[from:min(from+5*scaleChunk, len(ids))]
		pipe := w.rdb.Pipeline()
		cmds := make([]*redis.IntCmd, len(part))
		for i, id := range part {
			cmds[i] = pipe.Exists(ctx, resultKey(id))
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, err
		}
		for i, c := range cmds {
			if c.Val() == 0 {
				still = append(still, part[i])
			}
		}
	}
	return still, nil
}

// readEnds reads the result lists and deadlines of part into e.
func (w *scaleWorld) readEnds(ctx context.Context, part []string, e *scaleEnded, perSec map[int64]int) error {
	pipe := w.rdb.Pipeline()
	results := make([]*redis.StringSliceCmd, len(part))
	deadlines := make([]*redis.StringCmd, len(part))
	for i, id := range part {
		results[i] = pipe.LRange(ctx, resultKey(id), 0, -1)
		deadlines[i] = pipe.HGet(ctx, questionKey(id), "deadline")
	}
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return err
	}
	for i, id := range part {
		got := results[i].Val()
		switch {
		case len(got) == 0:
			e.none++
			continue
		case len(got) > 1:
			e.doubled++
			continue
		}
		var res askbridge.Result
		if err := json.Unmarshal([]byte(got[0]), &res); err != nil {
			return fmt.Errorf("%s: unreadable result %q", id, got[0])
		}
		if res.Reason != askbridge.ReasonTimeout {
			e.otherwise++
			continue
		}
		e.once++
		d, err := strconv.ParseInt(deadlines[i].Val(), 10, 64)
		if err != nil {
			return fmt.Errorf("%s: deadline %q: %w", id, deadlines[i].Val(), err)
		}
		e.late = append(e.late, float64(res.EndedAt-d))
		perSec[d/1000]++
		if e.first == 0 || d < e.first {
			e.first = d
		}
		e.last = max(e.last, d)
	}
	return nil
}

// quantile is the p-th percentile of vs (nearest rank); NaN for none.
func quantile(vs []float64, p float64) float64 {
	if len(vs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), vs...)
	slices.Sort(s)
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// pprofTop is the five functions with the most CPU of profile path, flat
// ("name 12.3%, …").
func pprofTop(ctx context.Context, bin, path string) string {
	out, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-nodecount=5", bin, path).Output()
	if err != nil {
		return "pprof: " + err.Error()
	}
	return parsePprofTop(string(out))
}

// parsePprofTop reads the rows of `go tool pprof -top`: each function and
// its flat share.
func parsePprofTop(out string) string {
	var parts []string
	inTable := false
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 5 && f[0] == "flat" {
			inTable = true
			continue
		}
		if inTable && len(f) >= 6 {
			parts = append(parts, fmt.Sprintf("%s %s", strings.Join(f[5:], " "), f[1]))
		}
	}
	return strings.Join(parts, ", ")
}
