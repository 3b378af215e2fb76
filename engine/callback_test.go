package engine_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/client"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/testwait"
	"github.com/askbridge/askbridge/store"
)

const cbSecret = "test-callback-secret-0123456789"

// receiver is an agent's callback endpoint on 127.0.0.1 whose answers a
// test sets: down (connections refused), a status code, or a redirect.
type receiver struct {
	t    *testing.T
	addr string

	mu       sync.Mutex
	ln       net.Listener
	srv      *http.Server
	status   int    // answer to each POST (200 by default)
	location string // Location of a 3xx answer
	posts    []post
}

type post struct {
	header http.Header
	body   []byte
	status int
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{t: t, status: http.StatusOK}
	r.up()
	t.Cleanup(r.down)
	return r
}

// up listens (again, on the same address once it had one).
func (r *receiver) up() {
	r.t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	addr := r.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		r.t.Fatal(err)
	}
	r.ln, r.addr = ln, ln.Addr().String()
	srv := &http.Server{Handler: http.HandlerFunc(r.serve), ReadHeaderTimeout: 5 * time.Second}
	r.srv = srv
	go func() { _ = srv.Serve(ln) }()
}

// down closes the listener: connections are refused.
func (r *receiver) down() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.srv != nil {
		_ = r.srv.Close()
		r.srv = nil
	}
}

func (r *receiver) set(status int, location string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status, r.location = status, location
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	status, location := r.status, r.location
	r.posts = append(r.posts, post{header: req.Header.Clone(), body: body, status: status})
	r.mu.Unlock()
	if location != "" {
		w.Header().Set("Location", location)
	}
	w.WriteHeader(status)
}

func (r *receiver) all() []post {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]post(nil), r.posts...)
}

func (r *receiver) url(path string) string { return "http://" + r.addr + path }

// cbEngine is one bridge replica with callbacks on.
type cbEngine struct {
	engine *engine.Engine
	store  *store.Store
	stop   func()
}

// localPolicy allows plain http to 127.0.0.1 and its loopback address.
var localPolicy = engine.CallbackPolicy{HTTPHosts: []string{"127.0.0.1"}, PrivateHosts: []string{"127.0.0.1"}}

func startCallbackEngine(t *testing.T, prefix, replica string, clock *clockwork.FakeClock, ch *fakeChannel, cb engine.CallbackConfig) *cbEngine {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	t.Cleanup(func() { rdb.Close() })
	st := store.New(rdb, store.Options{Prefix: prefix, Consumer: replica, ClaimIdle: time.Second})
	resolve := func(string) (engine.Route, error) {
		return engine.Route{Target: askbridge.Target{Platform: ch.platform, Chat: "ops-room"}}, nil
	}
	e := engine.NewEngine(engine.EngineConfig{
		Store: st, Resolve: resolve, Channels: []engine.Channel{ch},
		Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil)), Clock: clock,
		Replica: replica, SweepEvery: 20 * time.Millisecond, SendBudget: 5 * time.Second, Callbacks: cb,
		ReadBlock: 100 * time.Millisecond, // stops soon after the test
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = e.Run(ctx) }()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return &cbEngine{engine: e, store: st, stop: stop}
}

func newCallbackPrefix() string { return fmt.Sprintf("cbtest%d:", prefixSeq.Add(1)) }

// cbTickers is how many tickers a running engine with callbacks keeps on
// its clock: the sweeper's, the finisher's and the dispatcher's.
const cbTickers = 3

// step advances the clock by d once the tickers of n engines are on it.
func step(t *testing.T, clock *clockwork.FakeClock, engines int, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := clock.BlockUntilContext(ctx, engines*cbTickers); err != nil {
		t.Fatalf("engine tickers not on the clock: %v", err)
	}
	clock.Advance(d)
}

// until waits, in real time, for cond; on a simulated clock it moves the
// clock by advance between looks when advance is set.
func until(t *testing.T, what string, cond func() bool, tick func()) {
	t.Helper()
	testwait.For(t, 15*time.Second, what, func() bool {
		if cond() {
			return true
		}
		if tick != nil {
			tick()
		}
		return false
	})
}

