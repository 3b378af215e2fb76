package web

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/link"
	"github.com/askbridge/askbridge/internal/markup"
	"github.com/askbridge/askbridge/locale"
)

// Questions reads the questions the page lists and answers. *store.Store
// implements it.
type Questions interface {
	// Get reads a question; found is false for an unknown id. It blocks on
	// Redis, may be called concurrently and is safe to repeat.
	Get(ctx context.Context, id string) (q engine.Record, found bool, err error)
	// Lookup is Get for taking an answer: the record may come from memory
	// and its status be a moment old (see engine.Store).
	Lookup(ctx context.Context, id string) (q engine.Record, found bool, err error)
	// OpenInChat lists the pending questions shown in a chat, oldest
	// first. It blocks on Redis, may be called concurrently and is safe to
	// repeat.
	OpenInChat(ctx context.Context, platform, chat string) ([]string, error)
	// Messages lists every message recorded for a question, in the order
	// they were added: the list reads in which other places a question
	// is open and how many reminders the page has had, and whether an
	// escalation step has reached the page yet. It blocks on Redis, may
	// be called concurrently and is safe to repeat.
	Messages(ctx context.Context, id string) ([]engine.MessageRef, error)
}

// Submitter is the engine as the page uses it: the one path an answer, and
// a Seen, takes. *engine.Engine implements it. Both methods block on
// Redis and may be called concurrently.
type Submitter interface {
	// SubmitRecord decides whether the person may answer and whether the
	// question is still open, ends it with the answer (first writer wins)
	// and says what became of it; an answer that does not fit the question
	// is a *askbridge.ValidationError, any other error is trouble reaching
	// the store. A repeat after the question ended reports how it ended.
	// It takes the question as the handler has just read it, so the
	// question is read once per answer.
	SubmitRecord(ctx context.Context, rec engine.Record, a engine.Answer) (engine.Submitted, error)
	// Acknowledge records that by, in place k of question id, has seen it
	// (ask-user.md §5): reminders and escalation stop, and the question
	// stays open. It returns the notice for by: Seen, AlreadySeen,
	// NotForYou, Unknown (the question offers no Seen), or how the
	// question ended; an error is trouble reaching the store. Safe to
	// repeat: a repeat reports AlreadySeen.
	Acknowledge(ctx context.Context, id string, by askbridge.Person, k int) (engine.Notice, error)
	Keeper
}

// Keeper is the engine as the page keeps, lists and revokes standing
// answers (ask-user.md §9). Each method blocks on Redis and may be called
// concurrently; an error is trouble reaching the store.
type Keeper interface {
	// Keep keeps the answer of question id for d, for by: the outcome
	// says whether it was kept, kept before, not by's or closed. A repeat
	// reports KeepAgain.
	Keep(ctx context.Context, id string, by askbridge.Person, d time.Duration) (engine.KeepOutcome, error)
	// Standing lists the standing answers. Safe to repeat.
	Standing(ctx context.Context) ([]engine.StandingAnswer, error)
	// Revoke revokes the standing answer of agent and key for by, when
	// by may (NotAllowed otherwise). A repeat finds none.
	Revoke(ctx context.Context, agent, key string, by *askbridge.Person) (engine.RevokeOutcome, error)
}

// Config wires a Handler. Questions, History, Events and Submitter are
// required; *store.Store is the first three.
type Config struct {
	Questions Questions
	// History is read for the timeline (the channel writes it).
	History History
	// Events is tailed for the page's live updates.
	Events    engine.EventLog
	Submitter Submitter
	// BasePath is where the page is served; it starts and ends with "/"
	// (default "/"). The API lives under BasePath + "api/".
	BasePath string
	// Token, when set, is required on every API request. Set one whenever
	// the page is reachable beyond the loopback interface (see Loopback
	// and NewToken). At least 16 characters.
	Token string
	// Logger receives the failures the page reports as 5xx. Default: none.
	Logger *slog.Logger
	// Heartbeat is how often an idle event stream sends a comment, so
	// proxies and browsers keep it open (default 15 s).
	Heartbeat time.Duration
	// Origins are the origins (scheme://host[:port]) the page is served
	// at: the server's own address, and any a reverse proxy or a published
	// port adds. A browser's answer is accepted only from one of them, or
	// from a loopback alias of a loopback one (http://127.0.0.1:8080 stands
	// for http://localhost:8080 and http://[::1]:8080 too). The request's
	// Host is never trusted for this: a page whose name resolves to this
	// machine sends its own. Empty: no browser may answer.
	Origins []string
	// MaxStreams bounds the event streams open at once (one per open
	// page); one more is refused with 503 and Retry-After, and the page
	// tries again (default 100).
	MaxStreams int
	// Links, when set, turns answer links on (ask-user.md §10): the page
	// of a link, BasePath+"a/<token>" (link.PathPrefix when BasePath is
	// "/"), shows the link's question and takes its answer. It is served
	// outside the API's token and the loopback-only rule, since people
	// open it from their mail with no login (the signed token is the
	// capability), but only to a loopback name or PublicURL's host. Nil:
	// links are off, and the path is an unknown one (404).
	Links *link.Signer
	// PublicURL is the address people reach the bridge's web server at
	// (ASKUSER_PUBLIC_URL): http(s)://host[:port][/path], the base of
	// every link (link.Maker.Base). Required with Links. Its host is the
	// one name besides loopback the link's page is served to, and its
	// origin is one a link's form may be posted from.
	PublicURL string
}

