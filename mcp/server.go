package mcp

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/client"
)

// Defaults of Options.
const (
	// DefaultProgressEvery keeps clients that time out idle requests
	// waiting (several give up after 60 s without a message).
	DefaultProgressEvery = 15 * time.Second
	// DefaultNotTakenAfter is how long a request may wait for a bridge to
	// take it. A running bridge takes one within milliseconds.
	DefaultNotTakenAfter = 30 * time.Second
	// DefaultMaxCalls bounds the calls one server has waiting at once
	// (ASKUSER_MCP_MAX_CALLS): a waiting call costs a goroutine or two and
	// a look at Redis every few seconds, no connection.
	DefaultMaxCalls = 64
)

// Limits of the HTTP transport.
const (
	// writeTimeout bounds each write of a response (a progress
	// notification, the result). A call lasts up to an hour, far beyond
	// the bridge's server WriteTimeout, which bounds ordinary requests.
	writeTimeout = 30 * time.Second
	// maxBody bounds a request body: a JSON-RPC envelope around a request
	// of at most askbridge.MaxRequestBytes.
	maxBody = 4 * askbridge.MaxRequestBytes
	// busyRetryAfter is the Retry-After of a call refused because
	// Options.MaxCalls are waiting.
	busyRetryAfter = 10 * time.Second
	// methodCall is the JSON-RPC method of a tool call.
	methodCall = "tools/call"
)

// ToolName is the name of the one tool the server offers.
const ToolName = "ask_user"

// Options configure a Server. Client is required.
type Options struct {
	// Client returns the agent-protocol client calls ask through. It is
	// called at the start of every call, possibly concurrently; an error
	// ends that call as a tool error whose text is the error's, so it
	// should say what to do (which Redis was tried, how to name another).
	// It should return one client for all calls: the read of the events
	// stream that wakes them goes through the client of the call that
	// started it.
	Client func(ctx context.Context) (*client.Client, error)
	// Redis names the Redis and prefix the calls go through, for messages
	// ("redis://127.0.0.1:6380, prefix askuser:"); never a password.
	Redis string
	// DefaultTo is where a call without `to` asks: a route name or a
	// target. Empty: the bridge's own default route (ASKUSER_DEFAULT_TO).
	DefaultTo string
	// DefaultAgent is who asks ("Question from <agent>:") when a call
	// names no agent. Empty: the MCP client's name, when it gives one.
	DefaultAgent string
	// ProgressEvery is the longest time between two progress
	// notifications of a call whose client sent a progress token
	// (default 15 s).
	ProgressEvery time.Duration
	// NotTakenAfter is how long a call waits for a bridge to take its
	// request before it cancels the question and fails (default 30 s).
	NotTakenAfter time.Duration
	// MaxCalls bounds the calls waiting at once (default 64). One more is
	// refused at once: a tool error naming ASKUSER_MCP_MAX_CALLS, or over
	// HTTP a 503 with Retry-After. A waiting call holds no Redis
	// connection: one read of the events stream (through Client) wakes
	// them all.
	MaxCalls int
	// MaxWait is the wait budget of a call (ASKUSER_MCP_MAX_WAIT, default
	// DefaultMaxWait): a question still open after it makes the call
	// return {"status":"pending","id":…}, and wait_for_answer waits
	// again. The question goes on; only its timeout or an answer ends it.
	MaxWait time.Duration
	// NoRelay keeps questions out of the client's window
	// (ASKUSER_MCP_ELICIT=off): no form even for a client that declares
	// elicitation, and `to: "mcp"` is refused.
	NoRelay bool
	// StateKey signs the state a client hands back with a form's answer
	// (protocol 2026-07-28), so a form's answer counts only for the
	// question it was asked for. Replicas behind one address need the same
	// key; empty: a random one per server.
	StateKey []byte
	// Logger receives a line per call and the SDK's warnings. Default:
	// none.
	Logger *slog.Logger
	// Version is the server version the client is told.
	Version string

	// versions, when set, narrows the protocol versions offered (tests
	// speak an older protocol with it).
	versions []string
}

// Server is the MCP server of askbridge: the ask_user tool, over stdio
// (ServeStdio) or streamable HTTP (Handler). Make one with New; it is safe
// for concurrent use. Close it to cancel the calls still in flight.
type Server struct {
	opts Options
	log  *slog.Logger
	// mcp is the SDK's server with the tools and the resource template,
	// made on first use: describing the tools (their JSON schemas) was a
	// part of the bridge's start before it polls, for a server most
	// bridges serve no call on for a while.
	mcp func() *sdk.Server
	// stop ends every call in flight when the server closes.
	stop    context.Context
	stopAll context.CancelFunc

	mu     sync.Mutex
	closed bool
	calls  sync.WaitGroup
	// slots holds a value for every call waiting: at most MaxCalls.
	slots chan struct{}
	// events follows the events stream for every waiting call.
	events *follower
	// stateKey signs request states (Options.StateKey).
	stateKey []byte
	// declined holds the questions whose form the person declined in the
	// client; reshow those whose form a call's budget closed, to show
	// again when wait_for_answer waits for them.
	declined, reshow idSet
}

