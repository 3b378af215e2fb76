// Package telegramtest is a fake Telegram Bot API for tests: an HTTP server
// on 127.0.0.1 that takes the requests go-telegram/bot makes (multipart
// forms; also url-encoded forms and JSON), keeps chats, messages and the
// update queue, and answers like Telegram does — the same limits, the same
// error bodies, 429 with retry_after when a configured rate is exceeded,
// 409 when a second getUpdates supersedes a pending one. Helpers let a test
// play a person: tap a button, send a text, reply to a message, and read a
// chat as it now stands.
package telegramtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
)

// Limits of the real Bot API that the fake enforces.
const (
	// MessageChars: sendMessage text is 1-4096 characters after entities
	// parsing.
	MessageChars = 4096
	// CallbackDataBytes: InlineKeyboardButton callback_data is 1-64 bytes.
	CallbackDataBytes = 64
	// NoticeChars: answerCallbackQuery text is 0-200 characters.
	NoticeChars = 200
	// maxLimit: getUpdates returns at most 100 updates.
	maxLimit = 100
	// earlyGrace: a request started within this time of a 429 may have
	// been started before the client saw the 429, so it is not counted as
	// ignoring retry_after. A client under -race on a loaded two-core
	// machine has taken more than 250 ms, and once more than 500 ms (with
	// a Matrix homeserver's tests beside it), to act on a 429 it was sent
	// (TestBurst500 in CI); every retry_after is at least 1 s, so the last
	// quarter of it still catches a client that cuts it short.
	earlyGrace = 750 * time.Millisecond
	// DeleteWindow: deleteMessage deletes a message only if it was sent
	// less than 48 hours ago.
	DeleteWindow = 48 * time.Hour
)

// Telegram's error descriptions.
const (
	ErrChatNotFound   = "Bad Request: chat not found"
	ErrTooLong        = "Bad Request: message is too long"
	ErrEmpty          = "Bad Request: message text is empty"
	ErrNotModified    = "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message"
	ErrEditNotFound   = "Bad Request: message to edit not found"
	ErrDeleteNotFound = "Bad Request: message to delete not found"
	ErrCantDelete     = "Bad Request: message can't be deleted"
	ErrNoMessageID    = "Bad Request: message identifier is not specified"
	ErrReplyNotFound  = "Bad Request: message to be replied not found"
	ErrButtonData     = "Bad Request: BUTTON_DATA_INVALID"
	ErrQueryInvalid   = "Bad Request: query is too old and response timeout expired or query ID is invalid"
	ErrNoRights       = "Bad Request: not enough rights to send text messages to the chat"
	ErrBlocked        = "Forbidden: bot was blocked by the user"
	ErrKicked         = "Forbidden: bot was kicked from the group chat"
	ErrConflictPoll   = "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"
	ErrConflictHook   = "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first"
	ErrWebhookHTTPS   = "Bad Request: bad webhook: An HTTPS URL must be provided for webhook"
	ErrWebhookSecret  = "Bad Request: bad webhook: secret token contains unallowed characters"
	ErrParseEntities  = "Bad Request: can't parse entities: "
	ErrUnauthorized   = "Unauthorized"
	ErrNotFound       = "Not Found"
	ErrNoticeTooLong  = "Bad Request: MESSAGE_TOO_LONG"
	errTooManyRequest = "Too Many Requests: retry after %d"
)

// Options configure the fake. Zero rates mean no limit.
type Options struct {
	// Token is the bot token the fake accepts (default "123456789:TEST").
	Token string
	// BotUsername is the bot's @username (default "askbridge_test_bot").
	BotUsername string
	// ChatRate is how many messages (sends, edits and deletes) a chat
	// takes per second, with bursts up to ChatBurst (default: one second's
	// worth).
	ChatRate  float64
	ChatBurst int
	// GlobalRate and GlobalBurst are the same for the whole bot.
	GlobalRate  float64
	GlobalBurst int
	// ClientHeader names a request header that tells clients apart (such
	// as bridge replicas sharing one token); whether a client honoured a
	// 429 is judged per client. Default "X-Test-Client".
	ClientHeader string
	// SentHeader names a request header with the time the client started
	// the request (Unix nanoseconds); with it, a request that was already
	// on its way when a 429 was given is not held against the client even
	// when it arrives late. Default "X-Test-Sent".
	SentHeader string
	// Clock is the fake's time: the rate buckets, the retry_after windows
	// and their grace, message dates and how long a tap waited for its
	// answer. Default: the real clock. A long poll's timeout runs in real
	// time whatever the clock, as the client's own deadline does.
	Clock clockwork.Clock
}

// User is a Telegram user.
type User struct {
	ID        int64
	FirstName string
	LastName  string
	Username  string
	IsBot     bool
}

// Button is an inline keyboard button.
type Button struct {
	Text string
	Data string
}

