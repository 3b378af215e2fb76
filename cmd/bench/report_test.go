package main

import (
	"io"
	"math"
	"strings"
	"testing"
	"time"
)

// TestGoalRows checks the goal rows' figures, ratios and verdicts from
// made-up measurements, without running anything.
func TestGoalRows(t *testing.T) {
	m := &measured{
		errs: map[string]error{}, skipped: map[string]bool{},
		redisOps: 50_000, rtBusy: 30 * time.Microsecond, rtWeb: 40 * time.Microsecond,
		web: []level{
			{c: 1, answered: 500, elapsed: time.Second, cpu: 500 * time.Millisecond, redis: perQuestion{cmds: 19, trips: 4}},
			// 2,000 q/s at 20 commands: the ceiling is 2,500 q/s, 0.8 of it.
			{c: 64, answered: 2000, elapsed: time.Second, cpu: 800 * time.Millisecond, redis: perQuestion{cmds: 20, trips: 4}},
		},
		tgSat:     satResult{workers: 48, answered: 100, elapsed: 5 * time.Second, redis: perQuestion{cmds: 30, trips: 10.5}, wakeups: 800},
		coldStart: []time.Duration{30 * time.Millisecond, 12 * time.Millisecond, 15 * time.Millisecond, 19 * time.Millisecond, 25 * time.Millisecond},
		idleCmds:  15,
		batches: []batchResult{
			{n: 2000, trips: 120, late: []float64{10, 240}},
			{n: 2000, late: []float64{10, 260}},
			{n: 2000, late: []float64{10, 20}},
		},
	}
	w := &world{p: params{n: 2000, batchRuns: 3}}
	rep := &Report{Errors: map[string]string{}}
	tb := &table{rep: rep, m: m, peak: peakLevel(m.web)}
	tb.commandRows()
	tb.ratioRows()
	tb.wakeupRow()
	tb.batchGoalRows(w.p.n, w.p.batchRuns)
	tb.startRows()
	want := map[string]struct {
		verdict string
		value   float64 // the row's last value
	}{
		"web-cmds":     {"met", 4},          // 20 ≤ 20
		"tg-cmds":      {"missed", 10.5},    // 10.5 round trips > 10
		"web-ceiling":  {"missed", 0.8},     // 2,000 ÷ (50,000 ÷ 20)
		"cpu-ratio":    {"met", 10},         // 0.4 ms ÷ 40 µs
		"tg-wakeups":   {"met", 8},          // 800 ÷ 100
		"intake-trips": {"met", 60},         // 120 × 1,000 ÷ 2,000
		"lateness":     {"missed", 20},      // 260 ms in the second run
		"cold-start":   {"met", 19},         // median of 5
		"idle-cmds":    {"met", math.NaN()}, // 15 ≤ 15 (the last value is round trips)
	}
	for _, r := range rep.Rows {
		w, ok := want[r.ID]
		if !ok {
			t.Errorf("unexpected row %q", r.ID)
			continue
		}
		delete(want, r.ID)
		if r.Verdict != w.verdict {
			t.Errorf("%s: %s (%s, ratio %s), want %s", r.ID, r.Verdict, r.Now, r.Ratio, w.verdict)
		}
		if got := r.Values[len(r.Values)-1]; !math.IsNaN(w.value) && math.Abs(got-w.value) > 1e-9 {
			t.Errorf("%s: last value %v, want %v (%v)", r.ID, got, w.value, r.Values)
		}
	}
	for id := range want {
		t.Errorf("no row %q", id)
	}
}

func TestStatusField(t *testing.T) {
	raw := []byte("Name:\tbridge\nvoluntary_ctxt_switches:\t328\nnonvoluntary_ctxt_switches:\t10\n")
	if got := statusField(raw, "voluntary_ctxt_switches:"); got != 328 {
		t.Errorf("voluntary_ctxt_switches: %d, want 328", got)
	}
	if got := statusField(raw, "VmRSS:"); got != 0 {
		t.Errorf("a missing field: %d, want 0", got)
	}
}

func TestBridgeEnvFlag(t *testing.T) {
	var stderr strings.Builder
	if code := cli([]string{"-bridge-env", "GOMAXPROCS"}, io.Discard, &stderr); code != 2 {
		t.Errorf("-bridge-env without =: exit %d, want 2", code)
	}
	if !strings.Contains(stderr.String(), "want KEY=VALUE") {
		t.Errorf("-bridge-env without =: stderr %q does not say what it wants", stderr.String())
	}
}
