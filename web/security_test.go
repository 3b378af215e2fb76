package web_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/internal/testwait"
	"github.com/askbridge/askbridge/internal/webtest"
	"github.com/askbridge/askbridge/web"
)

// Without a token the page answers only to loopback host names, so a page
// of another site whose name resolves to 127.0.0.1 (DNS rebinding) reaches
// the port but neither lists nor answers anything.
func TestWithoutTokenOnlyLoopbackHosts(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{})
	id := b.Ask(t, webtest.OneQuestion("rebind-1"))
	b.WaitOpen(t, id)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(b.Server.URL, "http://"))
	answer := "/api/questions/" + id + "/answer"
	tests := []struct {
		name, method, path string
		hdr                map[string]string
		want               int
	}{
		{"list under another name", http.MethodGet, "/api/questions", map[string]string{"Host": "rebind.example:" + port}, http.StatusMisdirectedRequest},
		{"the page under another name", http.MethodGet, "/", map[string]string{"Host": "rebind.example:" + port}, http.StatusMisdirectedRequest},
		{"history under another name", http.MethodGet, "/api/history", map[string]string{"Host": "rebind.example:" + port}, http.StatusMisdirectedRequest},
		{"answer from a same-origin page under another name", http.MethodPost, answer,
			map[string]string{"Host": "rebind.example:" + port, "Origin": "http://rebind.example:" + port, "Sec-Fetch-Site": "same-origin"}, http.StatusMisdirectedRequest},
		{"a name starting with localhost", http.MethodGet, "/api/questions", map[string]string{"Host": "localhost.rebind.example:" + port}, http.StatusMisdirectedRequest},
		{"a name starting with 127.0.0.1", http.MethodGet, "/api/questions", map[string]string{"Host": "127.0.0.1.nip.io:" + port}, http.StatusMisdirectedRequest},
		{"a LAN address", http.MethodGet, "/api/questions", map[string]string{"Host": "192.168.1.10:" + port}, http.StatusMisdirectedRequest},
		{"list as localhost", http.MethodGet, "/api/questions", map[string]string{"Host": "localhost:" + port}, http.StatusOK},
		{"list as LOCALHOST without a port", http.MethodGet, "/api/questions", map[string]string{"Host": "LOCALHOST"}, http.StatusOK},
		{"list as 127.0.0.2", http.MethodGet, "/api/questions", map[string]string{"Host": "127.0.0.2:" + port}, http.StatusOK},
		{"list as [::1]", http.MethodGet, "/api/questions", map[string]string{"Host": "[::1]:" + port}, http.StatusOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var body any
			if tc.method == http.MethodPost {
				body = map[string]any{"skip": true}
			}
			res, data := b.Request(t, tc.method, tc.path, body, tc.hdr)
			if res.StatusCode != tc.want {
				t.Fatalf("= %d %s; want %d", res.StatusCode, data, tc.want)
			}
			if tc.want == http.StatusMisdirectedRequest && !strings.Contains(string(data), "ASKUSER_HTTP_TOKEN") {
				t.Errorf("the refusal does not say what to do: %s", data)
			}
		})
	}
	if _, res := b.OpenEvents(t, "", map[string]string{"Host": "rebind.example:" + port}); res.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("events under another name = %d; want 421", res.StatusCode)
	}
	if l := b.Open(t); len(l.Questions) != 1 {
		t.Fatalf("the question ended: %+v", l.Questions)
	}
}

// proxyHeaders are the headers a reverse proxy adds to what it forwards,
// each with a value nginx or Apache sends.
var proxyHeaders = map[string]string{
	"Forwarded":       "for=203.0.113.7;proto=https",
	"X-Forwarded-For": "203.0.113.7",
	"X-Real-IP":       "203.0.113.7",
	"Via":             "1.1 proxy.example (Apache/2.4)",
}

