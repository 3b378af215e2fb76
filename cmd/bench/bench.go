package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge/internal/redistest"
	"github.com/askbridge/askbridge/internal/telegramtest"
)

// Options choose a run.
type Options struct {
	// Short runs small and quick (CI): 2,000 requests in the batch, short
	// phases, one failover.
	Short bool
	// N overrides the batch size (intake, timeouts, memory).
	N int
	// Artifacts is where the plots (and profiles) go.
	Artifacts string
	// CPUProfile, when set, is a path prefix: the bridge's CPU profiles of
	// the highest web level and the saturated Telegram phase go to
	// <prefix>-web.pprof, <prefix>-telegram.pprof and <prefix>-intake.pprof.
	CPUProfile string
	// Progress receives a line per step.
	Progress io.Writer
	// Keep leaves the temporary directory (the bridges' logs) in place.
	Keep bool
	// BridgeEnv adds to every bridge replica's environment (GOMAXPROCS=1,
	// GODEBUG=..., ASKUSER_...), after the bench's own settings.
	BridgeEnv map[string]string
	// Phases, when not empty, runs only these phases (see phaseNames);
	// the rows of the others say "not run".
	Phases []string
	// BatchRuns is how many times the batch (intake, then its deadlines)
	// runs; 0 means the default (3, or 1 with Short). The lateness row
	// gives each run's p99.
	BatchRuns int
}

// phaseNames are the phases of a run, in order; a phase fills the rows
// that name it.
var phaseNames = []string{"cold start", "head of line", "telegram latency", "telegram saturated", "web", "batch intake", "batch timeouts", "failover"}

// runs reports whether phase name is to run.
func (o Options) runs(name string) bool {
	if len(o.Phases) == 0 {
		return true
	}
	for _, p := range o.Phases {
		if strings.EqualFold(strings.TrimSpace(p), name) || strings.EqualFold(strings.TrimSpace(p), "batch") && strings.HasPrefix(name, "batch") {
			return true
		}
	}
	return false
}

// params size a run.
type params struct {
	// n is the batch: requests pipelined at once and left to time out.
	n int
	// levels are the web page's concurrencies (agents asking at once),
	// each run for levelFor.
	levels   []int
	levelFor time.Duration
	// Telegram: questions one at a time for tgLatencyFor (at most
	// tgLatencyMax), then tgChats chats at once for tgSatFor.
	tgLatencyFor time.Duration
	tgLatencyMax int
	tgSatFor     time.Duration
	tgChats      int
	// failovers is how many pollers are killed.
	failovers int
	// benchN is redis-benchmark's request count per command.
	benchN int
	// overlap runs the failover while the batch waits for its deadlines
	// (the short run's time budget); a full run keeps them apart.
	overlap bool
	// batchRuns is how many times the batch runs.
	batchRuns int
	// idleFor is the quiet window after the start in which the bridge's
	// idle CPU and Redis commands are measured.
	idleFor time.Duration
}

func plan(o Options) params {
	p := params{
		n: 100_000, levels: []int{1, 4, 16, 64, 256}, levelFor: 5 * time.Second,
		tgLatencyFor: 40 * time.Second, tgLatencyMax: 300, tgSatFor: 20 * time.Second, tgChats: 48,
		failovers: 3, benchN: 200_000, batchRuns: 3, idleFor: 10 * time.Second,
	}
	if o.Short {
		p = params{
			n: 2_000, levels: []int{1, 16, 64}, levelFor: time.Second,
			tgLatencyFor: 3 * time.Second, tgLatencyMax: 30, tgSatFor: 3 * time.Second, tgChats: 48,
			failovers: 1, benchN: 20_000, overlap: true, batchRuns: 1, idleFor: 3 * time.Second,
		}
	}
	if o.N > 0 {
		p.n = o.N
	}
	if o.BatchRuns > 0 {
		p.batchRuns = o.BatchRuns
	}
	return p
}

// batchTimeout is the timeout of the batch's questions: the shortest a
// request may ask for (askbridge.MinTimeout).
const batchTimeout = 30

// Chats of the fake Telegram, private chats whose person has the chat's id.
const (
	chatHOLA     = 5001
	chatHOLB     = 5002
	chatLatency  = 6000 // and the next latencyChats
	latencyChats = 16
	chatSat      = 7000 // and the next params.tgChats
)

