package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Report is a run's table and checks.
type Report struct {
	Mode    string
	N       int
	Machine string
	// Load is the machine's 1-minute load average at the start and at the
	// end: the bench shares the machine with whatever else runs.
	Load [2]string
	// RoundTrip is what one Redis round trip costs a process in CPU on
	// this machine: back to back, and after 10 ms asleep (roundTripCost).
	RoundTrip [2]time.Duration
	At        time.Time
	Took      time.Duration
	Rows      []Row
	Counts    Counts
	// Errors names the phases that failed, with why.
	Errors map[string]string
}

// Row is one line of the table.
type Row struct {
	// ID names the row for programs (the tests): "web-cmds", ….
	ID      string
	Measure string
	Now     string
	// Ratio is the figure judged against a goal that is a ratio to a
	// ceiling measured in the same run; "—" for the other rows.
	Ratio string
	Goal  string
	// Verdict is "met", "missed", or "—" for a row without a goal.
	Verdict string
	// Values are the numbers behind Now; NaN where none was produced.
	Values []float64
}

// Goals of issue 33: counts, or ratios to a ceiling measured in the same
// run.
const (
	goalWebCmds      = 20   // Redis commands per answered web question
	goalTGCmds       = 30   // Redis commands per tapped Telegram question
	goalTGTrips      = 10   // Redis round trips per tapped Telegram question
	goalCeiling      = 0.9  // web q/s ÷ the Redis-bound ceiling, at least
	goalCPURatio     = 10.0 // web CPU per question ÷ a round trip's CPU
	goalWakeups      = 8    // bridge wake-ups per tapped Telegram question
	goalIntakeTrips  = 60   // Redis round trips per 1,000 requests taken in
	goalLateP99      = 250.0
	goalColdStart    = 20 * time.Millisecond
	goalIdleCmds     = 15 // Redis commands per second per idle replica
	goalLateP99Words = "≤ 250 ms"
)

func (w *world) report(m *measured) *Report {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rep := &Report{Mode: "full", N: w.p.n, Machine: w.machine(ctx), At: time.Now(), Counts: m.counts, Errors: map[string]string{},
		RoundTrip: [2]time.Duration{m.rtBusy, m.rtIdle}}
	if w.o.Short {
		rep.Mode = "short"
	}
	for name, err := range m.errs {
		rep.Errors[name] = err.Error()
	}
	t := &table{rep: rep, m: m, peak: peakLevel(m.web)}
	t.commandRows()
	t.ratioRows()
	t.wakeupRow()
	t.batchGoalRows(w.p.n, w.p.batchRuns)
	t.startRows()
	lat := tgLatenciesOf(m.tgLat)
	t.pacingRows(lat)
	t.cpuRow()
	t.latencyRow(lat)
	t.batchInfoRows(w.p.n)
	return rep
}

// peakLevel is the web level with the most answered questions a second.
func peakLevel(levels []level) level {
	peak := level{}
	for _, l := range levels {
		if l.answered > 0 && l.qps() > peak.qps() || peak.answered == 0 {
			peak = l
		}
	}
	return peak
}

// table adds the rows of a report from what the phases found.
type table struct {
	rep *Report
	m   *measured
	// peak is the web level with the highest throughput.
	peak level
}

// spec is a row before its phase's outcome is known.
type spec struct {
	phase, id, measure, goal string
	values                   []float64
	// now says the figures, the ratio ("" for none) and whether the goal
	// was met.
	now func() (now, ratio string, met bool)
}

// row adds the row of a measure of phase: "not run" or the phase's error
// (its values NaN) when the phase did not run or failed, else what now
// says, and whether the goal was met. A goal of "—" is an info row.
func (t *table) row(s spec) {
	r := Row{ID: s.id, Measure: s.measure, Goal: s.goal, Values: s.values, Ratio: "—"}
	if t.m.skipped[s.phase] {
		r.Now, r.Verdict = "not run", "—"
		for i := range r.Values {
			r.Values[i] = nan()
		}
	} else if err, failed := t.m.errs[s.phase]; failed {
		r.Now, r.Verdict = "error: "+trimErr(err), "missed"
		for i := range r.Values {
			r.Values[i] = nan()
		}
	} else {
		var met bool
		var ratio string
		r.Now, ratio, met = s.now()
		if ratio != "" {
			r.Ratio = ratio
		}
		switch {
		case s.goal == "—":
			r.Verdict = "—"
		case met:
			r.Verdict = "met"
		default:
			r.Verdict = "missed"
		}
	}
	t.rep.Rows = append(t.rep.Rows, r)
}