func askWithCallback(t *testing.T, agent *redis.Client, prefix, id, callback string) {
	t.Helper()
	body := fmt.Sprintf(`{"id":%q,"callback":%q,"questions":[{"id":"deploy_target","header":"Target","question":"Where should this deploy?","options":[{"label":"Staging (Recommended)"},{"label":"Production"}]}]}`, id, callback)
	if err := agent.XAdd(context.Background(), &redis.XAddArgs{Stream: prefix + "requests", Values: []any{"ask", body}}).Err(); err != nil {
		t.Fatal(err)
	}
}

func agentClient(t *testing.T) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: redisAddr})
	t.Cleanup(func() { c.Close() })
	return c
}

// waitPrompt waits for the channel to post prompt number n (from 1) and
// returns it.
func waitPrompt(t *testing.T, ch *fakeChannel, n int) sentPrompt {
	t.Helper()
	until(t, "the prompt", func() bool { return len(ch.sends()) >= n }, nil)
	return ch.sends()[n-1]
}

func answer(t *testing.T, e *engine.Engine, p sentPrompt, event string) {
	t.Helper()
	reply := e.Tap(context.Background(), engine.Tap{EventID: event, Message: p.refs[0], Person: alice, Payload: p.plan.Buttons()[1].Payload})
	if reply.Notice != engine.NoticeRecorded {
		t.Fatalf("tap: %q", reply.Notice)
	}
}

