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
	Measure string
	Now     string
	Goal    string
	// Verdict is "met", "missed", or "—" for a row without a goal.
	Verdict string
	// Values are the numbers behind Now; NaN where none was produced.
	Values []float64
}

// Goals of issue 12.
const (
	goalHOL        = 10 * time.Millisecond
	goalEditAtOnce = 50 * time.Millisecond
	goalCmds       = 20
	goalCPUWeb     = 250 * time.Microsecond
	goalCPUTG      = 500 * time.Microsecond
	goalQPS        = 4000
	goalIntakeRate = 100_000 / 5.0 // 100,000 requests in 5 s
	goalLateP99    = 250.0         // ms
	goalFailover   = 5 * time.Second
	goalMemPer     = 1500     // bytes
	goalRSS        = 64 << 20 // bytes
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
	t := &table{rep: rep, m: m}
	lat := tgLatenciesOf(m.tgLat)
	t.pacingRows(lat)
	t.capacityRows()
	t.latencyRow(lat)
	t.batchRows(w.p.n)
	return rep
}

// table adds the rows of a report from what the phases found.
type table struct {
	rep *Report
	m   *measured
}

// row adds the row of a measure of phase: "not run" or the phase's error
// (its values NaN) when the phase did not run or failed, else what now
// says, and whether the goal was met.
func (t *table) row(phase, measure, goal string, values []float64, now func() (string, bool)) {
	r := Row{Measure: measure, Goal: goal, Values: values}
	if t.m.skipped[phase] {
		r.Now, r.Verdict = "not run", "—"
		for i := range r.Values {
			r.Values[i] = nan()
		}
	} else if err, failed := t.m.errs[phase]; failed {
		r.Now, r.Verdict = "error: "+trimErr(err), "missed"
		for i := range r.Values {
			r.Values[i] = nan()
		}
	} else {
		var met bool
		r.Now, met = now()
		switch {
		case goal == "—":
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

// pacingRows are the rows of what Telegram's pacing must not delay: other
// chats' questions, and the edit after a tap.
func (t *table) pacingRows(lat tgLatencies) {
	m, edit := t.m, lat.edit
	t.row("head of line", "one chat's pacing delays other chats: 3 questions to chat A, then 1 to chat B → B's request → sendMessage",
		"≤ 10 ms", []float64{msf(m.hol)}, func() (string, bool) {
			return fmt.Sprintf("%s (chat A's sends at %s)", fmtDur(m.hol), joinDur(m.holA)), m.hol <= goalHOL
		})
	t.row("telegram latency", "edit after a tap that comes < 1 s after the prompt (tap → editMessageText)",
		"at once (p99 ≤ 50 ms)", []float64{msf(pct(edit, 50)), msf(pct(edit, 99))}, func() (string, bool) {
			return fmt.Sprintf("p50 %s, p99 %s, max %s (%d taps, each ≤ %s after its prompt)",
					fmtDur(pct(edit, 50)), fmtDur(pct(edit, 99)), fmtDur(pct(edit, 100)), len(edit), fmtDur(pct(lat.tapAfter, 100))),
				len(edit) > 0 && pct(edit, 99) <= goalEditAtOnce
		})
}

// capacityRows are the rows of the saturated phases: Redis commands, CPU
// and answered questions per second, the web page's at its best level.
func (t *table) capacityRows() {
	m := t.m
	peak := level{}
	for _, l := range m.web {
		if l.answered > 0 && l.qps() > peak.qps() || peak.answered == 0 {
			peak = l
		}
	}
	webPhase := "web"
	tg := m.tgSat
	redisPhase := webPhase
	if _, failed := m.errs["telegram saturated"]; failed {
		redisPhase = "telegram saturated"
	}
	t.row(redisPhase, "Redis commands per answered question (bridge + agent, INFO commandstats, commands inside scripts included); round trips (total_reads_processed)",
		"≤ 20 commands", []float64{peak.redis.cmds, peak.redis.trips, tg.redis.cmds, tg.redis.trips}, func() (string, bool) {
			tgNow := fmt.Sprintf("Telegram %.1f commands, %.1f round trips (%.1f scripts)", tg.redis.cmds, tg.redis.trips, tg.redis.scripts)
			if m.skipped["telegram saturated"] {
				tgNow = "Telegram not run"
			}
			return fmt.Sprintf("web %.1f commands, %.1f round trips (%.1f scripts); %s",
					peak.redis.cmds, peak.redis.trips, peak.redis.scripts, tgNow),
				peak.redis.cmds <= goalCmds && tg.redis.cmds <= goalCmds
		})
	t.row(webPhase, "bridge CPU per answered question, web page path, saturated (process CPU time / answered)",
		"≤ 0.25 ms", []float64{msf(peak.cpuPer())}, func() (string, bool) {
			return fmt.Sprintf("%s (%s q/s, %d agents at once)", fmtDur(peak.cpuPer()), group(peak.qps(), 0), peak.c),
				peak.answered > 0 && peak.cpuPer() <= goalCPUWeb
		})
	t.row("telegram saturated", "bridge CPU per answered question, Telegram path",
		"≤ 0.5 ms", []float64{msf(tg.cpuPer())}, func() (string, bool) {
			return fmt.Sprintf("%s (%s q/s, %d chats at once; idle, the bridge uses %s CPU per second)",
					fmtDur(tg.cpuPer()), group(tg.qps(), 1), tg.workers, fmtDur(m.idle)),
				tg.answered > 0 && tg.cpuPer() <= goalCPUTG
		})
	t.row(webPhase, "answered questions/s, 1 replica, web page path; redis-benchmark (SET, GET) in the same run",
		"≥ 4,000", []float64{peak.qps(), m.redisOps}, func() (string, bool) {
			return fmt.Sprintf("%s q/s (%d agents at once); redis-benchmark %s ops/s, %s× that",
				group(peak.qps(), 0), peak.c, group(m.redisOps, 0), group(m.redisOps/peak.qps(), 0)), peak.qps() >= goalQPS
		})
}

// latencyRow is the row, without a goal, of a question's way one at a
// time: Telegram's, and the web page's at its lowest level.
func (t *table) latencyRow(lat tgLatencies) {
	low := level{}
	if len(t.m.web) > 0 {
		low = t.m.web[0]
	}
	send, answer := lat.send, lat.answer
	t.row("telegram latency", "request → sendMessage p50/p99; tap → agent has the answer p50/p99 (Telegram, one question at a time)",
		"—", []float64{msf(pct(send, 50)), msf(pct(send, 99)), msf(pct(answer, 50)), msf(pct(answer, 99))}, func() (string, bool) {
			s := fmt.Sprintf("%s / %s; %s / %s (%d questions)", fmtDur(pct(send, 50)), fmtDur(pct(send, 99)),
				fmtDur(pct(answer, 50)), fmtDur(pct(answer, 99)), len(send))
			if len(low.lat) > 0 {
				s += fmt.Sprintf("; web ask → answer %s / %s (%d at once)", fmtDur(pct(low.lat, 50)), fmtDur(pct(low.lat, 99)), low.c)
			}
			return s, true
		})
}

// batchRows are the rows of the batch of n (its intake, its timeouts, the
// memory it takes) and of the failover.
func (t *table) batchRows(n int) {
	m := t.m
	b := m.batch
	rate := float64(b.n) / b.intake.Seconds()
	t.row("batch intake", fmt.Sprintf("intake of N pipelined requests (N = %s)", group(float64(n), 0)),
		"≤ 5 s per 100,000 (≥ 20,000/s)", []float64{b.intake.Seconds(), rate}, func() (string, bool) {
			return fmt.Sprintf("%s in %s (%s/s)", group(float64(b.n), 0), fmtDur(b.intake), group(rate, 0)), rate >= goalIntakeRate
		})
	t.row("batch intake", "intake: the bridge's Redis round trips per 1,000 requests taken in (its own count, a command or a pipeline each); Redis reads (total_reads_processed, the bench's own taken out)",
		"≤ 60 round trips", []float64{b.trips, b.reads}, func() (string, bool) {
			return fmt.Sprintf("%.1f round trips; %.1f reads", b.trips, b.reads), b.trips <= goalIntakeTrips
		})
	t.row("batch timeouts", fmt.Sprintf("timeout lateness at N pending with %d s timeouts (result's endedAt − deadline)", batchTimeout),
		"p99 ≤ 250 ms", []float64{pctf(b.late, 50), pctf(b.late, 99)}, func() (string, bool) {
			return fmt.Sprintf("p50 %s, p99 %s, max %s (%s questions)", fmtMS(pctf(b.late, 50)), fmtMS(pctf(b.late, 99)),
				fmtMS(pctf(b.late, 100)), group(float64(len(b.late)), 0)), len(b.late) > 0 && pctf(b.late, 99) <= goalLateP99
		})
	t.row("failover", "poller failover after SIGKILL of the polling replica (kill → the other's first getUpdates)",
		"≤ 5 s", []float64{msf(pct(m.failover, 50)), msf(pct(m.failover, 100))}, func() (string, bool) {
			return fmt.Sprintf("median %s, max %s (%d kills)", fmtDur(pct(m.failover, 50)), fmtDur(pct(m.failover, 100)), len(m.failover)),
				len(m.failover) > 0 && pct(m.failover, 100) <= goalFailover
		})
	t.row("batch intake", "Redis memory per pending question (used_memory growth per question taken in); bridge RSS at N pending",
		"≤ 1,500 B; ≤ 64 MiB", []float64{b.memPer, float64(b.rss) / (1 << 20)}, func() (string, bool) {
			return fmt.Sprintf("%s B; %.1f MiB at %s pending", group(b.memPer, 0), float64(b.rss)/(1<<20), group(float64(b.pending), 0)),
				b.memPer <= goalMemPer && b.rss <= goalRSS
		})
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
	fmt.Fprintln(w, "| measure | now | goal | |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, row := range r.Rows {
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", row.Measure, row.Now, row.Goal, row.Verdict)
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