// world is everything a run starts: Redis, the fake Telegram behind the
// front, the bridge process, and the agents' Redis clients.
type world struct {
	p   params
	o   Options
	dir string
	bin string

	redis *redistest.Server
	rdb   *redis.Client // the agents
	admin *redis.Client // INFO and the checks

	fake   *telegramtest.Server
	front  *front
	bridge *proc
	// pprofAddr is where the bridge serves its profiler, when profiling.
	pprofAddr string
	// retaps counts taps the bridge answered without ending the question.
	retaps atomic.Int64
}

func (w *world) logf(format string, args ...any) {
	if w.o.Progress != nil {
		fmt.Fprintf(w.o.Progress, "bench: "+format+"\n", args...)
	}
}

// measured is what the phases found.
type measured struct {
	redisOps float64
	// rtBusy and rtIdle are what a Redis round trip costs a process in
	// CPU, back to back and after 10 ms asleep (roundTripCost).
	rtBusy, rtIdle time.Duration
	// rtWeb is rtBusy measured again just before the web levels, the
	// denominator of their CPU ratio: what a round trip costs moves with
	// the machine's load, so it is taken as close as can be to the
	// figure it is compared with.
	rtWeb time.Duration
	// idle is the bridge's CPU per second with nothing to do (Telegram
	// polling, renewals, blocking reads); idleCmds and idleTrips are the
	// Redis commands and round trips per second it makes meanwhile.
	idle                time.Duration
	idleCmds, idleTrips float64
	// idleWakeups is the bridge's wake-ups per second meanwhile (NaN
	// where not counted): the share of a phase's wake-ups that is not its
	// questions'.
	idleWakeups float64
	// coldStart is each cold start's exec → first getUpdates.
	coldStart []time.Duration

	hol     time.Duration
	holA    []time.Duration
	holSent int
	tgLat   []tgSample
	tgSat   satResult
	web     []level
	// batches are the batch's runs; the first gives the intake and
	// memory rows, each its lateness.
	batches  []batchResult
	failover []time.Duration

	counts  Counts
	errs    map[string]error
	skipped map[string]bool
}

// Counts are the checks of a run: what was asked, how it ended, and
// anything that happened twice.
type Counts struct {
	WebAsked, WebAnswered           int
	TelegramAsked, TelegramAnswered int
	// Extra counts results beyond one per question (in every phase).
	Extra int
	// PageRefused counts answers the page did not accept; TapsRefused
	// counts callback queries answered twice or unknown.
	PageRefused, TapsRefused int
	// Batch is the batch's size and BatchTimedOut how many of its questions
	// ended with exactly one timeout result.
	Batch, BatchTimedOut int
	// HOLSent counts the sends of the head-of-line case (4).
	HOLSent int
	// Retaps counts taps the bridge answered without ending their
	// question, so the person tapped again (a tap lost by the bridge).
	Retaps int
}

// run starts everything, runs every phase and returns the report. A phase
// that fails leaves its rows without a number and the error in the row.
func run(ctx context.Context, o Options) (*Report, error) {
	began, load := time.Now(), loadAverage()
	w := &world{p: plan(o), o: o}
	if o.Artifacts == "" {
		w.o.Artifacts = "artifacts"
	}
	defer w.close()
	m := &measured{errs: map[string]error{}, skipped: map[string]bool{}}
	if err := w.setUp(ctx, m); err != nil {
		return nil, err
	}
	w.phases(ctx, m)
	m.counts.TapsRefused = w.fake.Stats().AnswerRefused
	m.counts.Retaps = int(w.retaps.Load())

	w.bridge.stop(30 * time.Second)
	w.bridge = nil
	rep := w.report(m)
	rep.Took, rep.Load = time.Since(began), [2]string{load, loadAverage()}
	if err := writePlots(w.o.Artifacts, m); err != nil {
		return rep, err
	}
	return rep, ctx.Err()
}