// events lists the events of the stream under prefix of the given kind.
func eventsOf(t *testing.T, st *store.Store, kind askbridge.EventKind) []askbridge.Event {
	t.Helper()
	evs, _, err := st.Events(context.Background(), "0", 10000, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []askbridge.Event
	for _, ev := range evs {
		if ev.Kind == kind {
			out = append(out, ev)
		}
	}
	return out
}

// A question's result is POSTed once, exactly as pushed to the agent, and
// signed: checked by an implementation of the Standard Webhooks signature
// written here from the specification, and by client.VerifyCallback.
func TestCallbackSignedAndDelivered(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, secret string }{
		{"raw secret", cbSecret},
		{"whsec secret", "whsec_" + base64.StdEncoding.EncodeToString([]byte("twenty-four bytes of key"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rcv := newReceiver(t)
			prefix, clock, ch := newCallbackPrefix(), newClock(), newFakeChannel("telegram")
			b := startCallbackEngine(t, prefix, "r1", clock, ch, engine.CallbackConfig{Secret: tc.secret, Policy: localPolicy})
			agent := agentClient(t)
			askWithCallback(t, agent, prefix, "signed-1", rcv.url("/hooks/askbridge?token=abc"))
			answer(t, b.engine, waitPrompt(t, ch, 1), "ev1")
			until(t, "the callback", func() bool { return len(rcv.all()) == 1 }, nil)

			p := rcv.all()[0]
			stored := agent.HGet(context.Background(), prefix+"question:{signed-1}", "result").Val()
			pushed := agent.LIndex(context.Background(), prefix+"result:{signed-1}", 0).Val()
			if string(p.body) != pushed || pushed != stored {
				t.Errorf("posted %s\nwant the result pushed to the agent %s", p.body, pushed)
			}
			if got := p.header.Get("Content-Type"); got != "application/json" {
				t.Errorf("Content-Type %q", got)
			}
			if got := p.header.Get("webhook-id"); got != "signed-1" {
				t.Errorf("webhook-id %q, want the question id", got)
			}
			ts, err := strconv.ParseInt(p.header.Get("webhook-timestamp"), 10, 64)
			if err != nil || ts != clock.Now().Unix() {
				t.Errorf("webhook-timestamp %q, want %d", p.header.Get("webhook-timestamp"), clock.Now().Unix())
			}
			key := []byte(tc.secret)
			if rest, ok := strings.CutPrefix(tc.secret, "whsec_"); ok {
				key, _ = base64.StdEncoding.DecodeString(rest)
			}
			mac := hmac.New(sha256.New, key)
			mac.Write([]byte("signed-1." + strconv.FormatInt(ts, 10) + "."))
			mac.Write(p.body)
			want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
			if got := p.header.Get("webhook-signature"); got != want {
				t.Errorf("webhook-signature %q, want %q", got, want)
			}
			res, err := client.VerifyCallback(tc.secret, p.header, p.body, time.Hour)
			if err != nil || res.Status != askbridge.StatusAnswered || res.Answers.Answers["deploy_target"][0] != "Production" {
				t.Errorf("VerifyCallback = %+v, %v", res, err)
			}
			until(t, "callback: delivered in the question hash", func() bool {
				return agent.HGet(context.Background(), prefix+"question:{signed-1}", "callback").Val() == "delivered"
			}, nil)
			if n := len(eventsOf(t, b.store, askbridge.EventCallbackFailed)); n != 0 {
				t.Errorf("%d callback_failed events for a delivered callback", n)
			}
		})
	}
}

// A receiver that refuses connections and then answers 503 is tried again
// with a growing backoff, and gets the result once it answers 2xx.
func TestCallbackRetriesWithBackoff(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t)
	rcv.down()
	prefix, clock, ch := newCallbackPrefix(), newClock(), newFakeChannel("telegram")
	b := startCallbackEngine(t, prefix, "r1", clock, ch, engine.CallbackConfig{Secret: cbSecret, Policy: localPolicy})
	agent := agentClient(t)
	askWithCallback(t, agent, prefix, "retry-1", rcv.url("/hook"))
	answer(t, b.engine, waitPrompt(t, ch, 1), "ev1")
	failures := func() int { return len(eventsOf(t, b.store, askbridge.EventCallbackFailed)) }
	until(t, "the first failure (refused)", func() bool { return failures() == 1 }, nil)
	if n := len(rcv.all()); n != 0 {
		t.Fatalf("%d POSTs reached a receiver that was down", n)
	}

	rcv.up()
	rcv.set(http.StatusServiceUnavailable, "")
	// Not before the backoff (5s, less its jitter).
	step(t, clock, 1, 3*time.Second)
	// What is checked is that nothing is sent: give a wrong retry real
	// time to show up, as there is nothing to wait on.
	time.Sleep(100 * time.Millisecond)
	if n := len(rcv.all()); n != 0 {
		t.Fatalf("tried again 3s after the first failure: %d POSTs", n)
	}
	until(t, "two 503s", func() bool { return len(rcv.all()) == 2 }, func() { step(t, clock, 1, time.Second) })
	rcv.set(http.StatusOK, "")
	until(t, "the delivery", func() bool { return len(rcv.all()) == 3 }, func() { step(t, clock, 1, time.Second) })
	until(t, "callback: delivered", func() bool {
		return agent.HGet(context.Background(), prefix+"question:{retry-1}", "callback").Val() == "delivered"
	}, nil)

	evs := eventsOf(t, b.store, askbridge.EventCallbackFailed)
	if len(evs) != 3 {
		t.Fatalf("%d callback_failed events, want 3: %+v", len(evs), evs)
	}
	var waits []time.Duration
	for i, ev := range evs {
		if ev.ID != "retry-1" || !strings.HasPrefix(ev.Error, fmt.Sprintf("attempt %d: ", i+1)) {
			t.Errorf("event %d: %+v", i, ev)
		}
		_, after, ok := strings.Cut(ev.Error, "; next try in ")
		d, err := time.ParseDuration(after)
		if !ok || err != nil {
			t.Fatalf("event %d does not say when the next try is: %q", i, ev.Error)
		}
		waits = append(waits, d)
	}
	if !(waits[0] < waits[1] && waits[1] < waits[2]) {
		t.Errorf("waits %v do not grow", waits)
	}
	if strings.Contains(evs[0].Error, "/hook") || !strings.Contains(evs[0].Error, "refused") {
		t.Errorf("first failure %q: want the refused connection, without the URL's path", evs[0].Error)
	}
	if !strings.Contains(evs[1].Error, "503") {
		t.Errorf("second failure %q: want the 503", evs[1].Error)
	}
	posts := rcv.all()
	if posts[0].status != 503 || posts[1].status != 503 || posts[2].status != 200 || string(posts[2].body) != string(posts[0].body) {
		t.Errorf("POSTs answered %d, %d, %d", posts[0].status, posts[1].status, posts[2].status)
	}
}

