package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/internal/redistest"
	"github.com/askbridge/askbridge/internal/testwait"
)

// getWith is a GET to the bridge's main listener with a Host and an
// Authorization header ("" for none).
func (b *runningBridge) getWith(t *testing.T, path, host, auth string) (*http.Response, string) {
	t.Helper()
	return getAt(t, b.httpAddr, path, host, auth)
}

func getAt(t *testing.T, addr, path, host, auth string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

// openStream opens the page's event stream and returns its lines; the
// stream closes when the test ends.
func openStream(t *testing.T, addr string) (*http.Response, <-chan string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/api/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	lines := make(chan string, 100)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	t.Cleanup(func() { cancel(); resp.Body.Close(); <-done })
	return resp, lines
}

// waitLine waits for a line of the stream holding want.
func waitLine(t *testing.T, lines <-chan string, want string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the event stream ended before %q", want)
			}
			if strings.Contains(l, want) {
				return
			}
		case <-timeout:
			t.Fatalf("no %q on the event stream", want)
		}
	}
}

// slowBody sends a request's header and the start of a body it never
// finishes, and returns the connection.
func slowBody(t *testing.T, addr, path string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second)) // only so a failure cannot hang the run
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"skip\"", path)
	return conn
}

// TestSlowBodyIsCutOff: the server bounds reading a request, body
// included, so a client that sends slowly does not hold a goroutine; the
// page's event stream, opened before, outlives the server's timeouts.
func TestSlowBodyIsCutOff(t *testing.T) {
	lim := defaultLimits()
	lim.read, lim.write = 300*time.Millisecond, 300*time.Millisecond
	b := startBridgeWith(t, map[string]string{}, lim)
	resp, lines := openStream(t, b.httpAddr)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("events = %d", resp.StatusCode)
	}
	waitLine(t, lines, ": connected")

	conn := slowBody(t, b.httpAddr, "/api/questions/slow-1/answer")
	if _, err := io.ReadAll(conn); err != nil {
		t.Fatalf("the slow body was not cut off: %v", err)
	}

	env := map[string]string{"ASKUSER_EMBEDDED_REDIS_ADDR": b.redisAddr}
	res := askAsync(context.Background(), env, "--question", "Still streaming?", "--option", "Yes", "--option", "No", "--id", "stream-1")
	waitLine(t, lines, `"id":"stream-1"`)
	answerOnPage(t, b, "stream-1", `{"answers":{"answer":["Yes"]}}`)
	if r := <-res; r.code != exitAnswered {
		t.Fatalf("ask: exit %d %s", r.code, r.stderr)
	}
}

// TestEventStreamsCapped: ASKUSER_MAX_EVENT_STREAMS bounds the page's open
// event streams; one more gets 503 with Retry-After.
func TestEventStreamsCapped(t *testing.T) {
	b := startBridge(t, map[string]string{"ASKUSER_MAX_EVENT_STREAMS": "1"})
	first, lines := openStream(t, b.httpAddr)
	if first.StatusCode != http.StatusOK {
		t.Fatalf("first stream = %d", first.StatusCode)
	}
	waitLine(t, lines, ": connected")
	second, _ := openStream(t, b.httpAddr)
	if second.StatusCode != http.StatusServiceUnavailable || second.Header.Get("Retry-After") == "" {
		t.Fatalf("second stream = %d, Retry-After %q; want 503 with Retry-After", second.StatusCode, second.Header.Get("Retry-After"))
	}
}