// Message is a message as it now stands in a chat.
type Message struct {
	ID     int
	ChatID int64
	From   User
	Date   int64
	// Text is what a person reads (HTML parsed); HTML is the text as sent.
	Text string
	HTML string
	// Keyboard is the inline keyboard under the message, if any.
	Keyboard [][]Button
	// ForceReply is set when the message opened a reply box; Selective
	// when only some people get it; Placeholder is its hint.
	ForceReply  bool
	Selective   bool
	Placeholder string
	// ReplyTo is the message this one replies to, 0 for none.
	ReplyTo int
	// ReplyAsked is the message_id the send's reply_parameters named (0
	// for none), there or not; ReplyOptional is set when they allowed
	// sending without the reply (allow_sending_without_reply), which is
	// how a message whose ReplyAsked was gone got posted with ReplyTo 0.
	ReplyAsked    int
	ReplyOptional bool
	// Edits counts the edits that changed the message; EditCalls counts
	// every edit request naming it, refused ones ("message is not
	// modified", 429, a blocked chat) included.
	Edits     int
	EditCalls int
	// LinkPreview is set when Telegram would show a link preview under
	// the message: its text has a link (an http or https URL, or an <a
	// href> to one) and the send or the last edit of its text did not
	// disable previews (link_preview_options is_disabled, or the older
	// disable_web_page_preview). An edit's own options count: an edit that
	// does not disable previews shows one again.
	LinkPreview bool
	// Mentions lists the @usernames Telegram would turn into mentions.
	Mentions []string
	// TextMentions lists the user ids mentioned by tg://user links.
	TextMentions []int64
}

// Answer is the answer to a callback query.
type Answer struct {
	Text      string
	ShowAlert bool
	// After is how long after the tap the answer came.
	After time.Duration
}

// Stats count what the fake saw.
type Stats struct {
	Sent, Edited, Answered int
	// Deleted counts the messages the bot deleted (deleteMessage).
	Deleted int
	// AnswerRefused counts answers to unknown or already answered
	// callback queries (a tap handled twice answers twice).
	AnswerRefused int
	// RateLimited counts 429s; Early counts requests a client made in a
	// scope whose retry_after it had been given and that had not passed.
	RateLimited, Early int
	// Polls counts the getUpdates calls taken; one that is not answered
	// at once is waiting for an update as soon as it is counted.
	Polls int
	// Conflicts counts getUpdates terminated by another one.
	Conflicts int
	// Confirmed counts updates confirmed (by offset or webhook delivery).
	Confirmed int
	// WebhookRefused counts webhook deliveries that did not get a 2xx.
	WebhookRefused int
}

type chat struct {
	id       int64
	kind     string // private, group, supergroup
	title    string
	refusal  string // ErrBlocked, ErrKicked, ErrNoRights or ""
	messages []*Message
	nextID   int
}

type query struct {
	id       string
	at       time.Time
	answered bool
	answer   Answer
}

type update struct {
	id   int64
	body json.RawMessage
}

type bucket struct {
	tokens float64
	last   time.Time
}

type poller struct{ superseded chan struct{} }

// Server is the fake Bot API. Its methods are safe for concurrent use.
type Server struct {
	// URL is the server root, for bot.WithServerURL.
	URL   string
	Token string
	Bot   User

	opts    Options
	srv     *httptest.Server
	stop    chan struct{}
	done    sync.WaitGroup
	closing sync.Once

	mu         sync.Mutex
	chats      map[int64]*chat
	updates    []update
	nextUpdate int64
	wake       chan struct{}
	poll       *poller
	webhook    string
	secret     string
	target     http.Handler
	queries    map[string]*query
	nextQuery  int
	global     bucket
	perChat    map[int64]*bucket
	retryUntil map[string]retryWindow
	failNext   map[string]failure
	stats      Stats
}

type retryWindow struct{ from, until time.Time }

type failure struct{ after, n int }

