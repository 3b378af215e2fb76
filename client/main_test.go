package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/redistest"
	"github.com/askbridge/askbridge/internal/testwait"
	"github.com/askbridge/askbridge/store"
	"github.com/askbridge/askbridge/web"
)

// backend is one Redis the tests run against: a redis-server, or the
// three-master cluster.
type backend struct {
	name    string
	addrs   []string
	cluster bool
}

// client opens a client to the backend, closed when the test ends; each
// call has its own pool, as an agent and a bridge would.
func (b backend) client(t testing.TB) redis.UniversalClient {
	t.Helper()
	var c redis.UniversalClient
	if b.cluster {
		c = redis.NewClusterClient(&redis.ClusterOptions{Addrs: b.addrs})
	} else {
		c = redis.NewClient(&redis.Options{Addr: b.addrs[0]})
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

var (
	single, cluster backend
	prefixSeq       atomic.Int64
)

// backends are the Redis setups every protocol test runs on; the cluster
// is missing only under -short (the fast tier) and where redis-server is
// not installed and not required.
func backends() []backend {
	if cluster.addrs == nil {
		return []backend{single}
	}
	return []backend{single, cluster}
}

// TestMain starts one redis-server and one three-master Redis Cluster for
// the package (without redis-server: miniredis for the single server and
// no cluster, unless ASKBRIDGE_REQUIRE_REDIS=1, where that fails; under
// -short no cluster), and
// fails the run when a goroutine is left behind.
func TestMain(m *testing.M) {
	code := run(m)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "client tests leaked goroutines:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// errShortTier stands for the cluster -short does not start.
var errShortTier = errors.New("no cluster under -short")

func run(m *testing.M) int {
	var (
		wg  sync.WaitGroup
		clu *redistest.Cluster
		err error
	)
	if flag.Parse(); testing.Short() {
		// The fast tier runs on the single server only.
		err = errShortTier
	} else {
		wg.Add(1)
		go func() { defer wg.Done(); clu, err = redistest.StartCluster() }()
	}
	addr, stop, serr := redistest.Shared("client")
	wg.Wait()
	if serr != nil {
		fmt.Fprintln(os.Stderr, serr)
		return 1
	}
	defer stop()
	switch {
	case err == nil:
		defer clu.Close()
		cluster = backend{name: "cluster", addrs: clu.Addrs, cluster: true}
	case errors.Is(err, errShortTier):
		fmt.Fprintln(os.Stderr, "client tests: -short, the cluster tests do not run (full tier: go test without -short)")
	case errors.Is(err, redistest.ErrNotInstalled) && !redistest.Required():
		fmt.Fprintln(os.Stderr, "client tests: redis-server not installed, the cluster tests do not run")
	default:
		fmt.Fprintf(os.Stderr, "client tests need a Redis Cluster (ASKBRIDGE_REQUIRE_REDIS=%q): %v\n", os.Getenv("ASKBRIDGE_REQUIRE_REDIS"), err)
		return 1
	}
	single = backend{name: "redis-server", addrs: []string{addr}}
	// The bridge the examples ask through.
	exampleRedis = addr
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	br, stopBridge, err := newBridge(rdb, examplePrefix, bridgeOpts{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stopBridge()
	exampleBridge = br
	return m.Run()
}

// testPrefix is a key prefix no other test uses.
func testPrefix() string { return fmt.Sprintf("clienttest%d:", prefixSeq.Add(1)) }

// bridge is one bridge replica: the store, the web channel and the engine
// from the root package, and the web page's API on a loopback test server,
// where the tests answer as a person does.
type bridge struct {
	prefix string
	page   *httptest.Server
	engine *engine.Engine
}

// keep keeps the answer of question id for by, as their "keep 1h" reply
// would a moment after they answered: the offer is recorded just after
// the result is pushed, so a keep at once may find none yet (KeepClosed),
// and is tried again for a few seconds.
func (b *bridge) keep(ctx context.Context, id string, by askbridge.Person, d time.Duration) error {
	for range 200 {
		out, err := b.engine.Keep(ctx, id, by, d)
		switch {
		case err != nil:
			return err
		case out.Result == engine.KeepKept:
			return nil
		case out.Result != engine.KeepClosed:
			return fmt.Errorf("keep: outcome %v", out.Result)
		}
		time.Sleep(10 * time.Millisecond) // the offer's record is a moment behind the result
	}
	return fmt.Errorf("keep: no offer for %s", id)
}

// bridgeOpts tune startBridge; the zero value is a bridge on the real
// clock.
type bridgeOpts struct {
	// clock, when set, is the engine's clock (a test advances it past a
	// deadline).
	clock clockwork.Clock
	// log receives the engine's log (default: none).
	log io.Writer
	// claimIdle is the store's ClaimIdle (default 30s): how soon an entry
	// left unacknowledged is taken up again.
	claimIdle time.Duration
}

// startBridge starts a bridge on b under prefix, stopped when the test
// ends.
func startBridge(t testing.TB, b backend, prefix string, o bridgeOpts) *bridge {
	t.Helper()
	br, stop, err := newBridge(b.client(t), prefix, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return br
}

// newBridge starts a bridge on rdb under prefix and returns it with the
// function that stops it. A request's `to` may be empty or "web" (the
// page), or "mcp" (the agent's own client); anything else is refused as
// an unknown route.
func newBridge(rdb redis.UniversalClient, prefix string, o bridgeOpts) (*bridge, func(), error) {
	st := store.New(rdb, store.Options{Prefix: prefix, Consumer: "replica-1", ClaimIdle: o.claimIdle})
	logw := o.log
	if logw == nil {
		logw = io.Discard
	}
	log := slog.New(slog.NewTextHandler(logw, nil))
	resolve := func(to string) (engine.Route, error) {
		if to == "" || to == web.Platform {
			return engine.Route{Target: askbridge.Target{Platform: web.Platform}}, nil
		}
		if to == askbridge.PlatformMCP {
			return engine.Route{Target: askbridge.Target{Platform: to}}, nil
		}
		return engine.Route{Target: askbridge.Target{}}, fmt.Errorf("to: unknown route %q", to)
	}
	eng := engine.NewEngine(engine.EngineConfig{
		Store: st, Resolve: resolve, Channels: []engine.Channel{web.NewChannel(st, nil)},
		Logger: log, Replica: "replica-1", Clock: o.clock, SweepEvery: 50 * time.Millisecond,
		ReadBlock: 200 * time.Millisecond, Standing: true,
	})
	h, err := web.NewHandler(web.Config{Questions: st, History: st, Events: st, Submitter: eng, Logger: log})
	if err != nil {
		return nil, nil, err
	}
	page := httptest.NewServer(h)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = eng.Run(ctx) }()
	stop := func() {
		cancel()
		<-done
		h.Close()
		page.Close()
	}
	return &bridge{prefix: prefix, page: page, engine: eng}, stop, nil
}

// open lists the ids of the questions the page shows.
func (b *bridge) open() ([]string, error) {
	resp, err := http.Get(b.page.URL + "/api/questions")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var list struct {
		Questions []struct{ ID string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return nil, fmt.Errorf("GET /api/questions: %s: %w", resp.Status, err)
	}
	var ids []string
	for _, q := range list.Questions {
		ids = append(ids, q.ID)
	}
	return ids, nil
}

// waitShown waits until the page shows some question, and returns the ids
// it shows.
func (b *bridge) waitShown(t testing.TB, id string) {
	t.Helper()
	testwait.For(t, 10*time.Second, "question "+id+" on the page", func() bool {
		ids, err := b.open()
		if err != nil {
			t.Fatal(err)
		}
		return slices.Contains(ids, id)
	})
}

// answer posts an answer as the page does and returns the HTTP status.
func (b *bridge) answer(id, body string) (int, error) {
	resp, err := http.Post(b.page.URL+"/api/questions/"+id+"/answer", "application/json", strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, fmt.Errorf("answer %s: %s: %s", id, resp.Status, out)
	}
	return resp.StatusCode, nil
}

// person answers the first question the page shows with body, once: it
// is the human of a test, in a goroutine. It reports what went wrong on
// the returned channel (nil when the answer was taken).
func (b *bridge) person(body string) <-chan error {
	done := make(chan error, 1)
	go func() {
		var ids []string
		var err error
		if !testwait.Until(10*time.Second, func() bool { ids, err = b.open(); return err != nil || len(ids) > 0 }) {
			done <- errors.New("no question appeared on the page within 10s")
			return
		}
		if err == nil {
			_, err = b.answer(ids[0], body)
		}
		done <- err
	}()
	return done
}

// deployRequest is the README's sample question.
func deployRequest(id string) askbridge.Request {
	return askbridge.Request{
		ID: id,
		To: askbridge.ToList{"web"},
		Questions: []askbridge.Question{{
			ID: "deploy_target", Header: "Target", Question: "Where should this deploy?",
			Options: []askbridge.Option{{Label: "Staging (Recommended)", Description: "Safer default"}, {Label: "Production"}},
		}},
	}
}

func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