// tgLatencies are the Telegram latency phase's samples, by measure.
type tgLatencies struct {
	edit, tapAfter, send, answer []time.Duration
}

func tgLatenciesOf(samples []tgSample) tgLatencies {
	var l tgLatencies
	for _, s := range samples {
		l.edit, l.tapAfter = append(l.edit, s.edit), append(l.tapAfter, s.tapAfter)
		l.send, l.answer = append(l.send, s.send), append(l.answer, s.answer)
	}
	return l
}

// commandRows are the goal rows of Redis commands and round trips per
// answered question (INFO commandstats and total_reads_processed over the
// phase, bridge and agent together), web and Telegram.
func (t *table) commandRows() {
	peak, tg := t.peak, t.m.tgSat
	t.row(spec{phase: "web", id: "web-cmds", measure: "Redis commands per answered question, web path (bridge + agent, commands inside scripts included)",
		goal: fmt.Sprintf("≤ %d", goalWebCmds), values: []float64{peak.redis.cmds, peak.redis.trips},
		now: func() (string, string, bool) {
			return fmt.Sprintf("%.1f (%.1f round trips, %.1f scripts; %d agents at once)", peak.redis.cmds, peak.redis.trips, peak.redis.scripts, peak.c),
				"", peak.redis.cmds <= goalWebCmds
		}})
	t.row(spec{phase: "telegram saturated", id: "tg-cmds", measure: "Redis commands / round trips per tapped question, Telegram path",
		goal: fmt.Sprintf("≤ %d / ≤ %d", goalTGCmds, goalTGTrips), values: []float64{tg.redis.cmds, tg.redis.trips},
		now: func() (string, string, bool) {
			return fmt.Sprintf("%.1f / %.1f (%.1f scripts; %d chats at once)", tg.redis.cmds, tg.redis.trips, tg.redis.scripts, tg.workers),
				"", tg.redis.cmds <= goalTGCmds && tg.redis.trips <= goalTGTrips
		}})
}

// ratioRows are the goal rows judged against this machine's own ceilings,
// measured in the same run: Redis's throughput (redis-benchmark) and what
// one Redis round trip costs a process (roundTripCost).
func (t *table) ratioRows() {
	m, peak := t.m, t.peak
	ceiling := m.redisOps / peak.redis.cmds
	share := peak.qps() / ceiling
	t.row(spec{phase: "web", id: "web-ceiling", measure: "web path answered q/s ÷ Redis-bound ceiling (redis-benchmark ops/s, same run, ÷ the web path's commands per question)",
		goal: fmt.Sprintf("≥ %.1f", goalCeiling), values: []float64{peak.qps(), ceiling, share},
		now: func() (string, string, bool) {
			return fmt.Sprintf("%s q/s (%d agents at once) ÷ %s q/s (%s ops/s ÷ %.1f)", group(peak.qps(), 0), peak.c,
				group(ceiling, 0), group(m.redisOps, 0), peak.redis.cmds), fmt.Sprintf("%.2f", share), share >= goalCeiling
		}})
	cpuRatio := float64(peak.cpuPer()) / float64(m.rtWeb)
	if m.rtWeb <= 0 || peak.answered == 0 {
		cpuRatio = nan()
	}
	t.row(spec{phase: "web", id: "cpu-ratio", measure: "bridge CPU per web question ÷ one back-to-back Redis round trip's CPU (same run, just before the web levels)",
		goal: fmt.Sprintf("≤ %.0f", goalCPURatio), values: []float64{msf(peak.cpuPer()), float64(m.rtWeb) / float64(time.Microsecond), cpuRatio},
		now: func() (string, string, bool) {
			return fmt.Sprintf("%s ÷ %s (%d agents at once)", fmtDur(peak.cpuPer()), micros(m.rtWeb), peak.c),
				fmt.Sprintf("%.1f", cpuRatio), cpuRatio <= goalCPURatio
		}})
}