// Handler serves the web page and its API. It is safe for concurrent use.
// Call Close on shutdown: event streams never end by themselves.
type Handler struct {
	questions Questions
	history   History
	events    engine.EventLog
	submitter Submitter
	base      string
	token     []byte // sha256 of the token; nil when none is required
	log       *slog.Logger
	heartbeat time.Duration
	origins   []origin
	mux       *http.ServeMux
	hub       *hub
	// maxStreams bounds streams, the event streams open now.
	maxStreams int64
	streams    atomic.Int64
	// The page of an answer link (link.go); links is nil when they are
	// off.
	links        *link.Signer
	linkBase     string // BasePath + "a/"
	linkMux      *http.ServeMux
	linkPages    *linkPages
	publicOrigin origin
	publicHost   string
}

// The person who answers on the page. The page has no accounts: whoever
// holds the page (and its token) answers as the web page.
var pagePerson = askbridge.Person{Platform: Platform, ID: "web", Name: "web page"}

// pageTarget is the target of the page's place in a question
// (Record.Places): the page is a place like any other, and a question is
// the page's to list, answer and stream when one of its places is this
// one and has been reached (pagePlace).
var pageTarget = askbridge.Target{Platform: Platform}

// pagePlace is the page's place in rec, or -1 when the question is not the
// page's: it has no place on the page, or that place belongs to an
// escalation step not taken yet (engine.Record.Reached), which the page
// must neither show nor answer nor acknowledge, lest it answer for, or
// stop, the step that would bring the question here. messages reads the
// question's messages, called only when the record does not say.
func pagePlace(rec engine.Record, messages func() ([]engine.MessageRef, error)) (int, error) {
	k := rec.PlaceAt(pageTarget)
	if k < 0 {
		return -1, nil
	}
	reached, err := rec.Reached(k, messages)
	if err != nil || !reached {
		return -1, err
	}
	return k, nil
}

// messagesOf reads question id's messages once, the first time it is
// called, and hands the same list (or error) to every later call.
func (h *Handler) messagesOf(ctx context.Context, id string) func() ([]engine.MessageRef, error) {
	var (
		read bool
		refs []engine.MessageRef
		err  error
	)
	return func() ([]engine.MessageRef, error) {
		if !read {
			read = true
			refs, err = h.questions.Messages(ctx, id)
		}
		return refs, err
	}
}

// Limits of the API.
const (
	// maxAnswerBody bounds an answer: three questions of up to four
	// labels (64 characters each) or free text (CheckAnswers allows
	// 2,000 characters per value) fit many times over.
	maxAnswerBody = 64 << 10
	// maxSeenBody bounds a Seen, whose body is an empty object.
	maxSeenBody = 1 << 10
	// maxListed bounds the open questions one list returns.
	maxListed = 200
	// defaultHistory and maxHistory bound a timeline read; the store keeps
	// 1,000 entries.
	defaultHistory = 100
	maxHistory     = 1000
	// minTokenLen keeps a guessable token out.
	minTokenLen = 16
	// submitTimeout bounds one answer; a click is not lost half-way when
	// the browser goes away, so it does not use the request's context.
	submitTimeout = 15 * time.Second
	// defaultMaxStreams bounds the open event streams (Config.MaxStreams).
	defaultMaxStreams = 100
)

// securityPolicy keeps the page to its own files: no inline script, no
// other origin, no framing.
const securityPolicy = "default-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; object-src 'none'"

// NewHandler checks cfg and returns the handler. It starts nothing: the
// events stream is tailed only while a page is connected.
func NewHandler(cfg Config) (*Handler, error) {
	if cfg.Questions == nil {
		return nil, errors.New("web: config: Questions is required")
	}
	if cfg.History == nil {
		return nil, errors.New("web: config: History is required")
	}
	if cfg.Events == nil {
		return nil, errors.New("web: config: Events is required")
	}
	if cfg.Submitter == nil {
		return nil, errors.New("web: config: Submitter is required")
	}
	base := cfg.BasePath
	if base == "" {
		base = "/"
	}
	if !strings.HasPrefix(base, "/") || !strings.HasSuffix(base, "/") || strings.ContainsAny(base, "{}? #") || strings.Contains(base, "//") {
		return nil, fmt.Errorf("web: config: base path %q must start and end with \"/\" and hold no braces, spaces, '?', '#' or \"//\"", base)
	}
	if cfg.Token != "" && len(cfg.Token) < minTokenLen {
		return nil, fmt.Errorf("web: config: token must be at least %d characters", minTokenLen)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 15 * time.Second
	}
	if cfg.MaxStreams <= 0 {
		cfg.MaxStreams = defaultMaxStreams
	}
	var origins []origin
	for _, s := range cfg.Origins {
		o, ok := parseOrigin(s)
		if !ok {
			return nil, fmt.Errorf("web: config: %q is not an origin (scheme://host[:port])", s)
		}
		origins = append(origins, o)
	}
	h := &Handler{
		questions: cfg.Questions, history: cfg.History, events: cfg.Events,
		submitter: cfg.Submitter, base: base, origins: origins,
		log: cfg.Logger, heartbeat: cfg.Heartbeat, mux: http.NewServeMux(),
		hub: newHub(cfg.Events, cfg.Questions, cfg.Logger), maxStreams: int64(cfg.MaxStreams),
	}
	if cfg.Token != "" {
		sum := sha256.Sum256([]byte(cfg.Token))
		h.token = sum[:]
	}
	if err := h.linkSetup(cfg); err != nil {
		return nil, err
	}
	assets, err := loadAssets()
	if err != nil {
		return nil, err
	}
	for name, a := range assets {
		pattern := "GET " + base + name
		if name == "index.html" {
			pattern = "GET " + base + "{$}"
		}
		h.mux.Handle(pattern, a)
	}
	h.mux.HandleFunc("GET "+base+"words", h.words)
	h.mux.Handle("GET "+base+"api/questions", h.api(h.listQuestions, false))
	h.mux.Handle("GET "+base+"api/history", h.api(h.listHistory, false))
	h.mux.Handle("GET "+base+"api/events", h.api(h.streamEvents, true))
	h.mux.Handle("POST "+base+"api/questions/{id}/answer", h.api(h.answer, false))
	h.mux.Handle("POST "+base+"api/questions/{id}/seen", h.api(h.seen, false))
	h.mux.Handle("POST "+base+"api/questions/{id}/keep", h.api(h.keep, false))
	h.mux.Handle("GET "+base+"api/standing", h.api(h.listStanding, false))
	h.mux.Handle("POST "+base+"api/standing/revoke", h.api(h.revoke, false))
	return h, nil
}

