package platformtest

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/agenttest"
	"github.com/askbridge/askbridge/store"
)

// Agent is an agent of one test (agenttest's, through the Go client),
// asking the bridge under a key prefix; each call fails that test when it
// cannot be made.
type Agent struct {
	t testing.TB
	a agenttest.Agent
}

// NewAgent is an agent of t on rdb under prefix.
func NewAgent(t testing.TB, rdb redis.UniversalClient, prefix string) *Agent {
	return &Agent{t: t, a: agenttest.Agent{RDB: rdb, Prefix: prefix}}
}

// Ask pushes a request exactly as given (XADD on <prefix>requests) and
// returns its id.
func (a *Agent) Ask(body string) string {
	a.t.Helper()
	return a.a.Ask(a.t, body)
}

// Cancel pushes a cancel of question id.
func (a *Agent) Cancel(id string) {
	a.t.Helper()
	a.a.Cancel(a.t, id)
}

// Result waits up to within for the one result of question id (BLPOP)
// and takes it off its list.
func (a *Agent) Result(id string, within time.Duration) askbridge.Result {
	a.t.Helper()
	return a.a.Result(a.t, id, within)
}

// NoResult checks that no result (or no more of them) waits for the
// questions.
func (a *Agent) NoResult(ids ...string) {
	a.t.Helper()
	for _, id := range ids {
		if n := a.a.ResultCount(a.t, id); n != 0 {
			a.t.Errorf("question %s has %d results, want none", id, n)
		}
	}
}

// PromptOfADeadReplica leaves what a replica leaves that died right after
// posting a prompt: a asks body (question id), and the dead replica takes
// the request off the stream, creates the question for target, posts its
// prompt through the channel newChannel makes on its store, and records
// nothing of the post.
func PromptOfADeadReplica(a *Agent, id, body string, target askbridge.Target, newChannel func(*store.Store) (engine.Channel, error)) {
	t := a.t
	t.Helper()
	ctx := context.Background()
	a.Ask(body)
	dead := store.New(a.a.RDB, store.Options{Prefix: a.a.Prefix, Consumer: "dead"})
	if entries, err := dead.ReadRequests(ctx, 10, time.Second); err != nil || len(entries) != 1 {
		t.Fatalf("read: %v %v", entries, err)
	}
	req, err := askbridge.DecodeRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	q := engine.NewQuestion{ID: id, Request: req, Target: target, Created: now, Deadline: now.Add(time.Hour)}
	if _, _, err := dead.Create(ctx, q); err != nil {
		t.Fatal(err)
	}
	ch, err := newChannel(dead)
	if err != nil {
		t.Fatal(err)
	}
	// Killed once the post is out, before anything is recorded.
	err = ch.Send(ctx, engine.Delivery{Chat: target.Chat, Plan: engine.BuildPlan(id, req, ch.Capabilities()), Sent: func(engine.MessageRef) bool { return false }})
	if err != nil {
		t.Fatalf("send: %v", err)
	}
}

// Clock is the engines' clock in the platforms' tests: real timers and
// tickers (the fakes' rate limits and the platforms' deadlines hold), and
// a time of day a test moves ahead to reach a deadline at once.
type Clock struct {
	clockwork.Clock
	offset atomic.Int64
}

// NewClock is a Clock at the real time.
func NewClock() *Clock { return &Clock{Clock: clockwork.NewRealClock()} }

// Now is the real time plus every Advance so far.
func (c *Clock) Now() time.Time { return c.Clock.Now().Add(time.Duration(c.offset.Load())) }

// Since is the time from t to Now.
func (c *Clock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// Until is the time from Now to t.
func (c *Clock) Until(t time.Time) time.Duration { return t.Sub(c.Now()) }

// Advance moves the time of day ahead by d; timers are not moved.
func (c *Clock) Advance(d time.Duration) { c.offset.Add(int64(d)) }

// Resolver routes a request as a bridge's config would: one without "to"
// to def, one to "<platform>:<chat>" there, anything else refused.
func Resolver(def engine.Route) func(to string) (engine.Route, error) {
	return func(to string) (engine.Route, error) {
		if to == "" {
			return def, nil
		}
		if p, c, ok := strings.Cut(to, ":"); ok {
			return engine.Route{Target: askbridge.Target{Platform: p, Chat: c}}, nil
		}
		return engine.Route{Target: askbridge.Target{}}, fmt.Errorf("to: unknown route %q", to)
	}
}

// LogWriter writes each log line to t's log.
type LogWriter struct{ T testing.TB }

func (w LogWriter) Write(p []byte) (int, error) {
	w.T.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// SyncBuffer is a bytes.Buffer that writers and a reader may use at once
// (a log sink of goroutines, a process's output).
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String is what was written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// PanicLogs is a log handler that counts in N the error records of
// recovered panics (a message starting with Prefix) that carry a stack.
type PanicLogs struct {
	Prefix string
	N      *atomic.Int64
}

func (h PanicLogs) Enabled(context.Context, slog.Level) bool { return true }

func (h PanicLogs) Handle(_ context.Context, r slog.Record) error {
	if r.Level != slog.LevelError || !strings.HasPrefix(r.Message, h.Prefix) {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "stack" && strings.Contains(a.Value.String(), "goroutine") {
			h.N.Add(1)
			return false
		}
		return true
	})
	return nil
}

func (h PanicLogs) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h PanicLogs) WithGroup(string) slog.Handler      { return h }