// Without a token, a request forwarded by a reverse proxy is refused with
// 403 naming ASKUSER_HTTP_TOKEN on every route, even under a loopback
// Host: nginx's default `proxy_pass http://127.0.0.1:8080;` and Apache's
// ProxyPreserveHost Off send exactly that, and the client is remote. The
// question stays open and unanswered. With a token the same requests are
// served as before.
func TestWithoutTokenProxiedRequestsRefused(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{})
	id := b.Ask(t, webtest.OneQuestion("proxied-1"))
	b.WaitOpen(t, id)
	routes := []struct{ method, path string }{
		{http.MethodGet, "/"},
		{http.MethodGet, "/app.js"},
		{http.MethodGet, "/words?lang=en"},
		{http.MethodGet, "/api/questions"},
		{http.MethodGet, "/api/history"},
		{http.MethodPost, "/api/questions/" + id + "/answer"},
		{http.MethodPost, "/api/questions/" + id + "/seen"},
	}
	guarded := b.Handler.Guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "mcp") }))
	for name, value := range proxyHeaders {
		hdr := map[string]string{name: value, "Host": "127.0.0.1"}
		for _, rt := range routes {
			var body any
			if rt.method == http.MethodPost {
				body = map[string]any{"skip": true}
			}
			res, data := b.Request(t, rt.method, rt.path, body, hdr)
			if res.StatusCode != http.StatusForbidden || !strings.Contains(string(data), "ASKUSER_HTTP_TOKEN") {
				t.Errorf("%s %s with %s = %d %s; want 403 naming ASKUSER_HTTP_TOKEN", rt.method, rt.path, name, res.StatusCode, data)
			}
		}
		if _, res := b.OpenEvents(t, "", hdr); res.StatusCode != http.StatusForbidden {
			t.Errorf("events with %s = %d; want 403", name, res.StatusCode)
		}
		// The bridge's other endpoints on the page's listener: /mcp,
		// /metrics, /readyz.
		req := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		req.Host = "127.0.0.1:8080"
		req.Header.Set(name, value)
		rec := httptest.NewRecorder()
		guarded.ServeHTTP(rec, req)
		if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "ASKUSER_HTTP_TOKEN") {
			t.Errorf("a guarded endpoint with %s = %d %q; want 403 naming ASKUSER_HTTP_TOKEN", name, rec.Code, rec.Body.String())
		}
	}
	l := b.Open(t)
	if q, ok := l.Listed(id); !ok || q.SeenBy != "" {
		t.Errorf("the question after the proxied requests: %+v, listed %v; want it open and not seen", q, ok)
	}
	if n := b.ResultCount(t, id); n != 0 {
		t.Errorf("%d results; want none", n)
	}

	const token = "proxied-test-token-0123456789"
	withToken := webtest.Start(t, webtest.Options{Token: token})
	id = withToken.Ask(t, webtest.OneQuestion("proxied-2"))
	withToken.WaitOpen(t, id)
	for name, value := range proxyHeaders {
		hdr := map[string]string{name: value, "Host": "ask.example.com"}
		if res, data := withToken.Request(t, http.MethodGet, "/api/questions", nil, hdr); res.StatusCode != http.StatusOK {
			t.Errorf("with a token, GET /api/questions with %s = %d %s; want 200", name, res.StatusCode, data)
		}
	}
	hdr := map[string]string{"X-Forwarded-For": "203.0.113.7", "Via": "1.1 proxy", "Host": "ask.example.com", "Origin": withToken.Server.URL}
	if res, data := withToken.Request(t, http.MethodPost, "/api/questions/"+id+"/answer", map[string]any{"skip": true}, hdr); res.StatusCode != http.StatusOK {
		t.Errorf("with a token, a proxied answer = %d %s; want 200", res.StatusCode, data)
	}
}

// An answer's Origin is compared with the origins the page is served at,
// never with the request's Host: with a token (no Host check) a page under
// another name that sends its own name as both is still refused, while a
// loopback alias of the page's own origin is accepted.
func TestOriginIsTheServedOne(t *testing.T) {
	t.Parallel()
	const token = "origin-test-token-0123456789"
	b := webtest.Start(t, webtest.Options{Token: token})
	id := b.Ask(t, webtest.OneQuestion("origin-1"))
	b.WaitOpen(t, id)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(b.Server.URL, "http://"))
	answer := "/api/questions/" + id + "/answer"
	tests := []struct {
		name string
		hdr  map[string]string
		want int
	}{
		{"Origin equal to a foreign Host", map[string]string{"Host": "rebind.example:" + port, "Origin": "http://rebind.example:" + port, "Sec-Fetch-Site": "same-origin"}, http.StatusForbidden},
		{"another scheme", map[string]string{"Origin": "https://127.0.0.1:" + port}, http.StatusForbidden},
		{"loopback alias of the page", map[string]string{"Host": "localhost:" + port, "Origin": "http://localhost:" + port, "Sec-Fetch-Site": "same-origin"}, http.StatusOK},
	}
	for _, tc := range tests {
		res, data := b.Request(t, http.MethodPost, answer, map[string]any{"skip": true}, tc.hdr)
		if res.StatusCode != tc.want {
			t.Errorf("%s: = %d %s; want %d", tc.name, res.StatusCode, data, tc.want)
		}
	}
}

