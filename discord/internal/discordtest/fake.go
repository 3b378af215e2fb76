package discordtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf16"

	"github.com/jonboulle/clockwork"
)

// Limits of Discord the fake enforces (discord-api-docs,
// developers/resources/message.mdx and developers/components/reference.mdx,
// developers/interactions/receiving-and-responding.mdx).
const (
	MaxContent    = 2000
	MaxRows       = 5
	MaxRowButtons = 5
	MaxLabel      = 80
	MaxCustomID   = 100
	MaxNonce      = 25
	// SuppressEmbeds and Ephemeral are message flags (1<<2, 1<<6).
	SuppressEmbeds = 1 << 2
	Ephemeral      = 1 << 6
	// NonceWindow is how long an enforced nonce returns the message it
	// created ("checked for uniqueness in the past few minutes").
	NonceWindow = 5 * time.Minute
	// InteractionDeadline: the first response to an interaction is due
	// within 3 seconds, or the interaction fails.
	InteractionDeadline = 3 * time.Second
)

// Limit is a rate limit: Count requests per Window.
type Limit struct {
	Count  int
	Window time.Duration
}

// Options configure the fake.
type Options struct {
	// Token is the bot token the fake accepts (sent as "Bot <token>").
	Token string
	// Limits are per-route rate limits keyed like "POST /channels/{id}/messages";
	// each top-level resource (channel, webhook, interaction) has its own
	// bucket, as on Discord.
	Limits map[string]Limit
	// Global is the limit over all requests of the bot (Discord: 50/s).
	Global Limit
	// HeartbeatInterval is sent in HELLO (default 41.25s, as Discord).
	HeartbeatInterval time.Duration
	// Clock is the fake's time: the rate limit windows, an interaction's
	// 3 seconds, a nonce's window, a lost session's resume window and the
	// times it records. Default: the real clock. Heartbeats and websocket
	// deadlines run in real time whatever the clock.
	Clock clockwork.Clock
}

// Server is the fake Discord.
type Server struct {
	// URL is the base to give the bridge as its API URL ("http://127.0.0.1:port/").
	URL   string
	AppID string
	BotID string
	opts  Options
	srv   *httptest.Server

	mu           sync.Mutex
	seq          int64
	users        map[string]*User
	channels     map[string]*channel
	messages     map[string]*Message
	order        []string // message ids in creation order
	interactions map[string]*Interaction
	byToken      map[string]*Interaction
	buckets      map[string]*window
	global       window
	requests     []Request
	closed       map[string]bool // users whose DMs are closed
	nonces       map[string]*Message
	deleted      map[string]Message // deleted messages, as they were
	loseReplies  int
	gw           gatewayState
}

// User is a Discord user the fake knows.
type User struct {
	ID       string `json:"id"`
	Username string `json:"username"`
	Global   string `json:"global_name,omitempty"`
	Bot      bool   `json:"bot,omitempty"`
}

type channel struct {
	ID      string
	GuildID string
	DMUser  string // set for a DM channel
	// deny makes every message call fail with this error.
	deny *apiError
}

// AllowedMentions is what a message said about mentions. Parse is nil when
// the field was absent or null.
type AllowedMentions struct {
	Parse       []string `json:"parse"`
	Users       []string `json:"users,omitempty"`
	Roles       []string `json:"roles,omitempty"`
	RepliedUser bool     `json:"replied_user"`
}

// Button is a button as posted.
type Button struct {
	Type     int    `json:"type"`
	Style    int    `json:"style,omitempty"`
	Label    string `json:"label,omitempty"`
	CustomID string `json:"custom_id,omitempty"`
	Disabled bool   `json:"disabled,omitempty"`
}

// Row is an action row as posted.
type Row struct {
	Type       int      `json:"type"`
	Components []Button `json:"components"`
}

// Message is a message in a channel (posted by the bot or by a person),
// or an interaction's response or follow-up.
type Message struct {
	ID              string
	ChannelID       string
	Author          User
	Content         string
	Components      []Row
	AllowedMentions *AllowedMentions
	ReplyTo         string
	Flags           int
	// Edits counts the edits; History holds the content before each.
	Edits   int
	History []string
	Created time.Time
	// Nonce is the nonce it was created with, if any.
	Nonce string
}

// Ephemeral reports whether only the presser sees the message.
func (m Message) Ephemeral() bool { return m.Flags&Ephemeral != 0 }

