// Package fakeslack is a fake Slack for tests: the Web API methods the
// bridge calls, socket mode over a local websocket, and a signed-HTTP client
// for HTTP mode, with helpers for a test to play a person (press a button,
// post a message, reply in a thread) and to read a channel's messages as
// they now stand. It keeps Slack's wire formats, limits and error bodies:
// form-encoded Web API calls answered {"ok":false,"error":"…"} with HTTP
// 200, 429 with Retry-After past a configurable rate, envelopes that must be
// acknowledged within 3 seconds or are delivered again with retry_attempt,
// websocket pings, and each envelope handed to one open connection.
package fakeslack

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"
)

// Identities of the fake workspace.
const (
	TeamID    = "T0FAKE"
	AppID     = "A0FAKE"
	BotUserID = "U0BOT"
	BotID     = "B0BOT"
)

// Limits Slack enforces on chat.postMessage and chat.update.
const (
	// Slack: up to 50 blocks per message (reference/block-kit/blocks).
	MaxBlocks = 50
	// Slack: an actions block holds at most 25 elements (actions-block).
	MaxActionElements = 25
	// Slack: button text at most 75 characters, value at most 2000,
	// action_id at most 255 (button-element).
	MaxButtonText  = 75
	MaxButtonValue = 2000
	MaxActionID    = 255
	// Slack: a section's text is at most 3000 characters (section block).
	MaxSectionText = 3000
	// Slack: a header's text is at most 150 characters (header block).
	MaxHeaderText = 150
)

// Options configure a fake.
type Options struct {
	BotToken      string
	AppToken      string
	SigningSecret string
	// AckTimeout is how long an envelope waits for its ack before it is
	// delivered again (Slack: 3 s).
	AckTimeout time.Duration
	// MaxRetries bounds redeliveries of an envelope (Slack: 3).
	MaxRetries int
	// PingEvery is how often the websocket pings (default 100 ms).
	PingEvery time.Duration
}

// Message is a channel message as it now stands.
type Message struct {
	Channel  string
	TS       string
	ThreadTS string
	User     string
	BotID    string
	Text     string
	// Blocks is the message's blocks as JSON (nil for a person's message).
	Blocks json.RawMessage
	// Updates counts the chat.update calls on it.
	Updates int
}

// Ephemeral is a chat.postEphemeral: visible to one user only.
type Ephemeral struct {
	Channel string
	User    string
	Text    string
}

// Call is one Web API call as received.
type Call struct {
	Method string
	Form   url.Values
}

// Server is the fake Slack.
type Server struct {
	opts Options
	srv  *httptest.Server
	// URL is the base; the Web API is at URL + "/api/".
	URL string

	mu         sync.Mutex
	cond       *sync.Cond
	tsSeq      int64
	channels   map[string][]*Message
	chanErrors map[string]string
	ephemerals []Ephemeral
	calls      []Call
	// rate limit on chat.* methods: at most rateN calls per rateWindow.
	rateN      int
	rateWindow time.Duration
	retryAfter int
	recent     []time.Time
	limited    int
	// socket mode
	conns    []*conn
	next     int
	envSeq   int
	pending  map[string]*envelope
	queue    []*envelope
	opened   int
	acked    int
	redelivd int
	// dropAfter closes the connection of the next envelope once written.
	dropAfter bool
	// HTTP mode
	eventsURL, interactURL string
	httpClient             *http.Client
	evSeq                  int
}

type conn struct {
	id     int
	ws     *websocket.Conn
	wmu    sync.Mutex
	closed chan struct{}
	once   sync.Once
}

type envelope struct {
	id      string
	typ     string
	payload json.RawMessage
	attempt int
	timer   *time.Timer
	// conn is the connection it was last sent on; only an ack on that
	// connection counts.
	conn *conn
}

