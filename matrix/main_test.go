package matrix_test

import (
	"fmt"
	"net/http"
	"os"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge/internal/redistest"
	"github.com/askbridge/askbridge/store"
)

// redisAddr is the shared redis-server. Each test on Dendrite starts a
// homeserver of its own (dendritetest.Start, a fraction of a second): a
// shared one carried the load of every earlier test, and when its SQLite
// failed a write ("database is locked") it panicked, failing every test
// after it.
var (
	redisAddr string
	prefixSeq atomic.Int64
)

func TestMain(m *testing.M) {
	os.Exit(redistest.Main(m, "matrix", &redisAddr, http.DefaultTransport.(*http.Transport).CloseIdleConnections))
}

// newStore is a store on the shared Redis under a key prefix of its own,
// closed when the test ends.
func newStore(t *testing.T) *store.Store {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	t.Cleanup(func() { rdb.Close() })
	return store.New(rdb, store.Options{Prefix: fmt.Sprintf("mxtest%d:", prefixSeq.Add(1)), Consumer: "test"})
}
