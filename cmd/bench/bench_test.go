package main

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/askbridge/askbridge/internal/redistest"
)

// Budgets of the short run's count rows: what the tree measured when they
// were set (web 23.6 commands; Telegram 42.9 commands, 17.8 round trips;
// intake 35.5-40.0 round trips per 1,000 requests by the bridge's own
// count, with the batched intake; idle 9.7-10.3 commands a second, with
// the sweeper sleeping until the next deadline), plus about 10 % (20 % for
// the intake, whose short batch is read while it is being added), so a
// change that adds Redis work fails here. They are not issue 33's goals
// (the table judges those): the lead lowers them as the branches that cut
// these counts land (cmds: commands per question).
const (
	budgetWebCmds     = 26
	budgetTGCmds      = 47
	budgetTGTrips     = 20
	budgetIntakeTrips = 48 // per 1,000 requests taken in
	budgetIdleCmds    = 12 // per second, one replica
)

// TestBenchShort runs the short benchmark end to end and checks counts, not
// timings: every question is answered (or times out) exactly once, every
// row has a number, and the count rows (Redis commands and round trips per
// question, intake round trips, idle commands) are within their budgets.
// It needs redis-server and redis-benchmark; without them it skips, unless
// ASKBRIDGE_REQUIRE_REDIS=1 (CI), where that is a failure.
func TestBenchShort(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end benchmark: full tier (go test without -short)")
	}
	_, errBench := exec.LookPath("redis-benchmark")
	if !redistest.Installed() || errBench != nil {
		if redistest.Required() {
			t.Fatal("the benchmark needs redis-server, redis-cli and redis-benchmark on the PATH (ASKBRIDGE_REQUIRE_REDIS=1)")
		}
		t.Skip("redis-server, redis-cli or redis-benchmark not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	out := &testLog{t: t}
	defer out.stop()
	dir := t.TempDir()
	rep, err := run(ctx, Options{Short: true, Artifacts: dir, Progress: out})
	if rep != nil {
		var b strings.Builder
		rep.Print(&b)
		t.Log("\n" + b.String())
	}
	if err != nil {
		t.Fatal(err)
	}
	for name, e := range rep.Errors {
		t.Errorf("phase %q failed: %s", name, e)
	}

	c := rep.Counts
	checks := []struct {
		name      string
		got, want int
	}{
		{"web questions answered", c.WebAnswered, c.WebAsked},
		{"Telegram questions answered", c.TelegramAnswered, c.TelegramAsked},
		{"batch questions timed out once", c.BatchTimedOut, c.Batch},
		{"batch size", c.Batch, 2000},
		{"head-of-line sends", c.HOLSent, 4},
		{"results pushed twice", c.Extra, 0},
		{"page answers refused", c.PageRefused, 0},
		{"callback queries answered twice", c.TapsRefused, 0},
	}
	for _, ck := range checks {
		if ck.got != ck.want {
			t.Errorf("%s: %d, want %d", ck.name, ck.got, ck.want)
		}
	}
	if c.WebAsked == 0 || c.TelegramAsked == 0 {
		t.Errorf("nothing asked: web %d, Telegram %d", c.WebAsked, c.TelegramAsked)
	}

	// Linux measures the process's CPU: a round trip costs some, back to
	// back and after a sleep (how much is the machine's, not checked).
	if runtime.GOOS == "linux" {
		if busy, idle := rep.RoundTrip[0], rep.RoundTrip[1]; busy <= 0 || idle <= 0 {
			t.Errorf("round trip cost: busy %v, idle %v; want both positive", busy, idle)
		}
	}
	if len(rep.Rows) != 16 {
		t.Errorf("%d rows, want 16", len(rep.Rows))
	}
	rows := map[string]Row{}
	for _, r := range rep.Rows {
		rows[r.ID] = r
		if len(r.Values) == 0 {
			t.Errorf("row %q has no number", r.Measure)
		}
		for _, v := range r.Values {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Errorf("row %q: %v in %v", r.Measure, v, r.Values)
			}
		}
	}
	checkBudgets(t, rows)
	for _, name := range []string{"latency.svg", "throughput.svg"} {
		if st, err := os.Stat(filepath.Join(dir, name)); err != nil || st.Size() == 0 {
			t.Errorf("artifact %s: %v", name, err)
		}
	}
}

// checkBudgets checks the count rows against their budgets: each a
// positive number no greater than its budget.
func checkBudgets(t *testing.T, rows map[string]Row) {
	t.Helper()
	budgets := []struct {
		id, name string
		value    int // index in Row.Values
		budget   float64
	}{
		{"web-cmds", "Redis commands per web question", 0, budgetWebCmds},
		{"tg-cmds", "Redis commands per Telegram question", 0, budgetTGCmds},
		{"tg-cmds", "Redis round trips per Telegram question", 1, budgetTGTrips},
		{"intake-trips", "Redis round trips per 1,000 requests taken in", 0, budgetIntakeTrips},
		{"idle-cmds", "idle Redis commands per second", 0, budgetIdleCmds},
	}
	for _, b := range budgets {
		r, ok := rows[b.id]
		if !ok || len(r.Values) <= b.value {
			t.Errorf("%s: no row %q with a value %d", b.name, b.id, b.value)
			continue
		}
		if v := r.Values[b.value]; !(v > 0 && v <= b.budget) {
			t.Errorf("%s: %.1f, want a positive number ≤ %v (its budget)", b.name, v, b.budget)
		}
	}
}

// testLog passes progress lines to t.Log until the test ends.
type testLog struct {
	t    *testing.T
	mu   sync.Mutex
	done bool
}

func (l *testLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.done {
		l.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func (l *testLog) stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.done = true
}
