package web_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/agenttest"
	"github.com/askbridge/askbridge/internal/redistest"
	"github.com/askbridge/askbridge/internal/testwait"
	"github.com/askbridge/askbridge/store"
	"github.com/askbridge/askbridge/web"
)

// redisAddr is the Redis every test of the package shares, each under its
// own key prefix so tests run in parallel.
var (
	redisAddr string
	prefixSeq atomic.Int64
)

// TestMain starts one redis-server for the package (internal/redistest).
// Without redis-server the tests run on the embedded server, unless
// ASKBRIDGE_REQUIRE_REDIS=1 (CI), where that is a failure.
// After the tests, and after the browser and Redis have stopped, no
// goroutine may be left: every engine, event stream, events tail and page
// client must have ended with its test.
func TestMain(m *testing.M) { os.Exit(redistest.Main(m, "web", &redisAddr, stopBrowser)) }

// clock is the engines' clock: the wall clock moved forward by skew, so a
// test can let a deadline pass at once. Its timers and tickers run on the
// wall clock (the engine sweeps every 50ms), so a moved deadline is found
// by the next sweep.
type clock struct {
	clockwork.Clock
	skew atomic.Int64
}

func newClock() *clock { return &clock{Clock: clockwork.NewRealClock()} }

func (c *clock) Now() time.Time          { return c.now() }
func (c *clock) now() time.Time          { return time.Now().Add(time.Duration(c.skew.Load())) }
func (c *clock) advance(d time.Duration) { c.skew.Add(int64(d)) }
func newPrefix() string                  { return fmt.Sprintf("webtest%d:", prefixSeq.Add(1)) }

func newClient(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: redisAddr, PoolSize: 32})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// bridge is one replica: a store, an engine with the web channel, and the
// page's handler behind an httptest server.
type bridge struct {
	prefix string
	// rdb is the agent's own client.
	rdb     *redis.Client
	store   *store.Store
	engine  *engine.Engine
	channel *web.Channel
	handler *web.Handler
	srv     *httptest.Server
	clock   *clock
	token   string
	// gate stands between the server and the handler (cutOff).
	gate *gate
}

// gate cuts a page off from its bridge, as a network failure would: while
// down, every API request's connection is closed without an answer.
type gate struct{ down atomic.Bool }

func (g *gate) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.down.Load() && strings.Contains(r.URL.Path, "/api/") {
			if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
				_ = c.Close()
				return
			}
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// cutOff makes the bridge unreachable for its pages (down: open event
// streams are cut, and every API request fails as if the network had), or
// reachable again.
func (b *bridge) cutOff(down bool) {
	b.gate.down.Store(down)
	if down {
		b.srv.CloseClientConnections()
	}
}

type bridgeOptions struct {
	// prefix shared by replicas; empty gets a fresh one.
	prefix string
	token  string
	clock  *clock
	// heartbeat of the event streams (default: the handler's).
	heartbeat time.Duration
	// maxStreams of the handler (default: the handler's).
	maxStreams int
	// serverTimeout is the server's ReadTimeout and WriteTimeout (default:
	// none).
	serverTimeout time.Duration
}

var replicaSeq atomic.Int64

// startBridge starts a replica; everything stops when the test ends.
func startBridge(t testing.TB, o bridgeOptions) *bridge {
	t.Helper()
	if o.prefix == "" {
		o.prefix = newPrefix()
	}
	if o.clock == nil {
		o.clock = newClock()
	}
	replica := fmt.Sprintf("replica-%d", replicaSeq.Add(1))
	st := store.New(newClient(t), store.Options{Prefix: o.prefix, Consumer: replica, ClaimIdle: 5 * time.Second, AutoPipeline: true})
	ch := web.NewChannel(st, o.clock.now)
	eng := engine.NewEngine(engine.EngineConfig{
		Store:      st,
		Resolve:    resolve,
		Channels:   []engine.Channel{ch, fakeChannel{platform: "slack"}, fakeChannel{platform: "telegram"}, fakeChannel{platform: "discord", refuse: true}},
		Replica:    replica,
		Clock:      o.clock,
		SweepEvery: 50 * time.Millisecond,
		// Stopping a replica waits out the read of the requests stream in
		// progress: a short one keeps each test's teardown short.
		ReadBlock: 100 * time.Millisecond,
		Logger:    testLogger(t),
	})
	// The page is served at the server's own address: the listener comes
	// first, so the handler knows its origin.
	srv := httptest.NewUnstartedServer(nil)
	h, err := web.NewHandler(web.Config{
		Questions: st, History: st, Events: st, Submitter: eng,
		Token: o.token, Heartbeat: o.heartbeat, Logger: testLogger(t),
		Origins: []string{"http://" + srv.Listener.Addr().String()}, MaxStreams: o.maxStreams,
	})
	if err != nil {
		srv.Close()
		t.Fatal(err)
	}
	g := &gate{}
	srv.Config.Handler = g.wrap(h)
	srv.Config.ReadTimeout, srv.Config.WriteTimeout = o.serverTimeout, o.serverTimeout
	srv.Start()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = eng.Run(ctx)
	}()
	t.Cleanup(func() {
		h.Close()
		srv.Close()
		cancel()
		<-done
	})
	return &bridge{prefix: o.prefix, rdb: newClient(t), store: st, engine: eng, channel: ch, handler: h, srv: srv, clock: o.clock, token: o.token, gate: g}
}