// Interaction is a button press the fake sent, and what the bot did with it.
type Interaction struct {
	ID        string
	Token     string
	ChannelID string
	MessageID string
	UserID    string
	CustomID  string
	Created   time.Time
	// AckType is the type of the first response (4, 5, 6, 7), 0 before.
	AckType int
	// AckLatency is how long after Created the first response came.
	AckLatency time.Duration
	// Failed is set when the first response came too late (or never):
	// Discord shows "This interaction failed".
	Failed bool
	// Responses are the messages the bot answered with: the type 4 message
	// and follow-ups (ephemeral ones have Flags 64).
	Responses []Message
	// Calls counts callback calls, including refused ones.
	Calls int
}

// Request is one REST call the fake served.
type Request struct {
	Method string
	Path   string
	Status int
	At     time.Time
	// Message is what a call that posts or edits a message said (a
	// message created or edited in a channel, an interaction's response
	// with data, a follow-up, an edit of @original); nil for other calls.
	Message *Sent
}

// Sent is what a call said of a message: its content, allowed_mentions
// and flags, each nil when the body left it out.
type Sent struct {
	Content         *string
	AllowedMentions *AllowedMentions
	Flags           *int
	// Reference is the message_reference of a created message (a reply).
	Reference *Reference
}

// Quiet reports whether a message so sent can ping no one: its
// allowed_mentions parse nothing (an empty parse list, no users or roles
// listed, no ping of a replied-to author).
func (s Sent) Quiet() bool {
	am := s.AllowedMentions
	return am != nil && am.Parse != nil && len(am.Parse) == 0 && len(am.Users) == 0 && len(am.Roles) == 0 && !am.RepliedUser
}

// SuppressesEmbeds reports whether the call set SUPPRESS_EMBEDS.
func (s Sent) SuppressesEmbeds() bool { return s.Flags != nil && *s.Flags&SuppressEmbeds != 0 }

// New starts a fake Discord; Close stops it.
func New(opts Options) *Server {
	if opts.Token == "" {
		opts.Token = "fake-bot-token"
	}
	if opts.HeartbeatInterval <= 0 {
		opts.HeartbeatInterval = 41250 * time.Millisecond
	}
	if opts.Clock == nil {
		opts.Clock = clockwork.NewRealClock()
	}
	s := &Server{
		opts: opts, users: map[string]*User{}, channels: map[string]*channel{},
		messages: map[string]*Message{}, interactions: map[string]*Interaction{},
		byToken: map[string]*Interaction{}, buckets: map[string]*window{},
		closed: map[string]bool{}, nonces: map[string]*Message{},
		deleted: map[string]Message{},
	}
	s.gw.init()
	s.BotID = s.id()
	s.AppID = s.BotID
	s.users[s.BotID] = &User{ID: s.BotID, Username: "askbridge", Bot: true}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL + "/"
	return s
}

// Token is the accepted bot token.
func (s *Server) Token() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opts.Token
}

// Close drops every gateway session and stops the server.
func (s *Server) Close() {
	s.DropSessions()
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// id makes a new snowflake. Callers hold s.mu or run before serving.
func (s *Server) id() string {
	s.seq++
	return strconv.FormatInt(1_100_000_000_000_000_000+s.seq, 10)
}

// AddUser adds a person and returns their id.
func (s *Server) AddUser(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.id()
	s.users[id] = &User{ID: id, Username: name, Global: name}
	return id
}

// AddBot adds another bot user (its messages have author.bot set).
func (s *Server) AddBot(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.id()
	s.users[id] = &User{ID: id, Username: name, Bot: true}
	return id
}

// AddChannel adds a guild text channel the bot may post in.
func (s *Server) AddChannel() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.id()
	s.channels[id] = &channel{ID: id, GuildID: "1000000000000000001"}
	return id
}

// DenyChannel makes message calls in a known channel fail with 403 Missing
// Access (50001), like a channel the bot cannot see.
func (s *Server) DenyChannel(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ch := s.channels[id]; ch != nil {
		ch.deny = &apiError{status: 403, Code: 50001, Message: "Missing Access"}
	}
}

// CloseDMs makes messages to a user's DM fail with 403 Cannot send
// messages to this user (50007).
func (s *Server) CloseDMs(user string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed[user] = true
}

// LoseReplies makes the next n message creations take effect but answer
// 502, as when a proxy between the bot and Discord drops the reply.
func (s *Server) LoseReplies(n int) {
	s.mu.Lock()
	s.loseReplies = n
	s.mu.Unlock()
}

