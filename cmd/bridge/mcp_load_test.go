package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge/config"
	"github.com/askbridge/askbridge/internal/redistest"
	"github.com/askbridge/askbridge/internal/testwait"
)

// inProcess starts a bridge with env on a Redis of the test's own (a
// redis-server of its own where one is installed), through start, so a
// test can reach the bridge's own Redis client. It stops with the test.
func inProcess(t testing.TB, env map[string]string) (*bridge, string) {
	t.Helper()
	addr := privateRedis(t)
	env["ASKUSER_REDIS_URL"] = "redis://" + addr
	if env["ASKUSER_HTTP_ADDR"] == "" {
		env["ASKUSER_HTTP_ADDR"] = freeAddr(t)
	}
	cfg, err := config.Load(envList(env), os.ReadFile)
	if err != nil {
		t.Fatal(err)
	}
	b, err := start(context.Background(), cfg, slog.New(slog.DiscardHandler), io.Discard, defaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.stop)
	return b, addr
}

// privateRedis starts a redis-server for the test alone: its CLIENT LIST
// and INFO commandstats are the bridge's.
func privateRedis(t testing.TB) string {
	t.Helper()
	redistest.NeedServer(t)
	srv, err := redistest.StartServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv.Addr
}

// commandCounter counts the commands of one Redis client, by name, while
// it is armed.
type commandCounter struct {
	armed  atomic.Bool
	mu     sync.Mutex
	counts map[string]int
}

func (c *commandCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *commandCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if c.armed.Load() {
			c.mu.Lock()
			c.counts[cmd.Name()]++
			c.mu.Unlock()
		}
		return next(ctx, cmd)
	}
}
func (c *commandCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if c.armed.Load() {
			c.mu.Lock()
			for _, cmd := range cmds {
				c.counts[cmd.Name()]++
			}
			c.mu.Unlock()
		}
		return next(ctx, cmds)
	}
}

func (c *commandCounter) count(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[name]
}

// mcpCall is one ask_user call over /mcp, sent as raw JSON-RPC so the test
// sees the HTTP status of each.
type mcpCall struct {
	status     int
	retryAfter string
	body       string
}