// config is a handler config on the bridge's store and engine.
func (b *bridge) config() web.Config {
	return web.Config{Questions: b.store, History: b.store, Events: b.store, Submitter: b.engine}
}

// resolve routes "" and "web" to the page, a "slack:<chat>",
// "telegram:<chat>" or "discord:<chat>" target to that chat (fakeChannel:
// Slack and Telegram show questions, Discord cannot be reached), and the
// route "oncall-lead" to slack:C0999; anything else is refused.
func resolve(to string) (engine.Route, error) {
	switch to {
	case "", "web":
		return engine.Route{Target: askbridge.Target{Platform: "web"}}, nil
	case "oncall-lead":
		return engine.Route{Target: askbridge.Target{Platform: "slack", Chat: "C0999"}}, nil
	}
	if platform, chat, ok := strings.Cut(to, ":"); ok && chat != "" && (platform == "slack" || platform == "telegram" || platform == "discord") {
		return engine.Route{Target: askbridge.Target{Platform: platform, Chat: chat}}, nil
	}
	return engine.Route{Target: askbridge.Target{}}, fmt.Errorf("to: unknown route %q", to)
}

// fakeChannel is a chat platform beside the page, for questions shown in
// several places: Send "posts" each prompt as one message, referenced
// "<question id>@<platform>", or, with refuse, is refused for good (the
// bot is not in the chat). It receives nothing, and the rest succeeds
// doing nothing.
type fakeChannel struct {
	platform string
	refuse   bool
}

func (f fakeChannel) Platform() string { return f.platform }

func (f fakeChannel) Capabilities() engine.Capabilities {
	return engine.Capabilities{Buttons: true, PayloadBytes: 64}
}

func (f fakeChannel) Send(_ context.Context, d engine.Delivery) error {
	if f.refuse {
		return &engine.SendError{Kind: engine.Permanent, Reason: "chat not found"}
	}
	if d.From > 0 {
		return nil
	}
	return d.Sent(engine.MessageRef{Platform: f.platform, Chat: d.Chat, Message: d.Plan.ID + "@" + f.platform})
}

func (f fakeChannel) Finish(context.Context, engine.MessageRef, engine.Ending) error {
	return nil
}

func (f fakeChannel) Run(ctx context.Context, _ engine.Inbox) error {
	<-ctx.Done()
	return nil
}

func (f fakeChannel) State() engine.ChannelState { return engine.StateConnected }