// New starts a fake Bot API on 127.0.0.1. Close it when done.
func New(opts Options) *Server {
	if opts.Token == "" {
		opts.Token = "123456789:TEST"
	}
	if opts.BotUsername == "" {
		opts.BotUsername = "askbridge_test_bot"
	}
	if opts.ClientHeader == "" {
		opts.ClientHeader = "X-Test-Client"
	}
	if opts.SentHeader == "" {
		opts.SentHeader = "X-Test-Sent"
	}
	if opts.ChatBurst <= 0 {
		opts.ChatBurst = max(1, int(opts.ChatRate))
	}
	if opts.GlobalBurst <= 0 {
		opts.GlobalBurst = max(1, int(opts.GlobalRate))
	}
	if opts.Clock == nil {
		opts.Clock = clockwork.NewRealClock()
	}
	id, _ := strconv.ParseInt(strings.Split(opts.Token, ":")[0], 10, 64)
	s := &Server{
		Token: opts.Token, opts: opts, stop: make(chan struct{}),
		Bot:   User{ID: id, FirstName: "Ask Bridge", Username: opts.BotUsername, IsBot: true},
		chats: map[int64]*chat{}, wake: make(chan struct{}), queries: map[string]*query{},
		perChat: map[int64]*bucket{}, retryUntil: map[string]retryWindow{}, failNext: map[string]failure{}, nextUpdate: 100000,
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	s.done.Add(1)
	go s.deliverWebhooks()
	return s
}

// Close stops the server. Safe to repeat.
func (s *Server) Close() {
	s.closing.Do(func() {
		close(s.stop)
		s.srv.CloseClientConnections()
		s.srv.Close()
		s.done.Wait()
	})
}

// AddChat creates a chat the bot is in: kind "private" (id = the user's
// id), "group" or "supergroup" (negative ids).
func (s *Server) AddChat(id int64, kind, title string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.chats[id] = &chat{id: id, kind: kind, title: title}
}

// Block makes every send to chat fail the way Telegram refuses it:
// ErrBlocked, ErrKicked or ErrNoRights ("" lifts it).
func (s *Server) Block(id int64, description string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.chats[id]; ok {
		c.refusal = description
	}
}

// FailNext lets the next `after` calls of method (such as "sendMessage")
// through and makes the n after them fail with 502 Bad Gateway, as
// Telegram's front end does when the Bot API server is overloaded.
func (s *Server) FailNext(method string, after, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failNext[strings.ToLower(method)] = failure{after: after, n: n}
}

// Age makes a message d older, as if it had been sent d earlier: one aged
// DeleteWindow or more can no longer be deleted by the bot.
func (s *Server) Age(chatID int64, id int, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m := s.findLocked(chatID, id); m != nil {
		m.Date -= int64(d / time.Second)
	}
}

// DeleteMessage removes a message, as a person or admin deleting it does.
func (s *Server) DeleteMessage(chatID int64, id int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.chats[chatID]; ok {
		for i, m := range c.messages {
			if m.ID == id {
				c.messages = append(c.messages[:i], c.messages[i+1:]...)
				return
			}
		}
	}
}

// Messages returns a chat's messages as they now stand, oldest first.
func (s *Server) Messages(chatID int64) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.chats[chatID]
	if !ok {
		return nil
	}
	out := make([]Message, len(c.messages))
	for i, m := range c.messages {
		out[i] = copyMessage(m)
	}
	return out
}

// BotMessages returns the messages the bot posted in a chat.
func (s *Server) BotMessages(chatID int64) []Message {
	var out []Message
	for _, m := range s.Messages(chatID) {
		if m.From.ID == s.Bot.ID {
			out = append(out, m)
		}
	}
	return out
}

func copyMessage(m *Message) Message {
	c := *m
	c.Keyboard = nil
	for _, row := range m.Keyboard {
		c.Keyboard = append(c.Keyboard, append([]Button(nil), row...))
	}
	c.Mentions = append([]string(nil), m.Mentions...)
	c.TextMentions = append([]int64(nil), m.TextMentions...)
	return c
}

// Stats returns the counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Pending counts updates not yet confirmed.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.updates)
}

// Answer returns the answer to a callback query, if it has one.
func (s *Server) Answer(queryID string) (Answer, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, ok := s.queries[queryID]
	if !ok || !q.answered {
		return Answer{}, false
	}
	return q.answer, true
}

// SetWebhookTarget is where the fake delivers updates while a webhook is
// set (it cannot reach the webhook URL itself): the handler gets Telegram's
// POST with the secret token header.
func (s *Server) SetWebhookTarget(h http.Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.target = h
	s.wakeLocked()
}

// Tap presses the button with the given text under a message, as user,
// and returns the callback query id.
func (s *Server) Tap(chatID int64, messageID int, user User, text string) (string, error) {
	data, err := s.buttonData(chatID, messageID, text)
	if err != nil {
		return "", err
	}
	return s.TapData(chatID, messageID, user, data)
}

// buttonData is the callback data of the button with the given text under
// a message, read under the lock (the bridge may be editing it).
func (s *Server) buttonData(chatID int64, messageID int, text string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.findLocked(chatID, messageID)
	if m == nil {
		return "", fmt.Errorf("telegramtest: no message %d in chat %d", messageID, chatID)
	}
	for _, row := range m.Keyboard {
		for _, b := range row {
			if b.Text == text {
				return b.Data, nil
			}
		}
	}
	return "", fmt.Errorf("telegramtest: message %d has no button %q", messageID, text)
}

// TapData sends a callback query with any data for a message, as a
// modified client could.
func (s *Server) TapData(chatID int64, messageID int, user User, data string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.chats[chatID]
	m := s.findLocked(chatID, messageID)
	if m == nil {
		return "", fmt.Errorf("telegramtest: no message %d in chat %d", messageID, chatID)
	}
	s.nextQuery++
	id := fmt.Sprintf("%d%06d", user.ID, s.nextQuery)
	s.queries[id] = &query{id: id, at: s.opts.Clock.Now()}
	s.enqueueLocked(map[string]any{"callback_query": map[string]any{
		"id": id, "from": userJSON(user), "message": s.messageJSON(c, m),
		"chat_instance": strconv.FormatInt(chatID*7, 10), "data": data,
	}})
	return id, nil
}

