package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/client"
	"github.com/askbridge/askbridge/internal/testwait"
)

// pageDo is a request to the bridge's main listener with a Host ("" for
// the address) and a token ("" for none).
func pageDo(t *testing.T, b *runningBridge, method, path, body, host, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, "http://"+b.httpAddr+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

// shownOnPage waits for the page to show a question and returns its id.
func shownOnPage(t *testing.T, b *runningBridge, token string) string {
	t.Helper()
	var id string
	if !testwait.Until(10*time.Second, func() bool {
		_, body := pageDo(t, b, http.MethodGet, "/api/questions", "", "", token)
		var list struct{ Questions []struct{ ID string } }
		if err := json.Unmarshal([]byte(body), &list); err != nil {
			t.Fatalf("GET /api/questions: %v: %s", err, body)
		}
		if len(list.Questions) > 0 {
			id = list.Questions[0].ID
		}
		return id != ""
	}) {
		t.Fatal("no question appeared on the page")
	}
	return id
}

// bearer adds a token to every request of an HTTP client, as an MCP
// client configured with the header does.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// mcpProgress collects progress notifications.
type mcpProgress struct {
	mu       sync.Mutex
	messages []string
}

func (p *mcpProgress) handle(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.messages = append(p.messages, req.Params.Message)
}

func (p *mcpProgress) list() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.messages...)
}

// mcpArgs is a sample ask_user call.
func mcpArgs() map[string]any {
	return map[string]any{"questions": []any{map[string]any{
		"id": "deploy_target", "header": "Target", "question": "Where should this deploy?",
		"options": []any{map[string]any{"label": "Staging (Recommended)"}, map[string]any{"label": "Production"}},
	}}}
}

func contentText(res *sdk.CallToolResult) string {
	var out []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			out = append(out, tc.Text)
		}
	}
	return strings.Join(out, "\n")
}

// questionOf reads question id from the bridge's Redis.
func questionOf(t *testing.T, redisAddr, id string) client.Question {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	q, found, err := client.New(rdb, client.Options{}).Status(context.Background(), id)
	if err != nil || !found {
		t.Fatalf("question %s: found %v, %v", id, found, err)
	}
	return q
}

// startMCP runs `askbridge mcp` in-process on pipes and connects the SDK's
// client to it, as a desktop client does to the subprocess it starts. It
// returns the session and the command's exit status and stderr, which
// come once the session is closed.
func startMCP(t *testing.T, env map[string]string, p *mcpProgress, args ...string) (*sdk.ClientSession, <-chan askRun) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan askRun, 1)
	go func() {
		var stderr syncBuffer
		code := run(append([]string{"mcp"}, args...), inR, outW, &stderr, envList(env))
		_ = outW.Close()
		done <- askRun{code: code, stderr: stderr.String()}
	}()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "claude-code", Version: "test"}, &sdk.ClientOptions{ProgressNotificationHandler: p.handle}).
		Connect(context.Background(), &sdk.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		_ = inR.Close()
		_ = outR.Close()
	})
	return cs, done
}

// exited waits for `askbridge mcp` to return once its client closed stdin.
func exited(t *testing.T, cs *sdk.ClientSession, done <-chan askRun) askRun {
	t.Helper()
	_ = cs.Close()
	select {
	case r := <-done:
		return r
	case <-time.After(20 * time.Second):
		t.Fatal("askbridge mcp did not exit after its client closed stdin")
	}
	return askRun{}
}

