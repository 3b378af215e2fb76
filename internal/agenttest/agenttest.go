// Package agenttest plays an agent in tests, using only the Redis commands
// of the public protocol (docs/redis-protocol.md): XADD an ask or a cancel
// on <prefix>requests, BLPOP <prefix>result:{<id>}.
package agenttest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
)

// Agent talks to the bridge through Redis under a key prefix.
type Agent struct {
	RDB    redis.UniversalClient
	Prefix string
}

// Ask pushes a request and returns its id: the request's own, else the
// stream entry id, as the protocol says.
func (a Agent) Ask(t testing.TB, body string) string {
	t.Helper()
	entry, err := a.RDB.XAdd(context.Background(), &redis.XAddArgs{Stream: a.Prefix + "requests", Values: []string{"ask", body}}).Result()
	if err != nil {
		t.Fatalf("agent: XADD ask: %v", err)
	}
	var probe struct {
		ID any `json:"id"`
	}
	_ = json.Unmarshal([]byte(body), &probe)
	if id, ok := probe.ID.(string); ok && id != "" {
		return id
	}
	return entry
}

// Cancel pushes a cancel of question id.
func (a Agent) Cancel(t testing.TB, id string) {
	t.Helper()
	if err := a.RDB.XAdd(context.Background(), &redis.XAddArgs{Stream: a.Prefix + "requests", Values: []string{"cancel", id}}).Err(); err != nil {
		t.Fatalf("agent: XADD cancel: %v", err)
	}
}

// Result waits up to within for the one result of question id.
func (a Agent) Result(t testing.TB, id string, within time.Duration) askbridge.Result {
	t.Helper()
	v, err := a.RDB.BLPop(context.Background(), within, a.key(id)).Result()
	if err != nil {
		t.Fatalf("agent: no result for %s within %s: %v", id, within, err)
	}
	var r askbridge.Result
	if err := json.Unmarshal([]byte(v[1]), &r); err != nil {
		t.Fatalf("agent: result of %s: %v: %s", id, err, v[1])
	}
	return r
}

// ResultCount is how many results wait on question id's list (LLEN).
func (a Agent) ResultCount(t testing.TB, id string) int64 {
	t.Helper()
	n, err := a.RDB.LLen(context.Background(), a.key(id)).Result()
	if err != nil {
		t.Fatalf("agent: LLEN: %v", err)
	}
	return n
}

func (a Agent) key(id string) string { return a.Prefix + "result:{" + id + "}" }
