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
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/config"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/redislog"
	"github.com/askbridge/askbridge/store"
	"github.com/askbridge/askbridge/web"
)

// serve runs the bridge, configured by environ (os.Environ), until ctx is
// done (SIGINT, SIGTERM).
func serve(ctx context.Context, environ []string, stdout, stderr io.Writer) int {
	return serveWith(ctx, environ, stdout, stderr, defaultLimits())
}

// limits bound the HTTP server. They are not settings: tests shrink them.
type limits struct {
	// readHeader and read bound reading a request's header and all of it,
	// body included: a client that sends slowly is cut off.
	readHeader, read time.Duration
	// write bounds a response from the end of its request's header; the
	// page's event stream sets a deadline per write instead.
	write time.Duration
	// idle bounds a kept-alive connection between requests.
	idle time.Duration
	// webhooks bounds the platform webhook requests handled at once; one
	// more gets 503 and the platform delivers it again later.
	webhooks int
}

func defaultLimits() limits {
	return limits{
		readHeader: 10 * time.Second,
		// An answer is at most 64 KiB, a webhook call a few KiB.
		read: 30 * time.Second,
		// Above the page's answer timeout (15 s) and /readyz's ping (2 s).
		write:    30 * time.Second,
		idle:     2 * time.Minute,
		webhooks: 64,
	}
}