// TestMCPCommandStdio is `askbridge mcp` as Claude Code runs it: a
// subprocess speaking MCP on stdin and stdout, asking through the Redis of
// a bridge on this machine (its embedded one, found without
// ASKUSER_REDIS_URL). The tool is listed; a call with a progress token
// gets progress while it waits, is answered on the web page, and returns
// the result with its summary, asked under --agent; closing stdin ends the
// command with status 0; the log is on stderr.
func TestMCPCommandStdio(t *testing.T) {
	b := startBridge(t, map[string]string{})
	p := &mcpProgress{}
	cs, done := startMCP(t, map[string]string{"ASKUSER_EMBEDDED_REDIS_ADDR": b.redisAddr}, p, "--progress", "200ms", "--agent", "deploy-bot")
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(tools.Tools) != 2 || tools.Tools[0].Name != "ask_user" || tools.Tools[1].Name != "wait_for_answer" {
		t.Fatalf("tools: %v %+v", err, tools)
	}
	call := make(chan *sdk.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "ask_user", Arguments: mcpArgs(), Meta: sdk.Meta{"progressToken": 7}})
		if err != nil {
			t.Error(err)
		}
		call <- res
	}()
	id := shownOnPage(t, b, "")
	testwait.Until(10*time.Second, func() bool { return strings.Contains(strings.Join(p.list(), "\n"), "Shown on the web page") })
	answerOnPage(t, b, id, `{"answers":{"deploy_target":["Production"]}}`)
	var res *sdk.CallToolResult
	select {
	case res = <-call:
	case <-time.After(20 * time.Second):
		t.Fatal("the call did not return")
	}
	if res == nil || res.IsError || !strings.HasPrefix(contentText(res), "answered: deploy_target = Production\n") {
		t.Fatalf("result %v", res)
	}
	var sc askbridge.Result
	b2, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b2, &sc); err != nil || sc.ID != id || sc.Status != askbridge.StatusAnswered {
		t.Errorf("structured content %s", b2)
	}
	if got := p.list(); !strings.Contains(strings.Join(got, "\n"), "Shown on the web page; waiting for the answer — ") {
		t.Errorf("progress %q", got)
	}
	if q := questionOf(t, b.redisAddr, id); q.Request.Agent != "deploy-bot" {
		t.Errorf("asked as %q; want --agent", q.Request.Agent)
	}
	r := exited(t, cs, done)
	if r.code != 0 || !strings.Contains(r.stderr, `"msg":"ask_user: ended"`) {
		t.Errorf("exit %d, stderr %s", r.code, r.stderr)
	}
}

// TestMCPCommandWithoutRedis: `askbridge mcp` with no Redis to reach starts
// anyway and says on stderr how to point it at one; a call is a tool
// error at once with the same advice, never a hang. Without
// ASKUSER_REDIS_URL the advice names the embedded Redis of a local bridge;
// with it, the variable to check.
func TestMCPCommandWithoutRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("full tier: waits out the connection attempts to a Redis nobody runs")
	}
	dead := freeAddr(t)
	cases := []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"embedded default", map[string]string{"ASKUSER_EMBEDDED_REDIS_ADDR": dead},
			[]string{"cannot reach Redis at redis://" + dead, "ASKUSER_REDIS_URL is not set", "redis://127.0.0.1:6380", "start one with `askbridge`"}},
		{"ASKUSER_REDIS_URL", map[string]string{"ASKUSER_REDIS_URL": "redis://:hunter2hunter2@" + dead, "ASKUSER_REDIS_PREFIX": "team:"},
			[]string{"cannot reach the bridge's Redis at redis://:xxxxx@" + dead + ", prefix team:", "Check ASKUSER_REDIS_URL"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cs, done := startMCP(t, tc.env, &mcpProgress{})
			start := time.Now()
			res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "ask_user", Arguments: mcpArgs()})
			if err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("the error took %s", d)
			}
			for _, want := range tc.want {
				if !res.IsError || !strings.Contains(contentText(res), want) {
					t.Errorf("result %v %q; want a tool error with %q", res.IsError, contentText(res), want)
				}
			}
			r := exited(t, cs, done)
			if r.code != 0 || !strings.Contains(r.stderr, "ask_user fails until Redis answers") || !strings.Contains(r.stderr, tc.want[0]) {
				t.Errorf("exit %d, stderr %s", r.code, r.stderr)
			}
			if strings.Contains(r.stderr+contentText(res), "hunter2") {
				t.Error("the Redis password was shown")
			}
		})
	}
}

