// Package agenttest plays an agent in tests through the Go client
// (package client), which uses only the Redis commands of the public
// protocol (docs/redis-protocol.md): XADD an ask, a cancel or an answer
// on <prefix>requests, BLPOP <prefix>result:{<id>}. Requests are pushed as
// given, so the tests see what the bridge does with any bytes an agent
// sends; a result is taken off its list as it is, never read back from the
// question hash, so the tests count exactly what the bridge pushed.
package agenttest

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/client"
)

// Agent talks to the bridge through Redis under a key prefix.
type Agent struct {
	RDB    redis.UniversalClient
	Prefix string
}

func (a Agent) client() *client.Client {
	return client.New(a.RDB, client.Options{Prefix: a.Prefix})
}

// Ask pushes a request exactly as given and returns its id: the request's
// own, else the stream entry id, as the protocol says.
func (a Agent) Ask(t testing.TB, body string) string {
	t.Helper()
	id, err := a.client().PushJSON(context.Background(), []byte(body))
	if err != nil {
		t.Fatalf("agent: XADD ask: %v", err)
	}
	return id
}

// Cancel pushes a cancel of question id.
func (a Agent) Cancel(t testing.TB, id string) {
	t.Helper()
	if err := a.client().Cancel(context.Background(), id); err != nil {
		t.Fatalf("agent: XADD cancel: %v", err)
	}
}

// Answer pushes an answer entry exactly as given, as the MCP server hands
// in what a person gave in the agent's own client (the client package's
// Answer checks it first; here any bytes go).
func (a Agent) Answer(t testing.TB, body string) string {
	t.Helper()
	entry, err := a.RDB.XAdd(context.Background(), &redis.XAddArgs{
		Stream: askbridge.Keys{Prefix: a.Prefix}.Requests(), Values: []string{"answer", body},
	}).Result()
	if err != nil {
		t.Fatalf("agent: XADD answer: %v", err)
	}
	return entry
}

// Result waits up to within for the one result of question id and takes
// it off its list.
func (a Agent) Result(t testing.TB, id string, within time.Duration) askbridge.Result {
	t.Helper()
	res, ok, err := a.client().Poll(context.Background(), id, within)
	switch {
	case err != nil:
		t.Fatalf("agent: result of %s: %v", id, err)
	case !ok:
		t.Fatalf("agent: no result for %s within %s", id, within)
	}
	return res.Result
}

// ResultCount is how many results wait on question id's list (LLEN).
func (a Agent) ResultCount(t testing.TB, id string) int64 {
	t.Helper()
	n, err := a.RDB.LLen(context.Background(), askbridge.Keys{Prefix: a.Prefix}.Result(id)).Result()
	if err != nil {
		t.Fatalf("agent: LLEN: %v", err)
	}
	return n
}