// serveWith is serve with the HTTP server's limits.
func serveWith(ctx context.Context, environ []string, stdout, stderr io.Writer, lim limits) int {
	cfg, err := config.Load(environ, os.ReadFile)
	if err != nil {
		fmt.Fprintf(stderr, "askbridge: configuration: %v\n", err)
		return 2
	}
	log := newLogger(stderr, cfg.LogLevel, cfg.LogFormat).With("replica", cfg.Replica)
	// go-redis's own messages (dial failures, pool trouble) go to the same
	// log, passwords hidden, instead of straight to stderr.
	redislog.Use(log.With("part", "redis"))
	b, err := start(ctx, cfg, log, stdout, lim)
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

// newLogger logs to w at level (info when it is no level) in format:
// config.LogFormatJSON, config.LogFormatText, or "" for text when w is a
// terminal and JSON otherwise.
func newLogger(w io.Writer, level, format string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: l}
	if format == config.LogFormatText || format == "" && isTerminal(w) {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// isTerminal reports whether w is a file that is a character device, as a
// terminal is. golang.org/x/term would ask the device itself; this also
// takes /dev/null for one, where the format does not matter.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// bridge is a running bridge process.
type bridge struct {
	log *slog.Logger
	// rdb is the engine's Redis client: the store, the web page, the
	// platforms. mcpRdb is the MCP calls' own (mcpRedisOptions).
	rdb, mcpRdb redis.UniversalClient
	embedded    *store.Embedded
	server      *http.Server
	// ops serves /metrics, /readyz and /healthz when ASKUSER_METRICS_ADDR
	// is set.
	ops *http.Server
	// pprof serves Go's profiler when ASKUSER_PPROF_ADDR is set.
	pprof  *http.Server
	webh   *web.Handler
	cancel func()
	wg     sync.WaitGroup
	// channels tracks the channels' Run, which stop before the engine.
	channels sync.WaitGroup
	// grace bounds the whole stop.
	grace time.Duration
	// closeMCP cancels the MCP calls in flight, and their questions.
	closeMCP func()
	// Addr is where the HTTP server listens.
	Addr string
}

// start connects everything and starts the engine, the channels and the
// HTTP server. Everything is validated before anything connects.
func start(ctx context.Context, cfg *config.Config, log *slog.Logger, stdout io.Writer, lim limits) (*bridge, error) {
	b := &bridge{log: log}
	if err := b.connect(ctx, cfg, stdout); err != nil {
		return nil, err
	}
	c, err := b.assemble(cfg)
	if err != nil {
		b.close()
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.HTTP.Addr)
	if err != nil {
		b.close()
		return nil, fmt.Errorf("listen on ASKUSER_HTTP_ADDR %s: %w", cfg.HTTP.Addr, err)
	}
	b.Addr = ln.Addr().String()
	ops, err := b.routes(cfg, c, lim)
	if err != nil {
		ln.Close()
		b.close()
		return nil, err
	}
	b.grace = cfg.StopGrace
	b.run(ctx, ln, c)
	if err := b.serveSide(cfg, ops, lim); err != nil {
		b.stop()
		return nil, err
	}
	page := "http://" + b.Addr + "/"
	if cfg.HTTP.Token != "" {
		// The token itself is never printed: the operator has it.
		page += "#token=<ASKUSER_HTTP_TOKEN>"
	}
	fmt.Fprintf(stdout, "askbridge: web page on %s\n", page)
	log.Info("bridge started", "http", b.Addr, "channels", len(c.channels))
	return b, nil
}

// connect connects to Redis: ASKUSER_REDIS_URL's, or the embedded one,
// started first. On an error nothing is left open.
func (b *bridge) connect(ctx context.Context, cfg *config.Config, stdout io.Writer) error {
	url := cfg.Redis.URL
	if url == "" {
		if err := b.startEmbedded(cfg, stdout); err != nil {
			return err
		}
		url = b.embedded.URL()
	}
	rdb, err := store.Connect(ctx, url)
	if err != nil {
		b.close()
		return err
	}
	b.rdb = rdb
	// MCP calls wait on a pool of their own: however many wait, the
	// engine's taps, sweeps and lease renewals never queue behind them.
	b.mcpRdb, err = store.ConnectWith(ctx, url, mcpRedisOptions)
	if err != nil {
		b.close()
		return err
	}
	return nil
}

// core is what the bridge runs on its Redis: the store, the channels (the
// web page's first, then the platforms'), the engine, and the metrics'
// registry.
type core struct {
	st        *store.Store
	reg       *prometheus.Registry
	platforms []platform
	channels  []engine.Channel
	engine    *engine.Engine
}

// assemble makes the store, the metrics, the channels and the engine on
// the connected Redis. Nothing of it runs yet.
func (b *bridge) assemble(cfg *config.Config) (*core, error) {
	log := b.log
	st := store.New(b.rdb, store.Options{
		Prefix: cfg.Redis.Prefix, Consumer: cfg.Replica, ClaimIdle: cfg.ClaimIdle,
		Retention: cfg.Retention, Logger: log.With("part", "store"),
		AgentIndex: cfg.MaxPendingPerAgent > 0, AutoPipeline: true,
	})

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := newMetrics(reg, st)
	b.rdb.AddHook(m.redisHook())

	platforms, err := platformChannels(cfg, st, log, m)
	if err != nil {
		return nil, err
	}
	channels := []engine.Channel{web.NewChannel(st, nil)}
	for _, p := range platforms {
		channels = append(channels, p.channel)
	}
	reg.MustRegister(channelStates{channels: channels})

	var links engine.LinkMaker
	if _, maker, err := answerLinks(cfg); err != nil {
		return nil, err
	} else if maker != nil {
		links = *maker
	}
	eng := engine.NewEngine(engine.EngineConfig{
		Store: st, Resolve: resolver(cfg.Resolve), ResolveLadder: resolver(cfg.ResolveLadder), Channels: channels, Locale: cfg.Locale,
		Logger: log.With("part", "engine"), Metrics: m, Replica: cfg.Replica, StopGrace: cfg.StopGrace,
		MaxPendingPerAgent: cfg.MaxPendingPerAgent, TimerHold: cfg.ClaimIdle, StandingMax: cfg.StandingMax, Standing: true,
		Links: links,
		Callbacks: engine.CallbackConfig{
			Secret: cfg.Callback.Secret, Policy: cfg.Callback.Policy(), Metrics: newCallbackCounters(reg),
		},
	})
	return &core{st: st, reg: reg, platforms: platforms, channels: channels, engine: eng}, nil
}

// routes makes the web page's handler and the HTTP server on the bridge's
// address (b.Addr): the page, the platforms' webhooks and MCP. It returns
// the mux of the ops listener (ASKUSER_METRICS_ADDR), nil when there is
// none: /readyz and /metrics are then beside the page.
func (b *bridge) routes(cfg *config.Config, c *core, lim limits) (ops *http.ServeMux, err error) {
	log := b.log
	signer, _, err := answerLinks(cfg)
	if err != nil {
		return nil, err
	}
	b.webh, err = web.NewHandler(web.Config{
		Questions: c.st, History: c.st, Events: c.st, Submitter: c.engine, Token: cfg.HTTP.Token,
		Logger: log.With("part", "web"), Origins: pageOrigins(b.Addr, cfg.HTTP.OriginList()),
		MaxStreams: cfg.HTTP.MaxEventStreams, Links: signer, PublicURL: cfg.PublicURL,
	})
	if err != nil {
		return nil, fmt.Errorf("web page: %w", err)
	}
	healthz := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	readyz := readyHandler(b.rdb, c.channels, b.embedded, log.With("part", "readyz"))
	metricsz := promhttp.HandlerFor(c.reg, promhttp.HandlerOpts{})
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", healthz)
	if cfg.HTTP.MetricsAddr == "" {
		// Beside the page, behind the page's wall: the token when there is
		// one (which a bind beyond loopback requires), loopback host names
		// when there is none.
		mux.Handle("GET /readyz", b.webh.Guard(readyz))
		mux.Handle("GET /metrics", b.webh.Guard(metricsz))
	}
	// Platform webhooks authenticate themselves (Telegram's secret token,
	// Slack's signature), so they sit beside the page, not behind its token;
	// at most lim.webhooks are handled at once.
	webhooks := make(chan struct{}, max(lim.webhooks, 1))
	for _, p := range c.platforms {
		for pattern, h := range p.routes {
			mux.Handle(pattern, limitConcurrent(h, webhooks))
		}
	}
	// MCP clients (docs/mcp.md) are behind the page's wall too.
	mcpSrv, err := mcpHandler(b.mcpRdb, cfg.Redis.Prefix, cfg.HTTP, log.With("part", "mcp"))
	if err != nil {
		return nil, err
	}
	b.closeMCP = mcpSrv.Close
	mux.Handle("/mcp", b.webh.Guard(mcpSrv.Handler()))
	mux.Handle("/", b.webh)
	b.server = lim.server(mux)
	if cfg.HTTP.MetricsAddr != "" {
		ops = http.NewServeMux()
		ops.Handle("GET /healthz", healthz)
		ops.Handle("GET /readyz", readyz)
		ops.Handle("GET /metrics", metricsz)
	}
	return ops, nil
}

// run starts the HTTP server on ln, the channels and the engine, and sets
// b.cancel to stop them.
//
// Channels stop before the engine: a tap or reply a channel is still
// handing in as it stops finds the engine running, and its edits are
// waited for. The whole stop is bounded by StopGrace (b.grace): what is
// still in hand then is left to another replica (requests stay
// unacknowledged, edits stay marked).
func (b *bridge) run(ctx context.Context, ln net.Listener, c *core) {
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
			b.log.Error("http server", "err", err)
		}
	}()
	for _, ch := range c.channels {
		b.channels.Add(1)
		go func() {
			defer b.channels.Done()
			_ = ch.Run(runCtx, c.engine)
		}()
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		_ = c.engine.Run(engineCtx)
	}()
}