// ServeHTTP serves the page (GET BasePath), its files, its words and the API.
// Without a token it serves only requests made on this machine (see
// LocalOnly). The page of an answer link (Config.Links) is the one
// exception: it has its own wall (serveLink).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.isLinkPath(r) {
		h.serveLink(w, r)
		return
	}
	if h.token == nil && !admitLocal(w, r) {
		return
	}
	pageHeaders(w.Header(), securityPolicy)
	h.mux.ServeHTTP(w, r)
}

// Close ends every open event stream and refuses new ones, then waits for
// the events tail to stop (at most a couple of seconds). Call it when the
// server shuts down (http.Server.RegisterOnShutdown(h.Close) does), since
// a stream never goes idle by itself. Safe to repeat and to call
// concurrently with requests.
func (h *Handler) Close() { h.hub.close() }

// Guard puts next behind the page's own wall, for the bridge's other
// endpoints on the page's listener (/mcp, /metrics, /readyz): with a
// token, the token as an Authorization: Bearer header (a Prometheus scrape
// config's authorization credentials); without one, requests made on this
// machine only (LocalOnly).
func (h *Handler) Guard(next http.Handler) http.Handler {
	if h.token == nil {
		return LocalOnly(next)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !h.authorized(r, false) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="askbridge"`)
			writeError(w, http.StatusUnauthorized, "This endpoint needs the bridge's access token as an Authorization: Bearer header.")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// LocalOnly is the wall of a page without a token: it serves next only
// requests made on this machine. Their Host must be a loopback name
// (LoopbackHostOnly; others get 421), and they must not come through a
// reverse proxy (Proxied; those get 403): a proxy on this machine that
// forwards to 127.0.0.1, as nginx's `proxy_pass http://127.0.0.1:8080;`
// and Apache's ProxyPreserveHost Off do, sends a loopback Host on behalf
// of a client anywhere.
func LocalOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if admitLocal(w, r) {
			next.ServeHTTP(w, r)
		}
	})
}

// admitLocal is LocalOnly's rule: false, after refusing r, when r was not
// made on this machine.
func admitLocal(w http.ResponseWriter, r *http.Request) bool {
	switch {
	case !LoopbackHost(r.Host):
		refuseHost(w)
		return false
	case Proxied(r):
		writeError(w, http.StatusForbidden, "This bridge has no access token, so it serves only requests made on this machine, and this one came through a proxy (it carries a Forwarded, X-Forwarded-For, X-Real-IP or Via header). Set ASKUSER_HTTP_TOKEN to serve the page through a proxy.")
		return false
	}
	return true
}

// proxyHeaders are the headers reverse proxies add to a request they
// forward: RFC 7239's Forwarded, the de facto X-Forwarded-For and
// X-Real-IP (nginx's proxy_set_header habit, Apache's mod_proxy), and
// RFC 9110's Via.
var proxyHeaders = []string{"Forwarded", "X-Forwarded-For", "X-Real-IP", "Via"}

// Proxied reports whether r carries any of the headers a reverse proxy
// adds to what it forwards, even empty. A browser sends none of them.
func Proxied(r *http.Request) bool {
	for _, name := range proxyHeaders {
		if r.Header.Values(name) != nil {
			return true
		}
	}
	return false
}