// wakeupRow is the goal row of the bridge's wake-ups per tapped Telegram
// question (voluntary context switches over the saturated phase).
func (t *table) wakeupRow() {
	tg := t.m.tgSat
	per := tg.wakeupsPer()
	t.row(spec{phase: "telegram saturated", id: "tg-wakeups", measure: "bridge wake-ups per tapped Telegram question (voluntary context switches of all its threads ÷ questions)",
		goal: fmt.Sprintf("≤ %d, counted", goalWakeups), values: []float64{per},
		now: func() (string, string, bool) {
			if math.IsNaN(per) {
				return "not counted (no /proc/<pid>/task)", "", false
			}
			return fmt.Sprintf("%.1f (%s switches, %d questions in %s; idle, the bridge wakes %s times a second)", per, group(float64(tg.wakeups), 0),
				tg.answered, fmtDur(tg.elapsed), group(t.m.idleWakeups, 0)), "", per <= goalWakeups
		}})
}

// batchGoalRows are the goal rows of the batch: the intake's round trips
// and each run's timeout lateness.
func (t *table) batchGoalRows(n, runs int) {
	var b batchResult
	if len(t.m.batches) > 0 {
		b = t.m.batches[0]
	}
	per := intakeTrips(0, b.trips, b.n)
	reads := nan()
	if b.n > 0 {
		reads = float64(b.reads) * 1000 / float64(b.n)
	}
	t.row(spec{phase: "batch intake", id: "intake-trips", measure: "intake: Redis round trips per 1,000 requests taken in (the bridge's own count, a command or a pipeline each; Redis's reads, total_reads_processed less the bench's own, beside it)",
		goal: fmt.Sprintf("≤ %d", goalIntakeTrips), values: []float64{per},
		now: func() (string, string, bool) {
			return fmt.Sprintf("%.1f (%s for %s requests; Redis read %.0f per 1,000, a large pipeline 16 KB at a time)", per, group(float64(b.trips), 0),
				group(float64(b.n), 0), reads), "", per <= goalIntakeTrips
		}})
	var p99s []float64
	var parts []string
	met := 0
	for _, r := range t.m.batches {
		if len(r.late) == 0 {
			continue
		}
		p := pctf(r.late, 99)
		p99s = append(p99s, p)
		parts = append(parts, fmtMS(p))
		if p <= goalLateP99 {
			met++
		}
	}
	t.row(spec{phase: "batch timeouts", id: "lateness", measure: fmt.Sprintf("timeout lateness p99 at N pending with %d s timeouts (result's endedAt − deadline), each run", batchTimeout),
		goal: fmt.Sprintf("%s in %d of %d runs", goalLateP99Words, runs, runs), values: append([]float64{}, p99s...),
		now: func() (string, string, bool) {
			return fmt.Sprintf("%s (%d of %d runs ≤ 250 ms, %s questions each)", strings.Join(parts, ", "), met, runs, group(float64(n), 0)),
				"", runs > 0 && met == runs
		}})
}

// startRows are the goal rows of a bridge's start and idle cost: cold
// start, and Redis commands a second with nothing asked.
func (t *table) startRows() {
	m := t.m
	cold := pct(m.coldStart, 50)
	t.row(spec{phase: "cold start", id: "cold-start", measure: fmt.Sprintf("cold start, exec → first getUpdates at the fake Telegram (median of %d)", coldStarts),
		goal: "≤ 20 ms", values: []float64{msf(cold)},
		now: func() (string, string, bool) {
			return fmt.Sprintf("%s (%s)", fmtDur(cold), joinDur(m.coldStart)), "", len(m.coldStart) > 0 && cold <= goalColdStart
		}})
	t.row(spec{phase: "", id: "idle-cmds", measure: "idle Redis commands per second per replica (INFO commandstats over a quiet window, nothing asked)",
		goal: fmt.Sprintf("≤ %d", goalIdleCmds), values: []float64{m.idleCmds, m.idleTrips},
		now: func() (string, string, bool) {
			return fmt.Sprintf("%.1f (%.1f round trips/s; %s CPU per second)", m.idleCmds, m.idleTrips, fmtDur(m.idle)),
				"", m.idleCmds <= goalIdleCmds
		}})
}