// serveSide starts the listeners beside the main one: the ops mux on
// ASKUSER_METRICS_ADDR when there is one (ops not nil), and the profiler
// on ASKUSER_PPROF_ADDR when it is set.
func (b *bridge) serveSide(cfg *config.Config, ops *http.ServeMux, lim limits) error {
	if ops != nil {
		if err := b.serveOps(cfg.HTTP.MetricsAddr, ops, lim); err != nil {
			return err
		}
	}
	if cfg.HTTP.PprofAddr != "" {
		return b.servePprof(cfg.HTTP.PprofAddr)
	}
	return nil
}

// callbackCounters counts result callbacks on Prometheus.
type callbackCounters struct {
	delivered prometheus.Counter
	failed    *prometheus.CounterVec
}

func newCallbackCounters(reg prometheus.Registerer) *callbackCounters {
	c := &callbackCounters{
		delivered: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "askbridge_callbacks_delivered_total",
			Help: "Result callbacks a receiver took (answered 2xx), by this replica.",
		}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "askbridge_callbacks_failed_total",
			Help: "Failed result callback attempts by this replica; final=\"true\" when the callback was given up.",
		}, []string{"final"}),
	}
	reg.MustRegister(c.delivered, c.failed)
	return c
}

func (c *callbackCounters) CallbackDelivered() { c.delivered.Inc() }