// New checks opts and returns the server. It connects nothing.
func New(opts Options) (*Server, error) {
	if opts.Client == nil {
		return nil, errors.New("mcp: Options.Client is required")
	}
	if opts.ProgressEvery <= 0 {
		opts.ProgressEvery = DefaultProgressEvery
	}
	if opts.NotTakenAfter <= 0 {
		opts.NotTakenAfter = DefaultNotTakenAfter
	}
	if opts.MaxCalls <= 0 {
		opts.MaxCalls = DefaultMaxCalls
	}
	if opts.MaxWait <= 0 {
		opts.MaxWait = DefaultMaxWait
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if err := checkDefaults(opts.DefaultTo, opts.DefaultAgent); err != nil {
		return nil, err
	}
	s := &Server{opts: opts, log: opts.Logger, slots: make(chan struct{}, opts.MaxCalls), events: newFollower(opts.Logger), stateKey: opts.StateKey}
	if len(s.stateKey) == 0 {
		s.stateKey = make([]byte, 32)
		_, _ = rand.Read(s.stateKey) // crypto/rand.Read never fails (Go 1.24+)
	}
	s.stop, s.stopAll = context.WithCancel(context.Background())
	s.mcp = sync.OnceValue(s.newSDK)
	return s, nil
}

// newSDK makes the SDK's server with the tools and the resource template.
func (s *Server) newSDK() *sdk.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "askbridge", Title: "askbridge", Version: s.opts.Version}, &sdk.ServerOptions{
		Instructions: instructions,
		// The SDK says "session connected" at info for every HTTP request.
		Logger:                    slog.New(minLevel{s.opts.Logger.Handler(), slog.LevelWarn}),
		SupportedProtocolVersions: s.opts.versions,
	})
	srv.AddTool(tool(), s.askUser)
	srv.AddTool(waitTool(), s.waitForAnswer)
	srv.AddResourceTemplate(questionTemplate(), s.readQuestion)
	return srv
}

// checkDefaults checks the default route and agent with the bridge's own
// validator, so a bad one is reported once, at start, naming the option.
func checkDefaults(to, agent string) error {
	probe := map[string]any{"questions": []any{map[string]any{
		"id": "probe", "header": "Probe", "question": "Probe?",
		"options": []any{map[string]any{"label": "A"}, map[string]any{"label": "B"}},
	}}}
	if to != "" {
		probe["to"] = to
	}
	if agent != "" {
		probe["agent"] = agent
	}
	if _, err := askbridge.DecodeRequest(mustJSON(probe)); err != nil {
		return fmt.Errorf("mcp: default route or agent: %w", err)
	}
	return nil
}

// Connect serves one MCP session on t until the client closes it or ctx
// ends; tests connect the SDK's in-memory transports with it.
func (s *Server) Connect(ctx context.Context, t sdk.Transport) (*sdk.ServerSession, error) {
	return s.mcp().Connect(ctx, t, nil)
}

// ServeStdio serves one MCP session over in and out (a subprocess's
// stdin and stdout: newline-delimited JSON-RPC) until the client closes
// its end or ctx ends. Then it cancels the calls still in flight (their
// questions end cancelled) and waits for them, and returns; the Server is
// closed. Nothing else may write to out.
func (s *Server) ServeStdio(ctx context.Context, in io.ReadCloser, out io.WriteCloser) error {
	stop := context.AfterFunc(ctx, s.cancelCalls)
	defer stop()
	err := s.mcp().Run(ctx, &sdk.IOTransport{Reader: in, Writer: out})
	s.Close()
	if ctx.Err() != nil || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// Handler is the streamable HTTP transport (stateless: any replica serves
// any request). It authenticates nothing: mount it behind the bridge's
// wall (web.Handler.Guard). It refuses requests a browser sends from
// another origin, and a call beyond Options.MaxCalls with 503 and
// Retry-After; it gives each write of a response its own deadline, since
// a call may last as long as its question.
func (s *Server) Handler() http.Handler {
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.mcp() }, &sdk.StreamableHTTPOptions{
		Stateless: true,
		// The SSE stream of a call carries its progress notifications.
		JSONResponse: false,
		Logger:       slog.New(minLevel{s.log.Handler(), slog.LevelWarn}),
		// The bridge's wall does this (loopback host names only, without
		// a token), and with a token a reverse proxy on this machine may
		// forward other names.
		DisableLocalhostProtection:   true,
		MaxRequestBodyBytes:          maxBody,
		PropagateRequestCancellation: true,
	})
	cross := http.NewCrossOriginProtection()
	return cross.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		held, ok := s.reserve(w, r)
		if !ok {
			return
		}
		defer held.release()
		// Older protocols cancel with a notification a stateless server
		// cannot route to the call; the call's own HTTP request going away
		// (the client aborts it) cancels it instead.
		ctx := context.WithValue(r.Context(), httpRequestKey{}, r.Context())
		ctx = context.WithValue(ctx, reservationKey{}, held)
		h.ServeHTTP(&deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w)}, r.WithContext(ctx))
	}))
}