// pacingRows are the info rows of what Telegram's pacing must not delay:
// other chats' questions, and the edit after a tap (issue 12's goals).
func (t *table) pacingRows(lat tgLatencies) {
	m, edit := t.m, lat.edit
	t.row(spec{phase: "head of line", id: "hol", measure: "one chat's pacing delays other chats: 3 questions to chat A, then 1 to chat B → B's request → sendMessage (issue 12: ≤ 10 ms)",
		goal: "—", values: []float64{msf(m.hol)},
		now: func() (string, string, bool) {
			return fmt.Sprintf("%s (chat A's sends at %s)", fmtDur(m.hol), joinDur(m.holA)), "", true
		}})
	t.row(spec{phase: "telegram latency", id: "edit", measure: "edit after a tap that comes < 1 s after the prompt (tap → editMessageText; issue 12: p99 ≤ 50 ms)",
		goal: "—", values: []float64{msf(pct(edit, 50)), msf(pct(edit, 99))},
		now: func() (string, string, bool) {
			return fmt.Sprintf("p50 %s, p99 %s, max %s (%d taps, each ≤ %s after its prompt)",
				fmtDur(pct(edit, 50)), fmtDur(pct(edit, 99)), fmtDur(pct(edit, 100)), len(edit), fmtDur(pct(lat.tapAfter, 100))), "", true
		}})
}

// cpuRow is the info row of the bridge's CPU per answered question, web
// (saturated) and Telegram.
func (t *table) cpuRow() {
	m, peak, tg := t.m, t.peak, t.m.tgSat
	t.row(spec{phase: "web", id: "cpu", measure: "bridge CPU per answered question (process CPU time ÷ answered), web page path saturated; Telegram path",
		goal: "—", values: []float64{msf(peak.cpuPer()), msf(tg.cpuPer())},
		now: func() (string, string, bool) {
			tgNow := "Telegram not run"
			if !m.skipped["telegram saturated"] {
				tgNow = fmt.Sprintf("Telegram %s (%s q/s, %d chats at once; idle, the bridge uses %s CPU per second)",
					fmtDur(tg.cpuPer()), group(tg.qps(), 1), tg.workers, fmtDur(m.idle))
			}
			return fmt.Sprintf("web %s (%s q/s, %d agents at once); %s", fmtDur(peak.cpuPer()), group(peak.qps(), 0), peak.c, tgNow), "", true
		}})
}

// latencyRow is the info row of a question's way one at a time:
// Telegram's, and the web page's at its lowest level.
func (t *table) latencyRow(lat tgLatencies) {
	low := level{}
	if len(t.m.web) > 0 {
		low = t.m.web[0]
	}
	send, answer := lat.send, lat.answer
	t.row(spec{phase: "telegram latency", id: "latency", measure: "request → sendMessage p50/p99; tap → agent has the answer p50/p99 (Telegram, one question at a time)",
		goal: "—", values: []float64{msf(pct(send, 50)), msf(pct(send, 99)), msf(pct(answer, 50)), msf(pct(answer, 99))},
		now: func() (string, string, bool) {
			s := fmt.Sprintf("%s / %s; %s / %s (%d questions)", fmtDur(pct(send, 50)), fmtDur(pct(send, 99)),
				fmtDur(pct(answer, 50)), fmtDur(pct(answer, 99)), len(send))
			if len(low.lat) > 0 {
				s += fmt.Sprintf("; web ask → answer %s / %s (%d at once)", fmtDur(pct(low.lat, 50)), fmtDur(pct(low.lat, 99)), low.c)
			}
			return s, "", true
		}})
}

// batchInfoRows are the info rows of the batch's first run (its intake's
// rate, the memory it takes) and of the failover.
func (t *table) batchInfoRows(n int) {
	m := t.m
	var b batchResult
	if len(m.batches) > 0 {
		b = m.batches[0]
	}
	rate := float64(b.n) / b.intake.Seconds()
	t.row(spec{phase: "batch intake", id: "intake-rate", measure: fmt.Sprintf("intake of N pipelined requests (N = %s)", group(float64(n), 0)),
		goal: "—", values: []float64{b.intake.Seconds(), rate},
		now: func() (string, string, bool) {
			return fmt.Sprintf("%s in %s (%s/s)", group(float64(b.n), 0), fmtDur(b.intake), group(rate, 0)), "", true
		}})
	t.row(spec{phase: "failover", id: "failover", measure: "poller failover after SIGKILL of the polling replica (kill → the other's first getUpdates)",
		goal: "—", values: []float64{msf(pct(m.failover, 50)), msf(pct(m.failover, 100))},
		now: func() (string, string, bool) {
			return fmt.Sprintf("median %s, max %s (%d kills)", fmtDur(pct(m.failover, 50)), fmtDur(pct(m.failover, 100)), len(m.failover)), "", true
		}})
	t.row(spec{phase: "batch intake", id: "memory", measure: "Redis memory per pending question (used_memory growth per question taken in); bridge RSS at N pending",
		goal: "—", values: []float64{b.memPer, float64(b.rss) / (1 << 20)},
		now: func() (string, string, bool) {
			return fmt.Sprintf("%s B; %.1f MiB at %s pending", group(b.memPer, 0), float64(b.rss)/(1<<20), group(float64(b.pending), 0)), "", true
		}})
}