// TestWebhooksCapped: platform webhook calls are handled a bounded number
// at a time; one more gets 503 with Retry-After (the platform delivers it
// again), and the page is not held up by them.
func TestWebhooksCapped(t *testing.T) {
	lim := defaultLimits()
	lim.webhooks = 1
	b := startBridgeWith(t, map[string]string{
		"ASKUSER_SLACK_BOT_TOKEN":      "xoxb-test",
		"ASKUSER_SLACK_SIGNING_SECRET": "8f742231b10e8888abcd99yyyzzz85a5",
		"ASKUSER_SLACK_API_URL":        "http://" + freeAddr(t) + "/api/",
	}, lim)
	post := func() *http.Response {
		resp, err := http.Post("http://"+b.httpAddr+"/slack/events", "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	if resp := post(); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("an unsigned call with the slot free = %d; want 401", resp.StatusCode)
	}
	// A call whose body never ends holds the one slot.
	hold := slowBody(t, b.httpAddr, "/slack/events")
	// Generous: on a loaded machine the held call can take a while to
	// reach its handler (the connection's own deadline is 30 s).
	var status int
	if !testwait.Until(25*time.Second, func() bool {
		resp := post()
		if status = resp.StatusCode; status != http.StatusServiceUnavailable {
			return false
		}
		if resp.Header.Get("Retry-After") == "" {
			t.Errorf("503 without Retry-After")
		}
		return true
	}) {
		t.Fatalf("a second webhook call while one is in hand = %d; want 503", status)
	}
	if code, _ := b.get(t, "/api/questions"); code != http.StatusOK {
		t.Errorf("the page while the webhooks are full = %d", code)
	}
	hold.Close()
	testwait.For(t, 25*time.Second, "the slot given back", func() bool { return post().StatusCode == http.StatusUnauthorized })
}

// TestOpsBehindTheToken: on a listener beyond loopback (with its token) and
// without ASKUSER_METRICS_ADDR, /metrics and /readyz need the token;
// /healthz, which says only "ok", does not.
func TestOpsBehindTheToken(t *testing.T) {
	const token = "ops-test-token-0123456789"
	_, port, _ := net.SplitHostPort(freeAddr(t))
	b := startBridge(t, map[string]string{"ASKUSER_HTTP_ADDR": "0.0.0.0:" + port, "ASKUSER_HTTP_TOKEN": token})
	for _, path := range []string{"/metrics", "/readyz"} {
		if resp, body := b.getWith(t, path, "", ""); resp.StatusCode != http.StatusUnauthorized || strings.Contains(body, "askbridge_") || strings.Contains(body, "redis") {
			t.Errorf("%s without the token = %d %q; want 401", path, resp.StatusCode, body)
		}
		if resp, _ := b.getWith(t, path, "", "Bearer wrong-token-wrong-token"); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s with a wrong token = %d; want 401", path, resp.StatusCode)
		}
		if resp, _ := b.getWith(t, path, "", "Bearer "+token); resp.StatusCode != http.StatusOK {
			t.Errorf("%s with the token = %d", path, resp.StatusCode)
		}
	}
	if resp, body := b.getWith(t, "/metrics", "", "Bearer "+token); !strings.Contains(body, "askbridge_questions_pending 0") {
		t.Errorf("/metrics with the token = %d, no pending gauge", resp.StatusCode)
	}
	if resp, body := b.getWith(t, "/healthz", "", ""); resp.StatusCode != http.StatusOK || strings.TrimSpace(body) != "ok" {
		t.Errorf("/healthz = %d %q", resp.StatusCode, body)
	}
}

// TestOpsWithoutTokenLoopbackHostsOnly: without a token, /metrics and
// /readyz answer only to loopback host names, as the page does (DNS
// rebinding).
func TestOpsWithoutTokenLoopbackHostsOnly(t *testing.T) {
	b := startBridge(t, map[string]string{})
	_, port, _ := net.SplitHostPort(b.httpAddr)
	for _, path := range []string{"/metrics", "/readyz", "/api/questions", "/"} {
		if resp, _ := b.getWith(t, path, "rebind.example:"+port, ""); resp.StatusCode != http.StatusMisdirectedRequest {
			t.Errorf("%s under another name = %d; want 421", path, resp.StatusCode)
		}
		if resp, _ := b.getWith(t, path, "localhost:"+port, ""); resp.StatusCode != http.StatusOK {
			t.Errorf("%s as localhost = %d", path, resp.StatusCode)
		}
	}
}