// A callback waiting for its retry survives the bridge: a replica started
// on the same Redis after the first stopped delivers it.
func TestCallbackSurvivesRestart(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t)
	rcv.set(http.StatusServiceUnavailable, "")
	prefix, clock, ch := newCallbackPrefix(), newClock(), newFakeChannel("telegram")
	cfg := engine.CallbackConfig{Secret: cbSecret, Policy: localPolicy}
	first := startCallbackEngine(t, prefix, "r1", clock, ch, cfg)
	agent := agentClient(t)
	askWithCallback(t, agent, prefix, "restart-1", rcv.url("/hook"))
	answer(t, first.engine, waitPrompt(t, ch, 1), "ev1")
	until(t, "the first failure", func() bool { return len(eventsOf(t, first.store, askbridge.EventCallbackFailed)) == 1 }, nil)
	first.stop()

	rcv.set(http.StatusOK, "")
	second := startCallbackEngine(t, prefix, "r2", clock, ch, cfg)
	until(t, "the delivery by the second replica", func() bool { return len(rcv.all()) == 2 }, func() { step(t, clock, 1, time.Second) })
	until(t, "callback: delivered", func() bool {
		return agent.HGet(context.Background(), prefix+"question:{restart-1}", "callback").Val() == "delivered"
	}, nil)
	if posts := rcv.all(); posts[0].status != 503 || posts[1].status != 200 {
		t.Errorf("POSTs answered %d then %d", posts[0].status, posts[1].status)
	}
	_ = second
}

// A question that ends where nothing brings its callback forward (a
// replica that died right after the end) is called back once its deadline
// passed: the callback was registered before the question was created.
func TestCallbackAfterEndWithoutNudge(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t)
	prefix, clock, ch := newCallbackPrefix(), newClock(), newFakeChannel("telegram")
	b := startCallbackEngine(t, prefix, "r1", clock, ch, engine.CallbackConfig{Secret: cbSecret, Policy: localPolicy})
	agent := agentClient(t)
	askWithCallback(t, agent, prefix, "orphan-1", rcv.url("/hook"))
	waitPrompt(t, ch, 1)
	// The end, as a replica that dies right after it leaves it: stored,
	// nothing else.
	if r, err := b.store.End(context.Background(), "orphan-1", askbridge.NoAnswer("orphan-1", askbridge.ReasonCancelled, ""), clock.Now()); err != nil || !r.Won {
		t.Fatalf("End = %+v, %v", r, err)
	}
	step(t, clock, 1, 10*time.Minute)
	// Nothing must be sent: real time for a wrong POST to show up.
	time.Sleep(100 * time.Millisecond)
	if n := len(rcv.all()); n != 0 {
		t.Fatalf("called back before the deadline: %d POSTs", n)
	}
	// Small steps: the attempt runs in real time, and a clock far ahead of
	// it would have it give up instead.
	until(t, "the callback after the deadline", func() bool { return len(rcv.all()) == 1 }, func() { step(t, clock, 1, 10*time.Second) })
	if !strings.Contains(string(rcv.all()[0].body), `"reason":"cancelled"`) {
		t.Errorf("posted %s, want the cancelled result", rcv.all()[0].body)
	}
}

// A quorum question decided by its last vote is called back at once, as
// an answered one is: the vote's end goes through the same path, which
// brings the callback forward (not at its deadline, ten minutes on).
func TestCallbackAfterQuorumVote(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t)
	prefix, clock, ch := newCallbackPrefix(), newClock(), newFakeChannel("telegram")
	b := startCallbackEngine(t, prefix, "r1", clock, ch, engine.CallbackConfig{Secret: cbSecret, Policy: localPolicy})
	agent := agentClient(t)
	body := strings.Replace(quorumAsk("voted-1", 2, trio, ""), `"to":"ops",`, fmt.Sprintf(`"callback":%q,`, rcv.url("/hook")), 1)
	if err := agent.XAdd(context.Background(), &redis.XAddArgs{Stream: prefix + "requests", Values: []any{"ask", body}}).Err(); err != nil {
		t.Fatal(err)
	}
	p := waitPrompt(t, ch, 1)
	for i, who := range []string{"alice", "bob"} {
		r := b.engine.Tap(context.Background(), engine.Tap{EventID: fmt.Sprint("v", i), Message: p.refs[0], Person: person(who), Payload: p.plan.Buttons()[1].Payload})
		if r.Notice != engine.NoticeVoted {
			t.Fatalf("vote %d of %s: %q", i+1, who, r.Notice)
		}
	}
	until(t, "the callback of the decided vote", func() bool { return len(rcv.all()) == 1 }, nil)
	if got := string(rcv.all()[0].body); !strings.Contains(got, `"status":"answered"`) || !strings.Contains(got, `"votes":`) {
		t.Errorf("posted %s, want the answered result with its votes", got)
	}
}