// LoopbackHostOnly serves next only to requests whose Host is a loopback
// name: localhost, an address in 127.0.0.0/8, or [::1], with any port.
// Others get 421 Misdirected Request. It is what keeps a server without a
// token on a loopback address out of reach of DNS rebinding: a web page
// whose own name resolves to 127.0.0.1 reaches the port, but its requests
// carry its own name.
func LoopbackHostOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !LoopbackHost(r.Host) {
			refuseHost(w)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// LoopbackHost reports whether host (a Host header: a name or an address,
// with or without a port) names the loopback interface: localhost, an
// address in 127.0.0.0/8, or ::1. Any other name is refused, even one that
// resolves to 127.0.0.1, since whoever owns it can make it resolve
// anywhere.
func LoopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	} else {
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func refuseHost(w http.ResponseWriter) {
	writeError(w, http.StatusMisdirectedRequest, "This bridge has no access token, so it answers only to localhost, 127.0.0.1 and [::1]: open it at one of those, or set ASKUSER_HTTP_TOKEN to serve it under another name.")
}

// api wraps an API endpoint: no caching, and the token when one is set.
// queryToken lets the token come as a query parameter (EventSource cannot
// set headers).
func (h *Handler) api(next http.HandlerFunc, queryToken bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		if !h.authorized(r, queryToken) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="askbridge"`)
			writeError(w, http.StatusUnauthorized, "This page needs its access token: open the link the bridge printed (it ends in #token=…).")
			return
		}
		next(w, r)
	})
}

// authorized checks the token in constant time: both sides are hashed, so
// neither the content nor the length of the token leaks through timing.
func (h *Handler) authorized(r *http.Request, queryToken bool) bool {
	if h.token == nil {
		return true
	}
	var got string
	if auth := r.Header.Get("Authorization"); auth != "" {
		scheme, value, ok := strings.Cut(auth, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			return false
		}
		got = strings.TrimSpace(value)
	} else if queryToken {
		got = r.URL.Query().Get("token")
	}
	if got == "" {
		return false
	}
	sum := sha256.Sum256([]byte(got))
	return subtle.ConstantTimeCompare(sum[:], h.token) == 1
}

// questionView is an open question as the page gets it.
type questionView struct {
	ID    string `json:"id"`
	Agent string `json:"agent,omitempty"`
	// Locale is the question's catalog (Plan.Locale): its card shows the
	// bridge's words in it, whatever the page's own language.
	Locale string `json:"locale"`
	// Intro is the first line of the prompt, in Locale.
	Intro string `json:"intro"`
	// ContextHTML is the request's context as sanitised HTML
	// (internal/markup), the one field the page inserts as HTML. Empty
	// when the request has no context.
	ContextHTML string               `json:"contextHTML,omitempty"`
	Questions   []askbridge.Question `json:"questions"`
	// Created and Deadline are unix milliseconds. Created is when a
	// replica took the question up, which may come after a question asked
	// later (replicas handle asks concurrently).
	Created  int64 `json:"created"`
	Deadline int64 `json:"deadline"`
	// Asked is when the agent asked (unix milliseconds): the time of the
	// requests stream entry of its ask where the page can read it (see
	// askedAt), else Created. The list is in this order.
	Asked int64 `json:"asked"`
	// MayAnswer is false when the page's place names answerers and the
	// page is not one of them: the page shows it without controls.
	MayAnswer bool `json:"mayAnswer"`
	// Places are the other places the question is open in (a prompt of
	// it is posted there), in the order of the request's places: each as
	// the request or route named it, and its platform. Who may answer
	// there is not the page's to know.
	Places []placeView `json:"places,omitempty"`
	// OffersSeen is true when the request has reminders or escalation
	// steps (askbridge.Request.Pings): its card has a Seen button until
	// someone has seen it.
	OffersSeen bool `json:"offersSeen"`
	// SeenBy names who has seen it (askbridge.Person.Display), once
	// someone has, on any platform.
	SeenBy string `json:"seenBy,omitempty"`
	// Notes are the lines the question's state adds to its prompt on the
	// page (engine.Record.PlanFor), in Locale: why an escalation step
	// brought it here, who has seen it.
	Notes []string `json:"notes,omitempty"`
	// Reminders is how many reminders the page has shown for it (the
	// reminders recorded in its place on the page).
	Reminders int `json:"reminders,omitempty"`
	// Quorum is how many people must give the same answer (ask-user.md
	// §6); 0 for an ordinary question. The fields below are set only
	// with it.
	Quorum int `json:"quorum,omitempty"`
	// TallyLine is the tally the question's prompts show, in Locale
	// ("Votes: 1 of 2 needed — Approve 0, Reject 1"): the note the quorum
	// adds to the plan's, so it is not among Notes.
	TallyLine string `json:"tallyLine,omitempty"`
	// Tally counts the votes by answer, each distinct answer once, in the
	// order first given; Abstained counts the skips.
	Tally     []tallyView `json:"tally,omitempty"`
	Abstained int         `json:"abstained,omitempty"`
	// Voters names who has voted (an abstention is a vote), in order:
	// names, never their answers.
	Voters []string `json:"voters,omitempty"`
	// Voted is true once the page has voted; MyVote is then its vote. A
	// person's first vote stands, so the card takes no other.
	Voted  bool         `json:"voted,omitempty"`
	MyVote *HistoryVote `json:"myVote,omitempty"`
}

// tallyView is one answer of a quorum question's tally: per question, the
// declared labels chosen (free text is not repeated: OwnWords says there
// was some), and how many people gave it.
type tallyView struct {
	Answers []HistoryAnswer `json:"answers"`
	Count   int             `json:"count"`
}

// placeView is another place a question is open in, as the page names it.
type placeView struct {
	// Name is the place as the request or route named it: "slack:C0123",
	// "oncall-lead".
	Name     string `json:"name"`
	Platform string `json:"platform"`
}

// listQuestions: GET api/questions, the open questions shown on the page,
// in the order the agents asked them (askedAt), with the server's clock
// for the countdowns. A question is listed when one of its places is the
// page, whichever, once that place has been reached (pagePlace).
func (h *Handler) listQuestions(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	ids, err := h.questions.OpenInChat(ctx, Platform, chat)
	if err != nil {
		h.fail(w, r, "list open questions", err)
		return
	}
	views := []questionView{}
	keys := map[string]askedKey{}
	for _, id := range ids {
		if len(views) == maxListed {
			break
		}
		rec, found, err := h.questions.Get(ctx, id)
		if err != nil {
			h.fail(w, r, "read question", err)
			return
		}
		if !found || rec.Status != askbridge.StatusPending {
			continue
		}
		msgs := h.messagesOf(ctx, rec.ID)
		k, err := pagePlace(rec, msgs)
		if err != nil {
			h.fail(w, r, "read question messages", err)
			return
		}
		if k < 0 {
			continue
		}
		v, err := h.view(rec, k, msgs)
		if err != nil {
			h.fail(w, r, "read question messages", err)
			return
		}
		keys[rec.ID] = askedAt(rec)
		views = append(views, v)
	}
	slices.SortStableFunc(views, func(a, b questionView) int { return keys[a.ID].compare(keys[b.ID]) })
	writeJSON(w, http.StatusOK, map[string]any{"now": time.Now().UnixMilli(), "questions": views})
}

// askedKey orders questions by when the agent asked: the requests stream
// entry of the ask ("<ms>-<seq>"), then when a replica took it up, then
// the id.
type askedKey struct {
	ms, seq int64
	created int64
	id      string
}

func (a askedKey) compare(b askedKey) int {
	return cmp.Or(cmp.Compare(a.ms, b.ms), cmp.Compare(a.seq, b.seq), cmp.Compare(a.created, b.created), strings.Compare(a.id, b.id))
}

// askedAt is when the agent asked rec: the time of its requests stream
// entry (Record.Entry), whichever replica took it up and when. A question
// without one (created before the store kept it) is placed by its id when
// that is the entry's id (an ask without an id of its own), else by
// Created, when a replica took it up.
func askedAt(rec engine.Record) askedKey {
	k := askedKey{created: rec.Created.UnixMilli(), id: rec.ID}
	e, ok := parseStreamID(rec.Entry)
	if !ok {
		e, ok = parseStreamID(rec.ID)
	}
	if ok && e[0] <= math.MaxInt64 && e[1] <= math.MaxInt64 {
		k.ms, k.seq = int64(e[0]), int64(e[1])
	} else {
		k.ms = k.created
	}
	return k
}

// view is the open question rec as the page lists it; k is the page's
// place in it. Only a question shown in several places, or reminded, has
// its messages read (messages; one more round trip, unless pagePlace
// read them already): they say where else it is open and how many
// reminders the page has had.
func (h *Handler) view(rec engine.Record, k int, messages func() ([]engine.MessageRef, error)) (questionView, error) {
	plan := rec.PlanFor(k, pageCapabilities)
	v := questionView{
		ID: rec.ID, Agent: rec.Request.Agent, Locale: plan.Locale, Intro: plan.Intro,
		ContextHTML: contextHTML(plan.Context), Questions: rec.Request.Questions,
		Created: rec.Created.UnixMilli(), Deadline: rec.Deadline.UnixMilli(), Asked: askedAt(rec).ms,
		MayAnswer: rec.MayAnswerIn(pagePerson, k), OffersSeen: rec.Request.Pings(), Notes: plan.Notes,
	}
	if rec.Acknowledged != nil {
		v.SeenBy = rec.Acknowledged.Display()
	}
	if rec.Request.Quorum > 0 {
		quorumView(&v, rec, k)
	}
	if len(rec.Places) < 2 && rec.Request.RemindEverySeconds == 0 {
		return v, nil
	}
	refs, err := messages()
	if err != nil {
		return questionView{}, err
	}
	v.Places, v.Reminders = reach(rec, k, refs)
	return v, nil
}

// quorumView adds what a quorum question's card shows (ask-user.md §6) to
// v: the tally line, taken out of the notes; the tally; who has voted; and
// the page's own vote, once it has voted.
func quorumView(v *questionView, rec engine.Record, k int) {
	v.Quorum = rec.Request.Quorum
	// The tally line is what the quorum adds to the notes: the notes of
	// the same question without it are the others.
	plain := rec
	plain.Request.Quorum = 0
	notes, extra := splitNotes(v.Notes, plain.PlanFor(k, pageCapabilities).Notes)
	if len(extra) > 0 {
		v.TallyLine = extra[0]
		notes = append(notes, extra[1:]...)
	}
	v.Notes = notes
	t := engine.TallyOf(rec)
	for _, key := range t.Keys {
		v.Tally = append(v.Tally, tallyView{Answers: historyAnswers(rec.Request.Questions, t.Answers[key]), Count: t.Counts[key]})
	}
	v.Abstained = t.Abstained
	for _, vote := range rec.Votes {
		v.Voters = append(v.Voters, personName(vote.By))
		if vote.By.Platform == pagePerson.Platform && vote.By.ID == pagePerson.ID && !v.Voted {
			v.Voted = true
			mine := historyVote(rec.Request.Questions, vote)
			v.MyVote = &mine
		}
	}
}

// splitNotes divides notes into those among base (kept, in order) and the
// others (extra).
func splitNotes(notes, base []string) (kept, extra []string) {
	left := map[string]int{}
	for _, n := range base {
		left[n]++
	}
	for _, n := range notes {
		if left[n] > 0 {
			left[n]--
			kept = append(kept, n)
		} else {
			extra = append(extra, n)
		}
	}
	return kept, extra
}

// reach reads the messages recorded for rec: the places other than k with
// a prompt posted (a place not reached yet has none, nor one the platform
// refused before any part of the prompt was out), and how many reminders
// were posted in place k.
func reach(rec engine.Record, k int, refs []engine.MessageRef) ([]placeView, int) {
	open := make([]bool, len(rec.Places))
	reminders := 0
	for _, ref := range refs {
		switch {
		case ref.Place < 0 || ref.Place >= len(rec.Places):
		case ref.IsPrompt():
			open[ref.Place] = true
		case ref.IsReminder() && ref.Place == k:
			reminders++
		}
	}
	var places []placeView
	for i, p := range rec.Places {
		if open[i] && i != k {
			places = append(places, placeView{Name: p.Name, Platform: p.Target.Platform})
		}
	}
	return places, reminders
}

// listHistory: GET api/history?limit=N, the timeline, newest first, each
// question once.
func (h *Handler) listHistory(w http.ResponseWriter, r *http.Request) {
	limit := defaultHistory
	if s := r.URL.Query().Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			writeError(w, http.StatusBadRequest, "limit must be a positive integer")
			return
		}
		limit = min(n, maxHistory)
	}
	// Read more than asked: a retried Finish may have added an entry twice.
	raw, err := h.history.History(r.Context(), min(limit+limit/4+8, maxHistory))
	if err != nil {
		h.fail(w, r, "read history", err)
		return
	}
	entries := []HistoryEntry{}
	seen := map[string]bool{}
	for _, b := range raw {
		var e HistoryEntry
		if err := json.Unmarshal(b, &e); err != nil || e.ID == "" || seen[e.ID] {
			continue
		}
		seen[e.ID] = true
		// The stored Markdown goes out as sanitised HTML only, rendered
		// now so the page always gets today's sanitiser.
		e.ContextHTML, e.Context = contextHTML(e.Context), ""
		if e.Offer != nil && e.Offer.Until <= time.Now().UnixMilli() {
			// Its RemoveOffer is late or was lost: the offer is closed.
			e.Offer = nil
		}
		entries = append(entries, e)
		if len(entries) == limit {
			break
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"entries": entries})
}

// answerRequest is the body of POST api/questions/{id}/answer.
type answerRequest struct {
	Answers map[string][]string `json:"answers"`
	Skip    bool                `json:"skip"`
}

// answerReply tells the page how the question ended. Outcome and Notice
// are codes, for decisions; Status and Message are their words for the
// person, in the question's language (Locale).
type answerReply struct {
	ID string `json:"id"`
	// Outcome is how the question ended: answered, skipped, expired,
	// cancelled, undeliverable or no_quorum. Empty (left out) while it is
	// open: Open is then true.
	Outcome string `json:"outcome,omitempty"`
	// Status is the status line every channel shows ("Answered:
	// Production", "ตอบแล้ว: โปรดักชัน"); empty while the question is open.
	Status string `json:"status,omitempty"`
	// Open is true when the question is still open after this answer: a
	// quorum question's vote that did not decide it (Voted, Abstained),
	// or a second vote of the page (AlreadyVoted).
	Open bool `json:"open,omitempty"`
	// Notice is what became of this answer, as a code (engine.Notice:
	// "Recorded", "AlreadyAnswered", "Voted"…); Message is its text.
	Notice  string `json:"notice"`
	Message string `json:"message"`
	// Count and Need go with the notice Voted: how many votes agree with
	// the page's, and how many must (the quorum).
	Count  int              `json:"count,omitempty"`
	Need   int              `json:"need,omitempty"`
	Locale string           `json:"locale"`
	Result askbridge.Result `json:"result"`
}

// answer: POST api/questions/{id}/answer with {"answers":{...}} or
// {"skip":true}. The engine decides (Submitter); the reply carries its
// notice. 200 when this answer ended the question, or was counted as a
// vote on a quorum question that stays open (ask-user.md §6: notice Voted
// or Abstained, open true); 409 when it had already ended (the reply says
// how) or the page had already voted on it (notice AlreadyVoted, open
// true: the first vote stands); 400 for an answer that does not fit, 403
// for a question whose place on the page names answerers other than the
// page, 404 for a question the page does not show.
func (h *Handler) answer(w http.ResponseWriter, r *http.Request) {
	var req answerRequest
	if !h.readPost(w, r, &req, maxAnswerBody, "the body must be a JSON object with answers or skip") {
		return
	}
	switch {
	case req.Skip && len(req.Answers) > 0:
		writeError(w, http.StatusBadRequest, "send answers or skip, not both")
		return
	case !req.Skip && len(req.Answers) == 0:
		writeError(w, http.StatusBadRequest, "answers is required (or skip: true)")
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), submitTimeout)
	defer cancel()
	rec, k, ok := h.pageQuestion(ctx, w, r)
	if !ok {
		return
	}
	a := engine.Answer{By: pagePerson, Via: askbridge.ViaWeb, Skip: req.Skip, Values: req.Answers, Place: k}
	sub, err := h.submitter.SubmitRecord(ctx, rec, a)
	var invalid *askbridge.ValidationError
	switch {
	case errors.As(err, &invalid):
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": invalid.Error(), "problems": invalid.Problems})
	case err != nil:
		h.fail(w, r, "submit answer", err)
	case sub.Won:
		writeJSON(w, http.StatusOK, reply(sub))
	case !sub.End.Found:
		// Gone from the store since it was read.
		writeError(w, http.StatusNotFound, "no such question")
	case sub.Notice == engine.NoticeNotForYou:
		writeNotice(w, http.StatusForbidden, sub.Notice, rec.Request.Locale)
	case sub.End.Result.Status != askbridge.StatusPending:
		writeJSON(w, http.StatusConflict, reply(sub))
	case sub.Notice == engine.NoticeVoted || sub.Notice == engine.NoticeAbstained:
		// A vote that did not decide it: counted, and the question stays
		// open.
		writeJSON(w, http.StatusOK, reply(sub))
	case sub.Notice == engine.NoticeAlreadyVoted:
		writeJSON(w, http.StatusConflict, reply(sub))
	default:
		h.fail(w, r, "submit answer", fmt.Errorf("question %s is still open and the answer did not end it (%s)", rec.ID, sub.Notice))
	}
}

// readPost reads the body of a state-changing request into v, or refuses
// the request: from another site (403), not JSON (415), or not one JSON
// object of v's fields within limit bytes (400, what the body must be
// first). It reports whether v was read.
func (h *Handler) readPost(w http.ResponseWriter, r *http.Request, v any, limit int64, what string) bool {
	if msg := h.crossSite(r); msg != "" {
		writeError(w, http.StatusForbidden, msg)
		return false
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		writeError(w, http.StatusUnsupportedMediaType, "send the body as application/json")
		return false
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, what+": "+err.Error())
		return false
	}
	if _, err := dec.Token(); err != io.EOF {
		writeError(w, http.StatusBadRequest, "the body must hold one JSON object")
		return false
	}
	return true
}

// pageQuestion reads the question of the request's {id} and the page's
// place in it, or refuses the request: 404 for a question the page does
// not show (unknown, without a place on the page, or whose place on the
// page belongs to an escalation step not taken yet: the engine knows
// nothing of pages, and whoever knows another's id must not act on it
// here), 403 with the notice NotForYou when the page's place names
// answerers other than the page, open or ended. ok is false when it has
// answered.
func (h *Handler) pageQuestion(ctx context.Context, w http.ResponseWriter, r *http.Request) (rec engine.Record, k int, ok bool) {
	id := r.PathValue("id")
	if !askbridge.ValidRequestID(id) {
		writeError(w, http.StatusNotFound, "no such question")
		return rec, -1, false
	}
	// The engine's End or Vote decides the answer, so a record a moment
	// old will do.
	rec, found, err := h.questions.Lookup(ctx, id)
	if err != nil {
		h.fail(w, r, "read question", err)
		return rec, -1, false
	}
	if !found {
		writeError(w, http.StatusNotFound, "no such question")
		return rec, -1, false
	}
	if k, err = pagePlace(rec, h.messagesOf(ctx, id)); err != nil {
		h.fail(w, r, "read question messages", err)
		return rec, -1, false
	}
	if k < 0 {
		writeError(w, http.StatusNotFound, "no such question")
		return rec, -1, false
	}
	if !rec.MayAnswerIn(pagePerson, k) {
		writeNotice(w, http.StatusForbidden, engine.NoticeNotForYou, rec.Request.Locale)
		return rec, -1, false
	}
	return rec, k, true
}

// reply tells the page what became of its answer: the notice the engine
// gave (with a vote's count) and the question's result, this answer's or
// the one that won before; of a question still open, only that it is.
func reply(sub engine.Submitted) answerReply {
	rec, res := sub.End.Record, sub.End.Result
	tag := locale.For(rec.Request.Locale).Tag()
	out := answerReply{
		ID: rec.ID, Notice: string(sub.Notice), Message: sub.Notice.TextCount(tag, sub.Count, sub.Need),
		Locale: tag, Result: res,
	}
	if sub.Notice == engine.NoticeVoted {
		out.Count, out.Need = sub.Count, sub.Need
	}
	if res.Status == askbridge.StatusPending {
		out.Open = true
		return out
	}
	out.Outcome, out.Status = string(res.Outcome()), engine.StatusLine(rec.Request, res)
	return out
}

// seenReply tells the page what became of its Seen. Notice is the
// engine's code, for decisions; Message its text for the person, in the
// question's language (Locale). Outcome and Status are set when the
// question has ended, as in an answer's reply.
type seenReply struct {
	ID      string `json:"id"`
	Notice  string `json:"notice"`
	Message string `json:"message"`
	Locale  string `json:"locale"`
	Outcome string `json:"outcome,omitempty"`
	Status  string `json:"status,omitempty"`
}

// seen: POST api/questions/{id}/seen with {}, the page's Seen (ask-user.md
// §5): the question is marked as seen by the page in its place on the
// page, and stays open. The engine decides (Submitter.Acknowledge); the
// reply carries its notice. 200 when this Seen marked it, 409 when someone
// had already (notice AlreadySeen) or the question has ended (the reply
// says how, with outcome and status), 400 for a question that offers no
// Seen (notice Unknown: it has neither reminders nor escalation), 403 and
// 404 as for an answer.
func (h *Handler) seen(w http.ResponseWriter, r *http.Request) {
	if !h.readPost(w, r, &struct{}{}, maxSeenBody, "the body must be an empty JSON object, {}") {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), submitTimeout)
	defer cancel()
	rec, k, ok := h.pageQuestion(ctx, w, r)
	if !ok {
		return
	}
	n, err := h.submitter.Acknowledge(ctx, rec.ID, pagePerson, k)
	if err != nil {
		h.fail(w, r, "acknowledge", err)
		return
	}
	tag := locale.For(rec.Request.Locale).Tag()
	out := seenReply{ID: rec.ID, Notice: string(n), Message: n.Text(tag), Locale: tag}
	switch n {
	case engine.NoticeSeen:
		writeJSON(w, http.StatusOK, out)
	case engine.NoticeAlreadySeen:
		writeJSON(w, http.StatusConflict, out)
	case engine.NoticeUnknown:
		writeJSON(w, http.StatusBadRequest, out)
	case engine.NoticeNotForYou:
		writeNotice(w, http.StatusForbidden, n, tag)
	default:
		h.seenEnded(ctx, w, r, rec, out)
	}
}

// seenEnded answers a Seen that came after its question ended: 409 with
// how it ended, read again unless rec, as read before, had ended already;
// 404 when it has left the store since.
func (h *Handler) seenEnded(ctx context.Context, w http.ResponseWriter, r *http.Request, rec engine.Record, out seenReply) {
	if rec.Result == nil {
		now, found, err := h.questions.Get(ctx, rec.ID)
		switch {
		case err != nil:
			h.fail(w, r, "read question", err)
			return
		case !found:
			writeError(w, http.StatusNotFound, "no such question")
			return
		case now.Result == nil:
			h.fail(w, r, "acknowledge", fmt.Errorf("question %s is still open and the engine said %s", rec.ID, out.Notice))
			return
		}
		rec = now
	}
	out.Outcome, out.Status = string(rec.Result.Outcome()), engine.StatusLine(rec.Request, *rec.Result)
	writeJSON(w, http.StatusConflict, out)
}

// contextHTML is a request's Markdown context as sanitised HTML.
func contextHTML(src string) string {
	if src == "" {
		return ""
	}
	return markup.Parse(src).HTML()
}

// crossSite explains why a state-changing request is refused as coming
// from another site, or returns "". Browsers mark a request's origin with
// Sec-Fetch-Site and Origin; a request without either (curl, tests) is not a
// browser's cross-site request. The Origin must be one the page is served
// at (Config.Origins), never merely the same as the request's Host, which
// the requesting page chooses. With the token this is a second wall;
// without one it is what stops another site's form or script from
// answering.
func (h *Handler) crossSite(r *http.Request) string {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
	default:
		return "cross-site requests are refused"
	}
	raw := r.Header.Get("Origin")
	if raw == "" {
		return ""
	}
	if o, ok := parseOrigin(raw); ok {
		for _, allowed := range h.origins {
			if allowed.admits(o) {
				return ""
			}
		}
	}
	return "cross-origin requests are refused: this page is not served at the address it was opened at (ASKUSER_HTTP_ORIGINS lists the others)"
}

// origin is a browser origin: scheme, host (lower case, no brackets) and
// port (the scheme's default when the origin has none).
type origin struct{ scheme, host, port string }

// parseOrigin reads an origin as a browser sends it, or as configured
// (scheme://host[:port], a trailing "/" allowed).
func parseOrigin(s string) (origin, bool) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return origin{}, false
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return origin{scheme: u.Scheme, host: strings.ToLower(u.Hostname()), port: port}, true
}

// admits reports whether a request from origin o comes from the page at
// origin a: the same origin, or, for a loopback one, a loopback alias of it
// on the same scheme and port.
func (a origin) admits(o origin) bool {
	if a.scheme != o.scheme || a.port != o.port {
		return false
	}
	return a.host == o.host || (LoopbackHost(a.host) && LoopbackHost(o.host))
}

func (h *Handler) fail(w http.ResponseWriter, r *http.Request, op string, err error) {
	h.log.Error("web: "+op, "path", r.URL.Path, "err", err)
	writeError(w, http.StatusServiceUnavailable, "The bridge could not reach its store; try again.")
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "encode reply", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"error": msg})
}

// writeNotice refuses a request with the engine's notice: its code, and
// its text in catalog tag (the question's language).
func writeNotice(w http.ResponseWriter, code int, n engine.Notice, tag string) {
	writeJSON(w, code, map[string]string{"error": n.Text(tag), "notice": string(n)})
}

// Loopback reports whether addr (host:port, as for http.Server) listens
// only on the loopback interface. An empty host or an unspecified address
// listens everywhere; a name other than "localhost" is not trusted to be
// loopback. The page must have a token when this is false.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// NewToken makes a random token for the page (128 bits, base32; see
// crypto/rand.Text).
func NewToken() string { return rand.Text() }

// pageHeaders sets the headers every page of the bridge carries: policy
// as its Content-Security-Policy, no sniffing, no framing, no referrer,
// and its own browsing context and resources.
func pageHeaders(hd http.Header, policy string) {
	hd.Set("Content-Security-Policy", policy)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	hd.Set("Cross-Origin-Resource-Policy", "same-origin")
}
