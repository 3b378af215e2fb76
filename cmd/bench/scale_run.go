package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"sync"
	"time"
)

// scaleResult is what a scale run found.
type scaleResult struct {
	began time.Time
	took  time.Duration
	load  [2]string
	hot   string

	// idleCmds is the replicas' Redis commands a second with nothing
	// pending, summed over the masters, over idleSecs; idleTop the
	// commands, most first.
	idleCmds, idleSecs float64
	idleTop            string
	// idleSent is what the idle replicas send the masters (MONITOR).
	idleSent string

	intake  time.Duration
	clamped int
	full    fullPending

	// Over the deadlines' window, per master: CPU (seconds a second),
	// commands a second, the commands that took it the most time, and
	// what clients sent it (MONITOR, a few seconds mid-window).
	windowSecs float64
	masterCPU  []float64
	masterCmds []float64
	masterUsec []string
	masterSent []string
	profile    string
	// Over the window, in cores: every replica process together, the
	// bench itself (agents, page person), and the whole machine busy
	// (other users included).
	replicaCores, benchCores, machineCores float64
	// peakRSS is the largest peak RSS (VmHWM) of any replica process by
	// the end of the window.
	peakRSS int64

	ended scaleEnded
	ag    agentCounts
	kills int
	errs  []error
}

// fullPending is the Cluster and the replicas with every question taken
// in.
type fullPending struct {
	pending int64 // ZCARD of the deadlines
	// base and mem are each master's used_memory before the intake and
	// now; agentMem is what the agents' answered questions hold meanwhile
	// (taken out of memPer; memRaw keeps it).
	base, mem        []int64
	agentMem         float64
	memPer, memRaw   float64
	rss              []int64
	rssIdx           []int
	killedDuringLoad int
}

// agentCounts is how the agents' questions ended.
type agentCounts struct {
	asked, answered, timedOut, other, lost, errs, extra int64
	refused, reconnects, unseen                         int64
}

// phases runs the scale run's steps in order; a step that fails ends the
// run with what was found so far.
func (w *scaleWorld) phases(ctx context.Context, r *scaleResult) error {
	r.hot = w.hotKeys(ctx)
	w.logf("keys shared by all questions: %s", r.hot)
	base, err := w.idle(ctx, r)
	if err != nil {
		return err
	}
	person, err := startScalePerson(ctx, w.set, 16)
	if err != nil {
		return err
	}
	defer person.Close()
	ag := &scaleAgents{rdb: w.rdb, person: person}
	agCtx, stopAgents := context.WithCancel(ctx)
	killCtx, stopKills := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var killErr error
	wg.Add(2)
	go func() { defer wg.Done(); ag.run(agCtx, w.o.rate) }()
	go func() { defer wg.Done(); killErr = w.set.killLoop(killCtx, w.o.killEvery, w.logf) }()
	stop := func() {
		stopKills()
		stopAgents()
		wg.Wait()
	}
	ids := make([]string, w.o.pending)
	for i := range ids {
		ids[i] = fmt.Sprintf("scale-%07d", i)
	}
	start := time.Now()
	t0 := start.Add(w.o.lead)
	if err := w.intake(ctx, ids, t0, r); err != nil {
		stop()
		return err
	}
	if err := w.measureFull(ctx, base, ag, r); err != nil {
		stop()
		return err
	}
	err = w.window(ctx, t0, r)
	w.logf("window over: stopping the kills and the agents (waiting for the results of those asked)")
	stop()
	r.kills = w.set.killCount()
	r.ag = agentCounts{asked: ag.asked.Load(), answered: ag.answered.Load(), timedOut: ag.timedOut.Load(), other: ag.other.Load(),
		lost: ag.lost.Load(), errs: ag.errs.Load(), refused: person.refused.Load(), reconnects: person.reconnects.Load(), unseen: person.unseen.Load()}
	if err = errors.Join(err, killErr); err != nil {
		return err
	}
	if r.ag.extra, err = w.leftovers(ctx, ag.askedIDs()); err != nil {
		return err
	}
	return w.ends(ctx, ids, t0.Add(w.o.window), r)
}

