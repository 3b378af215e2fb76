package matrix_test

import (
	"fmt"
	"net/http"
	"os"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge/internal/dendritetest"
	"github.com/askbridge/askbridge/internal/redistest"
	"github.com/askbridge/askbridge/store"
)

// hs is the Dendrite homeserver the package's tests share; nil under
// -short, where every test that needs it skips. redisAddr is the shared
// redis-server.
var (
	hs        *dendritetest.Server
	redisAddr string
	prefixSeq atomic.Int64
)

// The tests on Dendrite run one at a time: its SQLite answers concurrent
// writes (room creations, sends) from several tests with a 500 now and
// then.
func TestMain(m *testing.M) {
	srv, stop, err := dendritetest.Shared()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	hs = srv
	os.Exit(redistest.Main(m, "matrix", &redisAddr, stop, http.DefaultTransport.(*http.Transport).CloseIdleConnections))
}

// newStore is a store on the shared Redis under a key prefix of its own,
// closed when the test ends.
func newStore(t *testing.T) *store.Store {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	t.Cleanup(func() { rdb.Close() })
	return store.New(rdb, store.Options{Prefix: fmt.Sprintf("mxtest%d:", prefixSeq.Add(1)), Consumer: "test"})
}