// testLogger writes to the test log when -v is set and the test is running.
func testLogger(t testing.TB) *slog.Logger {
	if !testing.Verbose() {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	defer func() { _ = recover() }() // a log line after the test ended
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// ask pushes a request as an agent does and returns its id.
func (b *bridge) ask(t testing.TB, req string) string {
	t.Helper()
	return b.agentOf().Ask(t, req)
}

// cancel pushes a cancel entry as an agent does.
func (b *bridge) cancelQuestion(t testing.TB, id string) {
	t.Helper()
	b.agentOf().Cancel(t, id)
}

// result waits for the question's result as an agent does (BLPOP).
func (b *bridge) result(t testing.TB, id string, wait time.Duration) askbridge.Result {
	t.Helper()
	return b.agentOf().Result(t, id, wait)
}

// resultCount is LLEN of the question's result list.
func (b *bridge) resultCount(t testing.TB, id string) int64 {
	t.Helper()
	return b.agentOf().ResultCount(t, id)
}

func (b *bridge) agentOf() agenttest.Agent {
	return agenttest.Agent{RDB: b.rdb, Prefix: b.prefix}
}

// request sends an API request with the bridge's token (if any).
func (b *bridge) request(t testing.TB, method, path string, body any, hdr map[string]string) (*http.Response, []byte) {
	t.Helper()
	var rd io.Reader
	switch v := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(v)
	default:
		j, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, b.srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if b.token != "" {
		req.Header.Set("Authorization", "Bearer "+b.token)
	}
	for k, v := range hdr {
		switch {
		case k == "Host":
			req.Host = v
		case v == "":
			req.Header.Del(k)
		default:
			req.Header.Set(k, v)
		}
	}
	res, err := b.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, data
}

// answer posts an answer body for id.
func (b *bridge) answer(t testing.TB, id string, body any) (int, map[string]any) {
	t.Helper()
	res, data := b.request(t, http.MethodPost, "/api/questions/"+id+"/answer", body, nil)
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("answer reply %d is not JSON: %s", res.StatusCode, data)
	}
	return res.StatusCode, out
}

type openList struct {
	Now       int64            `json:"now"`
	Questions []listedQuestion `json:"questions"`
}

// listedQuestion is one question of GET /api/questions.
type listedQuestion struct {
	ID          string               `json:"id"`
	Agent       string               `json:"agent"`
	Locale      string               `json:"locale"`
	Intro       string               `json:"intro"`
	ContextHTML string               `json:"contextHTML"`
	Questions   []askbridge.Question `json:"questions"`
	Created     int64                `json:"created"`
	Deadline    int64                `json:"deadline"`
	Asked       int64                `json:"asked"`
	MayAnswer   bool                 `json:"mayAnswer"`
	Places      []listedPlace        `json:"places"`
	OffersSeen  bool                 `json:"offersSeen"`
	SeenBy      string               `json:"seenBy"`
	Notes       []string             `json:"notes"`
	Reminders   int                  `json:"reminders"`
	// A quorum question's vote (ask-user.md §6).
	Quorum    int              `json:"quorum"`
	TallyLine string           `json:"tallyLine"`
	Tally     []listedTally    `json:"tally"`
	Abstained int              `json:"abstained"`
	Voters    []string         `json:"voters"`
	Voted     bool             `json:"voted"`
	MyVote    *web.HistoryVote `json:"myVote"`
}

// listedTally is one answer of a listed quorum question's tally.
type listedTally struct {
	Answers []web.HistoryAnswer `json:"answers"`
	Count   int                 `json:"count"`
}

// listedPlace is another place a listed question is open in.
type listedPlace struct {
	Name     string `json:"name"`
	Platform string `json:"platform"`
}

// listed finds question id in the list; ok is false when it is not there.
func (l openList) listed(id string) (listedQuestion, bool) {
	for _, q := range l.Questions {
		if q.ID == id {
			return q, true
		}
	}
	return listedQuestion{}, false
}

// open lists the open questions through the API.
func (b *bridge) open(t testing.TB) openList {
	t.Helper()
	res, data := b.request(t, http.MethodGet, "/api/questions", nil, nil)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/questions = %d %s", res.StatusCode, data)
	}
	var l openList
	if err := json.Unmarshal(data, &l); err != nil {
		t.Fatal(err)
	}
	return l
}

// waitOpen waits until the page lists every id.
func (b *bridge) waitOpen(t testing.TB, ids ...string) openList {
	t.Helper()
	var l openList
	have := map[string]bool{}
	listed := testwait.Until(10*time.Second, func() bool {
		l = b.open(t)
		clear(have)
		for _, q := range l.Questions {
			have[q.ID] = true
		}
		for _, id := range ids {
			if !have[id] {
				return false
			}
		}
		return true
	})
	if !listed {
		t.Fatalf("questions %v not listed; have %v", ids, have)
	}
	return l
}