func (c *callbackCounters) CallbackFailed(final bool) {
	c.failed.WithLabelValues(strconv.FormatBool(final)).Inc()
}

// stop shuts down gracefully: no new requests are taken, the ones in hand
// are finished, leases are released, then the HTTP server and Redis close.
func (b *bridge) stop() {
	start := time.Now()
	if b.closeMCP != nil {
		// While the engine still runs to end the questions.
		b.closeMCP()
	}
	b.cancel()
	shutdownCtx, done := context.WithTimeout(context.Background(), max(b.grace-time.Since(start), time.Second))
	defer done()
	b.webh.Close()
	_ = b.server.Shutdown(shutdownCtx)
	if b.ops != nil {
		_ = b.ops.Shutdown(shutdownCtx)
	}
	if b.pprof != nil {
		_ = b.pprof.Shutdown(shutdownCtx)
	}
	// The engine returns within its own StopGrace of its stop.
	waitAtMost(&b.wg, max(b.grace-time.Since(start), time.Second))
	b.close()
}

// startEmbedded starts the embedded Redis: a redis-server keeping an
// append-only file in the data directory when the binary is on the PATH,
// the in-memory stand-in otherwise, and says which runs and what it loses.
func (b *bridge) startEmbedded(cfg *config.Config, stdout io.Writer) error {
	dir := cfg.Redis.DataDir
	if dir == "" {
		dir = config.DefaultDataDir()
	}
	addr := cfg.Redis.EmbeddedAddr
	emb, err := store.OpenEmbedded(store.EmbeddedOptions{Addr: addr, DataDir: dir, Prepare: stopWithBridge})
	if errors.Is(err, store.ErrAddrInUse) {
		// Most often a second bridge beside the first: the Redis that
		// answers there is not this bridge's, so it is never taken for it.
		return fmt.Errorf("the embedded Redis cannot listen on %s (ASKUSER_EMBEDDED_REDIS_ADDR): another process already does, another bridge's embedded Redis perhaps. "+
			"Give this bridge a free loopback address in ASKUSER_EMBEDDED_REDIS_ADDR and a data directory of its own in ASKUSER_DATA_DIR, "+
			"or, to share that Redis on purpose, set ASKUSER_REDIS_URL=redis://%s", addr, addr)
	}
	if err != nil {
		return fmt.Errorf("start the embedded Redis on %s: %w", addr, err)
	}
	b.embedded = emb
	if emb.Durable() {
		fmt.Fprintf(stdout, "askbridge: no ASKUSER_REDIS_URL set; embedded Redis listening on %s (redis-server, keeping its data in %s)\n", emb.Addr(), emb.DataDir())
		b.log.Info("embedded Redis: a redis-server with an append-only file; pending questions and results survive a restart (a crash may lose the last second of writes); one replica only",
			"embeddedRedis", emb.Kind(), "addr", emb.Addr(), "dataDir", emb.DataDir())
		return nil
	}
	fmt.Fprintf(stdout, "askbridge: no ASKUSER_REDIS_URL set; embedded Redis listening on %s (in memory: it keeps nothing on disk)\n", emb.Addr())
	b.log.Warn(inMemoryWarning, "embeddedRedis", emb.Kind(), "addr", emb.Addr())
	return nil
}

// inMemoryWarning says what the in-memory embedded Redis loses, in the log
// at start and on /readyz.
const inMemoryWarning = "embedded Redis in memory: pending questions and results vanish when the bridge restarts, " +
	"and an agent blocked on BLPOP 0 for a result would wait forever; " +
	"set ASKUSER_REDIS_URL, or install redis-server to keep them in ASKUSER_DATA_DIR"