// Guard puts the bridge's other endpoints behind the page's wall: the
// token when there is one, loopback host names when there is none.
func TestGuard(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{})
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "metrics") })
	const token = "guard-test-token-0123456789"
	cfg := b.Config()
	cfg.Token = token
	withToken, err := web.NewHandler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer withToken.Close()
	tests := []struct {
		name  string
		h     http.Handler
		host  string
		auth  string
		want  int
		check string
	}{
		{"token: none given", withToken.Guard(ok), "127.0.0.1:1", "", http.StatusUnauthorized, ""},
		{"token: a wrong one", withToken.Guard(ok), "127.0.0.1:1", "Bearer nope-nope-nope-nope", http.StatusUnauthorized, ""},
		{"token: the right one under any name", withToken.Guard(ok), "metrics.example:9090", "Bearer " + token, http.StatusOK, "metrics"},
		{"no token: another name", b.Handler.Guard(ok), "rebind.example:8080", "", http.StatusMisdirectedRequest, ""},
		{"no token: loopback", b.Handler.Guard(ok), "127.0.0.1:8080", "", http.StatusOK, "metrics"},
	}
	for _, tc := range tests {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Host = tc.host
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		rec := httptest.NewRecorder()
		tc.h.ServeHTTP(rec, req)
		if rec.Code != tc.want || !strings.Contains(rec.Body.String(), tc.check) {
			t.Errorf("%s: = %d %q; want %d", tc.name, rec.Code, rec.Body.String(), tc.want)
		}
	}
}

func TestLoopbackHost(t *testing.T) {
	t.Parallel()
	for host, want := range map[string]bool{
		"localhost": true, "LocalHost:8080": true, "127.0.0.1": true, "127.9.9.9:1": true,
		"[::1]:8080": true, "[::1]": true, "::1": true,
		"localhost.": false, "localhost.example": false, "x.localhost": false, "": false,
		"0.0.0.0:8080": false, "[::]:8080": false, "10.0.0.1": false, "example.com:80": false,
		"2130706433": false, "127.0.0.1.example": false,
	} {
		if got := web.LoopbackHost(host); got != want {
			t.Errorf("LoopbackHost(%q) = %v; want %v", host, got, want)
		}
	}
}

// At most MaxStreams event streams are open at once: one more gets 503
// with Retry-After, and a stream that closes makes room.
func TestEventStreamsCapped(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{MaxStreams: 2})
	first, res := b.OpenEvents(t, "", nil)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("first stream = %d", res.StatusCode)
	}
	if _, res := b.OpenEvents(t, "", nil); res.StatusCode != http.StatusOK {
		t.Fatalf("second stream = %d", res.StatusCode)
	}
	_, res = b.OpenEvents(t, "", nil)
	if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" {
		t.Fatalf("third stream = %d, Retry-After %q; want 503 with Retry-After", res.StatusCode, res.Header.Get("Retry-After"))
	}
	first.Close()
	// The handler of the closed stream returns on its own goroutine.
	var status int
	if !testwait.Until(10*time.Second, func() bool {
		s, res := b.OpenEvents(t, "", nil)
		if status = res.StatusCode; status == http.StatusOK {
			s.Close()
			return true
		}
		return false
	}) {
		t.Fatalf("a closed stream made no room: %d", status)
	}
}

// An event stream outlives the server's ReadTimeout and WriteTimeout, the
// first of which cuts off a slow body: each write of the stream has its own
// deadline.
func TestEventStreamOutlivesServerTimeouts(t *testing.T) {
	t.Parallel()
	b := webtest.Start(t, webtest.Options{ServerTimeout: 300 * time.Millisecond})
	s, res := b.OpenEvents(t, "", nil)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("events = %d", res.StatusCode)
	}
	// A body that never finishes: the server gives up on it at ReadTimeout,
	// by which time the stream, opened before, has outlived its own.
	conn, err := net.Dial("tcp", b.Server.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second)) // only so a failure cannot hang the run
	fmt.Fprintf(conn, "POST /api/questions/x/answer HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"skip\"")
	out, err := io.ReadAll(conn)
	if err != nil {
		t.Fatalf("the slow body was not cut off: %v (%q)", err, out)
	}
	id := b.Ask(t, webtest.OneQuestion("outlive-1"))
	s.Next(t, "requested", id)
}