// TestProxiedWithoutTokenRefused: without a token, a reverse proxy on the
// machine forwarding to 127.0.0.1 (nginx's default proxy_pass, Apache's
// ProxyPreserveHost Off) sends a loopback Host for a remote client; its
// requests carry X-Forwarded-For, X-Real-IP, Forwarded or Via, and are
// refused with 403 naming ASKUSER_HTTP_TOKEN on every route of the page's
// listener: the page, the API, /mcp, /metrics and /readyz. /healthz,
// which says only "ok", still answers. Without those headers, loopback
// requests are served as before.
func TestProxiedWithoutTokenRefused(t *testing.T) {
	b := startBridge(t, map[string]string{})
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	routes := []struct{ method, path, body string }{
		{http.MethodGet, "/", ""},
		{http.MethodGet, "/api/questions", ""},
		{http.MethodGet, "/api/events", ""},
		{http.MethodPost, "/mcp", initialize},
		{http.MethodGet, "/metrics", ""},
		{http.MethodGet, "/readyz", ""},
	}
	do := func(method, path, body, header, value string) (int, string) {
		req, err := http.NewRequestWithContext(t.Context(), method, "http://"+b.httpAddr+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = "127.0.0.1"
		if header != "" {
			req.Header.Set(header, value)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		resp, err := http.DefaultClient.Do(req.WithContext(ctx))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.Header.Get("Content-Type") == "text/event-stream" {
			return resp.StatusCode, ""
		}
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out)
	}
	for _, h := range [][2]string{{"X-Forwarded-For", "203.0.113.7"}, {"X-Real-IP", "203.0.113.7"}, {"Forwarded", "for=203.0.113.7"}, {"Via", "1.1 nginx"}} {
		for _, rt := range routes {
			if code, body := do(rt.method, rt.path, rt.body, h[0], h[1]); code != http.StatusForbidden || !strings.Contains(body, "ASKUSER_HTTP_TOKEN") {
				t.Errorf("%s %s with %s = %d %.200s; want 403 naming ASKUSER_HTTP_TOKEN", rt.method, rt.path, h[0], code, body)
			}
		}
		if code, _ := do(http.MethodGet, "/healthz", "", h[0], h[1]); code != http.StatusOK {
			t.Errorf("/healthz with %s = %d; want 200", h[0], code)
		}
	}
	for _, rt := range routes {
		if code, body := do(rt.method, rt.path, rt.body, "", ""); code != http.StatusOK {
			t.Errorf("%s %s without a proxy's headers = %d %.200s; want 200", rt.method, rt.path, code, body)
		}
	}
}

// TestMetricsListener: with ASKUSER_METRICS_ADDR, /metrics, /readyz and
// /healthz are served there, and /metrics and /readyz no longer on the
// page's listener.
func TestMetricsListener(t *testing.T) {
	ops := freeAddr(t)
	b := startBridge(t, map[string]string{"ASKUSER_METRICS_ADDR": ops})
	for _, path := range []string{"/metrics", "/readyz", "/healthz"} {
		if resp, _ := getAt(t, ops, path, "", ""); resp.StatusCode != http.StatusOK {
			t.Errorf("%s on the metrics listener = %d", path, resp.StatusCode)
		}
	}
	if _, body := getAt(t, ops, "/metrics", "", ""); !strings.Contains(body, "askbridge_questions_pending") {
		t.Errorf("/metrics lacks the pending gauge")
	}
	for _, path := range []string{"/metrics", "/readyz"} {
		if resp, body := b.getWith(t, path, "", ""); resp.StatusCode == http.StatusOK && (strings.Contains(body, "askbridge_") || strings.Contains(body, `"redis"`)) {
			t.Errorf("%s is still on the page's listener", path)
		}
	}
	if code, _ := b.get(t, "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz on the page's listener = %d", code)
	}
}

