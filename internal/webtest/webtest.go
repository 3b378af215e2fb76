// Package webtest runs the web page's handler and channel the way a
// replica of the bridge does, for the tests of package web and the browser
// tests of web/browsertest: a store on a shared Redis, an engine with the
// web channel and stand-ins for other platforms, and the handler behind an
// httptest server. Each bridge has its own key prefix, so tests run in
// parallel. The helpers speak to the bridge as an agent (over Redis) and as
// the page (over the HTTP API) would.
package webtest

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
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/agenttest"
	"github.com/askbridge/askbridge/internal/link"
	"github.com/askbridge/askbridge/internal/redistest"
	"github.com/askbridge/askbridge/internal/testwait"
	"github.com/askbridge/askbridge/store"
	"github.com/askbridge/askbridge/web"
)

// redisAddr is the Redis every test of the package shares (Main), each
// bridge under its own key prefix.
var (
	redisAddr string
	prefixSeq atomic.Int64
)

// Main is a TestMain's body: it starts one redis-server for the test
// binary (internal/redistest) and runs the tests. Without redis-server
// the tests run on the embedded server, unless ASKBRIDGE_REQUIRE_REDIS=1
// (CI), where that is a failure. After the tests, after the functions of
// after and after Redis has stopped, no goroutine may be left: every
// engine, event stream, events tail and page client must have ended with
// its test.
func Main(m *testing.M, pkg string, after ...func()) int {
	return redistest.Main(m, pkg, &redisAddr, after...)
}

// Clock is the engines' clock: the wall clock moved forward by skew, so a
// test can let a deadline pass at once. Its timers and tickers run on the
// wall clock (the engine sweeps every 50ms), so a moved deadline is found
// by the next sweep.
type Clock struct {
	clockwork.Clock
	skew atomic.Int64
}

// NewClock is a Clock without skew.
func NewClock() *Clock { return &Clock{Clock: clockwork.NewRealClock()} }

// Now is the wall clock's time moved forward by every Advance.
func (c *Clock) Now() time.Time { return time.Now().Add(time.Duration(c.skew.Load())) }

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) { c.skew.Add(int64(d)) }

// NewPrefix is a key prefix no other bridge of the test binary uses.
func NewPrefix() string { return fmt.Sprintf("webtest%d:", prefixSeq.Add(1)) }

// NewClient is a client of the shared Redis (Main), closed when the test
// ends.
func NewClient(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: redisAddr, PoolSize: 32})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Bridge is one replica: a store, an engine with the web channel, and the
// page's handler behind an httptest server.
type Bridge struct {
	Prefix string
	// RDB is the agent's own client.
	RDB     *redis.Client
	Store   *store.Store
	Engine  *engine.Engine
	Channel *web.Channel
	Handler *web.Handler
	Server  *httptest.Server
	Clock   *Clock
	Token   string
	// Links signs the bridge's answer links (Options.Links); nil when
	// links are off.
	Links *link.Signer
	// gate stands between the server and the handler (CutOff).
	gate *gate
	// stopEngine stops the engine (StopEngine), once.
	stopEngine func()
}

// StopEngine stops the bridge's engine and waits for it, leaving the
// page's handler serving: nothing of the bridge writes to Redis after it
// but what a request makes the handler write. Safe to repeat.
func (b *Bridge) StopEngine() { b.stopEngine() }

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

// CutOff makes the bridge unreachable for its pages (down: open event
// streams are cut, and every API request fails as if the network had), or
// reachable again.
func (b *Bridge) CutOff(down bool) {
	b.gate.down.Store(down)
	if down {
		b.Server.CloseClientConnections()
	}
}

// Options of Start.
type Options struct {
	// Prefix shared by replicas; empty gets a fresh one.
	Prefix string
	Token  string
	Clock  *Clock
	// Heartbeat of the event streams (default: the handler's).
	Heartbeat time.Duration
	// MaxStreams of the handler (default: the handler's).
	MaxStreams int
	// ServerTimeout is the server's ReadTimeout and WriteTimeout (default:
	// none).
	ServerTimeout time.Duration
	// Standing turns standing answers on in the engine (ask-user.md §9).
	Standing bool
	// Links turns answer links on (ask-user.md §10) with LinkSecret, or
	// LinkSecret32 when it is empty; the public URL is the server's.
	Links      bool
	LinkSecret []byte
}