// SendText posts a text message as user and returns its id.
func (s *Server) SendText(chatID int64, user User, text string) (int, error) {
	return s.Reply(chatID, user, 0, text)
}

// Reply posts a text message as user in reply to message replyTo (0: not a
// reply) and returns its id.
func (s *Server) Reply(chatID int64, user User, replyTo int, text string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.chats[chatID]
	if !ok {
		return 0, fmt.Errorf("telegramtest: no chat %d", chatID)
	}
	var parent *Message
	if replyTo != 0 {
		if parent = s.findLocked(chatID, replyTo); parent == nil {
			return 0, fmt.Errorf("telegramtest: no message %d to reply to", replyTo)
		}
	}
	c.nextID++
	m := &Message{ID: c.nextID, ChatID: chatID, From: user, Date: s.opts.Clock.Now().Unix(), Text: text, HTML: text, ReplyTo: replyTo}
	c.messages = append(c.messages, m)
	body := s.messageJSON(c, m)
	if parent != nil {
		body["reply_to_message"] = s.messageJSON(c, parent)
	}
	s.enqueueLocked(map[string]any{"message": body})
	return m.ID, nil
}

func (s *Server) findLocked(chatID int64, id int) *Message {
	c, ok := s.chats[chatID]
	if !ok {
		return nil
	}
	for _, m := range c.messages {
		if m.ID == id {
			return m
		}
	}
	return nil
}

func (s *Server) enqueueLocked(body map[string]any) {
	s.nextUpdate++
	body["update_id"] = s.nextUpdate
	raw, _ := json.Marshal(body)
	s.updates = append(s.updates, update{id: s.nextUpdate, body: raw})
	s.wakeLocked()
}

func (s *Server) wakeLocked() {
	close(s.wake)
	s.wake = make(chan struct{})
}

func userJSON(u User) map[string]any {
	m := map[string]any{"id": u.ID, "is_bot": u.IsBot, "first_name": u.FirstName}
	if u.LastName != "" {
		m["last_name"] = u.LastName
	}
	if u.Username != "" {
		m["username"] = u.Username
	}
	return m
}

func chatJSON(c *chat) map[string]any {
	m := map[string]any{"id": c.id, "type": c.kind}
	if c.kind == "private" {
		m["first_name"] = c.title
	} else {
		m["title"] = c.title
	}
	return m
}

func (s *Server) messageJSON(c *chat, m *Message) map[string]any {
	out := map[string]any{
		"message_id": m.ID, "from": userJSON(m.From), "chat": chatJSON(c), "date": m.Date, "text": m.Text,
	}
	if m.Edits > 0 {
		out["edit_date"] = m.Date + int64(m.Edits)
	}
	if len(m.Keyboard) > 0 {
		var rows [][]map[string]string
		for _, row := range m.Keyboard {
			var r []map[string]string
			for _, b := range row {
				r = append(r, map[string]string{"text": b.Text, "callback_data": b.Data})
			}
			rows = append(rows, r)
		}
		out["reply_markup"] = map[string]any{"inline_keyboard": rows}
	}
	return out
}

// serve routes /bot<token>/<method>.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/bot")
	if !ok {
		fail(w, http.StatusNotFound, ErrNotFound, 0)
		return
	}
	token, method, _ := strings.Cut(rest, "/")
	if token != s.Token {
		fail(w, http.StatusUnauthorized, ErrUnauthorized, 0)
		return
	}
	p, err := params(r)
	if err != nil {
		fail(w, http.StatusBadRequest, "Bad Request: "+err.Error(), 0)
		return
	}
	client := clientOf{name: r.Header.Get(s.opts.ClientHeader), sent: s.opts.Clock.Now()}
	if ns, err := strconv.ParseInt(r.Header.Get(s.opts.SentHeader), 10, 64); err == nil {
		client.sent = time.Unix(0, ns)
	}
	s.mu.Lock()
	f := s.failNext[strings.ToLower(method)]
	failing := f.after == 0 && f.n > 0
	switch {
	case f.after > 0:
		f.after--
	case f.n > 0:
		f.n--
	}
	s.failNext[strings.ToLower(method)] = f
	s.mu.Unlock()
	if failing {
		fail(w, http.StatusBadGateway, "Bad Gateway", 0)
		return
	}
	switch strings.ToLower(method) {
	case "getme":
		ok200(w, userJSON(s.Bot))
	case "getupdates":
		s.getUpdates(w, r, p)
	case "sendmessage":
		s.sendMessage(w, p, client)
	case "editmessagetext":
		s.editMessage(w, p, client, true)
	case "editmessagereplymarkup":
		s.editMessage(w, p, client, false)
	case "deletemessage":
		s.deleteMessage(w, p, client)
	case "answercallbackquery":
		s.answerCallbackQuery(w, p)
	case "setwebhook":
		s.setWebhook(w, p)
	case "deletewebhook":
		s.mu.Lock()
		s.webhook, s.secret = "", ""
		if p["drop_pending_updates"] == "true" {
			s.stats.Confirmed += len(s.updates)
			s.updates = nil
		}
		s.mu.Unlock()
		ok200(w, true)
	default:
		fail(w, http.StatusNotFound, ErrNotFound, 0)
	}
}

