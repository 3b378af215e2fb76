package slack_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/testwait"
	"github.com/askbridge/askbridge/slack"
	"github.com/askbridge/askbridge/store"
)

// Secrets of TestNoSecretLeavesTheChannel, which no other text contains.
const (
	canaryBot     = "xoxb-111-222-botcanary0123456789"
	canaryApp     = "xapp-1-A111-333-appcanary0123456789"
	canarySigning = "signing-canary-0123456789abcdef"
	canaryTicket  = "ticketcanary-0123456789-abcdef"
)

// Faults of a call, as the network makes them.
const (
	faultRefused = "connection refused" // nothing listens
	faultReset   = "connection reset"   // hung up before answering
	faultCut     = "cut mid-response"   // hung up inside the body
	faultTimeout = "timeout"            // never answers
	faultEcho    = "proxy echo"         // a proxy's error page quoting the request
	// faultGarbled: apps.connections.open answers a socket mode URL the
	// dialer cannot parse (a proxy mangled it).
	faultGarbled = "garbled socket URL"
)

// brokenAPI is a Slack Web API (and socket mode endpoint) whose calls fail
// with one fault, except the methods in answer: auth.test names the bot,
// apps.connections.open hands out a socket mode URL with a ticket, to this
// server's /link/ (which fails too) or, for faultRefused, to a closed port.
type brokenAPI struct {
	srv    *httptest.Server
	fault  string
	answer map[string]bool
	dead   string // the address of a closed listener (faultRefused)
	stop   chan struct{}

	mu    sync.Mutex
	calls map[string]int // by method; "link" for the websocket
}