// setUp makes the directories, builds the bridge, starts Redis and
// measures it alone, then starts the fake Telegram, its front and the
// main bridge, and measures the bridge idle. What it started, close ends.
func (w *world) setUp(ctx context.Context, m *measured) error {
	if err := os.MkdirAll(w.o.Artifacts, 0o755); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "askbench-")
	if err != nil {
		return err
	}
	w.dir = dir
	if w.o.Keep {
		w.logf("logs in %s", dir)
	}

	w.logf("building ./cmd/bridge")
	if w.bin, err = buildBridge(ctx, dir); err != nil {
		return err
	}
	if w.redis, err = redistest.StartServer(); err != nil {
		return fmt.Errorf("bench: redis-server: %w", err)
	}
	w.rdb = redis.NewClient(&redis.Options{Addr: w.redis.Addr, PoolSize: 512, MinIdleConns: 64})
	w.admin = redis.NewClient(&redis.Options{Addr: w.redis.Addr, PoolSize: 4})

	w.logf("redis-benchmark on %s", w.redis.Addr)
	if m.redisOps, err = redisBenchmark(ctx, w.redis.Addr, w.p.benchN); err != nil {
		return err
	}
	w.logf("round trip cost on %s", w.redis.Addr)
	if m.rtBusy, m.rtIdle, err = roundTripCost(ctx, w.redis.Addr); err != nil {
		return err
	}
	if err := w.admin.FlushAll(ctx).Err(); err != nil {
		return err
	}
	if err := w.startMain(ctx); err != nil {
		return err
	}
	return w.idle(ctx, m)
}

// startMain starts the fake Telegram with every chat, its front, and the
// main bridge, and waits until the bridge polls.
func (w *world) startMain(ctx context.Context) (err error) {
	w.fake = telegramtest.New(telegramtest.Options{})
	w.front = newFront(w.fake.URL)
	for _, c := range w.chats() {
		w.fake.AddChat(c, "private", "Person "+strconv.FormatInt(c, 10))
	}
	env := w.bridgeEnv(w.front.URL(), prefix)
	if w.o.CPUProfile != "" {
		if w.pprofAddr, err = freeAddr(); err != nil {
			return err
		}
		env["ASKUSER_PPROF_ADDR"] = w.pprofAddr
	}
	w.logf("starting the bridge")
	if w.bridge, err = startBridge(w.bin, "bench-main", w.dir, env); err != nil {
		return err
	}
	if err := w.bridge.ready(ctx, "telegram", "connected", 30*time.Second); err != nil {
		return err
	}
	return waitPoll(ctx, w.front, time.Time{}, 30*time.Second)
}

// close stops and removes what setUp started, the last first; the
// temporary directory stays with Options.Keep.
func (w *world) close() {
	if w.bridge != nil {
		w.bridge.stop(30 * time.Second)
	}
	if w.front != nil {
		w.front.Close()
	}
	if w.fake != nil {
		w.fake.Close()
	}
	if w.admin != nil {
		w.admin.Close()
	}
	if w.rdb != nil {
		w.rdb.Close()
	}
	if w.redis != nil {
		w.redis.Close()
	}
	if w.dir != "" && !w.o.Keep {
		os.RemoveAll(w.dir)
	}
}

// phases runs the phases in order (the failover beside the batch's
// timeouts when params.overlap). A phase not chosen is marked skipped; a
// failed one's error is kept, and the others still run.
func (w *world) phases(ctx context.Context, m *measured) {
	var errsMu sync.Mutex // the failover may run beside the batch
	try := func(name string, fn func() error) {
		if !w.o.runs(name) {
			errsMu.Lock()
			m.skipped[name] = true
			errsMu.Unlock()
			return
		}
		err := ctx.Err()
		if err == nil {
			w.logf("%s", name)
			err = fn()
		}
		if err != nil {
			errsMu.Lock()
			m.errs[name] = err
			errsMu.Unlock()
			w.logf("%s failed: %v", name, err)
		}
	}
	try("cold start", func() error { return w.coldStart(ctx, m) })
	try("head of line", func() error { return w.headOfLine(ctx, m) })
	try("telegram latency", func() error { return w.telegramLatency(ctx, m) })
	try("telegram saturated", func() error { return w.telegramSaturated(ctx, m) })
	try("web", func() error { return w.webLevels(ctx, m) })
	var overlapped chan struct{}
	m.batches = make([]batchResult, w.p.batchRuns)
	for run := range m.batches {
		r := &m.batches[run]
		var b *batchRun
		try("batch intake", func() error {
			var err error
			b, err = w.batchStart(ctx, r, run)
			return err
		})
		if w.p.overlap && run == 0 {
			overlapped = make(chan struct{})
			go func() {
				defer close(overlapped)
				try("failover", func() error { return w.failovers(ctx, m) })
			}()
		}
		try("batch timeouts", func() error {
			if b == nil {
				return errors.New("no batch: its intake failed")
			}
			return w.batchFinish(ctx, b, r)
		})
		m.counts.Batch += r.n
		m.counts.BatchTimedOut += r.timedOut
		m.counts.Extra += r.extra
	}
	if overlapped != nil {
		<-overlapped
	} else {
		try("failover", func() error { return w.failovers(ctx, m) })
	}
}