// params reads a request's parameters from the query string and a
// multipart, url-encoded or JSON body; objects stay JSON text.
func params(r *http.Request) (map[string]string, error) {
	p := map[string]string{}
	for k, v := range r.URL.Query() {
		p[k] = v[0]
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 10<<20))
	if err != nil || len(body) == 0 {
		// go-telegram/bot sends methods without parameters (getMe) as a
		// multipart body with no parts at all; Telegram takes it.
		return p, nil
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch mt {
	case "multipart/form-data":
		if err := r.ParseMultipartForm(10 << 20); err != nil {
			return nil, err
		}
		for k, v := range r.MultipartForm.Value {
			p[k] = v[0]
		}
	case "application/x-www-form-urlencoded":
		if err := r.ParseForm(); err != nil {
			return nil, err
		}
		for k, v := range r.PostForm {
			p[k] = v[0]
		}
	case "application/json":
		var m map[string]json.RawMessage
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			return nil, fmt.Errorf("invalid JSON: %v", err)
		}
		for k, raw := range m {
			var str string
			if json.Unmarshal(raw, &str) == nil {
				p[k] = str
			} else {
				p[k] = string(raw)
			}
		}
	}
	return p, nil
}

func ok200(w http.ResponseWriter, result any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "result": result})
}

func fail(w http.ResponseWriter, code int, description string, retryAfter int) {
	body := map[string]any{"ok": false, "error_code": code, "description": description}
	if retryAfter > 0 {
		body["parameters"] = map[string]any{"retry_after": retryAfter}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(body)
}

func (s *Server) getUpdates(w http.ResponseWriter, r *http.Request, p map[string]string) {
	offset, _ := strconv.ParseInt(p["offset"], 10, 64)
	timeout, _ := strconv.Atoi(p["timeout"])
	limit, _ := strconv.Atoi(p["limit"])
	if limit <= 0 || limit > maxLimit {
		limit = maxLimit
	}
	s.mu.Lock()
	if s.webhook != "" {
		s.mu.Unlock()
		fail(w, http.StatusConflict, ErrConflictHook, 0)
		return
	}
	// An offset confirms every update below it.
	if offset > 0 {
		kept := s.updates[:0]
		for _, u := range s.updates {
			if u.id >= offset {
				kept = append(kept, u)
			} else {
				s.stats.Confirmed++
			}
		}
		s.updates = kept
	}
	// A new poll terminates the one waiting (real Telegram answers the
	// older request 409).
	if s.poll != nil {
		close(s.poll.superseded)
		s.stats.Conflicts++
	}
	me := &poller{superseded: make(chan struct{})}
	s.poll = me
	s.stats.Polls++
	deadline := time.NewTimer(time.Duration(timeout) * time.Second)
	defer deadline.Stop()
	for {
		if len(s.updates) > 0 || timeout <= 0 {
			n := min(limit, len(s.updates))
			out := make([]json.RawMessage, n)
			for i := range n {
				out[i] = s.updates[i].body
			}
			if s.poll == me {
				s.poll = nil
			}
			s.mu.Unlock()
			ok200(w, out)
			return
		}
		wake := s.wake
		s.mu.Unlock()
		select {
		case <-wake:
			s.mu.Lock()
		case <-me.superseded:
			fail(w, http.StatusConflict, ErrConflictPoll, 0)
			return
		case <-deadline.C:
			s.mu.Lock()
			timeout = 0
		case <-r.Context().Done():
			s.mu.Lock()
			if s.poll == me {
				s.poll = nil
			}
			s.mu.Unlock()
			return
		case <-s.stop:
			return
		}
	}
}

// clientOf is who made a request, and when they started it.
type clientOf struct {
	name string
	sent time.Time
}

// limitLocked applies the rates to one message of chat by client and
// reports the retry_after to answer, 0 to let it through. A request the
// client started inside a retry_after it had been given counts as Early.
func (s *Server) limitLocked(chatID int64, c clientOf) int {
	now := s.opts.Clock.Now()
	client := c.name
	for _, scope := range []string{"global", "chat:" + strconv.FormatInt(chatID, 10)} {
		if w, ok := s.retryUntil[client+"|"+scope]; ok && c.sent.Before(w.until) && c.sent.Sub(w.from) > earlyGrace {
			s.stats.Early++
			break
		}
	}
	b, ok := s.perChat[chatID]
	if !ok {
		b = &bucket{tokens: float64(s.opts.ChatBurst), last: now}
		s.perChat[chatID] = b
	}
	if s.global.last.IsZero() {
		s.global = bucket{tokens: float64(s.opts.GlobalBurst), last: now}
	}
	gWait := refill(&s.global, s.opts.GlobalRate, s.opts.GlobalBurst, now)
	cWait := refill(b, s.opts.ChatRate, s.opts.ChatBurst, now)
	scope, wait := "", time.Duration(0)
	switch {
	case gWait > 0:
		scope, wait = "global", gWait
	case cWait > 0:
		scope, wait = "chat:"+strconv.FormatInt(chatID, 10), cWait
	}
	if wait == 0 {
		if s.opts.GlobalRate > 0 {
			s.global.tokens--
		}
		if s.opts.ChatRate > 0 {
			b.tokens--
		}
		return 0
	}
	after := int(math.Ceil(wait.Seconds()))
	s.retryUntil[client+"|"+scope] = retryWindow{from: now, until: now.Add(time.Duration(after) * time.Second)}
	s.stats.RateLimited++
	return after
}

// refill tops a bucket up and returns how long until it holds a token (0
// when it holds one now, or when rate is 0: no limit).
func refill(b *bucket, rate float64, burst int, now time.Time) time.Duration {
	if rate <= 0 {
		return 0
	}
	b.tokens = math.Min(float64(burst), b.tokens+now.Sub(b.last).Seconds()*rate)
	b.last = now
	if b.tokens >= 1 {
		return 0
	}
	return time.Duration((1 - b.tokens) / rate * float64(time.Second))
}

// chatLocked finds the chat a request names.
func (s *Server) chatLocked(v string) *chat {
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil
	}
	return s.chats[id]
}