// micros prints d in whole microseconds.
func micros(d time.Duration) string {
	return fmt.Sprintf("%d µs", d.Round(time.Microsecond)/time.Microsecond)
}

// Print writes the table as Markdown.
func (r *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "askbridge end-to-end benchmark: %s run, N = %s, %s, %s, load average %s at the start, %s at the end (took %s)\n",
		r.Mode, group(float64(r.N), 0), r.At.Format("2006-01-02 15:04 MST"), r.Machine, r.Load[0], r.Load[1], r.Took.Round(time.Second))
	if r.RoundTrip[0] > 0 {
		fmt.Fprintf(w, "one Redis round trip costs a process %s of CPU back to back, %s after 10 ms asleep (waking up included)\n",
			micros(r.RoundTrip[0]), micros(r.RoundTrip[1]))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| measure | now | ratio | goal | |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, row := range r.Rows {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", row.Measure, row.Now, row.Ratio, row.Goal, row.Verdict)
	}
	met := 0
	goals := 0
	for _, row := range r.Rows {
		if row.Verdict != "—" {
			goals++
			if row.Verdict == "met" {
				met++
			}
		}
	}
	c := r.Counts
	fmt.Fprintf(w, "\n%d of %d goals met. Checks: web %d asked, %d answered; Telegram %d asked, %d answered; batch %d, %d timed out once; %d results pushed twice; %d page answers refused; %d callback queries answered twice; %d taps lost by the bridge (tapped again).\n",
		met, goals, c.WebAsked, c.WebAnswered, c.TelegramAsked, c.TelegramAnswered, c.Batch, c.BatchTimedOut, c.Extra, c.PageRefused, c.TapsRefused, c.Retaps)
	names := make([]string, 0, len(r.Errors))
	for name := range r.Errors {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		fmt.Fprintf(w, "phase %q failed: %s\n", name, r.Errors[name])
	}
}

func nan() float64 { return math.NaN() }

// msf is d in milliseconds; NaN for a negative d (none measured).
func msf(d time.Duration) float64 {
	if d < 0 {
		return nan()
	}
	return float64(d) / float64(time.Millisecond)
}

// pct is the p-th percentile (nearest rank) of ds; -1 for none.
func pct(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return -1
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[rank(len(s), p)]
}

// pctf is the p-th percentile (nearest rank) of vs; NaN for none.
func pctf(vs []float64, p float64) float64 {
	if len(vs) == 0 {
		return nan()
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	return s[rank(len(s), p)]
}

func rank(n int, p float64) int {
	i := int(math.Ceil(p/100*float64(n))) - 1
	return min(max(i, 0), n-1)
}

// fmtDur prints a duration for the table.
func fmtDur(d time.Duration) string {
	if d < 0 {
		return "n/a"
	}
	switch {
	case d >= 10*time.Second:
		return fmt.Sprintf("%.1f s", d.Seconds())
	case d >= time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
	return fmtMS(msf(d))
}

// fmtMS prints milliseconds for the table.
func fmtMS(v float64) string {
	switch {
	case math.IsNaN(v):
		return "n/a"
	case math.Abs(v) < 1:
		return fmt.Sprintf("%.3f ms", v)
	case math.Abs(v) < 10:
		return fmt.Sprintf("%.2f ms", v)
	case math.Abs(v) < 100:
		return fmt.Sprintf("%.1f ms", v)
	}
	return group(v, 0) + " ms"
}

func joinDur(ds []time.Duration) string {
	s := make([]string, len(ds))
	for i, d := range ds {
		s[i] = fmtDur(d)
	}
	return strings.Join(s, ", ")
}

// group prints v with the given decimals and thousands separators.
func group(v float64, decimals int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "n/a"
	}
	s := strconv.FormatFloat(math.Abs(v), 'f', decimals, 64)
	whole, frac, _ := strings.Cut(s, ".")
	var b strings.Builder
	if v < 0 {
		b.WriteByte('-')
	}
	for i, c := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if frac != "" {
		b.WriteByte('.')
		b.WriteString(frac)
	}
	return b.String()
}