// openMCPCalls sends n ask_user calls (each with a progress token) to
// /mcp at once and returns each one's status once its response began. The
// calls that were taken stay open until ctx ends.
func openMCPCalls(t testing.TB, ctx context.Context, addr string, n int) []mcpCall {
	t.Helper()
	out := make(chan mcpCall, n)
	for i := range n {
		go func() {
			body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"ask_user","arguments":{"questions":[{"id":"pick","header":"Pick","question":"Which one, call %d?","options":[{"label":"A"},{"label":"B"}]}]},"_meta":{"progressToken":%d}}}`, i+1, i, i+1)
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/mcp", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				out <- mcpCall{status: -1, body: err.Error()}
				return
			}
			defer resp.Body.Close()
			c := mcpCall{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After")}
			if resp.StatusCode != http.StatusOK {
				b, _ := io.ReadAll(resp.Body)
				c.body = string(b)
				out <- c
				return
			}
			out <- c
			_, _ = io.Copy(io.Discard, resp.Body)
		}()
	}
	var calls []mcpCall
	for range n {
		select {
		case c := <-out:
			calls = append(calls, c)
		case <-time.After(60 * time.Second):
			t.Fatalf("only %d of %d calls to /mcp got a response", len(calls), n)
		}
	}
	return calls
}

// pendingOnPage counts the questions the page lists.
func pendingOnPage(t testing.TB, addr string) int {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/api/questions")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return strings.Count(string(body), `"header":"Pick"`)
}

// blockedOn counts the connections of a Redis server blocked in a command
// (CLIENT LIST: flags b, cmd).
func blockedOn(t testing.TB, rdb *redis.Client, cmd string) int {
	t.Helper()
	list, err := rdb.ClientList(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for line := range strings.Lines(list) {
		f := strings.Fields(line)
		if slices.Contains(f, "cmd="+cmd) && slices.ContainsFunc(f, func(s string) bool {
			flags, ok := strings.CutPrefix(s, "flags=")
			return ok && strings.Contains(flags, "b")
		}) {
			n++
		}
	}
	return n
}

// commandCalls is a command's calls so far, from INFO commandstats.
func commandCalls(t testing.TB, rdb *redis.Client, cmd string) int {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "cmdstat_"+cmd+":calls=")
		if !ok {
			continue
		}
		n, _ := strconv.Atoi(strings.Split(rest, ",")[0])
		return n
	}
	return 0
}

// TestMCPCallsLeaveTheEngineAlone: 100 ask_user calls open on /mcp at
// once, with ASKUSER_MCP_MAX_CALLS=40. The 60 beyond the cap get 503 with
// Retry-After and a body naming the setting; the 40 taken wait without a
// command on the engine's Redis client (no BLPOP, no XREAD: the engine's
// pool is the engine's); on the Redis server no connection is blocked in
// BLPOP and at most one in XREAD, the one follower of the events stream
// that tells all 40 calls their progress.
func TestMCPCallsLeaveTheEngineAlone(t *testing.T) {
	if testing.Short() {
		t.Skip("full tier: a hundred calls under load")
	}
	const maxCalls, calls = 40, 100
	b, redisAddr := inProcess(t, map[string]string{"ASKUSER_MCP_MAX_CALLS": strconv.Itoa(maxCalls)})
	server := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer server.Close()
	engine := &commandCounter{counts: map[string]int{}}
	b.rdb.AddHook(engine)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := openMCPCalls(t, ctx, b.Addr, calls)
	taken, refused := 0, 0
	for _, c := range got {
		switch {
		case c.status == http.StatusOK:
			taken++
		case c.status == http.StatusServiceUnavailable:
			refused++
			if c.retryAfter == "" || !strings.Contains(c.body, "ASKUSER_MCP_MAX_CALLS") {
				t.Errorf("a call beyond the cap: 503, Retry-After %q, body %q; want Retry-After and a body naming ASKUSER_MCP_MAX_CALLS", c.retryAfter, c.body)
			}
		default:
			t.Errorf("a call: %d %s", c.status, c.body)
		}
	}
	if taken != maxCalls || refused != calls-maxCalls {
		t.Errorf("%d calls taken, %d refused with 503; want %d and %d", taken, refused, maxCalls, calls-maxCalls)
	}
	testwait.For(t, 30*time.Second, fmt.Sprintf("the %d calls taken shown on the page", taken), func() bool {
		return pendingOnPage(t, b.Addr) == taken
	})

	// While they wait: several rounds of reading the events stream.
	engine.armed.Store(true)
	before := commandCalls(t, server, "xread")
	maxXread, maxBlpop := 0, 0
	testwait.For(t, 30*time.Second, "three reads of the events stream", func() bool {
		maxXread = max(maxXread, blockedOn(t, server, "xread"))
		maxBlpop = max(maxBlpop, blockedOn(t, server, "blpop"))
		return commandCalls(t, server, "xread") >= before+3
	})
	engine.armed.Store(false)
	if n, m := engine.count("blpop"), engine.count("xread"); n != 0 || m != 0 {
		st := b.rdb.PoolStats()
		t.Errorf("the engine's Redis client ran %d BLPOP and %d XREAD for the MCP calls (its pool: %d connections, %d idle, %d timeouts); want none", n, m, st.TotalConns, st.IdleConns, st.Timeouts)
	}
	if maxBlpop != 0 {
		t.Errorf("%d connections blocked in BLPOP while the calls wait; want none", maxBlpop)
	}
	if maxXread > 1 {
		t.Errorf("%d connections blocked in XREAD at once while %d calls wait; want one follower of the events stream", maxXread, taken)
	}
}

// TestMCPCommandCapsCalls: `bridge mcp` takes at most ASKUSER_MCP_MAX_CALLS
// calls at once; one more is a tool error at once, naming the setting, and
// nothing is asked for it.
func TestMCPCommandCapsCalls(t *testing.T) {
	b := startBridge(t, map[string]string{})
	cs, done := startMCP(t, map[string]string{"ASKUSER_EMBEDDED_REDIS_ADDR": b.redisAddr, "ASKUSER_MCP_MAX_CALLS": "2"}, &mcpProgress{})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { _, _ = cs.CallTool(ctx, &sdk.CallToolParams{Name: "ask_user", Arguments: mcpArgs()}) })
	}
	testwait.For(t, 15*time.Second, "two questions on the page", func() bool {
		_, body := b.get(t, "/api/questions")
		return strings.Count(body, `"header":"Target"`) == 2
	})
	third, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	res, err := cs.CallTool(third, &sdk.CallToolParams{Name: "ask_user", Arguments: mcpArgs()})
	switch {
	case err != nil:
		t.Errorf("a third call: %v; want a tool error at once", err)
	case !res.IsError || !strings.Contains(contentText(res), "ASKUSER_MCP_MAX_CALLS"):
		t.Errorf("a third call: error %v, %q; want a tool error naming ASKUSER_MCP_MAX_CALLS", res.IsError, contentText(res))
	}
	if _, body := b.get(t, "/api/questions"); strings.Count(body, `"header":"Target"`) != 2 {
		t.Errorf("the refused call asked: %s", body)
	}
	cancel()
	wg.Wait()
	if r := exited(t, cs, done); r.code != 0 {
		t.Errorf("exit %d: %s", r.code, r.stderr)
	}
}

// BenchmarkPingUnderOpenMCPCalls: the engine's Redis client answers PING
// while 100 ask_user calls wait on /mcp (a private redis-server, the
// client's default pool). It reports the latency's p50, p99 and worst in
// milliseconds: MCP calls wait on a client of their own, so the engine's
// commands do not queue behind them.
func BenchmarkPingUnderOpenMCPCalls(b *testing.B) {
	const calls = 100
	br, _ := inProcess(b, map[string]string{"ASKUSER_MCP_MAX_CALLS": strconv.Itoa(calls)})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, c := range openMCPCalls(b, ctx, br.Addr, calls) {
		if c.status != http.StatusOK {
			b.Fatalf("a call: %d %s", c.status, c.body)
		}
	}
	testwait.For(b, 60*time.Second, "the calls shown on the page", func() bool { return pendingOnPage(b, br.Addr) == calls })
	took := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if err := br.rdb.Ping(context.Background()).Err(); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(took)
	at := func(q float64) float64 {
		return float64(took[min(int(q*float64(len(took))), len(took)-1)]) / float64(time.Millisecond)
	}
	b.ReportMetric(at(0.5), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
	b.ReportMetric(at(1), "max-ms")
}