// bridgeEnv is the configuration of a bridge replica: the shared Redis, the
// web page on a free loopback port, Telegram through api (a front).
// Options.BridgeEnv comes last.
func (w *world) bridgeEnv(api, keyPrefix string) map[string]string {
	env := map[string]string{
		"ASKUSER_REDIS_URL":        "redis://" + w.redis.Addr,
		"ASKUSER_REDIS_PREFIX":     keyPrefix,
		"ASKUSER_HTTP_ADDR":        "127.0.0.1:0",
		"ASKUSER_TELEGRAM_TOKEN":   w.fake.Token,
		"ASKUSER_TELEGRAM_API_URL": api,
	}
	maps.Copy(env, w.o.BridgeEnv)
	return env
}

// chats lists every chat the phases use.
func (w *world) chats() []int64 {
	out := []int64{chatHOLA, chatHOLB}
	for i := range latencyChats {
		out = append(out, chatLatency+int64(i))
	}
	for i := range w.p.tgChats {
		out = append(out, chatSat+int64(i))
	}
	return out
}

// waitPoll waits for a getUpdates on f after since.
func waitPoll(ctx context.Context, f *front, since time.Time, within time.Duration) error {
	deadline := time.Now().Add(within)
	for !f.LastPoll().After(since) {
		if time.Now().After(deadline) {
			return errors.New("bench: the bridge did not poll Telegram")
		}
		if !sleep(ctx, 10*time.Millisecond) {
			return ctx.Err()
		}
	}
	return nil
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// profile takes the bridge's CPU profile for d (whole seconds) into
// <prefix>-<name>.pprof, when profiling; the returned wait reports how it
// went.
func (w *world) profile(ctx context.Context, name string, d time.Duration) (wait func() error) {
	if w.pprofAddr == "" {
		return func() error { return nil }
	}
	done := make(chan error, 1)
	go func() {
		done <- fetchProfile(ctx, w.pprofAddr, max(1, int(d/time.Second)), w.o.CPUProfile+"-"+name+".pprof")
	}()
	return func() error { return <-done }
}

// machine describes where the run ran.
func (w *world) machine(ctx context.Context) string {
	host, _ := os.Hostname()
	s := fmt.Sprintf("%s, %d CPUs, %s, Redis %s", host, runtime.NumCPU(), runtime.Version(), redisVersion(ctx, w.admin))
	for _, k := range slices.Sorted(maps.Keys(w.o.BridgeEnv)) {
		s += fmt.Sprintf(", bridge %s=%s", k, w.o.BridgeEnv[k])
	}
	return s
}

// trimErr shortens an error for a table cell.
func trimErr(err error) string {
	s := strings.ReplaceAll(err.Error(), "\n", " ")
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

// loadAverage is the 1-minute load average, from /proc/loadavg.
func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(raw)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "?"
}

// idle measures the bridge with nothing asked, for params.idleFor: its
// CPU per second, and the Redis commands and round trips per second of
// the one replica then running (INFO before and after; the snapshots'
// own INFO is not counted as a command, and its read is taken off).
func (w *world) idle(ctx context.Context, m *measured) error {
	s0, err := snapshot(ctx, w.admin)
	if err != nil {
		return err
	}
	c0, err := w.bridge.cpu()
	if err != nil {
		return err
	}
	wake0, wakeErr := w.bridge.wakeups()
	start := time.Now()
	if !sleep(ctx, w.p.idleFor) {
		return ctx.Err()
	}
	c1, err := w.bridge.cpu()
	if err != nil {
		return err
	}
	wake1, err := w.bridge.wakeups()
	if err != nil || wakeErr != nil {
		wake0, wake1 = 0, -1
	}
	s1, err := snapshot(ctx, w.admin)
	if err != nil {
		return err
	}
	secs := time.Since(start).Seconds()
	m.idle = time.Duration(float64(c1-c0) / secs)
	m.idleCmds = float64(s1.cmds-s0.cmds) / secs
	m.idleTrips = float64(s1.reads-s0.reads-1) / secs
	m.idleWakeups = nan()
	if wake1 >= wake0 {
		m.idleWakeups = float64(wake1-wake0) / secs
	}
	w.logf("bridge idle for %s: %s CPU, %.1f wake-ups, %.1f Redis commands, %.1f round trips per second (commands: %s)",
		w.p.idleFor, m.idle, m.idleWakeups, m.idleCmds, m.idleTrips, topCommands(s0, s1, secs))
	return nil
}