// LinkSecret32 is the link secret of a bridge started with Links and no
// LinkSecret of its own.
var LinkSecret32 = []byte("webtest link secret of 32 bytes!")

var replicaSeq atomic.Int64

// Start starts a replica; everything stops when the test ends.
func Start(t testing.TB, o Options) *Bridge {
	t.Helper()
	if o.Prefix == "" {
		o.Prefix = NewPrefix()
	}
	if o.Clock == nil {
		o.Clock = NewClock()
	}
	replica := fmt.Sprintf("replica-%d", replicaSeq.Add(1))
	st := store.New(NewClient(t), store.Options{Prefix: o.Prefix, Consumer: replica, ClaimIdle: 5 * time.Second, AutoPipeline: true})
	ch := web.NewChannel(st, o.Clock.Now)
	eng := engine.NewEngine(engine.EngineConfig{
		Store:      st,
		Resolve:    Resolve,
		Channels:   []engine.Channel{ch, FakeChannel{platform: "slack"}, FakeChannel{platform: "telegram"}, FakeChannel{platform: "discord", refuse: true}, FakeChannel{platform: askbridge.PlatformEmail}},
		Replica:    replica,
		Clock:      o.Clock,
		Standing:   o.Standing,
		SweepEvery: 50 * time.Millisecond,
		// Stopping a replica waits out the read of the requests stream in
		// progress: a short one keeps each test's teardown short.
		ReadBlock: 100 * time.Millisecond,
		Logger:    Logger(t),
	})
	// The page is served at the server's own address: the listener comes
	// first, so the handler knows its origin.
	srv := httptest.NewUnstartedServer(nil)
	cfg := web.Config{
		Questions: st, History: st, Events: st, Submitter: eng,
		Token: o.Token, Heartbeat: o.Heartbeat, Logger: Logger(t),
		Origins: []string{"http://" + srv.Listener.Addr().String()}, MaxStreams: o.MaxStreams,
	}
	links, err := linkSigner(o)
	if err != nil {
		srv.Close()
		t.Fatal(err)
	}
	if links != nil {
		cfg.Links, cfg.PublicURL = links, "http://"+srv.Listener.Addr().String()
	}
	h, err := web.NewHandler(cfg)
	if err != nil {
		srv.Close()
		t.Fatal(err)
	}
	g := &gate{}
	srv.Config.Handler = g.wrap(h)
	srv.Config.ReadTimeout, srv.Config.WriteTimeout = o.ServerTimeout, o.ServerTimeout
	srv.Start()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = eng.Run(ctx)
	}()
	stop := sync.OnceFunc(func() {
		cancel()
		<-done
	})
	t.Cleanup(func() {
		h.Close()
		srv.Close()
		stop()
	})
	return &Bridge{stopEngine: stop, Prefix: o.Prefix, RDB: NewClient(t), Store: st, Engine: eng, Channel: ch, Handler: h, Server: srv, Clock: o.Clock, Token: o.Token, Links: links, gate: g}
}

// linkSigner is the signer of o's answer links, nil without Links.
func linkSigner(o Options) (*link.Signer, error) {
	if !o.Links {
		return nil, nil
	}
	secret := o.LinkSecret
	if len(secret) == 0 {
		secret = LinkSecret32
	}
	return link.NewSigner(secret)
}

// LinkPath is the path of the answer link for claims (link.PathPrefix and
// the token), signed by the bridge.
func (b *Bridge) LinkPath(t testing.TB, c link.Claims) string {
	t.Helper()
	tok, err := b.Links.Token(c)
	if err != nil {
		t.Fatal(err)
	}
	return link.PathPrefix + tok
}

// Config is a handler config on the bridge's store and engine.
func (b *Bridge) Config() web.Config {
	return web.Config{Questions: b.Store, History: b.Store, Events: b.Store, Submitter: b.Engine}
}

