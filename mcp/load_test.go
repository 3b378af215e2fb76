package mcp_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge/client"
	"github.com/askbridge/askbridge/internal/testwait"
	"github.com/askbridge/askbridge/mcp"
)

// inFlight counts the commands of one Redis client by name: how many ran,
// and the most running at once.
type inFlight struct {
	mu      sync.Mutex
	now     map[string]int
	most    map[string]int
	started map[string]int
}

func newInFlight() *inFlight {
	return &inFlight{now: map[string]int{}, most: map[string]int{}, started: map[string]int{}}
}

func (f *inFlight) DialHook(next redis.DialHook) redis.DialHook { return next }
func (f *inFlight) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		name := cmd.Name()
		f.mu.Lock()
		f.started[name]++
		f.now[name]++
		f.most[name] = max(f.most[name], f.now[name])
		f.mu.Unlock()
		defer func() {
			f.mu.Lock()
			f.now[name]--
			f.mu.Unlock()
		}()
		return next(ctx, cmd)
	}
}
func (f *inFlight) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// counts returns how many name ran, and the most at once.
func (f *inFlight) counts(name string) (started, most int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.started[name], f.most[name]
}

// hookedServer is newServer with a Redis client of its own, counted by
// the returned hook.
func hookedServer(t *testing.T, prefix string, o mcp.Options) (*mcp.Server, *inFlight) {
	t.Helper()
	r := rdb(t)
	hook := newInFlight()
	r.AddHook(hook)
	c := client.New(r, client.Options{Prefix: prefix, PollTimeout: time.Second})
	o.Client = func(context.Context) (*client.Client, error) { return c, nil }
	o.Redis = redisAddr + ", prefix " + prefix
	srv, err := mcp.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv, hook
}

// TestOneFollowerForAllCalls: 100 calls wait at once, each with a progress
// token. The server reads the events stream with one XREAD at a time for
// all of them and blocks in no BLPOP (a waiting call holds no
// connection); every call gets progress saying its question is shown, and
// each returns its own answer once answered on the page.
func TestOneFollowerForAllCalls(t *testing.T) {
	const calls = 100
	prefix := testPrefix()
	br := startBridge(t, prefix)
	srv, hook := hookedServer(t, prefix, mcp.Options{MaxCalls: calls, ProgressEvery: time.Hour})
	// Before the session's cleanup, which waits for the calls.
	defer srv.Close()
	p := newProgress()
	cs := inMemory(t, srv, p)
	results := make([]<-chan callResult, calls)
	for i := range calls {
		results[i] = callAsync(context.Background(), cs, &sdk.CallToolParams{
			Name: "ask_user", Arguments: deployArgs(), Meta: sdk.Meta{"progressToken": i},
		})
	}
	var ids []string
	testwait.For(t, 30*time.Second, fmt.Sprintf("%d questions on the page", calls), func() bool {
		ids = br.open(t)
		return len(ids) == calls
	})
	// Each call hears of its question's delivery from the one follower.
	testwait.For(t, 30*time.Second, "every call told its question is shown", func() bool {
		shown := map[any]bool{}
		for _, n := range p.list() {
			if strings.HasPrefix(n.Message, "Shown on the web page") {
				shown[n.ProgressToken] = true
			}
		}
		return len(shown) == calls
	})
	for _, id := range ids {
		br.answer(t, id, `{"answers":{"deploy_target":["Production"]}}`)
	}
	for i, ch := range results {
		r := await(t, ch, 30*time.Second)
		if r.err != nil || r.res.IsError || text(r.res)[0] != "answered: deploy_target = Production" {
			t.Fatalf("call %d: %v %v", i, r.err, r.res)
		}
	}
	if n, most := hook.counts("xread"); most != 1 {
		t.Errorf("%d XREADs, at most %d at once, for %d calls; want one at a time", n, most, calls)
	}
	if n, _ := hook.counts("blpop"); n != 0 {
		t.Errorf("%d BLPOPs; want none: a waiting call holds no connection", n)
	}
}

// TestCallsBeyondTheCap: with MaxCalls waiting, one more call is refused
// at once and asks nothing: a tool error naming ASKUSER_MCP_MAX_CALLS
// in-process (stdio), a 503 with Retry-After over HTTP. Once a call ends,
// its slot takes the next call.
func TestCallsBeyondTheCap(t *testing.T) {
	prefix := testPrefix()
	br := startBridge(t, prefix)
	srv := newServer(t, prefix, mcp.Options{MaxCalls: 2})
	// Before the session's cleanup, which waits for the calls.
	defer srv.Close()
	cs := inMemory(t, srv, newProgress())
	first := callAsync(context.Background(), cs, &sdk.CallToolParams{Name: "ask_user", Arguments: deployArgs()})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	second := callAsync(ctx, cs, &sdk.CallToolParams{Name: "ask_user", Arguments: deployArgs()})
	testwait.For(t, 15*time.Second, "two questions on the page", func() bool { return len(br.open(t)) == 2 })

	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "ask_user", Arguments: deployArgs()})
	if err != nil || !res.IsError || !strings.Contains(text(res)[0], "ASKUSER_MCP_MAX_CALLS") {
		t.Errorf("a third call in-process: %v %v; want a tool error naming ASKUSER_MCP_MAX_CALLS", err, res)
	}

	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask_user","arguments":{"questions":[{"id":"pick","header":"Pick","question":"Which?","options":[{"label":"A"},{"label":"B"}]}]}}}`
	for _, body := range []string{call, "[" + call + "]"} {
		req, _ := http.NewRequest(http.MethodPost, hs.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(out), "ASKUSER_MCP_MAX_CALLS") {
			t.Errorf("a third call over HTTP (%.1s…) = %d, Retry-After %q, %q; want 503 with Retry-After naming ASKUSER_MCP_MAX_CALLS", body, resp.StatusCode, resp.Header.Get("Retry-After"), out)
		}
	}
	// Listing the tools is no call: it is served at the cap.
	list, err := http.NewRequest(http.MethodPost, hs.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	list.Header.Set("Content-Type", "application/json")
	list.Header.Set("Accept", "application/json, text/event-stream")
	if resp, err := http.DefaultClient.Do(list); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("tools/list at the cap: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	if n := len(br.open(t)); n != 2 {
		t.Errorf("%d questions on the page; the refused calls asked", n)
	}

	// The cancelled call gives its slot back once its question has ended
	// (its client returns at once); a call until then is refused.
	cancel()
	await(t, second, 15*time.Second)
	var third <-chan callResult
	testwait.For(t, 15*time.Second, "a new call taking the freed slot", func() bool {
		if third == nil {
			third = callAsync(context.Background(), cs, &sdk.CallToolParams{Name: "ask_user", Arguments: deployArgs()})
		}
		select {
		case r := <-third:
			if r.err != nil || !r.res.IsError || !strings.Contains(text(r.res)[0], "ASKUSER_MCP_MAX_CALLS") {
				t.Errorf("a call while the cancelled one ends: %v %v", r.err, r.res)
			}
			third = nil
			return false
		default:
		}
		return len(br.open(t)) == 2
	})
	srv.Close()
	await(t, first, 15*time.Second)
	await(t, third, 15*time.Second)
}
