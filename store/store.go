package store

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
)

// Store is the askbridge.Store on Redis. It is safe for concurrent use by
// many goroutines, and any number of Stores (one per replica, each with its
// own Consumer) may share one Redis.
type Store struct {
	rdb  redis.UniversalClient
	opts Options
	k    keys

	// groupReady is set once the consumer group is known to exist; a NOGROUP
	// reply clears it.
	groupReady atomic.Bool

	// claimMu guards the XAUTOCLAIM scan: its cursor over the pending
	// entries list and when it last finished a pass.
	claimMu    sync.Mutex
	claimStart string
	claimLast  time.Time

	// originID names this Store in the cooldowns it shares.
	originOnce sync.Once
	originID   string

	// recent holds the records Lookup serves from memory.
	recent recentRecords
}

// Store plays every role of the root package: the engine's Store, the
// channels' Coordinator and the web page's EventLog.
var (
	_ askbridge.Store       = (*Store)(nil)
	_ askbridge.Coordinator = (*Store)(nil)
	_ askbridge.EventLog    = (*Store)(nil)
)

// New returns a Store on client with opts (zero fields take their
// defaults; see Options.Validate for what cannot work). The Store does not
// own the client: close it yourself after the Store's last use.
func New(client redis.UniversalClient, opts Options) *Store {
	o := opts.withDefaults()
	return &Store{rdb: client, opts: o, k: keys{prefix: o.Prefix}, claimStart: "0-0"}
}

// Options returns the options in force, defaults filled in.
func (s *Store) Options() Options { return s.opts }

// ms is a duration in whole milliseconds, at least 1 so an expiry never
// deletes the key it is set on.
func ms(d time.Duration) int64 {
	return max(d.Milliseconds(), 1)
}
