package discord_test

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
	"github.com/askbridge/askbridge/discord"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/testwait"
	"github.com/askbridge/askbridge/store"
)

// Secrets of TestNoSecretLeavesTheChannel: the bot token and an
// interaction's token, which no other text contains.
const (
	canaryToken       = "MTAxLeakCanary.Gx0123.bot-token-canary_abcdefghijklmnop"
	canaryInteraction = "aW50ZXJhY3Rpb24.interaction-canary-0123456789"
)

// Faults of a REST call, as the network (or Discord) makes them.
const (
	faultRefused = "connection refused" // nothing listens
	faultReset   = "connection reset"   // hung up before answering
	faultCut     = "cut mid-response"   // hung up inside the body
	faultTimeout = "timeout"            // never answers
	faultEcho    = "proxy echo"         // a proxy's error page quoting the request
	faultLimited = "rate limited"       // 429 on every call
)

// brokenAPI is a Discord REST API whose calls all fail with one fault,
// except GET /users/@me when me is set (so Run gets to the gateway).
type brokenAPI struct {
	srv   *httptest.Server
	fault string
	me    bool
	dead  string // the address of a closed listener (faultRefused)
	stop  chan struct{}

	mu    sync.Mutex
	calls map[string]int // by route: "users/@me", "gateway", …
}

func newBrokenAPI(t *testing.T, fault string, me bool) *brokenAPI {
	t.Helper()
	b := &brokenAPI{fault: fault, me: me, calls: map[string]int{}, stop: make(chan struct{})}
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

func route(u *url.URL) string {
	_, r, _ := strings.Cut(u.Path, "/api/v9/")
	return r
}

func (b *brokenAPI) answers(r string) bool { return b.me && r == "users/@me" }

func (b *brokenAPI) count(r string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls[r]
}

// RoundTrip counts each call and sends a broken one to the dead address
// when nothing is to listen.
func (b *brokenAPI) RoundTrip(r *http.Request) (*http.Response, error) {
	rt := route(r.URL)
	b.mu.Lock()
	b.calls[rt]++
	b.mu.Unlock()
	if !b.answers(rt) && b.fault == faultRefused {
		r = r.Clone(r.Context())
		r.URL.Host = b.dead
	}
	return http.DefaultTransport.RoundTrip(r)
}

func (b *brokenAPI) serve(w http.ResponseWriter, r *http.Request) {
	if b.answers(route(r.URL)) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"111","username":"canary","bot":true}`)
		return
	}
	switch b.fault {
	case faultReset, faultCut:
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		if b.fault == faultCut {
			buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n{\"id\":")
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
			r.Method, r.URL.Path, r.Header.Get("Authorization"), body)
	case faultLimited:
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"message":"You are being rate limited.","retry_after":1,"global":false}`)
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

// TestNoSecretLeavesTheChannel points the channel at a Discord REST API
// that fails in each way a network does (and at a proxy that quotes the
// request, Authorization header included, in its error page, and at a
// 429 on every call) and checks that neither the bot token nor an
// interaction's token appears in any log line (at debug level), in any
// error Send, Notify, Finish and an interaction response return, in their
// Reason, or in anything those errors wrap: while reading the bot user,
// while connecting to the gateway, sending, editing and answering a press.
func TestNoSecretLeavesTheChannel(t *testing.T) {
	t.Parallel()
	secrets := []string{canaryToken, canaryInteraction}
	for _, fault := range []string{faultRefused, faultReset, faultCut, faultTimeout, faultEcho, faultLimited} {
		t.Run(fault, func(t *testing.T) {
			t.Parallel()
			var logs syncBuffer
			log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
			defer rdb.Close()
			coord := store.New(rdb, store.Options{Prefix: fmt.Sprintf("dcsecret%d:", prefixSeq.Add(1)), Consumer: "leak"})
			channel := func(api *brokenAPI) *discord.Channel {
				ch, err := discord.New(discord.Config{
					Token: "Bot " + canaryToken, APIURL: api.srv.URL + "/", Replica: "leak",
					LeaseTTL: time.Second, StandbyPoll: 100 * time.Millisecond,
					RetryMin: 20 * time.Millisecond, RetryMax: 100 * time.Millisecond,
					BadCredentialsRetry: 100 * time.Millisecond, OpenTimeout: time.Second,
					HTTPClient: &http.Client{Timeout: 300 * time.Millisecond, Transport: api},
				}, coord, log)
				if err != nil {
					t.Fatal(err)
				}
				return ch
			}

			// The bot user cannot be read.
			api := newBrokenAPI(t, fault, false)
			ch := channel(api)
			runUntil(t, ch, func() bool { return api.count("users/@me") >= 2 })

			// The bot user is read; the gateway's address cannot be.
			gw := newBrokenAPI(t, fault, true)
			runUntil(t, channel(gw), func() bool { return gw.count("gateway") >= 2 })

			// The engine's calls, and the answers to a press.
			ctx := context.Background()
			req, err := askbridge.DecodeRequest([]byte(`{"questions":[{"id":"go","header":"Deploy","question":"Deploy?","options":[{"label":"Yes"},{"label":"No"}]}]}`))
			if err != nil {
				t.Fatal(err)
			}
			plan := engine.BuildPlan("q1", req, ch.Capabilities())
			errs := []error{
				ch.Send(ctx, engine.Delivery{Chat: "222", Plan: plan}),
				ch.Send(ctx, engine.Delivery{Chat: "@333", Plan: plan}),
				ch.Notify(ctx, "222", "444", "Reply with a number."),
				ch.Finish(ctx, engine.MessageRef{Platform: "discord", Chat: "222", Message: "444"},
					engine.Ending{Plan: plan, Outcome: askbridge.OutcomeExpired, Status: "Expired"}),
				ch.Acknowledge(ctx, "555", canaryInteraction),
			}
			ch.Respond(ctx, "555", canaryInteraction, false, engine.TapReply{Notice: engine.NoticeUnknown})
			ch.Respond(ctx, "556", canaryInteraction, true, engine.TapReply{Notice: engine.NoticeUnknown})
			ch.Respond(ctx, "557", canaryInteraction, true, engine.TapReply{Notice: engine.NoticeExpired, QuestionID: "q1"})

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
			if api.count("interactions/555/"+canaryInteraction+"/callback") == 0 {
				t.Error("the press was not answered")
			}
			out := logs.String()
			for _, s := range secrets {
				if strings.Contains(out, s) {
					t.Errorf("a secret was logged:\n%s", lines(out, s))
				}
			}
			for _, want := range []string{"discord: read the bot user", "discord: connect to the gateway", "discord: ephemeral"} {
				if !strings.Contains(out, want) {
					t.Errorf("no %q logged:\n%s", want, out)
				}
			}
		})
	}
}

// runUntil runs ch until done reports true, then stops it.
func runUntil(t *testing.T, ch *discord.Channel, done func() bool) {
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