// Messages lists the messages of a channel in order (copies).
func (s *Server) Messages(channelID string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	for _, id := range s.order {
		if m := s.messages[id]; m.ChannelID == channelID {
			out = append(out, copyMessage(m))
		}
	}
	return out
}

// Message returns a copy of one message.
func (s *Server) Message(id string) (Message, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.messages[id]
	if !ok {
		return Message{}, false
	}
	return copyMessage(m), true
}

// Deleted returns a copy of a message as it was when the bot deleted it.
func (s *Server) Deleted(id string) (Message, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.deleted[id]
	return m, ok
}

// Interaction returns a copy of one interaction, marking it failed when
// its deadline passed without a response.
func (s *Server) Interaction(id string) (Interaction, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in, ok := s.interactions[id]
	if !ok {
		return Interaction{}, false
	}
	if in.AckType == 0 && s.opts.Clock.Since(in.Created) > InteractionDeadline {
		in.Failed = true
	}
	c := *in
	c.Responses = nil
	for _, r := range in.Responses {
		c.Responses = append(c.Responses, copyMessage(&r))
	}
	return c, true
}

// Requests lists the REST calls served so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// DMChannel returns the DM channel opened with a user, if any.
func (s *Server) DMChannel(user string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ch := range s.channels {
		if ch.DMUser == user {
			return ch.ID, true
		}
	}
	return "", false
}

func copyMessage(m *Message) Message {
	c := *m
	c.Components = append([]Row(nil), m.Components...)
	c.History = append([]string(nil), m.History...)
	if m.AllowedMentions != nil {
		am := *m.AllowedMentions
		c.AllowedMentions = &am
	}
	return c
}