// Callbacks the bridge may not make are refused at validation with an
// error result naming the field and the setting; a request refused for
// another reason still gets its error result called back.
func TestCallbackRefusedRequests(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t)
	policy := engine.CallbackPolicy{Hosts: []string{"*.example.com"}, HTTPHosts: []string{"127.0.0.1"}, PrivateHosts: []string{"127.0.0.1"}}
	tests := []struct {
		name, secret, callback string
		want                   []string
	}{
		{"host not allowed", cbSecret, "https://evil.test/hook", []string{"callback: ", `"evil.test"`, "ASKUSER_CALLBACK_HOSTS"}},
		{"plain http not allowed", cbSecret, "http://agents.example.com/hook", []string{"callback: ", "ASKUSER_CALLBACK_HTTP_HOSTS"}},
		{"wildcard is not the domain", cbSecret, "https://example.com/hook", []string{"callback: ", "ASKUSER_CALLBACK_HOSTS"}},
		{"no secret", "", rcv.url("/hook"), []string{"callback: ", "ASKUSER_CALLBACK_SECRET"}},
		{"not a URL for callbacks", cbSecret, "ftp://agents.example.com/x", []string{"callback: ", "https://"}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			prefix, clock, ch := newCallbackPrefix(), newClock(), newFakeChannel("telegram")
			b := startCallbackEngine(t, prefix, "r1", clock, ch, engine.CallbackConfig{Secret: tc.secret, Policy: policy})
			agent := agentClient(t)
			id := fmt.Sprintf("refused-%d", i)
			askWithCallback(t, agent, prefix, id, tc.callback)
			res := agenttestResult(t, agent, prefix, id)
			if res.Status != askbridge.StatusError {
				t.Fatalf("result %+v, want an error", res)
			}
			for _, w := range tc.want {
				if !strings.Contains(res.Error, w) {
					t.Errorf("error %q does not say %q", res.Error, w)
				}
			}
			if n := len(ch.sends()); n != 0 {
				t.Errorf("a refused request was shown %d times", n)
			}
			until(t, "the rejected event", func() bool { return len(eventsOf(t, b.store, askbridge.EventRejected)) > 0 }, nil)
			if evs := eventsOf(t, b.store, askbridge.EventRejected); len(evs) != 1 || evs[0].ID != id {
				t.Errorf("rejected events %+v", evs)
			}
		})
	}
	t.Run("refused for another reason, called back", func(t *testing.T) {
		t.Parallel()
		prefix, clock, ch := newCallbackPrefix(), newClock(), newFakeChannel("telegram")
		startCallbackEngine(t, prefix, "r1", clock, ch, engine.CallbackConfig{Secret: cbSecret, Policy: policy})
		agent := agentClient(t)
		body := fmt.Sprintf(`{"id":"bad-q","callback":%q,"questions":[]}`, rcv.url("/refused"))
		if err := agent.XAdd(context.Background(), &redis.XAddArgs{Stream: prefix + "requests", Values: []any{"ask", body}}).Err(); err != nil {
			t.Fatal(err)
		}
		until(t, "the refusal's callback", func() bool {
			for _, p := range rcv.all() {
				if p.header.Get("webhook-id") == "bad-q" {
					return true
				}
			}
			return false
		}, nil)
		for _, p := range rcv.all() {
			if p.header.Get("webhook-id") == "bad-q" && !strings.Contains(string(p.body), `"status":"error"`) {
				t.Errorf("posted %s, want the error result", p.body)
			}
		}
	})
}

// agenttestResult pops the one result of a question.
func agenttestResult(t *testing.T, agent *redis.Client, prefix, id string) askbridge.Result {
	t.Helper()
	v, err := agent.BLPop(context.Background(), 10*time.Second, prefix+"result:{"+id+"}").Result()
	if err != nil {
		t.Fatalf("no result for %s: %v", id, err)
	}
	var res askbridge.Result
	if err := json.Unmarshal([]byte(v[1]), &res); err != nil {
		t.Fatal(err)
	}
	return res
}