// idle counts the idle replicas' Redis commands for idleFor; it returns
// the masters' used_memory then, the intake's base.
func (w *scaleWorld) idle(ctx context.Context, r *scaleResult) ([]int64, error) {
	w.logf("idle: counting the replicas' Redis commands for %s with nothing pending", w.o.idleFor)
	if !sleep(ctx, 5*time.Second) {
		return nil, ctx.Err()
	}
	s0, err := w.masterSnaps(ctx)
	if err != nil {
		return nil, err
	}
	t := time.Now()
	if !sleep(ctx, w.o.idleFor) {
		return nil, ctx.Err()
	}
	s1, err := w.masterSnaps(ctx)
	if err != nil {
		return nil, err
	}
	r.idleSecs = time.Since(t).Seconds()
	a, b := sumSnaps(s0), sumSnaps(s1)
	r.idleCmds = float64(b.cmds-a.cmds) / r.idleSecs
	r.idleTop = topCommands(a, b, r.idleSecs)
	r.idleSent = w.idleSent(ctx)
	w.logf("idle: %.1f Redis commands/s for %d replicas (%.2f each): %s; sent: %s", r.idleCmds, w.o.replicas, r.idleCmds/float64(w.o.replicas), r.idleTop, r.idleSent)
	base := make([]int64, len(s1))
	for i, s := range s1 {
		base[i] = s.usedMemory
	}
	return base, nil
}

// measureFull takes the memory figures with every question taken in.
func (w *scaleWorld) measureFull(ctx context.Context, base []int64, ag *scaleAgents, r *scaleResult) error {
	f := &r.full
	f.base, f.killedDuringLoad = base, w.set.killCount()
	ss, err := w.masterSnaps(ctx)
	if err != nil {
		return err
	}
	if f.pending, err = w.rdb.ZCard(ctx, prefix+"deadlines").Result(); err != nil {
		return err
	}
	if f.rssIdx, f.rss, err = w.set.rss(); err != nil {
		return err
	}
	var grew int64
	for i, s := range ss {
		f.mem = append(f.mem, s.usedMemory)
		grew += s.usedMemory - base[i]
	}
	ended := ag.answered.Load() + ag.timedOut.Load() + ag.other.Load()
	per, err := w.agentQuestionBytes(ctx, ag.askedIDs())
	if err != nil {
		return err
	}
	f.agentMem = per * float64(ended)
	f.memRaw = float64(grew) / float64(max(f.pending, 1))
	f.memPer = (float64(grew) - f.agentMem) / float64(max(f.pending, 1))
	w.logf("full: %d pending; Redis %.0f B per pending question (%.0f B before taking out the %d agents' ended questions, %.0f B each); masters %s; replica RSS %s",
		f.pending, f.memPer, f.memRaw, ended, per, mibs(f.mem), mibs(f.rss))
	return nil
}

// agentQuestionBytes is what one ended agent's question holds in Redis
// (MEMORY USAGE of its hash, over up to 200 of the first ids; the agent
// took its result list).
func (w *scaleWorld) agentQuestionBytes(ctx context.Context, ids []string) (float64, error) {
	var sum, n int64
	for _, id := range ids[:min(200, len(ids))] {
		b, err := w.rdb.MemoryUsage(ctx, questionKey(id), 0).Result()
		if err != nil {
			continue // not created, or already gone
		}
		sum, n = sum+b, n+1
	}
	if n == 0 {
		return 0, nil
	}
	return float64(sum) / float64(n), nil
}