// text parses the text of a send or edit and checks it as Telegram does.
func text(p map[string]string) (plain string, description string) {
	raw := p["text"]
	switch p["parse_mode"] {
	case "":
		plain = raw
	case "HTML":
		t, err := parseHTML(raw)
		if err != nil {
			return "", ErrParseEntities + err.Error()
		}
		plain = t
	default:
		return "", "Bad Request: unsupported parse_mode"
	}
	if strings.TrimSpace(plain) == "" {
		return "", ErrEmpty
	}
	if utf16Len(plain) > MessageChars {
		return "", ErrTooLong
	}
	return plain, ""
}

type markup struct {
	InlineKeyboard *[][]struct {
		Text         string  `json:"text"`
		CallbackData *string `json:"callback_data"`
		URL          string  `json:"url"`
	} `json:"inline_keyboard"`
	ForceReply            bool   `json:"force_reply"`
	Selective             bool   `json:"selective"`
	InputFieldPlaceholder string `json:"input_field_placeholder"`
}

// parseMarkup reads reply_markup; an empty copy_text on a button (which
// go-telegram/bot always sends) is ignored, as Telegram does.
func parseMarkup(raw string) (markup, [][]Button, string) {
	var mk markup
	if raw == "" {
		return mk, nil, ""
	}
	if err := json.Unmarshal([]byte(raw), &mk); err != nil {
		return mk, nil, "Bad Request: can't parse reply keyboard markup JSON object"
	}
	if mk.InlineKeyboard == nil {
		return mk, nil, ""
	}
	var kb [][]Button
	for _, row := range *mk.InlineKeyboard {
		var r []Button
		for _, b := range row {
			if b.Text == "" {
				return mk, nil, "Bad Request: can't parse inline keyboard button: Text buttons are unallowed in the inline keyboard"
			}
			if b.CallbackData == nil && b.URL == "" {
				return mk, nil, "Bad Request: can't parse inline keyboard button: Text buttons are unallowed in the inline keyboard"
			}
			if b.CallbackData != nil && (len(*b.CallbackData) < 1 || len(*b.CallbackData) > CallbackDataBytes) {
				return mk, nil, ErrButtonData
			}
			data := ""
			if b.CallbackData != nil {
				data = *b.CallbackData
			}
			r = append(r, Button{Text: b.Text, Data: data})
		}
		if len(r) > 0 {
			kb = append(kb, r)
		}
	}
	return mk, kb, ""
}

var (
	mentionRe     = regexp.MustCompile(`(^|[^\p{L}\p{N}_])@([A-Za-z0-9_]{1,32})`)
	textMentionRe = regexp.MustCompile(`href="tg://user\?id=(\d+)"`)
)

func mentions(plain, html string) ([]string, []int64) {
	var names []string
	for _, m := range mentionRe.FindAllStringSubmatch(plain, -1) {
		names = append(names, m[2])
	}
	var ids []int64
	for _, m := range textMentionRe.FindAllStringSubmatch(html, -1) {
		id, _ := strconv.ParseInt(m[1], 10, 64)
		ids = append(ids, id)
	}
	return names, ids
}

// urlRe and textLinkRe find what Telegram makes a link of and may preview: an http or
// https URL in the text a person reads, or a text link to one.
var (
	urlRe      = regexp.MustCompile(`(?i)\bhttps?://[^\s<>"]+`)
	textLinkRe = regexp.MustCompile(`(?i)<a\s+href="https?://`)
)

