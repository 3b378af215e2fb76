package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/config"
	"github.com/askbridge/askbridge/store"
	"github.com/askbridge/askbridge/web"
)

// serve runs the bridge until ctx is done (SIGINT, SIGTERM).
func serve(ctx context.Context, getenv func(string) string, stdout, stderr io.Writer) int {
	cfg, err := config.Load(getenv, os.ReadFile)
	if err != nil {
		fmt.Fprintf(stderr, "bridge: configuration: %v\n", err)
		return 2
	}
	log := newLogger(stderr, cfg.LogLevel).With("replica", cfg.Replica)
	b, err := start(ctx, cfg, log, stdout)
	if err != nil {
		log.Error("start", "err", err)
		return 1
	}
	<-ctx.Done()
	log.Info("stopping: finishing work in hand")
	b.stop()
	log.Info("stopped")
	return 0
}

func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l}))
}

// bridge is a running bridge process.
type bridge struct {
	log      *slog.Logger
	rdb      redis.UniversalClient
	embedded *store.Embedded
	server   *http.Server
	// pprof serves Go's profiler when ASKUSER_PPROF_ADDR is set.
	pprof  *http.Server
	webh   *web.Handler
	cancel func()
	wg     sync.WaitGroup
	// channels tracks the channels' Run, which stop before the engine.
	channels sync.WaitGroup
	// grace bounds the whole stop.
	grace time.Duration
	// Addr is where the HTTP server listens.
	Addr string
}

// start connects everything and starts the engine, the channels and the
// HTTP server. Everything is validated before anything connects.
func start(ctx context.Context, cfg *config.Config, log *slog.Logger, stdout io.Writer) (*bridge, error) {
	b := &bridge{log: log}
	url := cfg.Redis.URL
	if url == "" {
		emb, err := store.StartEmbedded(cfg.Redis.EmbeddedAddr)
		if err != nil {
			return nil, fmt.Errorf("start the embedded Redis on %s: %w", cfg.Redis.EmbeddedAddr, err)
		}
		b.embedded = emb
		url = "redis://" + emb.Addr()
		fmt.Fprintf(stdout, "askbridge: no ASKUSER_REDIS_URL set; embedded Redis listening on %s (it keeps nothing on disk)\n", emb.Addr())
	}
	rdb, err := store.Connect(ctx, url)
	if err != nil {
		b.close()
		return nil, err
	}
	b.rdb = rdb
	st := store.New(rdb, store.Options{
		Prefix: cfg.Redis.Prefix, Consumer: cfg.Replica, ClaimIdle: cfg.ClaimIdle,
		Retention: cfg.Retention, Logger: log.With("part", "store"),
	})

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := newMetrics(reg, st)

	platforms, err := platformChannels(cfg, st, log, m.Panicked)
	if err != nil {
		b.close()
		return nil, err
	}
	channels := []askbridge.Channel{web.NewChannel(st, nil)}
	for _, p := range platforms {
		channels = append(channels, p.channel)
	}

	engine := askbridge.NewEngine(askbridge.EngineConfig{
		Store: st, Resolve: resolver(cfg), Channels: channels,
		Logger: log.With("part", "engine"), Metrics: m, Replica: cfg.Replica, StopGrace: cfg.StopGrace,
	})

	ln, err := net.Listen("tcp", cfg.HTTP.Addr)
	if err != nil {
		b.close()
		return nil, fmt.Errorf("listen on ASKUSER_HTTP_ADDR %s: %w", cfg.HTTP.Addr, err)
	}
	b.Addr = ln.Addr().String()
	b.webh, err = web.NewHandler(web.Config{Questions: st, History: st, Events: st, Submitter: engine, Token: cfg.HTTP.Token, Logger: log.With("part", "web")})
	if err != nil {
		ln.Close()
		b.close()
		return nil, fmt.Errorf("web page: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	mux.Handle("GET /readyz", readyHandler(rdb, channels))
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	// Platform webhooks authenticate themselves (Telegram's secret token,
	// Slack's signature), so they sit beside the page, not behind its token.
	for _, p := range platforms {
		for pattern, h := range p.routes {
			mux.Handle(pattern, h)
		}
	}
	mux.Handle("/", b.webh)
	b.server = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}

	// Channels stop before the engine: a tap or reply a channel is still
	// handing in as it stops finds the engine running, and its edits are
	// waited for. The whole stop is bounded by StopGrace: what is still in
	// hand then is left to another replica (requests stay unacknowledged,
	// edits stay marked).
	b.grace = cfg.StopGrace
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	engineCtx, stopEngine := context.WithCancel(context.WithoutCancel(ctx))
	b.cancel = func() {
		cancel()
		waitAtMost(&b.channels, b.grace/2)
		stopEngine()
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		if err := b.server.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http server", "err", err)
		}
	}()
	for _, ch := range channels {
		b.channels.Add(1)
		go func() {
			defer b.channels.Done()
			_ = ch.Run(runCtx, engine)
		}()
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		_ = engine.Run(engineCtx)
	}()
	if cfg.HTTP.PprofAddr != "" {
		if err := b.servePprof(cfg.HTTP.PprofAddr); err != nil {
			b.stop()
			return nil, err
		}
	}
	page := "http://" + b.Addr + "/"
	if cfg.HTTP.Token != "" {
		// The token itself is never printed: the operator has it.
		page += "#token=<ASKUSER_HTTP_TOKEN>"
	}
	fmt.Fprintf(stdout, "askbridge: web page on %s\n", page)
	log.Info("bridge started", "http", b.Addr, "channels", len(channels))
	return b, nil
}