// Resolve routes "" and "web" to the page, a "slack:<chat>",
// "telegram:<chat>", "discord:<chat>" or "email:<address>" target to that
// chat (FakeChannel: Slack, Telegram and email show questions, Discord
// cannot be reached), the route "oncall-lead" to slack:C0999, and the
// route "approvers" to email:alice@example.com, where Alice by email and
// telegram:1 and telegram:2 may answer; anything else is refused.
func Resolve(to string) (engine.Route, error) {
	switch to {
	case "", "web":
		return engine.Route{Target: askbridge.Target{Platform: "web"}}, nil
	case "oncall-lead":
		return engine.Route{Target: askbridge.Target{Platform: "slack", Chat: "C0999"}}, nil
	case "approvers":
		return engine.Route{Target: askbridge.Target{Platform: askbridge.PlatformEmail, Chat: "alice@example.com"}, Answerers: []string{"email:alice@example.com", "telegram:1", "telegram:2"}}, nil
	}
	if addr, ok := strings.CutPrefix(to, askbridge.PlatformEmail+":"); ok {
		a, err := askbridge.ParseEmailAddress(addr)
		if err != nil {
			return engine.Route{}, fmt.Errorf("to: %w", err)
		}
		return engine.Route{Target: askbridge.Target{Platform: askbridge.PlatformEmail, Chat: a}}, nil
	}
	if platform, chat, ok := strings.Cut(to, ":"); ok && chat != "" && (platform == "slack" || platform == "telegram" || platform == "discord") {
		return engine.Route{Target: askbridge.Target{Platform: platform, Chat: chat}}, nil
	}
	return engine.Route{Target: askbridge.Target{}}, fmt.Errorf("to: unknown route %q", to)
}

// FakeChannel is a chat platform beside the page, for questions shown in
// several places: Send "posts" each prompt as one message, referenced
// "<question id>@<platform>", or, with refuse, is refused for good (the
// bot is not in the chat). It receives nothing, and the rest succeeds
// doing nothing.
type FakeChannel struct {
	platform string
	refuse   bool
}

func (f FakeChannel) Platform() string { return f.platform }

func (f FakeChannel) Capabilities() engine.Capabilities {
	return engine.Capabilities{Buttons: true, PayloadBytes: 64}
}

func (f FakeChannel) Send(_ context.Context, d engine.Delivery) error {
	if f.refuse {
		return &engine.SendError{Kind: engine.Permanent, Reason: "chat not found"}
	}
	if d.From == 0 {
		d.Sent(engine.MessageRef{Platform: f.platform, Chat: d.Chat, Message: d.Plan.ID + "@" + f.platform})
	}
	return nil
}

func (f FakeChannel) Finish(context.Context, engine.MessageRef, engine.Ending) error {
	return nil
}

func (f FakeChannel) Run(ctx context.Context, _ engine.Inbox) error {
	<-ctx.Done()
	return nil
}

func (f FakeChannel) State() engine.ChannelState { return engine.StateConnected }