// TestMCPOverHTTPBehindTheToken: on a bridge with a token, /mcp refuses a
// request without it or with a wrong one (401); an MCP client sending it
// as a Bearer header lists the tool, gets a call answered on the page,
// and cancels another by cancelling its call (the question ends
// cancelled).
func TestMCPOverHTTPBehindTheToken(t *testing.T) {
	const token = "mcp-test-token-0123456789"
	_, port, _ := net.SplitHostPort(freeAddr(t))
	b := startBridge(t, map[string]string{"ASKUSER_HTTP_ADDR": "0.0.0.0:" + port, "ASKUSER_HTTP_TOKEN": token})
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	for _, auth := range []string{"", "wrong-token-wrong-token"} {
		if code, body := pageDo(t, b, http.MethodPost, "/mcp", initialize, "", auth); code != http.StatusUnauthorized || strings.Contains(body, "askbridge") && strings.Contains(body, "protocolVersion") {
			t.Errorf("/mcp with token %q = %d %s; want 401", auth, code, body)
		}
	}
	if code, body := pageDo(t, b, http.MethodPost, "/mcp", initialize, "", token); code != http.StatusOK || !strings.Contains(body, `"protocolVersion"`) {
		t.Errorf("/mcp with the token = %d %s", code, body)
	}

	p := &mcpProgress{}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "cursor", Version: "test"}, &sdk.ClientOptions{ProgressNotificationHandler: p.handle}).
		Connect(context.Background(), &sdk.StreamableClientTransport{
			Endpoint: "http://" + b.httpAddr + "/mcp", HTTPClient: &http.Client{Transport: bearer{token}},
		}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if tools, err := cs.ListTools(context.Background(), nil); err != nil || len(tools.Tools) != 2 {
		t.Fatalf("tools: %v %+v", err, tools)
	}

	type outcome struct {
		res *sdk.CallToolResult
		err error
	}
	answered := make(chan outcome, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "ask_user", Arguments: mcpArgs(), Meta: sdk.Meta{"progressToken": "p"}})
		answered <- outcome{res, err}
	}()
	id := shownOnPage(t, b, token)
	if code, body := pageDo(t, b, http.MethodPost, "/api/questions/"+id+"/answer", `{"answers":{"deploy_target":["Staging (Recommended)"]}}`, "", token); code != http.StatusOK {
		t.Fatalf("answer: %d %s", code, body)
	}
	select {
	case o := <-answered:
		if o.err != nil || o.res.IsError || !strings.HasPrefix(contentText(o.res), "answered: deploy_target = Staging (Recommended)") {
			t.Fatalf("call: %v %v", o.err, o.res)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the call did not return")
	}
	if len(p.list()) == 0 {
		t.Error("no progress notification over HTTP")
	}
	if q := questionOf(t, b.redisAddr, id); q.Request.Agent != "cursor" {
		t.Errorf("asked as %q; want the client's name", q.Request.Agent)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancelled := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "ask_user", Arguments: mcpArgs()})
		cancelled <- err
	}()
	id = shownOnPage(t, b, token)
	cancel()
	if err := <-cancelled; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call: %v", err)
	}
	var q client.Question
	testwait.For(t, 15*time.Second, "the question of the cancelled call to end", func() bool {
		q = questionOf(t, b.redisAddr, id)
		return q.Status != askbridge.StatusPending
	})
	if q.Result == nil || q.Result.Reason != askbridge.ReasonCancelled {
		t.Errorf("question ended %s %+v; want cancelled", q.Status, q.Result)
	}
}

// TestMCPOverHTTPLoopbackHostsOnly: without a token, /mcp follows the
// page's rule: it answers only to loopback host names (421 otherwise: DNS
// rebinding), and refuses what a browser sends from another site.
func TestMCPOverHTTPLoopbackHostsOnly(t *testing.T) {
	b := startBridge(t, map[string]string{})
	_, port, _ := net.SplitHostPort(b.httpAddr)
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	if code, _ := pageDo(t, b, http.MethodPost, "/mcp", initialize, "rebind.example:"+port, ""); code != http.StatusMisdirectedRequest {
		t.Errorf("/mcp under another name = %d; want 421", code)
	}
	if code, body := pageDo(t, b, http.MethodPost, "/mcp", initialize, "localhost:"+port, ""); code != http.StatusOK || !strings.Contains(body, `"protocolVersion"`) {
		t.Errorf("/mcp as localhost = %d %s", code, body)
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+b.httpAddr+"/mcp", strings.NewReader(initialize))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	req.Header.Set("Origin", "https://evil.example")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("/mcp from a browser on another site = %d; want 403", resp.StatusCode)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "c", Version: "1"}, nil).
		Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: "http://" + b.httpAddr + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if tools, err := cs.ListTools(context.Background(), nil); err != nil || len(tools.Tools) != 2 {
		t.Errorf("tools on loopback without a token: %v %+v", err, tools)
	}
}

// TestMCPCommandSettings: a bad wait budget or relay setting stops
// `askbridge mcp` at once, naming the flag or variable, before anything
// is served.
func TestMCPCommandSettings(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--max-wait", "500ms"}, nil, "--max-wait: 500ms is out of range: from 1s to 1h0m0s"},
		{nil, map[string]string{"ASKUSER_MCP_MAX_WAIT": "2h"}, "ASKUSER_MCP_MAX_WAIT: 2h0m0s is out of range"},
		{nil, map[string]string{"ASKUSER_MCP_ELICIT": "maybe"}, `ASKUSER_MCP_ELICIT: "maybe" is not on or off`},
	} {
		var out, errOut strings.Builder
		code := serveMCP(context.Background(), tc.args, strings.NewReader(""), &out, &errOut, mapEnv(tc.env))
		if code != 2 || !strings.Contains(errOut.String(), tc.want) || out.Len() != 0 {
			t.Errorf("%v %v: exit %d, stderr %q, stdout %q; want 2 and %q", tc.args, tc.env, code, errOut.String(), out.String(), tc.want)
		}
	}
}
