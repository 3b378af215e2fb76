package store

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/askbridge/askbridge/internal/redistest"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// backend is one Redis the conformance suite runs against.
type backend struct {
	name string
	// real is true for a real redis-server (single or cluster), false for
	// miniredis (the embedded server, or a fallback).
	real bool
	// addrs are the server addresses (one, or the cluster's nodes).
	addrs   []string
	cluster bool
	// autopipeline opens Stores with Options.AutoPipeline, every call sent
	// through the autopipeliner (not only those of a burst).
	autopipeline bool
}

// withAutoPipeline is b with every Store call autopipelined.
func (b backend) withAutoPipeline() backend {
	b.name += "/autopipeline"
	b.autopipeline = true
	return b
}

// client opens a new client to the backend, closed when the test ends.
// Every call gives a separate connection pool, as separate replicas have.
func (b backend) client(t testing.TB) redis.UniversalClient {
	t.Helper()
	var c redis.UniversalClient
	if b.cluster {
		c = redis.NewClusterClient(&redis.ClusterOptions{Addrs: b.addrs, PoolSize: 64})
	} else {
		c = redis.NewClient(&redis.Options{Addr: b.addrs[0], PoolSize: 64})
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

var (
	backendSingle   backend
	backendCluster  backend
	backendEmbedded backend
	prefixSeq       atomic.Int64
)

// allBackends are the backends the conformance suite runs on: under -short
// (the fast tier) the single redis-server alone.
func allBackends() []backend {
	if testing.Short() {
		return []backend{backendSingle}
	}
	return []backend{backendSingle, backendCluster, backendEmbedded}
}

// needCluster skips a test of the cluster backend under -short, where
// TestMain starts no cluster.
func needCluster(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("Redis Cluster: full tier (go test without -short)")
	}
}

// TestMain starts one redis-server, one three-master cluster (not under
// -short, the fast tier) and one embedded server for the whole test binary; every test uses its own key
// prefix, so tests run in parallel. Without redis-server the single and
// cluster backends fall back to miniredis, unless ASKBRIDGE_REQUIRE_REDIS=1
// (CI), where that is a failure. Once the tests passed and the servers are
// stopped, no goroutine may be left (goleak).
func TestMain(m *testing.M) {
	flag.Parse()
	code := runMain(m)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "store tests leaked goroutines: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

func runMain(m *testing.M) int {
	var (
		wg             sync.WaitGroup
		server         *redistest.Server
		cluster        *redistest.Cluster
		errSrv, errClu error
	)
	wg.Add(1)
	go func() { defer wg.Done(); server, errSrv = redistest.StartServer() }()
	if !testing.Short() {
		wg.Add(1)
		go func() { defer wg.Done(); cluster, errClu = redistest.StartCluster() }()
	}
	wg.Wait()
	if server != nil {
		defer server.Close()
	}
	if cluster != nil {
		defer cluster.Close()
	}
	for _, err := range []error{errSrv, errClu} {
		if err == nil {
			continue
		}
		if redistest.Required() || !errors.Is(err, redistest.ErrNotInstalled) {
			fmt.Fprintf(os.Stderr, "store tests need Redis (ASKBRIDGE_REQUIRE_REDIS=%q): %v\n", os.Getenv("ASKBRIDGE_REQUIRE_REDIS"), err)
			return 1
		}
	}
	if server != nil {
		backendSingle = backend{name: "redis-server", real: true, addrs: []string{server.Addr}}
	} else {
		mr, err := startMiniredis()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer mr.Close()
		fmt.Fprintln(os.Stderr, "store tests: redis-server not installed, the single-server suite runs on miniredis")
		backendSingle = backend{name: "redis-server(miniredis)", addrs: []string{mr.Addr()}}
	}
	switch {
	case cluster != nil:
		backendCluster = backend{name: "cluster", real: true, addrs: cluster.Addrs, cluster: true}
	case testing.Short():
	default:
		mr, err := startMiniredis()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer mr.Close()
		fmt.Fprintln(os.Stderr, "store tests: redis-server not installed, the cluster suite runs on miniredis behind a cluster client")
		backendCluster = backend{name: "cluster(miniredis)", addrs: []string{mr.Addr()}, cluster: true}
	}
	emb, err := StartEmbedded("127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer emb.Close()
	backendEmbedded = backend{name: "embedded", addrs: []string{emb.Addr()}}
	return m.Run()
}

func startMiniredis() (*Embedded, error) { return StartEmbedded("127.0.0.1:0") }

// testPrefix is a key prefix no other test uses.
func testPrefix() string { return fmt.Sprintf("t%d:", prefixSeq.Add(1)) }

// newStore opens a Store on its own client. opts.Prefix empty gets a fresh
// prefix; opts.Consumer empty gets a unique consumer name.
func newStore(t testing.TB, b backend, opts Options) *Store {
	t.Helper()
	if opts.Prefix == "" {
		opts.Prefix = testPrefix()
	}
	if opts.Consumer == "" {
		opts.Consumer = fmt.Sprintf("c%d", prefixSeq.Add(1))
	}
	if b.autopipeline {
		opts.AutoPipeline = true
	}
	s := New(b.client(t), opts)
	if b.autopipeline {
		s.apMin = 0
	}
	return s
}

// replicas opens n Stores sharing one prefix, each with its own client and
// consumer, as n bridge replicas would.
func replicas(t testing.TB, b backend, n int, opts Options) []*Store {
	t.Helper()
	if opts.Prefix == "" {
		opts.Prefix = testPrefix()
	}
	out := make([]*Store, n)
	for i := range out {
		o := opts
		o.Consumer = fmt.Sprintf("replica-%d", i)
		out[i] = newStore(t, b, o)
	}
	return out
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}