func newBrokenAPI(t *testing.T, fault string, answer ...string) *brokenAPI {
	t.Helper()
	b := &brokenAPI{fault: fault, answer: map[string]bool{}, calls: map[string]int{}, stop: make(chan struct{})}
	for _, m := range answer {
		b.answer[m] = true
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b.dead = l.Addr().String()
	l.Close()
	b.srv = httptest.NewServer(http.HandlerFunc(b.serve))
	t.Cleanup(b.srv.Close)
	t.Cleanup(func() { close(b.stop) }) // runs first: frees hanging calls
	return b
}

func method(u *url.URL) string {
	p := strings.TrimSuffix(u.Path, "/")
	return p[strings.LastIndex(p, "/")+1:]
}

func (b *brokenAPI) count(m string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls[m]
}

// RoundTrip counts each Web API call and sends a broken one to the dead
// address when nothing is to listen.
func (b *brokenAPI) RoundTrip(r *http.Request) (*http.Response, error) {
	m := method(r.URL)
	b.mu.Lock()
	b.calls[m]++
	b.mu.Unlock()
	if !b.answer[m] && b.fault == faultRefused {
		r = r.Clone(r.Context())
		r.URL.Host = b.dead
	}
	return http.DefaultTransport.RoundTrip(r)
}

func (b *brokenAPI) serve(w http.ResponseWriter, r *http.Request) {
	m := method(r.URL)
	if m == "link" {
		b.mu.Lock()
		b.calls[m]++
		b.mu.Unlock()
	}
	if b.answer[m] {
		w.Header().Set("Content-Type", "application/json")
		switch m {
		case "auth.test":
			io.WriteString(w, `{"ok":true,"user_id":"UBOT","bot_id":"BBOT","team_id":"T1"}`)
		case "apps.connections.open":
			host := strings.TrimPrefix(b.srv.URL, "http://")
			switch b.fault {
			case faultRefused:
				host = b.dead
			case faultGarbled:
				host = "%zz"
			}
			fmt.Fprintf(w, `{"ok":true,"url":"ws://%s/link/?ticket=%s&app_id=A111"}`, host, canaryTicket)
		}
		return
	}
	switch b.fault {
	case faultReset, faultCut, faultGarbled:
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		if b.fault == faultCut {
			buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n{\"ok\":")
			buf.Flush()
		}
		conn.Close()
	case faultTimeout:
		_, _ = io.Copy(io.Discard, r.Body) // so the server sees the client hang up
		select {
		case <-r.Context().Done():
		case <-b.stop:
		}
	case faultEcho:
		body, _ := io.ReadAll(io.LimitReader(r.Body, 8<<10))
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		fmt.Fprintf(w, "<html><h1>502 Bad Gateway</h1><p>upstream failed for %s %s</p><pre>Authorization: %s\n\n%s</pre></html>",
			r.Method, r.URL.RequestURI(), r.Header.Get("Authorization"), body)
	}
}

// syncBuffer is a log sink the channel's goroutines may write at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// errorTexts is every text err can show: its own, %+v, its reason and
// every error it wraps, and the URL of any *url.Error in it.
func errorTexts(err error) []string {
	var out []string
	var walk func(error)
	walk = func(e error) {
		for e != nil {
			out = append(out, e.Error(), fmt.Sprintf("%+v", e))
			if se, ok := e.(*engine.SendError); ok {
				out = append(out, se.Reason)
			}
			if ue, ok := e.(*url.Error); ok {
				out = append(out, ue.URL)
			}
			if m, ok := e.(interface{ Unwrap() []error }); ok {
				for _, x := range m.Unwrap() {
					walk(x)
				}
				return
			}
			e = errors.Unwrap(e)
		}
	}
	walk(err)
	var ue *url.Error
	if errors.As(err, &ue) {
		out = append(out, ue.URL)
	}
	return out
}

// TestNoSecretLeavesTheChannel points the channel at a Slack that fails in
// each way a network does (and at a proxy that quotes the request, with
// its Authorization header and form, in its error page, or mangles the
// socket mode URL so that the dialer quotes it) and checks that
// neither token, the signing secret nor a socket mode ticket appears in
// any log line (at debug level), in any error Send, Notify and Finish
// return, in their Reason, or in anything those errors wrap: while calling
// auth.test, apps.connections.open, dialing the socket mode URL, posting,
// opening a DM and editing.
func TestNoSecretLeavesTheChannel(t *testing.T) {
	t.Parallel()
	secrets := []string{canaryBot, canaryApp, canarySigning, canaryTicket}
	for _, fault := range []string{faultRefused, faultReset, faultCut, faultTimeout, faultEcho, faultGarbled} {
		t.Run(fault, func(t *testing.T) {
			t.Parallel()
			var logs syncBuffer
			log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
			defer rdb.Close()
			coord := store.New(rdb, store.Options{Prefix: fmt.Sprintf("slsecret%d:", prefixSeq.Add(1)), Consumer: "leak"})
			channel := func(api *brokenAPI, app string) *slack.Channel {
				ch, err := slack.New(slack.Config{
					BotToken: canaryBot, AppToken: app, SigningSecret: canarySigning, APIURL: api.srv.URL + "/api/",
					HTTPClient: &http.Client{Timeout: 300 * time.Millisecond, Transport: api},
					RetryMin:   20 * time.Millisecond, RetryMax: 100 * time.Millisecond,
				}, coord, log)
				if err != nil {
					t.Fatal(err)
				}
				return ch
			}

			// auth.test fails.
			api := newBrokenAPI(t, fault)
			ch := channel(api, "")
			runUntil(t, ch, func() bool { return api.count("auth.test") >= 2 })

			// apps.connections.open fails.
			open := newBrokenAPI(t, fault, "auth.test")
			runUntil(t, channel(open, canaryApp), func() bool { return open.count("apps.connections.open") >= 2 })

			// The socket mode URL, ticket and all, cannot be dialed (a
			// handshake that never ends would take the library's 45 s).
			if fault != faultTimeout {
				dial := newBrokenAPI(t, fault, "auth.test", "apps.connections.open")
				runUntil(t, channel(dial, canaryApp), func() bool { return dial.count("apps.connections.open") >= 2 })
			}

			// The engine's calls.
			ctx := context.Background()
			req, err := askbridge.DecodeRequest([]byte(`{"questions":[{"id":"go","header":"Deploy","question":"Deploy?","options":[{"label":"Yes"},{"label":"No"}]}]}`))
			if err != nil {
				t.Fatal(err)
			}
			plan := engine.BuildPlan("q1", req, ch.Capabilities())
			errs := []error{
				ch.Send(ctx, engine.Delivery{Chat: "C0OPS", Plan: plan}),
				ch.Send(ctx, engine.Delivery{Chat: "U0ALICE", Plan: plan}),
				ch.Notify(ctx, "C0OPS", "1700000000.000100", "Reply with a number."),
				ch.Finish(ctx, engine.MessageRef{Platform: "slack", Chat: "C0OPS", Message: "1700000000.000100"},
					engine.Ending{Plan: plan, Outcome: askbridge.OutcomeExpired, Status: "Expired"}),
			}
			for i, err := range errs {
				if err == nil {
					t.Errorf("call %d: no error from a broken API", i)
				}
				for _, text := range errorTexts(err) {
					for _, s := range secrets {
						if strings.Contains(text, s) {
							t.Errorf("call %d: error shows a secret: %s", i, text)
						}
					}
				}
			}
			out := logs.String()
			for _, s := range secrets {
				if strings.Contains(out, s) {
					t.Errorf("a secret was logged:\n%s", lines(out, s))
				}
			}
			for _, want := range []string{"auth.test failed", "socket mode connection failed"} {
				if !strings.Contains(out, want) {
					t.Errorf("no %q logged:\n%s", want, out)
				}
			}
		})
	}
}

// TestWeakSigningSecretRefused: a signing secret under 16 characters is
// refused, the setting named; Slack's own (32 hex characters) passes.
func TestWeakSigningSecretRefused(t *testing.T) {
	for _, tc := range []struct {
		secret string
		want   string
	}{
		{"s", "signing secret: must be at least 16 characters (it has 1)"},
		{"0123456789abcde", "signing secret: must be at least 16 characters (it has 15)"},
		{"0123456789abcdef", ""},
		{"8f742231b10e8888abcd99yyyzzz85a5", ""},
	} {
		err := slack.Config{BotToken: botToken, SigningSecret: tc.secret}.Validate()
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%d characters: %v, want %q", len(tc.secret), err, tc.want)
		}
		if err != nil && len(tc.secret) > 8 && strings.Contains(err.Error(), tc.secret) {
			t.Errorf("the error shows the secret: %v", err)
		}
	}
}

// runUntil runs ch until done reports true, then stops it.
func runUntil(t *testing.T, ch *slack.Channel, done func() bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { defer close(stopped); _ = ch.Run(ctx, nil) }()
	testwait.Until(20*time.Second, done)
	cancel()
	<-stopped
	if !done() {
		t.Fatal("the channel never made the calls the test waits for")
	}
}

// lines returns the lines of out that contain s.
func lines(out, s string) string {
	var b strings.Builder
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), s) {
			b.WriteString(sc.Text() + "\n")
		}
	}
	return b.String()
}