// stop shuts down gracefully: no new requests are taken, the ones in hand
// are finished, leases are released, then the HTTP server and Redis close.
func (b *bridge) stop() {
	start := time.Now()
	b.cancel()
	shutdownCtx, done := context.WithTimeout(context.Background(), max(b.grace-time.Since(start), time.Second))
	defer done()
	b.webh.Close()
	_ = b.server.Shutdown(shutdownCtx)
	if b.pprof != nil {
		_ = b.pprof.Shutdown(shutdownCtx)
	}
	// The engine returns within its own StopGrace of its stop.
	waitAtMost(&b.wg, max(b.grace-time.Since(start), time.Second))
	b.close()
}

// servePprof serves Go's profiler under /debug/pprof/ on addr (a loopback
// address, as config checks), on a mux of its own: nothing of it is on the
// main listener.
func (b *bridge) servePprof(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on ASKUSER_PPROF_ADDR %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	b.pprof = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		if err := b.pprof.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			b.log.Error("pprof server", "err", err)
		}
	}()
	b.log.Info("profiler listening", "addr", ln.Addr().String())
	return nil
}

// waitAtMost waits for wg, or d, whichever comes first.
func waitAtMost(wg *sync.WaitGroup, d time.Duration) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

func (b *bridge) close() {
	if b.rdb != nil {
		_ = b.rdb.Close()
	}
	if b.embedded != nil {
		b.embedded.Close()
	}
}

// resolver maps a request's `to` through the configured routes.
func resolver(cfg *config.Config) askbridge.Resolver {
	return func(to string) (askbridge.Target, []string, error) {
		route, err := cfg.Resolve(to)
		if err != nil {
			return askbridge.Target{}, nil, err
		}
		platform, chat, err := config.ParseTarget(route.To)
		if err != nil {
			return askbridge.Target{}, nil, err
		}
		return askbridge.Target{Platform: platform, Chat: chat}, route.Answerers, nil
	}
}

// readyHandler reports whether Redis answers and each channel's state.
func readyHandler(rdb redis.UniversalClient, channels []askbridge.Channel) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		ready := true
		redisState := "ok"
		if err := rdb.Ping(ctx).Err(); err != nil {
			ready = false
			redisState = "unreachable: " + err.Error()
		}
		states := map[string]string{}
		for _, ch := range channels {
			s := ch.State()
			states[ch.Platform()] = string(s)
		}
		w.Header().Set("Content-Type", "application/json")
		if !ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		writeJSON(w, map[string]any{"ready": ready, "redis": redisState, "channels": states})
	})
}