// apiError is Discord's JSON error body.
type apiError struct {
	status  int
	Code    int            `json:"code"`
	Message string         `json:"message"`
	Errors  map[string]any `json:"errors,omitempty"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (e *apiError) write(w http.ResponseWriter) { writeJSON(w, e.status, e) }

var (
	errUnauthorized       = &apiError{status: 401, Code: 0, Message: "401: Unauthorized"}
	errUnknownChannel     = &apiError{status: 404, Code: 10003, Message: "Unknown Channel"}
	errUnknownMessage     = &apiError{status: 404, Code: 10008, Message: "Unknown Message"}
	errUnknownUser        = &apiError{status: 404, Code: 10013, Message: "Unknown User"}
	errUnknownWebhook     = &apiError{status: 404, Code: 10015, Message: "Unknown Webhook"}
	errUnknownInteraction = &apiError{status: 404, Code: 10062, Message: "Unknown interaction"}
	errAlreadyAcked       = &apiError{status: 400, Code: 40060, Message: "Interaction has already been acknowledged."}
	errEmptyMessage       = &apiError{status: 400, Code: 50006, Message: "Cannot send an empty message"}
	errNotFound           = &apiError{status: 404, Code: 0, Message: "404: Not Found"}
)

// statusRecorder remembers the status a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/gateway-ws" || strings.HasPrefix(r.URL.Path, "/gateway-ws/") {
		s.serveGateway(w, r)
		return
	}
	rec := &statusRecorder{ResponseWriter: w, status: 200}
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(io.LimitReader(r.Body, 1<<20))
	}
	s.serveREST(rec, r, body)
	s.mu.Lock()
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Status: rec.status, At: s.opts.Clock.Now(), Message: sentOf(r.Method, r.URL.Path, body)})
	s.mu.Unlock()
}

func (s *Server) serveREST(w http.ResponseWriter, r *http.Request, body []byte) {
	segs := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(segs) < 3 || segs[0] != "api" || (segs[1] != "v9" && segs[1] != "v10") {
		errNotFound.write(w)
		return
	}
	segs = segs[2:]
	route, major := routeOf(r.Method, segs)
	if route == "GET /gateway" || route == "GET /gateway/bot" {
		writeJSON(w, 200, map[string]any{"url": "ws" + strings.TrimPrefix(s.srv.URL, "http") + "/gateway-ws",
			"shards": 1, "session_start_limit": map[string]int{"total": 1000, "remaining": 1000, "reset_after": 0, "max_concurrency": 1}})
		return
	}
	// Interaction callbacks and webhooks authenticate by their token.
	if segs[0] != "interactions" && segs[0] != "webhooks" && r.Header.Get("Authorization") != "Bot "+s.Token() {
		errUnauthorized.write(w)
		return
	}
	if !s.admit(w, route, major) {
		return
	}
	switch {
	case route == "GET /users/{id}" && segs[1] == "@me":
		s.mu.Lock()
		u := *s.users[s.BotID]
		s.mu.Unlock()
		writeJSON(w, 200, u)
	case route == "POST /users/{id}/channels" && segs[1] == "@me":
		s.createDM(w, body)
	case route == "POST /channels/{id}/messages":
		s.createMessage(w, segs[1], body)
	case route == "GET /channels/{id}/messages/{id}":
		s.getMessage(w, segs[1], segs[3])
	case route == "PATCH /channels/{id}/messages/{id}":
		s.editMessage(w, segs[1], segs[3], body)
	case route == "DELETE /channels/{id}/messages/{id}":
		s.deleteMessage(w, segs[1], segs[3])
	case route == "POST /interactions/{id}/{token}/callback":
		s.callback(w, segs[1], segs[2], body)
	case route == "POST /webhooks/{id}/{token}":
		s.followup(w, r, segs[2], body)
	case route == "PATCH /webhooks/{id}/{token}/messages/{id}" && segs[4] == "@original":
		s.editOriginal(w, segs[2], body)
	default:
		errNotFound.write(w)
	}
}

// routeOf names a request's route the way rate limits are keyed, and its
// top-level resource (the bucket's major parameter).
func routeOf(method string, segs []string) (route, major string) {
	out := make([]string, len(segs))
	for i, seg := range segs {
		out[i] = seg
		switch {
		case i == 0:
		case i == 2 && (segs[0] == "webhooks" || segs[0] == "interactions"):
			out[i] = "{token}"
			major += "/" + seg
		case i == 1 || isID(seg) || seg == "@original":
			if i == 1 && seg != "@me" {
				major = seg
			}
			out[i] = "{id}"
		}
	}
	return method + " /" + strings.Join(out, "/"), major
}

func isID(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// window is a fixed-window counter.
type window struct {
	start time.Time
	count int
}

// admit applies the global and per-route limits, writing the bucket
// headers, or a 429 as Discord does.
func (s *Server) admit(w http.ResponseWriter, route, major string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opts.Clock.Now()
	if g := s.opts.Global; g.Count > 0 {
		if now.Sub(s.global.start) >= g.Window {
			s.global = window{start: now}
		}
		if s.global.count >= g.Count {
			after := s.global.start.Add(g.Window).Sub(now).Seconds()
			w.Header().Set("Retry-After", strconv.Itoa(int(after+0.999)))
			w.Header().Set("X-RateLimit-Global", "true")
			w.Header().Set("X-RateLimit-Scope", "global")
			writeJSON(w, 429, map[string]any{"message": "You are being rate limited.", "retry_after": round3(after), "global": true})
			return false
		}
		s.global.count++
	}
	l, ok := s.opts.Limits[route]
	if !ok || l.Count <= 0 {
		return true
	}
	key := route + "|" + major
	b := s.buckets[key]
	if b == nil || now.Sub(b.start) >= l.Window {
		b = &window{start: now}
		s.buckets[key] = b
	}
	after := b.start.Add(l.Window).Sub(now).Seconds()
	h := w.Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(l.Count))
	h.Set("X-RateLimit-Reset", strconv.FormatFloat(float64(b.start.Add(l.Window).UnixMilli())/1000, 'f', 3, 64))
	h.Set("X-RateLimit-Reset-After", strconv.FormatFloat(round3(after), 'f', 3, 64))
	h.Set("X-RateLimit-Bucket", fmt.Sprintf("%x", hash(route)))
	if b.count >= l.Count {
		h.Set("X-RateLimit-Remaining", "0")
		h.Set("Retry-After", strconv.Itoa(int(after+0.999)))
		h.Set("X-RateLimit-Scope", "user")
		writeJSON(w, 429, map[string]any{"message": "You are being rate limited.", "retry_after": round3(after), "global": false})
		return false
	}
	b.count++
	h.Set("X-RateLimit-Remaining", strconv.Itoa(l.Count-b.count))
	return true
}

func round3(f float64) float64 { return float64(int64(f*1000+0.5)) / 1000 }

func hash(s string) uint32 {
	var h uint32 = 2166136261
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(s[i])) * 16777619
	}
	return h
}

// utf16Len counts like Discord's length limits.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}