// linkPreview reports whether Telegram would preview a link of a message
// sent or edited with parameters p, read as plain and written as html.
func linkPreview(p map[string]string, plain, html string) bool {
	if !urlRe.MatchString(plain) && !textLinkRe.MatchString(html) {
		return false
	}
	if p["disable_web_page_preview"] == "true" {
		return false
	}
	var o struct {
		IsDisabled bool `json:"is_disabled"`
	}
	if raw := p["link_preview_options"]; raw != "" && json.Unmarshal([]byte(raw), &o) == nil && o.IsDisabled {
		return false
	}
	return true
}

func (s *Server) sendMessage(w http.ResponseWriter, p map[string]string, client clientOf) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.chatLocked(p["chat_id"])
	if c == nil {
		fail(w, http.StatusBadRequest, ErrChatNotFound, 0)
		return
	}
	if after := s.limitLocked(c.id, client); after > 0 {
		fail(w, http.StatusTooManyRequests, fmt.Sprintf(errTooManyRequest, after), after)
		return
	}
	switch c.refusal {
	case ErrBlocked, ErrKicked:
		fail(w, http.StatusForbidden, c.refusal, 0)
		return
	case ErrNoRights:
		fail(w, http.StatusBadRequest, c.refusal, 0)
		return
	}
	plain, bad := text(p)
	if bad != "" {
		fail(w, http.StatusBadRequest, bad, 0)
		return
	}
	mk, kb, bad := parseMarkup(p["reply_markup"])
	if bad != "" {
		fail(w, http.StatusBadRequest, bad, 0)
		return
	}
	var rp replyParameters
	if raw := p["reply_parameters"]; raw != "" {
		if err := json.Unmarshal([]byte(raw), &rp); err != nil {
			fail(w, http.StatusBadRequest, "Bad Request: can't parse reply parameters JSON object", 0)
			return
		}
	}
	replyTo := 0
	switch {
	case rp.MessageID == 0:
	case s.findLocked(c.id, rp.MessageID) != nil:
		replyTo = rp.MessageID
	case !rp.AllowSendingWithoutReply:
		fail(w, http.StatusBadRequest, ErrReplyNotFound, 0)
		return
	}
	c.nextID++
	m := &Message{
		ID: c.nextID, ChatID: c.id, From: s.Bot, Date: s.opts.Clock.Now().Unix(), Text: plain, HTML: p["text"],
		Keyboard: kb, ForceReply: mk.ForceReply, Selective: mk.Selective, Placeholder: mk.InputFieldPlaceholder,
		ReplyTo: replyTo, ReplyAsked: rp.MessageID, ReplyOptional: rp.AllowSendingWithoutReply,
	}
	m.Mentions, m.TextMentions = mentions(plain, p["text"])
	m.LinkPreview = linkPreview(p, plain, p["text"])
	c.messages = append(c.messages, m)
	s.stats.Sent++
	ok200(w, s.messageJSON(c, m))
}

// replyParameters is the part of a send's reply_parameters the fake reads.
type replyParameters struct {
	MessageID                int  `json:"message_id"`
	AllowSendingWithoutReply bool `json:"allow_sending_without_reply"`
}

func (s *Server) editMessage(w http.ResponseWriter, p map[string]string, client clientOf, withText bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.chatLocked(p["chat_id"])
	if c == nil {
		fail(w, http.StatusBadRequest, ErrChatNotFound, 0)
		return
	}
	id, _ := strconv.Atoi(p["message_id"])
	m := s.findLocked(c.id, id)
	if m != nil {
		m.EditCalls++
	}
	if after := s.limitLocked(c.id, client); after > 0 {
		fail(w, http.StatusTooManyRequests, fmt.Sprintf(errTooManyRequest, after), after)
		return
	}
	switch c.refusal {
	case ErrBlocked, ErrKicked:
		fail(w, http.StatusForbidden, c.refusal, 0)
		return
	}
	if m == nil {
		fail(w, http.StatusBadRequest, ErrEditNotFound, 0)
		return
	}
	if m.From.ID != s.Bot.ID {
		fail(w, http.StatusBadRequest, "Bad Request: message can't be edited", 0)
		return
	}
	plain, html := m.Text, m.HTML
	if withText {
		var bad string
		if plain, bad = text(p); bad != "" {
			fail(w, http.StatusBadRequest, bad, 0)
			return
		}
		html = p["text"]
	}
	// Without reply_markup an edit removes the inline keyboard.
	_, kb, bad := parseMarkup(p["reply_markup"])
	if bad != "" {
		fail(w, http.StatusBadRequest, bad, 0)
		return
	}
	if plain == m.Text && sameFormatting(html, m.HTML) && sameKeyboard(kb, m.Keyboard) {
		fail(w, http.StatusBadRequest, ErrNotModified, 0)
		return
	}
	m.Text, m.HTML, m.Keyboard = plain, html, kb
	m.Mentions, m.TextMentions = mentions(plain, html)
	if withText {
		m.LinkPreview = linkPreview(p, plain, html)
	}
	m.Edits++
	s.stats.Edited++
	ok200(w, s.messageJSON(c, m))
}