// history reads the timeline through the API.
func (b *bridge) history(t testing.TB) []web.HistoryEntry {
	t.Helper()
	res, data := b.request(t, http.MethodGet, "/api/history?limit=100", nil, nil)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/history = %d %s", res.StatusCode, data)
	}
	var out struct {
		Entries []web.HistoryEntry `json:"entries"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out.Entries
}

// waitHistory waits until the timeline holds id and returns its entry.
func (b *bridge) waitHistory(t testing.TB, id string) web.HistoryEntry {
	t.Helper()
	var entry web.HistoryEntry
	found := testwait.Until(10*time.Second, func() bool {
		for _, e := range b.history(t) {
			if e.ID == id {
				entry = e
				return true
			}
		}
		return false
	})
	if !found {
		t.Fatalf("no timeline entry for %s", id)
	}
	return entry
}

// sse is a client of the events stream.
type sse struct {
	events chan sseEvent
	cancel context.CancelFunc
	done   chan struct{}
}

type sseEvent struct {
	ID   string
	Data map[string]any
}

// openEvents connects to api/events (query is added to the URL as is).
func (b *bridge) openEvents(t testing.TB, query string, hdr map[string]string) (*sse, *http.Response) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.srv.URL+"/api/events"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	res, err := b.srv.Client().Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	s := &sse{events: make(chan sseEvent, 100), cancel: cancel, done: make(chan struct{})}
	if res.StatusCode != http.StatusOK {
		_ = res.Body.Close()
		cancel()
		close(s.done)
		return s, res
	}
	go func() {
		defer close(s.done)
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		var cur sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if cur.Data != nil {
					s.events <- cur
				}
				cur = sseEvent{}
			case strings.HasPrefix(line, "id: "):
				cur.ID = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "data: "):
				_ = json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &cur.Data)
			}
		}
	}()
	t.Cleanup(s.close)
	return s, res
}

func (s *sse) close() {
	s.cancel()
	<-s.done
}

// next waits for an event of kind for question id, skipping others.
func (s *sse) next(t testing.TB, kind, id string) sseEvent {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev := <-s.events:
			if ev.Data["event"] == kind && ev.Data["id"] == id {
				return ev
			}
		case <-s.done:
			t.Fatalf("event stream ended before %s of %s", kind, id)
		case <-timeout:
			t.Fatalf("no %s event for %s", kind, id)
		}
	}
}

// request JSON builders.

func oneQuestion(id string) string {
	return fmt.Sprintf(`{"id":%q,"to":"web","agent":"deploy-bot","questions":[{"id":"deploy_target","header":"Deployment target","question":"Where should this deploy?","options":[{"label":"Staging (Recommended)","description":"Safer default"},{"label":"Production"}]}]}`, id)
}

func multiSelect(id string) string {
	return fmt.Sprintf(`{"id":%q,"to":"web","questions":[{"id":"regions","header":"Regions","question":"Which regions should get the release?","multiSelect":true,"options":[{"label":"EU"},{"label":"US"},{"label":"Asia"}]}]}`, id)
}

func threeQuestions(id string) string {
	return fmt.Sprintf(`{"id":%q,"to":"web","agent":"release-bot","questions":[`+
		`{"id":"target","header":"Target","question":"Where should this deploy?","options":[{"label":"Staging"},{"label":"Production"}]},`+
		`{"id":"checks","header":"Checks","question":"Which checks should run first?","multiSelect":true,"options":[{"label":"Unit"},{"label":"Integration"},{"label":"Load"}]},`+
		`{"id":"window","header":"Window","question":"When should it go out?","options":[{"label":"Now"},{"label":"Tonight"}]}]}`, id)
}

// buildFailure is the context of the build-failure example (ask-user.md
// §7): bold, inline code, a code block, a link and a mention that must
// stay text.
const buildFailure = "Build **#4812** failed on `main`:\n```\nTestPay … FAIL\n```\nSee [the log](https://ci.example.com/4812) — @everyone"

// thaiQuestion is oneQuestion in Thai ("locale":"th"), with context.
func thaiQuestion(id, context string) string {
	ctx, _ := json.Marshal(context)
	return fmt.Sprintf(`{"id":%q,"to":"web","agent":"deploy-bot","locale":"th","context":%s,"questions":[{"id":"deploy_target","header":"เป้าหมาย","question":"จะปล่อยขึ้นที่ไหน?","options":[{"label":"สเตจจิ้ง (แนะนำ)","description":"ปลอดภัยกว่า"},{"label":"โปรดักชัน"}]}]}`, id, ctx)
}