// A host on the allowlist whose address is loopback is refused as it is
// dialled, unless it is a private host: no POST reaches the receiver, and
// the failure is an event. A redirect, even to an allowed URL, is not
// followed and is a failure.
func TestCallbackAddressAndRedirect(t *testing.T) {
	t.Parallel()
	t.Run("loopback address", func(t *testing.T) {
		t.Parallel()
		rcv := newReceiver(t)
		prefix, clock, ch := newCallbackPrefix(), newClock(), newFakeChannel("telegram")
		policy := engine.CallbackPolicy{HTTPHosts: []string{"localhost"}}
		b := startCallbackEngine(t, prefix, "r1", clock, ch, engine.CallbackConfig{Secret: cbSecret, Policy: policy})
		agent := agentClient(t)
		_, port, _ := net.SplitHostPort(rcv.addr)
		askWithCallback(t, agent, prefix, "private-1", "http://localhost:"+port+"/hook")
		answer(t, b.engine, waitPrompt(t, ch, 1), "ev1")
		until(t, "the refused connection's event", func() bool { return len(eventsOf(t, b.store, askbridge.EventCallbackFailed)) == 1 }, nil)
		ev := eventsOf(t, b.store, askbridge.EventCallbackFailed)[0]
		if !strings.Contains(ev.Error, "loopback") || !strings.Contains(ev.Error, "ASKUSER_CALLBACK_PRIVATE_HOSTS") {
			t.Errorf("event error %q: want the loopback address refused, naming the setting", ev.Error)
		}
		if n := len(rcv.all()); n != 0 {
			t.Errorf("%d POSTs reached a loopback receiver not allowed as private", n)
		}
	})
	t.Run("redirect", func(t *testing.T) {
		t.Parallel()
		target, rcv := newReceiver(t), newReceiver(t)
		rcv.set(http.StatusFound, target.url("/elsewhere"))
		prefix, clock, ch := newCallbackPrefix(), newClock(), newFakeChannel("telegram")
		b := startCallbackEngine(t, prefix, "r1", clock, ch, engine.CallbackConfig{Secret: cbSecret, Policy: localPolicy})
		agent := agentClient(t)
		askWithCallback(t, agent, prefix, "redirect-1", rcv.url("/hook"))
		answer(t, b.engine, waitPrompt(t, ch, 1), "ev1")
		until(t, "the redirect's event", func() bool { return len(eventsOf(t, b.store, askbridge.EventCallbackFailed)) == 1 }, nil)
		if ev := eventsOf(t, b.store, askbridge.EventCallbackFailed)[0]; !strings.Contains(ev.Error, "302") || !strings.Contains(ev.Error, "redirects are not followed") {
			t.Errorf("event error %q", ev.Error)
		}
		if n := len(target.all()); n != 0 {
			t.Errorf("the redirect was followed: %d POSTs at its target", n)
		}
		if st := agent.HGet(context.Background(), prefix+"question:{redirect-1}", "callback").Val(); st != "retrying" {
			t.Errorf("question hash callback = %q, want retrying", st)
		}
	})
}