// reserve takes a slot for every tool call in the body of r (a JSON-RPC
// message or a batch), before the SDK starts any: all of them, or none and
// a 503 with Retry-After (ok false, the response written). The body is
// read here and handed on as it was.
func (s *Server) reserve(w http.ResponseWriter, r *http.Request) (held *reservation, ok bool) {
	held = &reservation{s: s}
	if r.Method != http.MethodPost || r.Body == nil {
		return held, true
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			http.Error(w, fmt.Sprintf("request body exceeds %d bytes", mbe.Limit), http.StatusRequestEntityTooLarge)
		} else {
			http.Error(w, "read the request: "+err.Error(), http.StatusBadRequest)
		}
		return nil, false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	for range toolCalls(body) {
		if !s.takeSlot() {
			held.release()
			w.Header().Set("Retry-After", strconv.Itoa(int(busyRetryAfter/time.Second)))
			http.Error(w, s.busyText(), http.StatusServiceUnavailable)
			return nil, false
		}
		held.n.Add(1)
	}
	return held, true
}

// toolCalls counts the tool calls in a JSON-RPC message or batch; 0 for
// anything else (the SDK answers what it cannot read).
func toolCalls(body []byte) int {
	type message struct {
		Method string `json:"method"`
	}
	body = bytes.TrimSpace(body)
	var batch []message
	if len(body) > 0 && body[0] == '[' {
		if json.Unmarshal(body, &batch) != nil {
			return 0
		}
	} else {
		var one message
		if json.Unmarshal(body, &one) != nil {
			return 0
		}
		batch = append(batch, one)
	}
	n := 0
	for _, m := range batch {
		if m.Method == methodCall {
			n++
		}
	}
	return n
}

// reservationKey carries the slots an HTTP request reserved for its
// calls.
type reservationKey struct{}

// reservation is the slots one HTTP request took for its tool calls. Each
// call claims one (and gives it back when it ends); release gives back
// those no call claimed.
type reservation struct {
	s *Server
	n atomic.Int64
}

// claim takes one of the reserved slots; false when none is left.
func (h *reservation) claim() bool {
	for {
		n := h.n.Load()
		if n <= 0 {
			return false
		}
		if h.n.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

// release gives back the slots no call claimed. Safe to repeat.
func (h *reservation) release() {
	for range h.n.Swap(0) {
		h.s.freeSlot()
	}
}

// takeSlot takes a call's slot without waiting; false when MaxCalls are
// taken.
func (s *Server) takeSlot() bool {
	select {
	case s.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

func (s *Server) freeSlot() { <-s.slots }

// callSlot takes the slot of the call in ctx: the one its HTTP request
// reserved, or a free one. false when MaxCalls are taken.
func (s *Server) callSlot(ctx context.Context) bool {
	if held, ok := ctx.Value(reservationKey{}).(*reservation); ok && held.claim() {
		return true
	}
	return s.takeSlot()
}

// busyText says why a call was refused at the cap, and what to do.
func (s *Server) busyText() string {
	return fmt.Sprintf("ask_user: %d calls are already waiting for answers on this server, its limit (ASKUSER_MCP_MAX_CALLS), so nothing was asked. Call again once one of them has ended.", s.opts.MaxCalls)
}

// Close cancels the calls in flight (their questions end cancelled),
// waits for them to return, and refuses new ones. Safe to repeat.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancelCalls()
	s.calls.Wait()
	s.events.wait()
}

func (s *Server) cancelCalls() { s.stopAll() }

// enter counts a call in; false when the server is closed.
func (s *Server) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.calls.Add(1)
	return true
}

// httpRequestKey carries the context of the HTTP request a call came in.
type httpRequestKey struct{}

// deadlineWriter gives each write its own deadline.
type deadlineWriter struct {
	http.ResponseWriter
	rc *http.ResponseController
}

func (w *deadlineWriter) Write(p []byte) (int, error) {
	// Ignored where unsupported.
	_ = w.rc.SetWriteDeadline(time.Now().Add(writeTimeout))
	return w.ResponseWriter.Write(p)
}

// Flush sends what was written (the SDK flushes each event).
func (w *deadlineWriter) Flush() {
	_ = w.rc.SetWriteDeadline(time.Now().Add(writeTimeout))
	_ = w.rc.Flush()
}

// Unwrap lets http.ResponseController reach the connection.
func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// minLevel drops records below min.
type minLevel struct {
	h   slog.Handler
	min slog.Level
}

func (m minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= m.min && m.h.Enabled(ctx, l)
}
func (m minLevel) Handle(ctx context.Context, r slog.Record) error { return m.h.Handle(ctx, r) }
func (m minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{m.h.WithAttrs(as), m.min}
}
func (m minLevel) WithGroup(name string) slog.Handler { return minLevel{m.h.WithGroup(name), m.min} }

// instructions tell the client (and its model) what the server is for.
var instructions = strings.TrimSpace(`
askbridge asks a person a structured question in a chat they use (Telegram, Discord, Slack or the bridge's web page) and waits for the answer. Use ask_user only for decisions that genuinely belong to the person; after a no_answer result, continue with your best judgment and say so.`)