// TestReadyzRedacted: with Redis gone, /readyz says so in a word, without
// Redis's error text or any address; the log has the details.
func TestReadyzRedacted(t *testing.T) {
	redistest.NeedServer(t) // fails where Redis is required, as in CI
	srv, err := redistest.StartServer()
	if err != nil {
		t.Fatalf("redis-server: %v", err)
	}
	t.Cleanup(srv.Close)
	b := startBridge(t, map[string]string{"ASKUSER_REDIS_URL": "redis://" + srv.Addr, "ASKUSER_STOP_GRACE": "1s"})
	_, redisPort, _ := net.SplitHostPort(srv.Addr)
	srv.Close()
	code, body := b.get(t, "/readyz")
	var ready map[string]any
	if err := json.Unmarshal([]byte(body), &ready); err != nil || code != http.StatusServiceUnavailable || ready["redis"] != "unreachable" || ready["ready"] != false {
		t.Fatalf("/readyz with Redis gone = %d %s", code, body)
	}
	for _, leak := range []string{redisPort, "127.0.0.1", "dial", "refused", "tcp"} {
		if strings.Contains(body, leak) {
			t.Errorf("/readyz shows %q: %s", leak, body)
		}
	}
	if _, ok := ready["embeddedRedis"]; ok {
		t.Errorf("/readyz names an embedded Redis on a shared one: %s", body)
	}
	if logs := b.stderr.String(); !strings.Contains(logs, `"msg":"redis unreachable"`) || !strings.Contains(logs, redisPort) {
		t.Errorf("the log lacks the details of the Redis error:\n%s", grepLines(logs, "unreachable"))
	}
}

// TestEmbeddedRedisSaysWhatItIs: a bridge without ASKUSER_REDIS_URL says
// which embedded Redis runs, on stdout, in the log and on /readyz, and the
// in-memory one what it loses; the redis-server one keeps its append-only
// file in ASKUSER_DATA_DIR.
func TestEmbeddedRedisSaysWhatItIs(t *testing.T) {
	t.Run("redis-server", func(t *testing.T) {
		redistest.NeedServer(t)
		dir := filepath.Join(t.TempDir(), "data")
		b := startBridge(t, map[string]string{"ASKUSER_DATA_DIR": dir})
		if out := b.stdout.String(); !strings.Contains(out, "redis-server, keeping its data in "+dir) {
			t.Errorf("stdout does not say a redis-server runs in %s:\n%s", dir, out)
		}
		_, body := b.get(t, "/readyz")
		var ready map[string]any
		if err := json.Unmarshal([]byte(body), &ready); err != nil || ready["embeddedRedis"] != "redis-server" || ready["warning"] != nil {
			t.Errorf("/readyz = %s; want embeddedRedis redis-server, no warning", body)
		}
		if !strings.Contains(b.stderr.String(), `"embeddedRedis":"redis-server"`) {
			t.Errorf("the log does not say a redis-server runs")
		}
		// Redis 7 keeps its append-only files in a directory, older ones in
		// one file.
		_, err7 := os.Stat(filepath.Join(dir, "appendonlydir"))
		_, err6 := os.Stat(filepath.Join(dir, "appendonly.aof"))
		if err7 != nil && err6 != nil {
			t.Errorf("no append-only file in the data directory: %v", err7)
		}
	})
	t.Run("in-memory", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir()) // no redis-server
		b := startBridge(t, map[string]string{})
		if out := b.stdout.String(); !strings.Contains(out, "in memory") {
			t.Errorf("stdout does not say the Redis is in memory:\n%s", out)
		}
		_, body := b.get(t, "/readyz")
		var ready map[string]any
		if err := json.Unmarshal([]byte(body), &ready); err != nil || ready["embeddedRedis"] != "in-memory" {
			t.Fatalf("/readyz = %s; want embeddedRedis in-memory", body)
		}
		if w, _ := ready["warning"].(string); !strings.Contains(w, "vanish") || !strings.Contains(w, "BLPOP 0") {
			t.Errorf("/readyz warning = %q; want it to say what is lost", w)
		}
		warn := grepLines(b.stderr.String(), `"level":"WARN"`)
		if !strings.Contains(warn, "vanish when the bridge restarts") || !strings.Contains(warn, "BLPOP 0") || !strings.Contains(warn, `"embeddedRedis":"in-memory"`) {
			t.Errorf("no WARN at start saying what is lost:\n%s", b.stderr.String())
		}
	})
}
