package telegram_test

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
	"github.com/askbridge/askbridge/store"
	"github.com/askbridge/askbridge/telegram"
)

// Secrets of TestNoSecretLeavesTheChannel: a bot token and a webhook
// secret no other text contains.
const (
	canaryBotID  = "987654"
	canarySecret = "AAF-leak-canary-0123456789abcdefghijk"
	canaryToken  = canaryBotID + ":" + canarySecret
	canaryHook   = "hook-canary-0123456789abcdef"
)

// Faults of a Bot API call, as the network makes them.
const (
	faultRefused = "connection refused" // nothing listens
	faultReset   = "connection reset"   // hung up before answering
	faultCut     = "cut mid-response"   // hung up inside the body
	faultTimeout = "timeout"            // never answers
	faultEcho    = "proxy echo"         // a proxy's error page quoting the request
)

// brokenAPI is a Bot API whose calls to the methods in broken fail with
// one fault; getMe and deleteWebhook answer, so Run gets as far as polling.
type brokenAPI struct {
	srv    *httptest.Server
	fault  string
	broken map[string]bool
	dead   string // the address of a closed listener (faultRefused)
	stop   chan struct{}

	mu    sync.Mutex
	calls map[string]int // by method
}

func newBrokenAPI(t *testing.T, fault string, broken ...string) *brokenAPI {
	t.Helper()
	b := &brokenAPI{fault: fault, broken: map[string]bool{}, calls: map[string]int{}}
	for _, m := range broken {
		b.broken[m] = true
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b.dead = l.Addr().String()
	l.Close()
	b.srv = httptest.NewServer(http.HandlerFunc(b.serve))
	b.stop = make(chan struct{})
	t.Cleanup(b.srv.Close)
	t.Cleanup(func() { close(b.stop) }) // runs first: frees hanging calls
	return b
}

func (b *brokenAPI) method(u *url.URL) string { return u.Path[strings.LastIndex(u.Path, "/")+1:] }

func (b *brokenAPI) count(method string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls[method]
}

// RoundTrip counts each call and sends a broken one to the dead address
// when nothing is to listen; the *url.Error the client makes of the
// refusal names the URL the bridge asked for, token and all.
func (b *brokenAPI) RoundTrip(r *http.Request) (*http.Response, error) {
	m := b.method(r.URL)
	b.mu.Lock()
	b.calls[m]++
	b.mu.Unlock()
	if b.broken[m] && b.fault == faultRefused {
		r = r.Clone(r.Context())
		r.URL.Host = b.dead
	}
	return http.DefaultTransport.RoundTrip(r)
}

func (b *brokenAPI) serve(w http.ResponseWriter, r *http.Request) {
	m := b.method(r.URL)
	if !b.broken[m] {
		w.Header().Set("Content-Type", "application/json")
		switch m {
		case "getMe":
			fmt.Fprintf(w, `{"ok":true,"result":{"id":%s,"is_bot":true,"first_name":"Canary","username":"canary_bot"}}`, canaryBotID)
		default:
			io.WriteString(w, `{"ok":true,"result":true}`)
		}
		return
	}
	switch b.fault {
	case faultReset, faultCut:
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		if b.fault == faultCut {
			buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n{\"ok\":true,\"result\":[")
			buf.Flush()
		}
		conn.Close()
	case faultTimeout:
		// Read the body first: only then does the server notice the
		// client hanging up.
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-b.stop:
		}
	case faultEcho:
		body, _ := io.ReadAll(io.LimitReader(r.Body, 8<<10))
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		fmt.Fprintf(w, "<html><h1>502 Bad Gateway</h1><p>upstream failed for %s %s</p><pre>%s</pre></html>", r.Method, r.URL.Path, body)
	}
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

// TestNoSecretLeavesTheChannel points the channel at a Bot API that fails
// in each way a network does (and at a proxy that quotes the request in
// its error page) and checks that neither the token, nor its secret half,
// nor the webhook secret appears in any log line (at debug level), in any
// error Send, Notify and Finish return, in their Reason (an undeliverable
// result's error text), or in anything those errors wrap: while polling
// (getUpdates), registering the webhook (setWebhook), sending, editing and
// answering a tap.
func TestNoSecretLeavesTheChannel(t *testing.T) {
	t.Parallel()
	secrets := []string{canaryToken, canarySecret, canaryHook}
	for _, fault := range []string{faultRefused, faultReset, faultCut, faultTimeout, faultEcho} {
		t.Run(fault, func(t *testing.T) {
			t.Parallel()
			api := newBrokenAPI(t, fault, "getUpdates", "setWebhook", "sendMessage", "editMessageText", "answerCallbackQuery")
			var logs syncBuffer
			log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
			defer rdb.Close()
			coord := store.New(rdb, store.Options{Prefix: fmt.Sprintf("tgsecret%d:", prefixSeq.Add(1)), Consumer: "leak"})
			cfg := telegram.Config{
				Token: canaryToken, APIURL: api.srv.URL, Replica: "leak",
				PollTimeout: 2 * time.Second, LeaseTTL: time.Second, RenewEvery: 200 * time.Millisecond,
				ChatPace: time.Millisecond, GlobalPace: time.Millisecond,
				HTTPClient: &http.Client{Timeout: 300 * time.Millisecond, Transport: api},
			}
			var errs []error

			// Polling: getMe answers, every getUpdates fails.
			poller, err := telegram.New(cfg, coord, log)
			if err != nil {
				t.Fatal(err)
			}
			runUntil(t, poller, func() bool { return api.count("getUpdates") >= 3 })

			// Webhook mode: every setWebhook fails.
			hookCfg := cfg
			hookCfg.WebhookURL, hookCfg.WebhookSecret = "https://bridge.example/tg", canaryHook
			hook, err := telegram.New(hookCfg, coord, log)
			if err != nil {
				t.Fatal(err)
			}
			runUntil(t, hook, func() bool { return api.count("setWebhook") >= 2 })

			// The engine's calls, and a tap the channel answers itself.
			ctx := context.Background()
			req, err := askbridge.DecodeRequest([]byte(`{"questions":[{"id":"go","header":"Deploy","question":"Deploy?","options":[{"label":"Yes"},{"label":"No"}]}]}`))
			if err != nil {
				t.Fatal(err)
			}
			plan := engine.BuildPlan("q1", req, hook.Capabilities())
			_, err = sendAll(ctx, hook, "-100500", plan)
			errs = append(errs, err)
			errs = append(errs, hook.Notify(ctx, "-100500", "7", "Reply with a number."))
			errs = append(errs, hook.Finish(ctx, engine.MessageRef{Platform: "telegram", Chat: "-100500", Message: "7"},
				engine.Ending{Plan: plan, Outcome: askbridge.OutcomeExpired, Status: "Expired"}))
			tap := `{"update_id":5,"callback_query":{"id":"cq1","from":{"id":1001,"is_bot":false,"first_name":"Alice"},"message":{"message_id":7,"date":1,"chat":{"id":-100500,"type":"supergroup"}},"data":"x"}}`
			if err := hook.HandleUpdateJSON(ctx, noticeInbox{}, []byte(tap)); err != nil {
				t.Fatal(err)
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
			if api.count("answerCallbackQuery") == 0 {
				t.Error("the tap was not answered")
			}
			out := logs.String()
			for _, s := range secrets {
				if strings.Contains(out, s) {
					t.Errorf("a secret was logged:\n%s", lines(out, s))
				}
			}
			if !strings.Contains(out, "get updates failed") && fault != faultCut && fault != faultEcho {
				t.Errorf("no getUpdates failure logged:\n%s", out)
			}
		})
	}
}

// runUntil runs ch until done reports true, then stops it.
func runUntil(t *testing.T, ch *telegram.Channel, done func() bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { defer close(stopped); _ = ch.Run(ctx, noticeInbox{}) }()
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

// noticeInbox answers every tap "unknown" and takes no text.
type noticeInbox struct{}

func (noticeInbox) Tap(context.Context, engine.Tap) engine.TapReply {
	return engine.TapReply{Notice: engine.NoticeUnknown}
}
func (noticeInbox) Reply(context.Context, engine.TextReply) engine.ReplyOutcome {
	return engine.ReplyOutcome{}
}
func (noticeInbox) Attach(context.Context, string, engine.MessageRef) error { return nil }

func (noticeInbox) Locale() string { return "en" }
