package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Goals of issue 33's scale run.
const (
	goalScaleMemPer    = 1400 // bytes per pending question
	goalScaleSpread    = 1.5  // max/min used_memory per master
	goalScaleLateP99   = 1000 // ms
	goalScaleIdlePerRp = 15   // Redis commands a second per idle replica (issue 33's e2e goal)
	goalScaleRSS       = 64 << 20
	fullPendingCount   = 1_000_000
	fullReplicas       = 10
	fullWindow         = 10 * time.Minute
)

// scaleTable builds the rows.
type scaleTable struct {
	b strings.Builder
	n int
	k int // goals met
	g int // goals
}

func (t *scaleTable) row(measure, now, goal string, met *bool) {
	verdict := "—"
	if met != nil {
		t.g++
		verdict = "missed"
		if *met {
			t.k++
			verdict = "met"
		}
	}
	fmt.Fprintf(&t.b, "| %s | %s | %s | %s |\n", measure, now, goal, verdict)
	t.n++
}

func ptr(b bool) *bool { return &b }

// table is the run's Markdown table, with its header lines.
func (w *scaleWorld) table(r *scaleResult) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	host, _ := os.Hostname()
	var out strings.Builder
	fmt.Fprintf(&out, "```\naskbridge scale run: %s pending to %q, %d replicas on a 3-master Redis Cluster, deadlines over %s, agents asking %.0f/s on the web page, one replica SIGKILLed every %s; %s UTC, %s, %d CPUs, %s, Redis %s, load average %s at the start, %s at the end (took %s)\n",
		thousands(w.o.pending), w.o.to, w.o.replicas, w.o.window, w.o.rate, w.o.killEvery, r.began.UTC().Format("2006-01-02 15:04"),
		host, runtime.NumCPU(), runtime.Version(), redisVersionOf(ctx, w), r.load[0], r.load[1], r.took.Round(time.Second))
	for _, s := range w.scaledDown(r) {
		fmt.Fprintln(&out, s)
	}
	fmt.Fprintf(&out, "```\n\n| measure | now | goal | |\n|---|---|---|---|\n")
	t := &scaleTable{}
	w.memoryRows(t, r)
	w.endRows(t, r)
	w.costRows(t, r)
	out.WriteString(t.b.String())
	fmt.Fprintf(&out, "\n%d of %d goals met.", t.k, t.g)
	for _, err := range r.errs {
		fmt.Fprintf(&out, " Failed: %s.", trimErr(err))
	}
	out.WriteString("\n")
	return out.String()
}

func redisVersionOf(ctx context.Context, w *scaleWorld) string {
	if len(w.masters) == 0 {
		return "?"
	}
	return redisVersion(ctx, w.masters[0])
}

// scaledDown says which parts ran smaller than issue 33's, and what the
// full size takes by this run's figures.
func (w *scaleWorld) scaledDown(r *scaleResult) []string {
	var out []string
	f := r.full
	if w.o.pending < fullPendingCount {
		out = append(out, fmt.Sprintf("scaled down: %s pending, not 1,000,000 (÷ %.0f); at 1,000,000 the Cluster holds %.0f B × 1,000,000 = %.2f GiB more",
			thousands(w.o.pending), float64(fullPendingCount)/float64(w.o.pending), f.memPer, f.memPer*fullPendingCount/(1<<30)))
	}
	if w.o.replicas < fullReplicas {
		out = append(out, fmt.Sprintf("scaled down: %d replicas, not 10", w.o.replicas))
	}
	if w.o.window != fullWindow || w.o.pending != fullPendingCount {
		out = append(out, fmt.Sprintf("deadlines: %s over %s = %.0f a second (the full size: 1,000,000 over 10m = 1,667 a second)",
			thousands(w.o.pending), w.o.window, float64(w.o.pending)/w.o.window.Seconds()))
	}
	return out
}

// memoryRows: memory per pending question, its spread, the replicas' RSS.
func (w *scaleWorld) memoryRows(t *scaleTable, r *scaleResult) {
	f := r.full
	if len(f.mem) == 0 {
		t.row("Redis memory per pending question", "not measured", "≤ 1,400 B", ptr(false))
		return
	}
	t.row("Redis memory per pending question (Σ used_memory growth of the 3 masters ÷ questions pending, the agents' ended questions taken out)",
		fmt.Sprintf("%.0f B (%s pending; %.0f B with the agents' questions in)", f.memPer, thousands(int(f.pending)), f.memRaw),
		"≤ 1,400 B", ptr(f.memPer <= goalScaleMemPer))
	lo, hi := slices.Min(f.mem), slices.Max(f.mem)
	spread := float64(hi) / float64(max(lo, 1))
	t.row("how evenly the Cluster holds it: max/min used_memory per master at full pending",
		fmt.Sprintf("%.2f (masters 1–3: %s; before the intake: %s; %s)", spread, mibs(f.mem), mibs(f.base), r.hot),
		"≤ 1.5", ptr(spread <= goalScaleSpread))
	if len(f.rss) == 0 {
		t.row("each replica's RSS at full pending", "not measured", "≤ 64 MiB", ptr(false))
		return
	}
	t.row("each replica's RSS (VmRSS) at full pending",
		fmt.Sprintf("max %.1f MiB, min %.1f MiB (%d replicas up, %d of them restarted during the intake); the most any replica process held at any time by the end of the deadlines (VmHWM): %.1f MiB",
			float64(slices.Max(f.rss))/(1<<20), float64(slices.Min(f.rss))/(1<<20), len(f.rss), min(f.killedDuringLoad, len(f.rss)), float64(r.peakRSS)/(1<<20)),
		"≤ 64 MiB", ptr(slices.Max(f.rss) <= goalScaleRSS))
}