// Two replicas on one Redis make exactly one successful POST per question,
// 50 questions, each of which fails once first.
func TestCallbackExactlyOnceAcrossReplicas(t *testing.T) {
	t.Parallel()
	const n = 50
	var mu sync.Mutex
	okPosts := map[string]int{}
	failed := map[string]bool{}
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		id := r.Header.Get("webhook-id")
		mu.Lock()
		defer mu.Unlock()
		if !failed[id] {
			failed[id] = true
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		okPosts[id]++
	}))
	t.Cleanup(rcv.Close)
	prefix, clock := newCallbackPrefix(), newClock()
	cfg := engine.CallbackConfig{Secret: cbSecret, Policy: localPolicy}
	ch1, ch2 := newFakeChannel("telegram"), newFakeChannel("telegram")
	startCallbackEngine(t, prefix, "r1", clock, ch1, cfg)
	startCallbackEngine(t, prefix, "r2", clock, ch2, cfg)
	agent := agentClient(t)
	for i := range n {
		body := fmt.Sprintf(`{"id":"many-%d","timeoutSeconds":30,"callback":%q,"questions":[{"id":"q","header":"Q","question":"Go?","options":[{"label":"Yes"},{"label":"No"}]}]}`, i, rcv.URL+"/hook")
		if err := agent.XAdd(context.Background(), &redis.XAddArgs{Stream: prefix + "requests", Values: []any{"ask", body}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	until(t, "every question shown", func() bool { return len(ch1.sends())+len(ch2.sends()) == n }, nil)
	// Every question expires at once; the sweeps of both replicas end them.
	step(t, clock, 2, 31*time.Second)
	delivered := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(okPosts)
	}
	until(t, "every callback delivered", func() bool { return delivered() == n }, func() { step(t, clock, 2, time.Second) })
	// The attempts run in real time, their holds in the clock's: the clock
	// moves on once every delivery is recorded, as it would in life.
	until(t, "every delivery recorded", func() bool {
		for i := range n {
			if agent.HGet(context.Background(), fmt.Sprintf("%squestion:{many-%d}", prefix, i), "callback").Val() != "delivered" {
				return false
			}
		}
		return true
	}, nil)
	// A few more passes of both dispatchers change nothing.
	for range 5 {
		step(t, clock, 2, time.Minute)
	}
	// A second POST of any result must not come: real time for one to.
	time.Sleep(100 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	for i := range n {
		id := fmt.Sprintf("many-%d", i)
		if okPosts[id] != 1 {
			t.Errorf("%s got %d successful POSTs, want exactly 1", id, okPosts[id])
		}
	}
}

// A callback brought forward while an attempt at it is under way (an end
// tried again on another replica nudges it) is taken by the other
// replica's dispatcher, which must wait for that attempt instead of
// posting the result a second time at once.
func TestCallbackNotPostedTwiceAtOnce(t *testing.T) {
	t.Parallel()
	var posts atomic.Int64
	release := make(chan struct{})
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		posts.Add(1)
		<-release
	}))
	t.Cleanup(rcv.Close)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	prefix, clock := newCallbackPrefix(), newClock()
	cfg := engine.CallbackConfig{Secret: cbSecret, Policy: localPolicy}
	ch1, ch2 := newFakeChannel("telegram"), newFakeChannel("telegram")
	r1 := startCallbackEngine(t, prefix, "r1", clock, ch1, cfg)
	startCallbackEngine(t, prefix, "r2", clock, ch2, cfg)
	agent := agentClient(t)
	body := fmt.Sprintf(`{"id":"busy-1","timeoutSeconds":30,"callback":%q,"questions":[{"id":"q","header":"Q","question":"Go?","options":[{"label":"Yes"},{"label":"No"}]}]}`, rcv.URL+"/hook")
	if err := agent.XAdd(context.Background(), &redis.XAddArgs{Stream: prefix + "requests", Values: []any{"ask", body}}).Err(); err != nil {
		t.Fatal(err)
	}
	until(t, "the question shown", func() bool { return len(ch1.sends())+len(ch2.sends()) == 1 }, nil)
	step(t, clock, 2, 31*time.Second)
	until(t, "the first POST under way", func() bool { return posts.Load() == 1 }, func() { step(t, clock, 2, time.Second) })
	// Brought forward while claimed, then a few passes of both dispatchers.
	if err := r1.store.NudgeCallbacks(context.Background(), clock.Now(), "busy-1"); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		step(t, clock, 2, time.Second)
	}
	// A second POST must not start: real time for a wrong one to.
	time.Sleep(100 * time.Millisecond)
	if n := posts.Load(); n != 1 {
		t.Fatalf("%d POSTs at once, want 1", n)
	}
	close(release)
	// The attempt runs in real time and its hold is in the clock's: the
	// clock moves on once the delivery is recorded, as it would in life.
	until(t, "the delivery recorded", func() bool {
		return agent.HGet(context.Background(), prefix+"question:{busy-1}", "callback").Val() == "delivered"
	}, nil)
	for range 5 {
		step(t, clock, 2, time.Minute)
	}
	// Nor after the first was delivered.
	time.Sleep(100 * time.Millisecond)
	if n := posts.Load(); n != 1 {
		t.Errorf("%d POSTs in all, want 1", n)
	}
}
