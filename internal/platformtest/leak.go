package platformtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/testwait"
)

// Faults of a call, as the network makes them; a BrokenAPI serves each.
const (
	FaultRefused = "connection refused" // nothing listens
	FaultReset   = "connection reset"   // hung up before answering
	FaultCut     = "cut mid-response"   // hung up inside the body
	FaultTimeout = "timeout"            // never answers
	FaultEcho    = "proxy echo"         // a proxy's error page quoting the request
)

// Faults lists the faults every platform's API is tried with, and then
// more, a platform's own.
func Faults(more ...string) []string {
	return append([]string{FaultRefused, FaultReset, FaultCut, FaultTimeout, FaultEcho}, more...)
}

// BrokenOptions say what a BrokenAPI answers and how its calls break.
type BrokenOptions struct {
	// Route names a call (its method, or its path under the API root):
	// what Count counts by and what Works and Answer are asked about.
	Route func(*http.Request) string
	// Works reports whether a call is answered (by Answer) instead of
	// failing with the fault; nil: none is.
	Works func(route string) bool
	// Answer writes the platform's answer to a call that works.
	Answer func(b *BrokenAPI, w http.ResponseWriter, r *http.Request, route string)
	// CutBody is the start of the 200 response a FaultCut breaks off.
	CutBody string
	// Other serves a fault of the platform's own, one not listed above.
	Other func(w http.ResponseWriter, r *http.Request)
	// Dialed reports whether a call reaches the server without going
	// through the client (a websocket dial): it is counted as it is
	// served.
	Dialed func(route string) bool
}

// BrokenAPI is a platform API whose calls fail with one fault, but for
// those BrokenOptions.Works lets through. Its RoundTrip is the transport
// to give the channel's HTTP client: it counts each call, and sends one
// that is to be refused to a closed port.
type BrokenAPI struct {
	// URL is the server's root ("http://127.0.0.1:port").
	URL string
	// Dead is the address of a closed listener (FaultRefused).
	Dead  string
	fault string
	opts  BrokenOptions
	stop  chan struct{}

	mu    sync.Mutex
	calls map[string]int
}

// NewBrokenAPI starts a BrokenAPI, closed when the test ends.
func NewBrokenAPI(t testing.TB, fault string, o BrokenOptions) *BrokenAPI {
	t.Helper()
	b := &BrokenAPI{fault: fault, opts: o, calls: map[string]int{}, stop: make(chan struct{})}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b.Dead = l.Addr().String()
	l.Close()
	srv := httptest.NewServer(http.HandlerFunc(b.serve))
	b.URL = srv.URL
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(b.stop) }) // runs first: frees hanging calls
	return b
}

// Count is how many calls of route were made.
func (b *BrokenAPI) Count(route string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls[route]
}

func (b *BrokenAPI) count(route string) {
	b.mu.Lock()
	b.calls[route]++
	b.mu.Unlock()
}

func (b *BrokenAPI) works(route string) bool { return b.opts.Works != nil && b.opts.Works(route) }

// RoundTrip counts each call and sends a broken one to the dead address
// when nothing is to listen; the *url.Error the client makes of the
// refusal names the URL the channel asked for.
func (b *BrokenAPI) RoundTrip(r *http.Request) (*http.Response, error) {
	route := b.opts.Route(r)
	b.count(route)
	if !b.works(route) && b.fault == FaultRefused {
		r = r.Clone(r.Context())
		r.URL.Host = b.Dead
	}
	return http.DefaultTransport.RoundTrip(r)
}

func (b *BrokenAPI) serve(w http.ResponseWriter, r *http.Request) {
	route := b.opts.Route(r)
	if b.opts.Dialed != nil && b.opts.Dialed(route) {
		b.count(route)
	}
	if b.works(route) {
		b.opts.Answer(b, w, r, route)
		return
	}
	switch b.fault {
	case FaultReset:
		HangUp(w, "")
	case FaultCut:
		HangUp(w, b.opts.CutBody)
	case FaultTimeout:
		// Read the body first: only then does the server notice the
		// client hanging up.
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-b.stop:
		}
	case FaultEcho:
		body, _ := io.ReadAll(io.LimitReader(r.Body, 8<<10))
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		fmt.Fprintf(w, "<html><h1>502 Bad Gateway</h1><p>upstream failed for %s %s</p><pre>Authorization: %s\n\n%s</pre></html>",
			r.Method, r.URL.RequestURI(), r.Header.Get("Authorization"), body)
	default:
		if b.opts.Other != nil {
			b.opts.Other(w, r)
		}
	}
}

// HangUp closes the connection of w without an answer or, when cutBody is
// set, inside a 200 response that starts with it.
func HangUp(w http.ResponseWriter, cutBody string) {
	conn, buf, err := w.(http.Hijacker).Hijack()
	if err != nil {
		return
	}
	if cutBody != "" {
		buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n" + cutBody)
		buf.Flush()
	}
	conn.Close()
}

// ErrorTexts is every text err can show: its own, %+v, its reason and
// every error it wraps, and the URL of any *url.Error in it.
func ErrorTexts(err error) []string {
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

// oneQuestion is the request EngineCalls plans.
const oneQuestion = `{"questions":[{"id":"go","header":"Deploy","question":"Deploy?","options":[{"label":"Yes"},{"label":"No"}]}]}`

// Notifying is a channel that also posts notices (engine.Notifier).
type Notifying interface {
	engine.Channel
	engine.Notifier
}

// EngineCalls makes, through ch, the calls the engine makes of a channel
// (a prompt sent to chat and to person, a notice in chat under message,
// the end shown on message) and returns what each returned.
func EngineCalls(t testing.TB, ch Notifying, platform, chat, person, message string) []error {
	t.Helper()
	ctx := context.Background()
	req, err := askbridge.DecodeRequest([]byte(oneQuestion))
	if err != nil {
		t.Fatal(err)
	}
	plan := engine.BuildPlan("q1", req, ch.Capabilities())
	return []error{
		ch.Send(ctx, engine.Delivery{Chat: chat, Plan: plan}),
		ch.Send(ctx, engine.Delivery{Chat: person, Plan: plan}),
		ch.Notify(ctx, chat, message, "Reply with a number."),
		ch.Finish(ctx, engine.MessageRef{Platform: platform, Chat: chat, Message: message},
			engine.Ending{Plan: plan, Outcome: askbridge.OutcomeExpired, Status: "Expired"}),
	}
}

// NoSecret checks that every call of errs failed (a broken API answers
// none), that no text of those errors shows a secret, and that no line of
// logs does.
func NoSecret(t testing.TB, secrets []string, errs []error, logs string) {
	t.Helper()
	for i, err := range errs {
		if err == nil {
			t.Errorf("call %d: no error from a broken API", i)
		}
		for _, text := range ErrorTexts(err) {
			for _, s := range secrets {
				if strings.Contains(text, s) {
					t.Errorf("call %d: error shows a secret: %s", i, text)
				}
			}
		}
	}
	for _, s := range secrets {
		if strings.Contains(logs, s) {
			t.Errorf("a secret was logged:\n%s", Lines(logs, s))
		}
	}
}

// RunUntil runs a channel (run is its Run) until done reports true, then
// stops it.
func RunUntil(t testing.TB, run func(context.Context) error, done func() bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { defer close(stopped); _ = run(ctx) }()
	testwait.Until(20*time.Second, done)
	cancel()
	<-stopped
	if !done() {
		t.Fatal("the channel never made the calls the test waits for")
	}
}

// Lines returns the lines of out that contain s.
func Lines(out, s string) string {
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