// endRows: lateness and exactly once.
func (w *scaleWorld) endRows(t *scaleTable, r *scaleResult) {
	e := r.ended
	if len(e.late) == 0 {
		t.row("timeout lateness p99", "not measured", "≤ 1 s", ptr(false))
	} else {
		span := float64(e.last-e.first) / 1000
		p99 := quantile(e.late, 99)
		t.row("timeout lateness (result's endedAt − deadline)",
			fmt.Sprintf("p50 %.0f ms, p99 %.0f ms, max %.0f ms (%s questions; deadlines over %.0f s: %.0f a second, at most %d in one second)",
				quantile(e.late, 50), p99, quantile(e.late, 100), thousands(len(e.late)), span, float64(len(e.late))/math.Max(span, 1), e.peak),
			"p99 ≤ 1 s", ptr(p99 <= goalScaleLateP99))
	}
	a := r.ag
	ok := e.once == w.o.pending && e.none+e.doubled+e.otherwise == 0 && a.lost+a.errs+a.extra+a.other == 0
	t.row("every id ends exactly once, across the kills (every result list read whole: LRANGE; the agents' BLPOP, then LLEN)",
		fmt.Sprintf("pending: %s of %s ended once by timeout, %d without a result, %d with more than one, %d otherwise; agents: %d asked, %d answered, %d timed out (the page person missed them), %d without a result, %d failed to ask, %d results left over, %d otherwise; %d replicas SIGKILLed and restarted; %d page answers refused, %d event stream reconnects, %d questions looked for on the page without their delivered event",
			thousands(e.once), thousands(w.o.pending), e.none, e.doubled, e.otherwise, a.asked, a.answered, a.timedOut, a.lost, a.errs, a.extra, a.other, r.kills, a.refused, a.reconnects, a.unseen),
		"all exactly once", ptr(ok))
}

// costRows: idle cost, intake, where the next limit is, the profile.
func (w *scaleWorld) costRows(t *scaleTable, r *scaleResult) {
	per := r.idleCmds / float64(w.o.replicas)
	t.row("idle cost of the replicas: Redis commands a second, nothing pending (INFO commandstats summed over the masters)",
		fmt.Sprintf("%.1f/s for %d replicas, %.2f per replica, over %.0f s (the replicas' commands a second: %s; what they send, MONITOR: %s)", r.idleCmds, w.o.replicas, per, r.idleSecs, r.idleTop, r.idleSent),
		"≤ 15 per replica", ptr(r.idleSecs > 0 && per <= goalScaleIdlePerRp))
	t.row("intake (XADD paced to at most "+thousands(w.o.backlog)+" unread, until every question exists)",
		fmt.Sprintf("%s in %s (%.0f/s) by %d replicas; %d timeouts raised to the least (30 s)", thousands(w.o.pending), r.intake.Round(100*time.Millisecond),
			float64(w.o.pending)/math.Max(r.intake.Seconds(), 1e-9), w.o.replicas, r.clamped), "—", nil)
	hot := -1
	for i := range r.masterCPU {
		t.row(fmt.Sprintf("Redis master %d (%s) over the deadlines' window", i+1, w.cluster.Addrs[i]),
			fmt.Sprintf("%.0f %% of a core, %.0f commands/s; its time: %s; clients send it: %s", 100*r.masterCPU[i], r.masterCmds[i], r.masterUsec[i], at(r.masterSent, i)), "—", nil)
		if hot < 0 || r.masterCPU[i] > r.masterCPU[hot] {
			hot = i
		}
	}
	if hot >= 0 {
		var redisCores float64
		for _, c := range r.masterCPU {
			redisCores += c
		}
		t.row("where the next limit is (CPU over the deadlines' window, in cores of the machine's "+fmt.Sprint(runtime.NumCPU())+")",
			fmt.Sprintf("the busiest master is %d, at %.0f %% of a core (what it is sent, most first: %s); all 3 masters %.2f cores, the %d replicas %.2f (%.0f µs per question ended in the window, the agents' included), the bench %.2f, the whole machine %.2f busy (other users included)",
				hot+1, 100*r.masterCPU[hot], at(r.masterSent, hot), redisCores, w.o.replicas, r.replicaCores,
				r.replicaCores*r.windowSecs*1e6/math.Max(1, float64(w.o.pending)+w.o.rate*r.windowSecs), r.benchCores, r.machineCores), "—", nil)
	}
	t.row("CPU profile of one replica (its pprof endpoint) during the deadlines, flat", r.profile, "—", nil)
}

// thousands writes n with thousands separators.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
