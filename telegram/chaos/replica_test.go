package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/retry"
	"github.com/askbridge/askbridge/store"
	"github.com/askbridge/askbridge/telegram"
)

// replicaEnv is the environment variable that turns the test binary into
// a bridge replica: it holds the replica's settings as JSON.
const replicaEnv = "ASKBRIDGE_CHAOS_REPLICA"

// clockJump is how far SIGUSR1 moves a replica's clock forward: past the
// shortest timeout a request may ask for (askbridge.MinTimeout).
const clockJump = (askbridge.MinTimeout + 10) * time.Second

// replicaConfig is what a replica process is told by its test.
type replicaConfig struct {
	Name        string
	Redis       string // host:port, possibly a proxy
	Prefix      string
	TelegramURL string
	Token       string
	ClaimIdle   time.Duration
	SendBudget  time.Duration
	PollTimeout time.Duration
	LeaseTTL    time.Duration
	RenewEvery  time.Duration
	LogLevel    slog.Level
}

// runReplica is a bridge replica as cmd/bridge wires one (Redis store,
// Telegram channel, engine), on the settings in raw, until SIGTERM or
// SIGINT: then the channel stops first and the engine after it. SIGUSR1
// moves the engine's clock forward by clockJump, so a test reaches a
// deadline without waiting for it. It returns the process's exit code.
func runReplica(raw string) int {
	var cfg replicaConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "replica: settings:", err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: cfg.LogLevel})).With("replica", cfg.Name)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	clock := &jumpClock{Clock: clockwork.NewRealClock()}
	jumps := make(chan os.Signal, 1)
	signal.Notify(jumps, syscall.SIGUSR1)
	go func() {
		for range jumps {
			clock.offset.Add(int64(clockJump))
			log.Info("clock moved forward", "by", clockJump)
		}
	}()

	// Connect as cmd/bridge does, retrying while Redis is down.
	var rdb interface{ Close() error }
	var st *store.Store
	bo := retry.Backoff{Min: 100 * time.Millisecond, Max: time.Second}
	for {
		c, err := store.Connect(ctx, "redis://"+cfg.Redis)
		if err == nil {
			rdb = c
			st = store.New(c, store.Options{Prefix: cfg.Prefix, Consumer: cfg.Name, ClaimIdle: cfg.ClaimIdle, Logger: log, AutoPipeline: true})
			break
		}
		log.Warn("connect to redis", "err", err)
		if !retry.Sleep(ctx, bo.Next()) {
			return 0
		}
	}
	defer rdb.Close()

	ch, err := telegram.New(telegram.Config{
		Token: cfg.Token, APIURL: cfg.TelegramURL, Replica: cfg.Name,
		PollTimeout: cfg.PollTimeout, LeaseTTL: cfg.LeaseTTL, RenewEvery: cfg.RenewEvery,
		ChatPace: 20 * time.Millisecond, GlobalPace: time.Millisecond,
		HTTPClient: &http.Client{Timeout: 20 * time.Second, Transport: clientHeader{name: cfg.Name, next: http.DefaultTransport}},
	}, st, log)
	if err != nil {
		log.Error("telegram channel", "err", err)
		return 2
	}
	resolve := func(to string) (engine.Route, error) {
		if p, c, ok := strings.Cut(to, ":"); ok {
			return engine.Route{Target: askbridge.Target{Platform: p, Chat: c}}, nil
		}
		return engine.Route{Target: askbridge.Target{}}, fmt.Errorf("to: unknown route %q", to)
	}
	eng := engine.NewEngine(engine.EngineConfig{
		Store: st, Resolve: resolve, Channels: []engine.Channel{ch}, Logger: log,
		Replica: cfg.Name, Clock: clock, SweepEvery: 100 * time.Millisecond, SendBudget: cfg.SendBudget,
		FinishLease: 3 * time.Second, LeftoverEvery: time.Second, LeftoverGrace: 2 * time.Second,
		TimerHold: cfg.ClaimIdle,
	})
	// Channels stop before the engine, as in cmd/bridge: a tap still being
	// handed in finds the engine running.
	engineCtx, stopEngine := context.WithCancel(context.Background())
	channelCtx, stopChannel := context.WithCancel(engineCtx)
	var engineDone, channelDone sync.WaitGroup
	engineDone.Add(1)
	go func() { defer engineDone.Done(); _ = eng.Run(engineCtx) }()
	channelDone.Add(1)
	go func() { defer channelDone.Done(); _ = ch.Run(channelCtx, eng) }()
	log.Info("replica started")
	<-ctx.Done()
	log.Info("stopping")
	stopChannel()
	channelDone.Wait()
	stopEngine()
	engineDone.Wait()
	log.Info("stopped")
	return 0
}

// jumpClock is the real clock whose Now can be moved forward (its timers
// run in real time).
type jumpClock struct {
	clockwork.Clock
	offset atomic.Int64
}

func (c *jumpClock) Now() time.Time                  { return c.Clock.Now().Add(time.Duration(c.offset.Load())) }
func (c *jumpClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }
func (c *jumpClock) Until(t time.Time) time.Duration { return t.Sub(c.Now()) }

// clientHeader names the replica in every Bot API request, so the front
// in the test can tell the pollers apart.
type clientHeader struct {
	name string
	next http.RoundTripper
}

func (c clientHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(clientHeaderName, c.name)
	return c.next.RoundTrip(r)
}

// clientHeaderName is the header telegramtest judges clients by.
const clientHeaderName = "X-Test-Client"

// proc is a replica process seen from its test.
type proc struct {
	name   string
	cmd    *exec.Cmd
	logf   string
	exited chan struct{}
	err    error // the exit status, once exited is closed
}

// spawn starts a replica process: this test binary again, with cfg in
// replicaEnv. Its log goes to a file in dir. The kernel kills it should
// the test binary die.
func spawn(cfg replicaConfig, dir string) (*proc, error) {
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	logf := filepath.Join(dir, cfg.Name+".log")
	out, err := os.Create(logf)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), replicaEnv+"="+string(raw))
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("start replica %s: %w", cfg.Name, err)
	}
	p := &proc{name: cfg.Name, cmd: cmd, logf: logf, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		out.Close()
		close(p.exited)
	}()
	return p, nil
}

func (p *proc) signal(sig syscall.Signal) {
	_ = p.cmd.Process.Signal(sig)
}

// kill ends the process at once (SIGKILL) and waits until it is gone.
func (p *proc) kill() {
	p.signal(syscall.SIGKILL)
	<-p.exited
}

// stop asks the process to stop (SIGTERM, after SIGCONT in case it was
// paused) and waits up to within; it reports how it ended.
func (p *proc) stop(within time.Duration) error {
	select {
	case <-p.exited:
		return nil // killed before
	default:
	}
	p.signal(syscall.SIGCONT)
	p.signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		if p.err != nil {
			return fmt.Errorf("replica %s exited: %v", p.name, p.err)
		}
		return nil
	case <-time.After(within):
		p.kill()
		return fmt.Errorf("replica %s did not stop within %s of SIGTERM", p.name, within)
	}
}

// tail returns the last n lines of the replica's log.
func (p *proc) tail(n int) string {
	f, err := os.Open(p.logf)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > 4*n {
			lines = append(lines[:0], lines[len(lines)-n:]...)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// grep returns the lines of the replica's log that contain s.
func (p *proc) grep(s string) []string {
	body, err := os.ReadFile(p.logf)
	if err != nil {
		return nil
	}
	var out []string
	for _, l := range strings.Split(string(body), "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return out
}
