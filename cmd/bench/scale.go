package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/internal/redistest"
)

// scaleOptions size a scale run (-scale, issue 33): a three-master Redis
// Cluster, replicas bridges on it, pending questions whose deadlines fall
// evenly over window, agents asking and answering on the web page at rate
// questions a second, and a replica SIGKILLed and restarted every
// killEvery.
type scaleOptions struct {
	on       bool
	pending  int
	replicas int
	// window is what the deadlines spread over; lead is from the start of
	// the intake to the first deadline (0: worked out from pending).
	window, lead time.Duration
	rate         float64
	killEvery    time.Duration
	// idleFor is how long the idle replicas' Redis commands are counted.
	idleFor time.Duration
	// to is where the pending questions are asked.
	to string
	// backlog bounds the requests added and not yet read by a replica, so
	// a question is created soon after it was added and its deadline
	// lands where its timeout aimed it.
	backlog int
}

// addScaleFlags declares the -scale flags on fs.
func addScaleFlags(fs *flag.FlagSet) *scaleOptions {
	s := &scaleOptions{}
	fs.BoolVar(&s.on, "scale", false, "the scale run instead (issue 33): a 3-master Redis Cluster, bridge replicas, a million pending questions; table to stdout and artifacts/scale.md")
	fs.IntVar(&s.pending, "scale-pending", 1_000_000, "scale: pending questions")
	fs.IntVar(&s.replicas, "scale-replicas", 10, "scale: bridge replicas")
	fs.DurationVar(&s.window, "scale-duration", 10*time.Minute, "scale: the pending questions' deadlines spread evenly over this")
	fs.DurationVar(&s.lead, "scale-lead", 0, "scale: from the start of the intake to the first deadline (default: 60 s + pending ÷ 5,000/s: the intake, and a request a killed replica held claimed by another)")
	fs.Float64Var(&s.rate, "scale-rate", 50, "scale: agents' questions a second, answered on the web page meanwhile")
	fs.DurationVar(&s.killEvery, "scale-kill-every", time.Minute, "scale: SIGKILL and restart one replica this often, round robin (0: never)")
	fs.DurationVar(&s.idleFor, "scale-idle", time.Minute, "scale: how long the idle replicas' Redis commands are counted before the load")
	fs.StringVar(&s.to, "scale-to", "web", "scale: where the pending questions are asked (web or mcp)")
	fs.IntVar(&s.backlog, "scale-backlog", 5000, "scale: most requests added and not yet read by a replica")
	return s
}

// check says what is wrong with the options.
func (s *scaleOptions) check() error {
	switch {
	case s.pending < 1000:
		return errors.New("-scale-pending must be at least 1,000")
	case s.replicas < 2:
		return errors.New("-scale-replicas must be at least 2 (one is killed at a time)")
	case s.window < 10*time.Second:
		return errors.New("-scale-duration must be at least 10s")
	case s.rate <= 0:
		return errors.New("-scale-rate must be positive")
	case s.to != "web" && s.to != "mcp":
		return errors.New("-scale-to must be web or mcp")
	case s.backlog < 1000:
		return errors.New("-scale-backlog must be at least 1,000")
	}
	if s.lead == 0 {
		s.lead = time.Minute + time.Duration(float64(s.pending)/5000*float64(time.Second))
	}
	if s.lead < 31*time.Second {
		return errors.New("-scale-lead must be over 30s (the shortest timeout)")
	}
	if s.lead+s.window > askbridge.MaxTimeout*time.Second {
		return fmt.Errorf("-scale-lead and -scale-duration add up to %s, over the longest timeout (%d s)", s.lead+s.window, askbridge.MaxTimeout)
	}
	return nil
}

// runScale is the -scale run: it prints the table to stdout and writes it
// to <artifacts>/scale.md. It returns the exit status.
func runScale(ctx context.Context, s *scaleOptions, o Options, stdout, stderr io.Writer) int {
	if err := s.check(); err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 2
	}
	w := &scaleWorld{o: *s, common: o}
	rep, err := w.run(ctx)
	if rep != "" {
		fmt.Fprint(stdout, rep)
		if werr := os.WriteFile(filepath.Join(w.artifacts(), "scale.md"), []byte(rep), 0o644); werr != nil {
			err = errors.Join(err, werr)
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	return 0
}

// scaleWorld is everything a scale run starts.
type scaleWorld struct {
	o      scaleOptions
	common Options
	dir    string
	bin    string

	cluster *redistest.Cluster
	rdb     *redis.ClusterClient // agents and checks
	masters []*redis.Client      // INFO, MEMORY, MONITOR per master

	set *replicaSet
}

func (w *scaleWorld) logf(format string, args ...any) {
	if w.common.Progress != nil {
		fmt.Fprintf(w.common.Progress, "bench: %s "+format+"\n", append([]any{time.Now().UTC().Format("15:04:05")}, args...)...)
	}
}

func (w *scaleWorld) artifacts() string {
	if w.common.Artifacts == "" {
		return "artifacts"
	}
	return w.common.Artifacts
}

// run starts everything, measures, and returns the table.
func (w *scaleWorld) run(ctx context.Context) (string, error) {
	began, load := time.Now(), loadAverage()
	defer w.close()
	if err := w.setUp(ctx); err != nil {
		return "", err
	}
	r := &scaleResult{began: began, load: [2]string{load, ""}}
	err := w.phases(ctx, r)
	if err != nil {
		r.errs = append(r.errs, err)
	}
	r.load[1] = loadAverage()
	r.took = time.Since(began)
	return w.table(r), err
}

// setUp builds the bridge, starts the Cluster and the replicas.
func (w *scaleWorld) setUp(ctx context.Context) error {
	if err := os.MkdirAll(w.artifacts(), 0o755); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "askbench-scale-")
	if err != nil {
		return err
	}
	w.dir = dir
	if w.common.Keep {
		w.logf("logs in %s", dir)
	}
	w.logf("building ./cmd/bridge")
	if w.bin, err = buildBridge(ctx, dir); err != nil {
		return err
	}
	w.logf("starting a 3-master Redis Cluster")
	if w.cluster, err = redistest.StartCluster(); err != nil {
		return fmt.Errorf("bench: redis cluster: %w", err)
	}
	w.rdb = redis.NewClusterClient(&redis.ClusterOptions{Addrs: w.cluster.Addrs, PoolSize: 256, ReadTimeout: 10 * time.Second})
	for _, a := range w.cluster.Addrs {
		w.masters = append(w.masters, redis.NewClient(&redis.Options{Addr: a, PoolSize: 4, ReadTimeout: 30 * time.Second}))
	}
	env := map[string]string{
		"ASKUSER_REDIS_URL":    "redis-cluster://" + strings.Join(w.cluster.Addrs, ","),
		"ASKUSER_REDIS_PREFIX": prefix,
		"ASKUSER_HTTP_ADDR":    "127.0.0.1:0",
	}
	w.set = newReplicaSet(w.bin, w.dir, env, w.o.replicas)
	w.logf("starting %d bridge replicas on the Cluster", w.o.replicas)
	return w.set.startAll()
}

// close stops what setUp started.
func (w *scaleWorld) close() {
	if w.set != nil {
		w.set.stopAll(30 * time.Second)
	}
	if w.rdb != nil {
		w.rdb.Close()
	}
	for _, m := range w.masters {
		m.Close()
	}
	if w.cluster != nil {
		w.cluster.Close()
	}
	if w.dir != "" && !w.common.Keep {
		os.RemoveAll(w.dir)
	}
}
