package store

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/askbridge/askbridge/engine"
	"github.com/redis/go-redis/v9"
)

// Store is the engine.Store on Redis. It is safe for concurrent use by
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
	// idleRead is set when the last read found nothing and blocked for
	// nothing: the next goes straight to blocking again (readRequests).
	idleRead atomic.Bool

	// originID names this Store in the cooldowns it shares.
	originOnce sync.Once
	originID   string

	// recent holds the records Lookup serves from memory.
	recent recentRecords

	// ap batches the calls of a burst (Options.AutoPipeline); inflight
	// counts the round trips on their way.
	ap       redis.UniversalClient
	inflight atomic.Int64
	// apMin is apThreshold (0 in tests that send every call through ap).
	apMin int64
}

// Store plays every role the engine names: each family of the engine's
// store (every part of the engine sees only the methods it calls), the
// channels' Coordinator, the callbacks' queue and the web page's EventLog.
var (
	_ engine.Requests      = (*Store)(nil)
	_ engine.Questions     = (*Store)(nil)
	_ engine.Ends          = (*Store)(nil)
	_ engine.Timers        = (*Store)(nil)
	_ engine.Places        = (*Store)(nil)
	_ engine.Publisher     = (*Store)(nil)
	_ engine.Coordinator   = (*Store)(nil)
	_ engine.CallbackQueue = (*Store)(nil)
	_ engine.BatchCreator  = (*Store)(nil)
	_ engine.EventLog      = (*Store)(nil)
)

// New returns a Store on client with opts (zero fields take their
// defaults; see Options.Validate for what cannot work). The Store does not
// own the client: close it yourself after the Store's last use.
func New(client redis.UniversalClient, opts Options) *Store {
	o := opts.withDefaults()
	s := &Store{rdb: client, opts: o, k: newKeys(o.Prefix), claimStart: "0-0", apMin: apThreshold}
	if o.AutoPipeline {
		if ap, err := client.AutoPipeline(); err == nil {
			s.ap = ap
			client.AddHook(inflightHook{n: &s.inflight})
		}
	}
	return s
}

// Options returns the options in force, defaults filled in.
func (s *Store) Options() Options { return s.opts }

// ms is a duration in whole milliseconds, at least 1 so an expiry never
// deletes the key it is set on.
func ms(d time.Duration) int64 {
	return max(d.Milliseconds(), 1)
}

// apThreshold is how many round trips must be on their way to Redis for a
// call to join the autopipeline instead of taking its own.
const apThreshold = 4

// cl is the client a non-blocking call uses: the autopipeliner when
// Options.AutoPipeline is set and apThreshold round trips are already on
// their way (a burst: its calls share round trips), the plain client
// otherwise (alone, a call pays no hand-off to the pipeliner).
func (s *Store) cl() redis.UniversalClient {
	if s.ap != nil && s.inflight.Load() >= s.apMin {
		return s.ap
	}
	return s.rdb
}

// inflightHook counts the round trips on their way to Redis.
type inflightHook struct{ n *atomic.Int64 }

func (h inflightHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h inflightHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		switch cmd.Name() {
		case "blpop", "brpop", "blmove", "bzpopmin", "bzpopmax", "xread", "xreadgroup":
			// Parked on the server, waiting: not a round trip others wait
			// behind.
			return next(ctx, cmd)
		}
		h.n.Add(1)
		defer h.n.Add(-1)
		return next(ctx, cmd)
	}
}

func (h inflightHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(1)
		defer h.n.Add(-1)
		return next(ctx, cmds)
	}
}
