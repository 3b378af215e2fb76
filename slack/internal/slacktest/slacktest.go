// Package slacktest is a fake Slack for tests: the Web API methods the
// bridge calls, socket mode over a local websocket, and a signed-HTTP client
// for HTTP mode, with helpers for a test to play a person (press a button,
// post a message, reply in a thread) and to read a channel's messages as
// they now stand. It keeps Slack's wire formats, limits and error bodies:
// form-encoded Web API calls answered {"ok":false,"error":"…"} with HTTP
// 200, 429 with Retry-After past a configurable rate, envelopes that must be
// acknowledged within 3 seconds or are delivered again with retry_attempt,
// websocket pings, and each envelope handed to one open connection.
package slacktest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sync"
	"time"

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
	// Metadata is the message's metadata as posted (nil if none).
	Metadata json.RawMessage
	// Displays is how the post and then each chat.update asked Slack to
	// show the message, in order.
	Displays []Display
}

// Display is how a chat.postMessage, chat.update or chat.postEphemeral
// asks Slack to show its message. Slack unfurls media unless unfurl_media
// is false; whether it unfurls a link when unfurl_links is not sent
// depends on the link and the app, so this fake counts only an explicit
// false as off. It links names itself ("@team", "#general") when
// link_names is true or parse is full.
type Display struct {
	UnfurlLinks bool
	UnfurlMedia bool
	LinkNames   bool
}

// DisplayOf reads a Web API call's form the way Slack does.
func DisplayOf(form url.Values) Display {
	off := func(v string) bool { return v == "false" || v == "0" }
	on := func(v string) bool { return v == "true" || v == "1" }
	return Display{
		UnfurlLinks: !off(form.Get("unfurl_links")),
		UnfurlMedia: !off(form.Get("unfurl_media")),
		LinkNames:   on(form.Get("link_names")) || form.Get("parse") == "full",
	}
}

// Ephemeral is a chat.postEphemeral: visible to one user only.
type Ephemeral struct {
	Channel string
	User    string
	// ThreadTS is the thread it was posted in ("" outside a thread).
	ThreadTS string
	Text     string
	// Display is how it was asked to be shown.
	Display Display
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
	deleted    []Message
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
	mux.HandleFunc("/api/chat.delete", s.web(true, s.deleteMessage))
	mux.HandleFunc("/api/chat.postEphemeral", s.web(true, s.postEphemeral))
	mux.HandleFunc("/api/conversations.open", s.web(false, s.conversationsOpen))
	mux.HandleFunc("/api/conversations.history", s.web(false, s.conversationsHistory))
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

// SetChannelError makes every post, update and delete in channel fail with code
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
		out = append(out, m.copy())
	}
	return out
}

// Message returns one message as it now stands.
func (s *Server) Message(channel, ts string) (Message, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m := s.find(channel, ts); m != nil {
		return m.copy(), true
	}
	return Message{}, false
}

// Deleted lists the messages chat.delete removed from channel, as they
// stood when deleted, in the order they were deleted.
func (s *Server) Deleted(channel string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	for _, m := range s.deleted {
		if m.Channel == channel {
			out = append(out, m)
		}
	}
	return out
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

// copy is m as it now stands, sharing nothing the fake changes later.
func (m *Message) copy() Message {
	c := *m
	c.Displays = slices.Clone(m.Displays)
	return c
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
	// Slack's ts is the post's time in microseconds, unique in a channel.
	s.tsSeq = max(s.tsSeq+1, time.Now().UnixMicro())
	return fmt.Sprintf("%d.%06d", s.tsSeq/1_000_000, s.tsSeq%1_000_000)
}