// New starts a fake Slack on 127.0.0.1. Close it when done.
func New(opts Options) *Server {
	if opts.AckTimeout <= 0 {
		opts.AckTimeout = 3 * time.Second
	}
	if opts.MaxRetries <= 0 {
		opts.MaxRetries = 3
	}
	if opts.PingEvery <= 0 {
		opts.PingEvery = 100 * time.Millisecond
	}
	s := &Server{
		opts: opts, channels: map[string][]*Message{}, chanErrors: map[string]string{},
		pending: map[string]*envelope{}, tsSeq: time.Now().Unix() * 1_000_000,
		httpClient: &http.Client{Timeout: 10 * time.Second},
	}
	s.cond = sync.NewCond(&s.mu)
	mux := http.NewServeMux()
	mux.HandleFunc("/api/auth.test", s.web(false, s.authTest))
	mux.HandleFunc("/api/apps.connections.open", s.connectionsOpen)
	mux.HandleFunc("/api/chat.postMessage", s.web(true, s.postMessage))
	mux.HandleFunc("/api/chat.update", s.web(true, s.update))
	mux.HandleFunc("/api/chat.postEphemeral", s.web(true, s.postEphemeral))
	mux.HandleFunc("/api/conversations.open", s.web(false, s.conversationsOpen))
	mux.HandleFunc("/ws", s.websocket)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"ok": false, "error": "unknown_method"})
	})
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL
	return s
}

// APIURL is the Web API base to give slack-go (it ends with '/').
func (s *Server) APIURL() string { return s.URL + "/api/" }

// Close drops every connection and stops the server.
func (s *Server) Close() {
	s.mu.Lock()
	conns := append([]*conn(nil), s.conns...)
	for _, e := range s.pending {
		if e.timer != nil {
			e.timer.Stop()
		}
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// AddChannel makes a channel the bot is in.
func (s *Server) AddChannel(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.channels[id]; !ok {
		s.channels[id] = nil
	}
}

// SetChannelError makes every post and update in channel fail with code
// (channel_not_found, not_in_channel, is_archived…); "" clears it.
func (s *Server) SetChannelError(channel, code string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.chanErrors[channel] = code
}

// SetRateLimit allows at most n chat.* calls per window; past it they get
// 429 with Retry-After: retryAfter seconds and {"ok":false,"error":"ratelimited"}.
// n <= 0 lifts the limit.
func (s *Server) SetRateLimit(n int, window time.Duration, retryAfter int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rateN, s.rateWindow, s.retryAfter, s.recent = n, window, retryAfter, nil
}

// RateLimited counts the 429s answered.
func (s *Server) RateLimited() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.limited
}

// Calls lists the Web API calls of a method, in order.
func (s *Server) Calls(method string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// Messages lists a channel's messages as they now stand, oldest first.
func (s *Server) Messages(channel string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	for _, m := range s.channels[channel] {
		out = append(out, *m)
	}
	return out
}

// Message returns one message as it now stands.
func (s *Server) Message(channel, ts string) (Message, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m := s.find(channel, ts); m != nil {
		return *m, true
	}
	return Message{}, false
}

// Ephemerals lists the ephemeral messages shown to user.
func (s *Server) Ephemerals(user string) []Ephemeral {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Ephemeral
	for _, e := range s.ephemerals {
		if e.User == user {
			out = append(out, e)
		}
	}
	return out
}

// Wait polls cond (which may read the fake through its methods) until it
// holds or within has passed, and reports whether it held.
func (s *Server) Wait(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return cond()
}

func (s *Server) find(channel, ts string) *Message {
	for _, m := range s.channels[channel] {
		if m.TS == ts {
			return m
		}
	}
	return nil
}

func (s *Server) newTS() string {
	s.tsSeq++
	return fmt.Sprintf("%d.%06d", s.tsSeq/1_000_000, s.tsSeq%1_000_000)
}

// --- Web API ---

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_ = json.NewEncoder(w).Encode(v)
}

func fail(code string) map[string]any { return map[string]any{"ok": false, "error": code} }

// web wraps a Web API method: form parsing, the bot token (form field
// `token` or a Bearer header), the rate limit of chat.* methods.
func (s *Server) web(limited bool, h func(form url.Values) map[string]any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			writeJSON(w, fail("invalid_form_data"))
			return
		}
		method := strings.TrimPrefix(r.URL.Path, "/api/")
		token := r.Form.Get("token")
		if token == "" {
			token = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		}
		s.mu.Lock()
		s.calls = append(s.calls, Call{Method: method, Form: r.Form})
		if limited && s.rateN > 0 {
			now := time.Now()
			keep := s.recent[:0]
			for _, t := range s.recent {
				if now.Sub(t) < s.rateWindow {
					keep = append(keep, t)
				}
			}
			s.recent = keep
			if len(s.recent) >= s.rateN {
				s.limited++
				s.mu.Unlock()
				w.Header().Set("Retry-After", strconv.Itoa(s.retryAfter))
				w.Header().Set("Content-Type", "application/json; charset=utf-8")
				w.WriteHeader(http.StatusTooManyRequests)
				_, _ = w.Write([]byte(`{"ok":false,"error":"ratelimited"}`))
				return
			}
			s.recent = append(s.recent, now)
		}
		s.mu.Unlock()
		if token == "" {
			writeJSON(w, fail("not_authed"))
			return
		}
		if token != s.opts.BotToken {
			writeJSON(w, fail("invalid_auth"))
			return
		}
		writeJSON(w, h(r.Form))
	}
}