// server is an HTTP server for h within the limits.
func (l limits) server(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: l.readHeader, ReadTimeout: l.read, WriteTimeout: l.write, IdleTimeout: l.idle}
}

// limitConcurrent serves h while a slot of slots is free, and answers 503
// with Retry-After otherwise, without waiting: a platform delivers a
// refused webhook call again later.
func limitConcurrent(h http.Handler, slots chan struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case slots <- struct{}{}:
			defer func() { <-slots }()
			h.ServeHTTP(w, r)
		default:
			w.Header().Set("Retry-After", "1")
			http.Error(w, "busy: too many webhook calls at once; try again", http.StatusServiceUnavailable)
		}
	})
}

// pageOrigins are the origins the page is served at: the listener's (a
// listener on every interface stands for its loopback one) and the
// configured others.
func pageOrigins(addr string, others []string) []string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return others
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return append([]string{"http://" + net.JoinHostPort(host, port)}, others...)
}

// serveOps serves /metrics, /readyz and /healthz on addr
// (ASKUSER_METRICS_ADDR), on a listener of its own, without authentication;
// on a loopback address it answers only to loopback host names.
func (b *bridge) serveOps(addr string, mux http.Handler, lim limits) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on ASKUSER_METRICS_ADDR %s: %w", addr, err)
	}
	if web.Loopback(addr) {
		mux = web.LoopbackHostOnly(mux)
	}
	b.ops = lim.server(mux)
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		if err := b.ops.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			b.log.Error("metrics server", "err", err)
		}
	}()
	b.log.Info("metrics listening", "addr", ln.Addr().String())
	return nil
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
	if b.mcpRdb != nil {
		_ = b.mcpRdb.Close()
	}
	if b.rdb != nil {
		_ = b.rdb.Close()
	}
	if b.embedded != nil {
		b.embedded.Close()
	}
}

// resolver makes an engine.Resolver of one of config's: Resolve, which maps
// a request's names through the configured routes and the policy on direct
// targets (ASKUSER_TARGETS, the platforms' lists of chats), or
// ResolveLadder, which maps the names of a route's own ladder, the
// operator's, with no policy. An error is the request's error result, its
// message prefixed "to: " like the engine's own refusals of `to`.
func resolver(resolve func(to string) (config.Route, error)) engine.Resolver {
	return func(to string) (engine.Route, error) {
		route, err := resolve(to)
		if err != nil {
			return engine.Route{Target: askbridge.Target{}}, fmt.Errorf("to: %w", err)
		}
		platform, chat, err := config.ParseTarget(route.To)
		if err != nil {
			return engine.Route{Target: askbridge.Target{}}, fmt.Errorf("to: %w", err)
		}
		var ladder []askbridge.Step
		for _, st := range route.Escalate {
			ladder = append(ladder, askbridge.Step{AfterSeconds: st.AfterSeconds, To: askbridge.ToList(st.To)})
		}
		return engine.Route{Target: askbridge.Target{Platform: platform, Chat: chat}, Answerers: route.Answerers, Locale: route.Locale, Escalate: ladder, Links: route.Links}, nil
	}
}

// readyHandler reports whether Redis answers, each channel's state, and
// which embedded Redis runs (emb nil: a shared one) with what it loses. It
// shows state words only: Redis's error, which may name internal addresses,
// goes to the log.
func readyHandler(rdb redis.UniversalClient, channels []engine.Channel, emb *store.Embedded, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		ready := true
		redisState := "ok"
		if err := rdb.Ping(ctx).Err(); err != nil {
			ready = false
			redisState = "unreachable"
			log.Warn("redis unreachable", "err", err)
		}
		states := map[string]string{}
		for _, ch := range channels {
			s := ch.State()
			states[ch.Platform()] = string(s)
		}
		out := map[string]any{"ready": ready, "redis": redisState, "channels": states}
		if emb != nil {
			out["embeddedRedis"] = emb.Kind()
			if !emb.Durable() {
				out["warning"] = inMemoryWarning
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if !ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		writeJSON(w, out)
	})
}
