package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/client"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/redistest"
	"github.com/askbridge/askbridge/internal/testwait"
	"github.com/askbridge/askbridge/mcp"
	"github.com/askbridge/askbridge/store"
	"github.com/askbridge/askbridge/web"
)

var (
	redisAddr string
	prefixSeq atomic.Int64
)

// TestMain runs the tests on one redis-server (miniredis without one,
// unless ASKBRIDGE_REQUIRE_REDIS=1) and fails when a goroutine is left
// behind.
func TestMain(m *testing.M) {
	os.Exit(redistest.Main(m, "mcp", &redisAddr, http.DefaultClient.CloseIdleConnections))
}

// rdb is a Redis client for one test.
func rdb(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: redisAddr})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// testPrefix is a key prefix no other test uses.
func testPrefix() string { return fmt.Sprintf("mcptest%d:", prefixSeq.Add(1)) }

// bridge is one bridge replica: the engine with the web channel, and the
// web page's API on a loopback test server, where the tests answer as a
// person does. A request's `to` may be empty, "web" or "mcp" (the
// agent's own client); anything else is refused as an unknown route.
type bridge struct {
	prefix string
	page   *httptest.Server
}

func startBridge(t *testing.T, prefix string) *bridge {
	t.Helper()
	st := store.New(rdb(t), store.Options{Prefix: prefix, Consumer: "replica-1"})
	log := slog.New(slog.DiscardHandler)
	resolve := func(to string) (engine.Route, error) {
		if to == "" || to == web.Platform {
			return engine.Route{Target: askbridge.Target{Platform: web.Platform}}, nil
		}
		if to == askbridge.PlatformMCP {
			return engine.Route{Target: askbridge.Target{Platform: askbridge.PlatformMCP}}, nil
		}
		return engine.Route{Target: askbridge.Target{}}, fmt.Errorf("to: unknown route %q", to)
	}
	eng := engine.NewEngine(engine.EngineConfig{
		Store: st, Resolve: resolve, Channels: []engine.Channel{web.NewChannel(st, nil)},
		Logger: log, Replica: "replica-1", SweepEvery: 50 * time.Millisecond, ReadBlock: 200 * time.Millisecond,
	})
	h, err := web.NewHandler(web.Config{Questions: st, History: st, Events: st, Submitter: eng, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	page := httptest.NewServer(h)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = eng.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
		h.Close()
		page.Close()
	})
	return &bridge{prefix: prefix, page: page}
}

// open lists the ids of the questions the page shows.
func (b *bridge) open(t *testing.T) []string {
	t.Helper()
	resp, err := http.Get(b.page.URL + "/api/questions")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct{ Questions []struct{ ID string } }
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatalf("GET /api/questions: %s: %v", resp.Status, err)
	}
	var ids []string
	for _, q := range list.Questions {
		ids = append(ids, q.ID)
	}
	return ids
}

// waitShown waits until the page shows a question and returns its id.
func (b *bridge) waitShown(t *testing.T) string {
	t.Helper()
	var ids []string
	if !testwait.Until(10*time.Second, func() bool { ids = b.open(t); return len(ids) > 0 }) {
		t.Fatal("no question appeared on the page within 10s")
	}
	return ids[0]
}

// answer answers question id on the page, as a person does.
func (b *bridge) answer(t *testing.T, id, body string) {
	t.Helper()
	resp, err := http.Post(b.page.URL+"/api/questions/"+id+"/answer", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("answer %s: %s: %s", id, resp.Status, out)
	}
}

// agentClient is the agent-protocol client of a test on prefix.
func agentClient(t *testing.T, prefix string) *client.Client {
	return client.New(rdb(t), client.Options{Prefix: prefix, PollTimeout: time.Second})
}

// newServerClient is Options.Client for servers whose calls never get
// that far.
func newServerClient(context.Context) (*client.Client, error) {
	return nil, errors.New("no client in this test")
}