// window waits out the deadlines' window, measuring each master over it,
// a replica's CPU profile a third in and what the masters are sent half
// way.
func (w *scaleWorld) window(ctx context.Context, t0 time.Time, r *scaleResult) error {
	w.logf("waiting for the first deadline at %s", t0.UTC().Format("15:04:05"))
	if !sleep(ctx, time.Until(t0)) {
		return ctx.Err()
	}
	s0, err := w.masterSnaps(ctx)
	if err != nil {
		return err
	}
	u0 := w.usecs(ctx)
	rc0, bc0, mc0 := w.set.cpu(), selfCPU(), machineBusy()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); r.profile = w.takeProfile(ctx, t0.Add(w.o.window/3)) }()
	go func() { defer wg.Done(); r.masterSent = w.monitor(ctx, t0.Add(w.o.window/2)) }()
	w.logf("deadlines until %s", t0.Add(w.o.window).UTC().Format("15:04:05"))
	if !sleep(ctx, time.Until(t0.Add(w.o.window))) {
		wg.Wait()
		return ctx.Err()
	}
	s1, err := w.masterSnaps(ctx)
	if err != nil {
		wg.Wait()
		return err
	}
	u1 := w.usecs(ctx)
	rc1, bc1, mc1 := w.set.cpu(), selfCPU(), machineBusy()
	r.peakRSS = w.set.peak()
	wg.Wait()
	r.windowSecs = w.o.window.Seconds()
	r.replicaCores = (rc1 - rc0).Seconds() / r.windowSecs
	r.benchCores = (bc1 - bc0).Seconds() / r.windowSecs
	r.machineCores = (mc1 - mc0).Seconds() / r.windowSecs
	w.logf("window: replicas %.2f cores, bench %.2f, machine busy %.2f of %d", r.replicaCores, r.benchCores, r.machineCores, runtime.NumCPU())
	for i := range s1 {
		secs := r.windowSecs
		r.masterCPU = append(r.masterCPU, (s1[i].cpu-s0[i].cpu).Seconds()/secs)
		r.masterCmds = append(r.masterCmds, float64(s1[i].cmds-s0[i].cmds)/secs)
		r.masterUsec = append(r.masterUsec, topUsec(u0[i], u1[i], 3))
		w.logf("master %d (%s): %.0f %% of a core, %.0f commands/s; time: %s; sent: %s",
			i+1, w.cluster.Addrs[i], 100*r.masterCPU[i], r.masterCmds[i], r.masterUsec[i], at(r.masterSent, i))
	}
	return nil
}

func at(ss []string, i int) string {
	if i < len(ss) {
		return ss[i]
	}
	return "?"
}

// usecs reads each master's commandstats times (nil for one that did not
// answer).
func (w *scaleWorld) usecs(ctx context.Context) []map[string]int64 {
	out := make([]map[string]int64, len(w.masters))
	for i, m := range w.masters {
		out[i], _ = commandUsec(ctx, m)
	}
	return out
}

// takeProfile takes a CPU profile of the replica killed last (just
// started again, so the next kill is replicas kills away) at when, for up
// to 60 s, into <artifacts>/scale-replica.pprof; it returns what the
// table says of it.
func (w *scaleWorld) takeProfile(ctx context.Context, when time.Time) string {
	if !sleep(ctx, time.Until(when)) {
		return "not taken: " + ctx.Err().Error()
	}
	i, addr := w.set.lastKilled()
	secs := int(math.Min(60, math.Max(1, w.o.window.Seconds()/4)))
	path := filepath.Join(w.artifacts(), "scale-replica.pprof")
	if err := fetchProfile(ctx, addr, secs, path); err != nil {
		return "not taken: " + err.Error()
	}
	top := pprofTop(ctx, w.bin, path)
	w.logf("profile of replica %d (%d s): %s", i, secs, top)
	return fmt.Sprintf("replica %d, %d s, %s: %s", i, secs, path, top)
}

// monitor watches each master with MONITOR for 3 s at when.
func (w *scaleWorld) monitor(ctx context.Context, when time.Time) []string {
	names := scriptNames(ctx)
	if !sleep(ctx, time.Until(when)) {
		return nil
	}
	counts, errs := w.monitorAll(ctx, names, 3*time.Second)
	out := make([]string, len(counts))
	for i, c := range counts {
		out[i] = topOf(c, 4)
		if errs[i] != nil {
			out[i] = "MONITOR: " + errs[i].Error()
		}
	}
	return out
}

// monitorAll watches every master with MONITOR for d at once.
func (w *scaleWorld) monitorAll(ctx context.Context, names map[string]string, d time.Duration) ([]map[string]int, []error) {
	counts := make([]map[string]int, len(w.masters))
	errs := make([]error, len(w.masters))
	var wg sync.WaitGroup
	for i, a := range w.cluster.Addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			counts[i], errs[i] = monitorScripts(ctx, a, d, names)
		}()
	}
	wg.Wait()
	return counts, errs
}

// idleSent is what the idle replicas send the masters together, watched
// with MONITOR for 5 s (after the idle count, which it would add to).
func (w *scaleWorld) idleSent(ctx context.Context) string {
	counts, _ := w.monitorAll(ctx, scriptNames(ctx), 5*time.Second)
	sum := map[string]int{}
	for _, c := range counts {
		for k, v := range c {
			sum[k] += v
		}
	}
	return topOf(sum, 5)
}

// mibs writes byte counts in MiB.
func mibs(bs []int64) string {
	s := ""
	for i, b := range bs {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%.1f", float64(b)/(1<<20))
	}
	return s + " MiB"
}