// sameFormatting compares two HTML texts of the same plain text; the fake
// treats equal markup as equal entities.
func sameFormatting(a, b string) bool { return a == b }

func sameKeyboard(a, b [][]Button) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return false
		}
		for j := range a[i] {
			if a[i][j] != b[i][j] {
				return false
			}
		}
	}
	return true
}

// deleteMessage deletes a message as Telegram does for a bot that is no
// admin of the chat: its own messages anywhere and the people's in private
// chats, sent less than DeleteWindow ago. A deletion counts against the
// chat's rate like a send.
func (s *Server) deleteMessage(w http.ResponseWriter, p map[string]string, client clientOf) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.chatLocked(p["chat_id"])
	if c == nil {
		fail(w, http.StatusBadRequest, ErrChatNotFound, 0)
		return
	}
	if p["message_id"] == "" {
		fail(w, http.StatusBadRequest, ErrNoMessageID, 0)
		return
	}
	if after := s.limitLocked(c.id, client); after > 0 {
		fail(w, http.StatusTooManyRequests, fmt.Sprintf(errTooManyRequest, after), after)
		return
	}
	switch c.refusal {
	case ErrBlocked, ErrKicked:
		fail(w, http.StatusForbidden, c.refusal, 0)
		return
	}
	id, _ := strconv.Atoi(p["message_id"])
	i := slices.IndexFunc(c.messages, func(m *Message) bool { return m.ID == id })
	if i < 0 {
		fail(w, http.StatusBadRequest, ErrDeleteNotFound, 0)
		return
	}
	m := c.messages[i]
	if s.opts.Clock.Since(time.Unix(m.Date, 0)) >= DeleteWindow || m.From.ID != s.Bot.ID && c.kind != "private" {
		fail(w, http.StatusBadRequest, ErrCantDelete, 0)
		return
	}
	c.messages = slices.Delete(c.messages, i, i+1)
	s.stats.Deleted++
	ok200(w, true)
}

func (s *Server) answerCallbackQuery(w http.ResponseWriter, p map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, ok := s.queries[p["callback_query_id"]]
	if !ok || q.answered {
		s.stats.AnswerRefused++
		fail(w, http.StatusBadRequest, ErrQueryInvalid, 0)
		return
	}
	if utf16Len(p["text"]) > NoticeChars {
		fail(w, http.StatusBadRequest, ErrNoticeTooLong, 0)
		return
	}
	q.answered = true
	q.answer = Answer{Text: p["text"], ShowAlert: p["show_alert"] == "true", After: s.opts.Clock.Since(q.at)}
	s.stats.Answered++
	ok200(w, true)
}

func (s *Server) setWebhook(w http.ResponseWriter, p map[string]string) {
	u := p["url"]
	if !strings.HasPrefix(u, "https://") {
		fail(w, http.StatusBadRequest, ErrWebhookHTTPS, 0)
		return
	}
	secret := p["secret_token"]
	for _, r := range secret {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			fail(w, http.StatusBadRequest, ErrWebhookSecret, 0)
			return
		}
	}
	s.mu.Lock()
	s.webhook, s.secret = u, secret
	if s.poll != nil {
		close(s.poll.superseded)
		s.poll = nil
	}
	s.wakeLocked()
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "result": true, "description": "Webhook was set"})
}

// deliverWebhooks posts queued updates, oldest first, to the webhook
// target while a webhook is set, as Telegram does; an update is dropped
// only after a 2xx, and retried after a refusal.
func (s *Server) deliverWebhooks() {
	defer s.done.Done()
	for {
		s.mu.Lock()
		wake := s.wake
		var u *update
		if s.webhook != "" && s.target != nil && len(s.updates) > 0 {
			u = &s.updates[0]
		}
		target, secret := s.target, s.secret
		s.mu.Unlock()
		if u == nil {
			select {
			case <-wake:
				continue
			case <-s.stop:
				return
			}
		}
		req := httptest.NewRequest(http.MethodPost, "https://bridge.invalid/", bytes.NewReader(u.body))
		req.Header.Set("Content-Type", "application/json")
		if secret != "" {
			req.Header.Set("X-Telegram-Bot-Api-Secret-Token", secret)
		}
		rec := httptest.NewRecorder()
		target.ServeHTTP(rec, req)
		s.mu.Lock()
		if rec.Code/100 == 2 {
			if len(s.updates) > 0 && s.updates[0].id == u.id {
				s.updates = s.updates[1:]
				s.stats.Confirmed++
			}
			s.mu.Unlock()
			continue
		}
		s.stats.WebhookRefused++
		s.mu.Unlock()
		select {
		case <-time.After(100 * time.Millisecond):
		case <-s.stop:
			return
		}
	}
}