// newServer is an MCP server asking through prefix, closed when the test
// ends.
func newServer(t *testing.T, prefix string, o mcp.Options) *mcp.Server {
	t.Helper()
	c := agentClient(t, prefix)
	o.Client = func(context.Context) (*client.Client, error) { return c, nil }
	o.Redis = redisAddr + ", prefix " + prefix
	if o.ProgressEvery == 0 {
		o.ProgressEvery = 200 * time.Millisecond
	}
	srv, err := mcp.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

// progress collects the progress notifications a client receives.
type progress struct {
	mu   sync.Mutex
	got  []*sdk.ProgressNotificationParams
	seen chan struct{}
}

func newProgress() *progress { return &progress{seen: make(chan struct{}, 1000)} }

func (p *progress) handle(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
	p.mu.Lock()
	p.got = append(p.got, req.Params)
	p.mu.Unlock()
	p.seen <- struct{}{}
}

func (p *progress) list() []*sdk.ProgressNotificationParams {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*sdk.ProgressNotificationParams(nil), p.got...)
}

// transport is one way a test connects an MCP client to the server.
type transport struct {
	name    string
	connect func(t *testing.T, srv *mcp.Server, p *progress) *sdk.ClientSession
}

// clientImpl is the MCP client's name; calls naming no agent ask as it.
var clientImpl = &sdk.Implementation{Name: "test-agent", Version: "v1"}

// inMemory connects over the SDK's in-memory transports, as `askbridge mcp`
// serves stdio.
func inMemory(t *testing.T, srv *mcp.Server, p *progress) *sdk.ClientSession {
	t.Helper()
	st, ct := sdk.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.Connect(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := sdk.NewClient(clientImpl, &sdk.ClientOptions{ProgressNotificationHandler: p.handle}).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close(); _ = ss.Wait() })
	return cs
}

// overHTTP connects over streamable HTTP to the server's Handler.
func overHTTP(t *testing.T, srv *mcp.Server, p *progress) *sdk.ClientSession {
	t.Helper()
	hs := httptest.NewServer(srv.Handler())
	cs, err := sdk.NewClient(clientImpl, &sdk.ClientOptions{ProgressNotificationHandler: p.handle}).
		Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: hs.URL + "/mcp"}, nil)
	if err != nil {
		hs.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close(); hs.CloseClientConnections(); hs.Close() })
	return cs
}

var transports = []transport{{"in-memory", inMemory}, {"streamable-http", overHTTP}}

// deployArgs is the README's sample question as ask_user arguments.
func deployArgs() map[string]any {
	return map[string]any{
		"questions": []any{map[string]any{
			"id": "deploy_target", "header": "Target", "question": "Where should this deploy?",
			"options": []any{
				map[string]any{"label": "Staging (Recommended)", "description": "Safer default"},
				map[string]any{"label": "Production"},
			},
		}},
	}
}

// callAsync calls ask_user in a goroutine.
type callResult struct {
	res *sdk.CallToolResult
	err error
}

func callAsync(ctx context.Context, cs *sdk.ClientSession, params *sdk.CallToolParams) <-chan callResult {
	ch := make(chan callResult, 1)
	go func() {
		res, err := cs.CallTool(ctx, params)
		ch <- callResult{res, err}
	}()
	return ch
}

// await waits for a call's outcome.
func await(t *testing.T, ch <-chan callResult, d time.Duration) callResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(d):
		t.Fatalf("the call did not return within %s", d)
	}
	return callResult{}
}

// text is the text of a result's content blocks.
func text(res *sdk.CallToolResult) []string {
	var out []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			out = append(out, tc.Text)
		}
	}
	return out
}

// asJSON decodes JSON into a generic value, for comparisons.
func asJSON(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("not JSON: %v: %s", err, b)
	}
	return v
}

// waitStatus waits until question id of prefix has ended and returns it.
func waitEnded(t *testing.T, prefix, id string) client.Question {
	t.Helper()
	c := agentClient(t, prefix)
	var q client.Question
	if !testwait.Until(15*time.Second, func() bool {
		got, found, err := c.Status(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		q = got
		return found && q.Status != askbridge.StatusPending
	}) {
		t.Fatalf("question %s did not end within 15s", id)
	}
	return q
}