// Logger writes to the test log when -v is set and the test is running.
func Logger(t testing.TB) *slog.Logger {
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

// Ask pushes a request as an agent does and returns its id.
func (b *Bridge) Ask(t testing.TB, req string) string {
	t.Helper()
	return b.Agent().Ask(t, req)
}

// CancelQuestion pushes a cancel entry as an agent does.
func (b *Bridge) CancelQuestion(t testing.TB, id string) {
	t.Helper()
	b.Agent().Cancel(t, id)
}

// Result waits for the question's result as an agent does (BLPOP).
func (b *Bridge) Result(t testing.TB, id string, wait time.Duration) askbridge.Result {
	t.Helper()
	return b.Agent().Result(t, id, wait)
}

// ResultCount is LLEN of the question's result list.
func (b *Bridge) ResultCount(t testing.TB, id string) int64 {
	t.Helper()
	return b.Agent().ResultCount(t, id)
}

// Agent is an agent of the bridge's key prefix.
func (b *Bridge) Agent() agenttest.Agent {
	return agenttest.Agent{RDB: b.RDB, Prefix: b.Prefix}
}

// SetHeaders sets hdr on req: "Host" its Host, an empty value removes
// that header.
func SetHeaders(req *http.Request, hdr map[string]string) {
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
}

// Request sends an API request with the bridge's token (if any).
func (b *Bridge) Request(t testing.TB, method, path string, body any, hdr map[string]string) (*http.Response, []byte) {
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
	req, err := http.NewRequestWithContext(t.Context(), method, b.Server.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if b.Token != "" {
		req.Header.Set("Authorization", "Bearer "+b.Token)
	}
	SetHeaders(req, hdr)
	res, err := b.Server.Client().Do(req)
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

// Answer posts an answer body for id.
func (b *Bridge) Answer(t testing.TB, id string, body any) (int, map[string]any) {
	t.Helper()
	res, data := b.Request(t, http.MethodPost, "/api/questions/"+id+"/answer", body, nil)
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("answer reply %d is not JSON: %s", res.StatusCode, data)
	}
	return res.StatusCode, out
}

// OpenList is the reply of GET /api/questions.
type OpenList struct {
	Now       int64            `json:"now"`
	Questions []ListedQuestion `json:"questions"`
}

// ListedQuestion is one question of GET /api/questions.
type ListedQuestion struct {
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
	Places      []ListedPlace        `json:"places"`
	OffersSeen  bool                 `json:"offersSeen"`
	SeenBy      string               `json:"seenBy"`
	Notes       []string             `json:"notes"`
	Reminders   int                  `json:"reminders"`
	// A quorum question's vote (ask-user.md §6).
	Quorum    int              `json:"quorum"`
	TallyLine string           `json:"tallyLine"`
	Tally     []ListedTally    `json:"tally"`
	Abstained int              `json:"abstained"`
	Voters    []string         `json:"voters"`
	Voted     bool             `json:"voted"`
	MyVote    *web.HistoryVote `json:"myVote"`
}

// ListedTally is one answer of a listed quorum question's tally.
type ListedTally struct {
	Answers []web.HistoryAnswer `json:"answers"`
	Count   int                 `json:"count"`
}

// ListedPlace is another place a listed question is open in.
type ListedPlace struct {
	Name     string `json:"name"`
	Platform string `json:"platform"`
}

// Listed finds question id in the list; ok is false when it is not there.
func (l OpenList) Listed(id string) (ListedQuestion, bool) {
	for _, q := range l.Questions {
		if q.ID == id {
			return q, true
		}
	}
	return ListedQuestion{}, false
}

// Open lists the open questions through the API.
func (b *Bridge) Open(t testing.TB) OpenList {
	t.Helper()
	res, data := b.Request(t, http.MethodGet, "/api/questions", nil, nil)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/questions = %d %s", res.StatusCode, data)
	}
	var l OpenList
	if err := json.Unmarshal(data, &l); err != nil {
		t.Fatal(err)
	}
	return l
}

// WaitOpen waits until the page lists every id.
func (b *Bridge) WaitOpen(t testing.TB, ids ...string) OpenList {
	t.Helper()
	var l OpenList
	have := map[string]bool{}
	listed := testwait.Until(10*time.Second, func() bool {
		l = b.Open(t)
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

// History reads the timeline through the API.
func (b *Bridge) History(t testing.TB) []web.HistoryEntry {
	t.Helper()
	res, data := b.Request(t, http.MethodGet, "/api/history?limit=100", nil, nil)
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

// WaitHistory waits until the timeline holds id and returns its entry.
func (b *Bridge) WaitHistory(t testing.TB, id string) web.HistoryEntry {
	t.Helper()
	var entry web.HistoryEntry
	found := testwait.Until(10*time.Second, func() bool {
		for _, e := range b.History(t) {
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

// Events is a client of the events stream: C has its events.
type Events struct {
	C      chan Event
	cancel context.CancelFunc
	done   chan struct{}
}

// Event is one server-sent event: its id and its data, decoded.
type Event struct {
	ID   string
	Data map[string]any
}

// OpenEvents connects to api/events (query is added to the URL as is).
func (b *Bridge) OpenEvents(t testing.TB, query string, hdr map[string]string) (*Events, *http.Response) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.Server.URL+"/api/events"+query, nil)
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
	res, err := b.Server.Client().Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	s := &Events{C: make(chan Event, 100), cancel: cancel, done: make(chan struct{})}
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
		var cur Event
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if cur.Data != nil {
					s.C <- cur
				}
				cur = Event{}
			case strings.HasPrefix(line, "id: "):
				cur.ID = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "data: "):
				_ = json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &cur.Data)
			}
		}
	}()
	t.Cleanup(s.Close)
	return s, res
}

// Close ends the stream and waits for its reader.
func (s *Events) Close() {
	s.cancel()
	<-s.done
}

// Next waits for an event of kind for question id, skipping others.
func (s *Events) Next(t testing.TB, kind, id string) Event {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev := <-s.C:
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

// Request JSON builders.

// OneQuestion is one single-select question on the page, from deploy-bot.
func OneQuestion(id string) string {
	return fmt.Sprintf(`{"id":%q,"to":"web","agent":"deploy-bot","questions":[{"id":"deploy_target","header":"Deployment target","question":"Where should this deploy?","options":[{"label":"Staging (Recommended)","description":"Safer default"},{"label":"Production"}]}]}`, id)
}

// RememberQuestion is OneQuestion to target to (a Resolve target) with
// remember: key deploy:prod, kept for 1 h or 24 h (ask-user.md §9).
func RememberQuestion(id, to string) string {
	return fmt.Sprintf(`{"id":%q,"to":%q,"agent":"deploy-bot","remember":{"key":"deploy:prod","offer":[3600,86400]},"questions":[{"id":"deploy_target","header":"Deployment target","question":"Where should this deploy?","options":[{"label":"Staging (Recommended)","description":"Safer default"},{"label":"Production"}]}]}`, id, to)
}

// MultiSelect is one multi-select question on the page.
func MultiSelect(id string) string {
	return fmt.Sprintf(`{"id":%q,"to":"web","questions":[{"id":"regions","header":"Regions","question":"Which regions should get the release?","multiSelect":true,"options":[{"label":"EU"},{"label":"US"},{"label":"Asia"}]}]}`, id)
}

// ThreeQuestions is a request of three questions on the page, from
// release-bot; the second is multi-select.
func ThreeQuestions(id string) string {
	return fmt.Sprintf(`{"id":%q,"to":"web","agent":"release-bot","questions":[`+
		`{"id":"target","header":"Target","question":"Where should this deploy?","options":[{"label":"Staging"},{"label":"Production"}]},`+
		`{"id":"checks","header":"Checks","question":"Which checks should run first?","multiSelect":true,"options":[{"label":"Unit"},{"label":"Integration"},{"label":"Load"}]},`+
		`{"id":"window","header":"Window","question":"When should it go out?","options":[{"label":"Now"},{"label":"Tonight"}]}]}`, id)
}

// BuildFailure is the context of the build-failure example (ask-user.md
// §7): bold, inline code, a code block, a link and a mention that must
// stay text.
const BuildFailure = "Build **#4812** failed on `main`:\n```\nTestPay … FAIL\n```\nSee [the log](https://ci.example.com/4812) — @everyone"

// ThaiQuestion is OneQuestion in Thai ("locale":"th"), with context.
func ThaiQuestion(id, context string) string {
	ctx, _ := json.Marshal(context)
	return fmt.Sprintf(`{"id":%q,"to":"web","agent":"deploy-bot","locale":"th","context":%s,"questions":[{"id":"deploy_target","header":"เป้าหมาย","question":"จะปล่อยขึ้นที่ไหน?","options":[{"label":"สเตจจิ้ง (แนะนำ)","description":"ปลอดภัยกว่า"},{"label":"โปรดักชัน"}]}]}`, id, ctx)
}

// Voters beside the page.
var (
	Alice = askbridge.Person{Platform: "telegram", ID: "1", Name: "Alice"}
	Bob   = askbridge.Person{Platform: "telegram", ID: "2", Name: "Bob"}
)

// QuorumQuestion is a 2-of-3 question on the page: the page, Alice and
// Bob may answer. extra is more fields, each with its comma.
func QuorumQuestion(id, extra string) string {
	return fmt.Sprintf(`{"id":%q,"to":"web","agent":"change-bot","quorum":2,"answerers":["web:web","telegram:1","telegram:2"]%s,`+
		`"questions":[{"id":"change","header":"Change","question":"Approve the change to the payment service?","options":[{"label":"Approve"},{"label":"Reject"}]}]}`, id, extra)
}

// Vote votes on question id as who would on their platform: through the
// engine, with the question as it stands. A nil answer is an abstention.
func (b *Bridge) Vote(t testing.TB, id string, who askbridge.Person, answers map[string][]string) engine.Submitted {
	t.Helper()
	rec, found, err := b.Store.Get(t.Context(), id)
	if err != nil || !found {
		t.Fatalf("get %s: %v, found %v", id, err, found)
	}
	a := engine.Answer{By: who, Via: askbridge.ViaButton, Skip: answers == nil, Values: answers, Place: rec.PlaceAt(askbridge.Target{Platform: "web"})}
	sub, err := b.Engine.SubmitRecord(t.Context(), rec, a)
	if err != nil {
		t.Fatalf("%s votes on %s: %v", who.Name, id, err)
	}
	return sub
}

// Change is the answer label to QuorumQuestion's question.
func Change(label string) map[string][]string { return map[string][]string{"change": {label}} }

// SameAnswers reports whether two answer sets are equal.
func SameAnswers(a, b map[string][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}