func (s *Server) authTest(url.Values) map[string]any {
	return map[string]any{"ok": true, "url": "https://fake.slack.test/", "team": "Fake", "user": "askbridge",
		"team_id": TeamID, "user_id": BotUserID, "bot_id": BotID}
}

// connectionsOpen answers apps.connections.open: the app token as a Bearer
// header, a ws:// URL of this fake.
func (s *Server) connectionsOpen(w http.ResponseWriter, r *http.Request) {
	token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	switch {
	case token == "":
		writeJSON(w, fail("not_authed"))
	case token != s.opts.AppToken:
		writeJSON(w, fail("invalid_auth"))
	default:
		writeJSON(w, map[string]any{"ok": true, "url": "ws" + strings.TrimPrefix(s.URL, "http") + "/ws"})
	}
}

func (s *Server) channelError(channel string) string {
	if code := s.chanErrors[channel]; code != "" {
		return code
	}
	if _, ok := s.channels[channel]; !ok {
		return "channel_not_found"
	}
	return ""
}

func (s *Server) postMessage(form url.Values) map[string]any {
	channel, text, blocks := form.Get("channel"), form.Get("text"), form.Get("blocks")
	if text == "" && (blocks == "" || blocks == "[]") {
		return fail("no_text")
	}
	if problems := checkBlocks(blocks); len(problems) > 0 {
		return map[string]any{"ok": false, "error": "invalid_blocks", "errors": problems}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if code := s.channelError(channel); code != "" {
		return fail(code)
	}
	m := &Message{Channel: channel, TS: s.newTS(), ThreadTS: form.Get("thread_ts"), User: BotUserID, BotID: BotID, Text: text}
	if blocks != "" {
		m.Blocks = json.RawMessage(blocks)
	}
	if m.ThreadTS != "" && s.find(channel, m.ThreadTS) == nil {
		return fail("thread_not_found")
	}
	s.channels[channel] = append(s.channels[channel], m)
	s.cond.Broadcast()
	return map[string]any{"ok": true, "channel": channel, "ts": m.TS, "message": map[string]any{"type": "message", "text": text, "user": BotUserID, "bot_id": BotID, "ts": m.TS}}
}

func (s *Server) update(form url.Values) map[string]any {
	channel, ts := form.Get("channel"), form.Get("ts")
	blocks := form.Get("blocks")
	if problems := checkBlocks(blocks); len(problems) > 0 {
		return map[string]any{"ok": false, "error": "invalid_blocks", "errors": problems}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if code := s.channelError(channel); code != "" {
		return fail(code)
	}
	m := s.find(channel, ts)
	if m == nil {
		return fail("message_not_found")
	}
	if m.BotID != BotID {
		return fail("cant_update_message")
	}
	if _, ok := form["text"]; ok {
		m.Text = form.Get("text")
	}
	if _, ok := form["blocks"]; ok {
		m.Blocks = json.RawMessage(blocks)
	}
	m.Updates++
	return map[string]any{"ok": true, "channel": channel, "ts": ts, "text": m.Text}
}

func (s *Server) postEphemeral(form url.Values) map[string]any {
	channel, user := form.Get("channel"), form.Get("user")
	s.mu.Lock()
	defer s.mu.Unlock()
	if code := s.channelError(channel); code != "" {
		return fail(code)
	}
	if user == "" {
		return fail("user_not_in_channel")
	}
	s.ephemerals = append(s.ephemerals, Ephemeral{Channel: channel, User: user, Text: form.Get("text")})
	return map[string]any{"ok": true, "message_ts": s.newTS()}
}

func (s *Server) conversationsOpen(form url.Values) map[string]any {
	users := form.Get("users")
	if users == "" || strings.Contains(users, ",") {
		return fail("users_list_not_supplied")
	}
	if users[0] != 'U' && users[0] != 'W' {
		return fail("user_not_found")
	}
	id := "D" + users[1:]
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.channels[id]; !ok {
		s.channels[id] = nil
	}
	return map[string]any{"ok": true, "channel": map[string]any{"id": id}}
}

// checkBlocks applies Block Kit's limits; each problem is worded the way
// Slack's invalid_blocks errors are.
func checkBlocks(raw string) []string {
	if raw == "" {
		return nil
	}
	var blocks []struct {
		Type    string `json:"type"`
		BlockID string `json:"block_id"`
		Text    *struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"text"`
		Elements json.RawMessage `json:"elements"`
	}
	if err := json.Unmarshal([]byte(raw), &blocks); err != nil {
		return []string{"invalid_blocks_format"}
	}
	var problems []string
	if len(blocks) > MaxBlocks {
		problems = append(problems, fmt.Sprintf("no more than %d items allowed [json-pointer:/blocks]", MaxBlocks))
	}
	for i, b := range blocks {
		if b.Text != nil {
			limit := MaxSectionText
			if b.Type == "header" {
				limit = MaxHeaderText
			}
			if utf16Len(b.Text.Text) > limit {
				problems = append(problems, fmt.Sprintf("must be less than %d characters [json-pointer:/blocks/%d/text/text]", limit+1, i))
			}
		}
		if b.Type != "actions" {
			continue
		}
		var elems []struct {
			Type     string `json:"type"`
			ActionID string `json:"action_id"`
			Value    string `json:"value"`
			Text     *struct {
				Text string `json:"text"`
			} `json:"text"`
		}
		if err := json.Unmarshal(b.Elements, &elems); err != nil {
			return []string{"invalid_blocks_format"}
		}
		if len(elems) > MaxActionElements {
			problems = append(problems, fmt.Sprintf("no more than %d items allowed [json-pointer:/blocks/%d/elements]", MaxActionElements, i))
		}
		seen := map[string]bool{}
		for j, e := range elems {
			p := fmt.Sprintf("[json-pointer:/blocks/%d/elements/%d", i, j)
			if e.Text != nil && utf8.RuneCountInString(e.Text.Text) > MaxButtonText {
				problems = append(problems, fmt.Sprintf("must be less than %d characters %s/text/text]", MaxButtonText+1, p))
			}
			if utf8.RuneCountInString(e.Value) > MaxButtonValue {
				problems = append(problems, fmt.Sprintf("must be less than %d characters %s/value]", MaxButtonValue+1, p))
			}
			if len(e.ActionID) > MaxActionID {
				problems = append(problems, fmt.Sprintf("must be less than %d characters %s/action_id]", MaxActionID+1, p))
			}
			if seen[e.ActionID] {
				problems = append(problems, fmt.Sprintf("action_id must be unique %s/action_id]", p))
			}
			seen[e.ActionID] = true
		}
	}
	return problems
}

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// --- socket mode ---

var upgrader = websocket.Upgrader{
	// slack-go sends Origin: https://api.slack.com; gorilla's default
	// check would refuse it with 403.
	CheckOrigin: func(*http.Request) bool { return true },
}

func (s *Server) websocket(w http.ResponseWriter, r *http.Request) {
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	c := &conn{ws: ws, closed: make(chan struct{})}
	s.mu.Lock()
	s.opened++
	c.id = s.opened
	s.conns = append(s.conns, c)
	n := len(s.conns)
	s.mu.Unlock()
	_ = c.write(map[string]any{"type": "hello", "num_connections": n,
		"connection_info": map[string]any{"app_id": AppID}, "debug_info": map[string]any{"host": "fakeslack", "approximate_connection_time": 3600}})
	go s.ping(c)
	s.flushQueue()
	for {
		_, data, err := ws.ReadMessage()
		if err != nil {
			break
		}
		var ack struct {
			EnvelopeID string `json:"envelope_id"`
		}
		if json.Unmarshal(data, &ack) == nil && ack.EnvelopeID != "" {
			s.ack(c, ack.EnvelopeID)
		}
	}
	s.drop(c)
}

func (c *conn) write(v any) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.ws.SetWriteDeadline(time.Now().Add(5 * time.Second))
	return c.ws.WriteJSON(v)
}

func (c *conn) close() {
	c.once.Do(func() {
		close(c.closed)
		_ = c.ws.Close()
	})
}

func (s *Server) ping(c *conn) {
	t := time.NewTicker(s.opts.PingEvery)
	defer t.Stop()
	for {
		select {
		case <-c.closed:
			return
		case <-t.C:
			if err := c.ws.WriteControl(websocket.PingMessage, []byte("ping"), time.Now().Add(time.Second)); err != nil {
				return
			}
		}
	}
}

func (s *Server) drop(c *conn) {
	c.close()
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, x := range s.conns {
		if x == c {
			s.conns = append(s.conns[:i], s.conns[i+1:]...)
			break
		}
	}
	s.cond.Broadcast()
}

// Connections counts the open socket-mode connections.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// Opened counts the socket-mode connections ever opened.
func (s *Server) Opened() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opened
}

// DropConnection closes open connection i (0-based, oldest first) without
// a goodbye, as a network failure does. It reports whether there was one.
func (s *Server) DropConnection(i int) bool {
	s.mu.Lock()
	if i >= len(s.conns) {
		s.mu.Unlock()
		return false
	}
	c := s.conns[i]
	s.mu.Unlock()
	s.drop(c)
	return true
}

// Disconnect asks open connection i to reconnect, as Slack does before it
// refreshes a connection ({"type":"disconnect","reason":"refresh_requested"}).
func (s *Server) Disconnect(i int) bool {
	s.mu.Lock()
	if i >= len(s.conns) {
		s.mu.Unlock()
		return false
	}
	c := s.conns[i]
	s.mu.Unlock()
	return c.write(map[string]any{"type": "disconnect", "reason": "refresh_requested", "debug_info": map[string]any{"host": "fakeslack"}}) == nil
}

// Unacked counts envelopes delivered and not yet acknowledged.
func (s *Server) Unacked() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending) + len(s.queue)
}

// Redelivered counts envelopes delivered again for want of an ack.
func (s *Server) Redelivered() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.redelivd
}

func (s *Server) ack(c *conn, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.pending[id]; ok && e.conn == c {
		if e.timer != nil {
			e.timer.Stop()
		}
		delete(s.pending, id)
		s.acked++
		s.cond.Broadcast()
	}
}

// envelopeDeliver sends an envelope to the next open connection (round
// robin), or queues it until one opens; an envelope not acknowledged within
// AckTimeout is delivered again, up to MaxRetries times.
func (s *Server) envelopeDeliver(typ string, payload json.RawMessage) string {
	s.mu.Lock()
	s.envSeq++
	e := &envelope{id: fmt.Sprintf("env-%d-%d", time.Now().UnixNano(), s.envSeq), typ: typ, payload: payload}
	s.mu.Unlock()
	s.send(e)
	return e.id
}

func (s *Server) send(e *envelope) {
	s.mu.Lock()
	if len(s.conns) == 0 {
		s.queue = append(s.queue, e)
		s.mu.Unlock()
		return
	}
	c := s.conns[s.next%len(s.conns)]
	s.next++
	e.conn = c
	s.pending[e.id] = e
	msg := map[string]any{"envelope_id": e.id, "type": e.typ, "payload": e.payload, "accepts_response_payload": false}
	if e.attempt > 0 {
		msg["retry_attempt"] = e.attempt
		msg["retry_reason"] = "timeout"
	}
	e.timer = time.AfterFunc(s.opts.AckTimeout, func() { s.expire(e) })
	dropAfter := s.dropAfter
	s.dropAfter = false
	if dropAfter {
		// The connection dies before the ack reaches Slack: none counts.
		e.conn = nil
	}
	s.mu.Unlock()
	if err := c.write(msg); err != nil || dropAfter {
		s.drop(c)
	}
}

// DropAfterNextDelivery closes the connection the next envelope goes to
// right after writing it, before any ack can come back: the envelope is
// delivered again (to an open connection) when its ack does not come.
func (s *Server) DropAfterNextDelivery() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropAfter = true
}

func (s *Server) expire(e *envelope) {
	s.mu.Lock()
	if _, ok := s.pending[e.id]; !ok {
		s.mu.Unlock()
		return
	}
	delete(s.pending, e.id)
	if e.attempt >= s.opts.MaxRetries {
		s.mu.Unlock()
		return
	}
	e.attempt++
	s.redelivd++
	s.mu.Unlock()
	s.send(e)
}

func (s *Server) flushQueue() {
	s.mu.Lock()
	q := s.queue
	s.queue = nil
	s.mu.Unlock()
	for _, e := range q {
		s.send(e)
	}
}

// --- HTTP mode ---

// UseHTTP sends every event by signed HTTP POST to the bridge instead of
// the socket: events to eventsURL, button presses to interactURL.
func (s *Server) UseHTTP(eventsURL, interactURL string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.eventsURL, s.interactURL = eventsURL, interactURL
}

// Signing says how PostSigned signs a request.
type Signing int

const (
	// SignValid signs with the signing secret and the current time.
	SignValid Signing = iota
	// SignBad signs with a wrong secret.
	SignBad
	// SignStale signs correctly, with a timestamp six minutes old.
	SignStale
	// SignNone sends no signature headers.
	SignNone
)

// PostSigned POSTs body to url the way Slack does, signed as sign says,
// with X-Slack-Retry-Num when retry > 0. It returns the status code and
// body of the answer.
func (s *Server) PostSigned(target, contentType string, body []byte, sign Signing, retry int) (int, string, error) {
	req, err := http.NewRequest(http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", contentType)
	ts := time.Now()
	secret := s.opts.SigningSecret
	switch sign {
	case SignBad:
		secret += "-wrong"
	case SignStale:
		ts = ts.Add(-6 * time.Minute)
	}
	if sign != SignNone {
		tsText := strconv.FormatInt(ts.Unix(), 10)
		req.Header.Set("X-Slack-Request-Timestamp", tsText)
		req.Header.Set("X-Slack-Signature", SignBody(secret, tsText, body))
	}
	if retry > 0 {
		req.Header.Set("X-Slack-Retry-Num", strconv.Itoa(retry))
		req.Header.Set("X-Slack-Retry-Reason", "http_timeout")
	}
	res, err := s.httpClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer res.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(res.Body)
	return res.StatusCode, b.String(), nil
}

// Delivery is an event as the fake sent it, to send again (a duplicate).
type Delivery struct {
	Kind    string // "events_api" or "interactive"
	Payload json.RawMessage
}

// Deliver sends an event to the bridge: over the socket, or in HTTP mode
// by signed POST, retrying (with X-Slack-Retry-Num) up to MaxRetries times
// while the bridge does not answer 200.
func (s *Server) Deliver(d Delivery) error {
	s.mu.Lock()
	eventsURL, interactURL := s.eventsURL, s.interactURL
	s.mu.Unlock()
	if eventsURL == "" {
		s.envelopeDeliver(d.Kind, d.Payload)
		return nil
	}
	target, ctype, body := eventsURL, "application/json", []byte(d.Payload)
	if d.Kind == "interactive" {
		target, ctype = interactURL, "application/x-www-form-urlencoded"
		body = []byte(url.Values{"payload": {string(d.Payload)}}.Encode())
	}
	var last error
	for attempt := 0; attempt <= s.opts.MaxRetries; attempt++ {
		code, _, err := s.PostSigned(target, ctype, body, SignValid, attempt)
		if err == nil && code == http.StatusOK {
			return nil
		}
		last = fmt.Errorf("fakeslack: deliver: status %d: %v", code, err)
		time.Sleep(100 * time.Millisecond)
	}
	return last
}

// SignBody returns Slack's X-Slack-Signature of body at timestamp ts.
func SignBody(secret, ts string, body []byte) string {
	return signHex(secret, ts, body)
}

// --- playing a person ---

// Person is someone in the workspace.
type Person struct {
	ID   string
	Name string
}

// Press presses the button labelled label on message ts of channel as p
// and returns the delivery (to send again as a duplicate). It fails when
// the message has no such button now.
func (s *Server) Press(p Person, channel, ts, label string) (Delivery, error) {
	m, ok := s.Message(channel, ts)
	if !ok {
		return Delivery{}, fmt.Errorf("fakeslack: no message %s in %s", ts, channel)
	}
	return s.PressOn(p, m, label)
}

// PressOn presses a button of m as it stood when the test took it, as a
// person does whose Slack still shows the old message (a late press).
func (s *Server) PressOn(p Person, m Message, label string) (Delivery, error) {
	d, err := s.PressPayload(p, m, label)
	if err != nil {
		return d, err
	}
	return d, s.Deliver(d)
}

// PressPayload builds the block_actions payload of p pressing label on m,
// without sending it.
func (s *Server) PressPayload(p Person, m Message, label string) (Delivery, error) {
	channel, ts := m.Channel, m.TS
	btn, blockID, err := findButton(m.Blocks, label)
	if err != nil {
		return Delivery{}, err
	}
	s.mu.Lock()
	actionTS := s.newTS()
	s.mu.Unlock()
	var blocks any
	_ = json.Unmarshal(m.Blocks, &blocks)
	payload, _ := json.Marshal(map[string]any{
		"type": "block_actions", "api_app_id": AppID, "token": "verification-token-unused",
		"team":       map[string]any{"id": TeamID, "domain": "fake"},
		"user":       map[string]any{"id": p.ID, "username": p.Name, "name": p.Name, "team_id": TeamID},
		"channel":    map[string]any{"id": channel, "name": channel},
		"container":  map[string]any{"type": "message", "message_ts": ts, "channel_id": channel, "is_ephemeral": false},
		"message":    map[string]any{"type": "message", "ts": ts, "text": m.Text, "user": m.User, "bot_id": m.BotID, "blocks": blocks},
		"trigger_id": "trigger-" + actionTS, "response_url": s.URL + "/response/" + actionTS,
		"actions": []map[string]any{{
			"type": "button", "action_id": btn.ActionID, "block_id": blockID, "value": btn.Value,
			"text": map[string]any{"type": "plain_text", "text": btn.Text.Text}, "action_ts": actionTS,
		}},
	})
	return Delivery{Kind: "interactive", Payload: payload}, nil
}

type button struct {
	Type     string `json:"type"`
	ActionID string `json:"action_id"`
	Value    string `json:"value"`
	Text     struct {
		Text string `json:"text"`
	} `json:"text"`
}

// Buttons lists the labels of the buttons a message now shows.
func Buttons(blocks json.RawMessage) []string {
	var bs []struct {
		Type     string   `json:"type"`
		Elements []button `json:"elements"`
	}
	_ = json.Unmarshal(blocks, &bs)
	var out []string
	for _, b := range bs {
		if b.Type != "actions" {
			continue
		}
		for _, e := range b.Elements {
			if e.Type == "button" {
				out = append(out, e.Text.Text)
			}
		}
	}
	return out
}

func findButton(blocks json.RawMessage, label string) (button, string, error) {
	var bs []struct {
		Type     string   `json:"type"`
		BlockID  string   `json:"block_id"`
		Elements []button `json:"elements"`
	}
	_ = json.Unmarshal(blocks, &bs)
	for _, b := range bs {
		if b.Type != "actions" {
			continue
		}
		for _, e := range b.Elements {
			if e.Type == "button" && e.Text.Text == label {
				return e, b.BlockID, nil
			}
		}
	}
	return button{}, "", fmt.Errorf("fakeslack: no button %q on the message", label)
}

// Say posts text as p in channel (in the thread of threadTS when it is
// set), as Slack stores it (&, <, > escaped), and delivers the message
// event. It returns the message's ts and the delivery.
func (s *Server) Say(p Person, channel, threadTS, text string) (string, Delivery, error) {
	s.mu.Lock()
	if _, ok := s.channels[channel]; !ok {
		s.mu.Unlock()
		return "", Delivery{}, fmt.Errorf("fakeslack: no channel %s", channel)
	}
	esc := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(text)
	m := &Message{Channel: channel, TS: s.newTS(), ThreadTS: threadTS, User: p.ID, Text: esc}
	s.channels[channel] = append(s.channels[channel], m)
	s.evSeq++
	eventID := fmt.Sprintf("Ev%08d", s.evSeq)
	s.mu.Unlock()
	ev := map[string]any{"type": "message", "user": p.ID, "text": esc, "ts": m.TS, "channel": channel,
		"event_ts": m.TS, "channel_type": channelType(channel), "client_msg_id": "c-" + m.TS}
	if threadTS != "" {
		ev["thread_ts"] = threadTS
		ev["parent_user_id"] = BotUserID
	}
	d := Delivery{Kind: "events_api", Payload: callback(ev, eventID)}
	return m.TS, d, s.Deliver(d)
}

// SayAsBot delivers a message event of another bot (bot_id set, subtype
// bot_message) in channel.
func (s *Server) SayAsBot(channel, text string) error {
	s.mu.Lock()
	ts := s.newTS()
	s.evSeq++
	eventID := fmt.Sprintf("Ev%08d", s.evSeq)
	s.mu.Unlock()
	ev := map[string]any{"type": "message", "subtype": "bot_message", "bot_id": "B0OTHER", "text": text, "ts": ts, "channel": channel, "channel_type": channelType(channel)}
	return s.Deliver(Delivery{Kind: "events_api", Payload: callback(ev, eventID)})
}

func callback(inner map[string]any, eventID string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{
		"token": "verification-token-unused", "team_id": TeamID, "api_app_id": AppID, "type": "event_callback",
		"event": inner, "event_id": eventID, "event_time": time.Now().Unix(), "authorizations": []map[string]any{{"team_id": TeamID, "user_id": BotUserID, "is_bot": true}},
	})
	return b
}

func channelType(id string) string {
	if strings.HasPrefix(id, "D") {
		return "im"
	}
	return "channel"
}
