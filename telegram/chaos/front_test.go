package chaos

import (
	"encoding/json"
	"io"
	"log"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"
)

// front stands between the replicas and the fake Telegram. It records who
// calls getUpdates, in order, and can fail a share of all Bot API calls
// with 502 Bad Gateway before they reach the fake, as Telegram's front end
// does when the Bot API server is overloaded. (telegramtest's FailNext
// fails a fixed count of one method; a share of every call over a time
// needs the front.)
type front struct {
	srv   *httptest.Server
	proxy *httputil.ReverseProxy
	tr    *http.Transport

	mu     sync.Mutex
	rng    *rand.Rand
	share  float64 // of calls to fail, 0 for none
	failed int
	calls  int
	polls  []string // the client of each getUpdates, in arrival order
	// holdChat, when set, holds every sendMessage to that chat until
	// release is closed, reporting its caller on held; a held call whose
	// caller went away meanwhile (killed) never reaches the fake, and
	// counts in dropped.
	holdChat string
	held     chan string
	release  chan struct{}
	dropped  int
}

func newFront(target string) *front {
	u, err := url.Parse(target)
	if err != nil {
		panic(err) // httptest URLs always parse
	}
	f := &front{rng: rand.New(rand.NewPCG(11, 30))}
	f.tr = http.DefaultTransport.(*http.Transport).Clone()
	f.proxy = httputil.NewSingleHostReverseProxy(u)
	f.proxy.Transport = f.tr
	// A replica killed or stopping cancels its requests; that is no news.
	f.proxy.ErrorLog = log.New(io.Discard, "", 0)
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	return f
}

// URL is the Bot API root the replicas use.
func (f *front) URL() string { return f.srv.URL }

// Fail makes share (0 to 1) of the calls from now on fail with 502.
func (f *front) Fail(share float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.share = share
}

// FailFor makes share of the calls fail with 502 for d, then none; the
// returned channel is closed once the failures stopped.
func (f *front) FailFor(share float64, d time.Duration) <-chan struct{} {
	f.Fail(share)
	over := make(chan struct{})
	time.AfterFunc(d, func() { f.Fail(0); close(over) })
	return over
}

// Counts returns how many calls came and how many of them failed.
func (f *front) Counts() (calls, failed int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls, f.failed
}

// Polls returns the client of every getUpdates so far, in arrival order.
func (f *front) Polls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.polls...)
}

func (f *front) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.calls++
	fail := f.share > 0 && f.rng.Float64() < f.share
	if fail {
		f.failed++
	}
	if strings.HasSuffix(r.URL.Path, "/getUpdates") && !fail {
		f.polls = append(f.polls, r.Header.Get(clientHeaderName))
	}
	f.mu.Unlock()
	if !fail && strings.HasSuffix(r.URL.Path, "/sendMessage") && f.holding(w, r) {
		return
	}
	if fail {
		// Telegram's body for a 502.
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadGateway)
		_ = json.NewEncoder(w).Encode(map[string]any{"ok": false, "error_code": 502, "description": "Bad Gateway"})
		return
	}
	f.proxy.ServeHTTP(w, r)
}

// Hold holds every sendMessage to chat from now on until the returned
// release is called; each held call's client is sent on held.
func (f *front) Hold(chat string) (held <-chan string, release func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.holdChat, f.held, f.release = chat, make(chan string, 16), make(chan struct{})
	var once sync.Once
	return f.held, func() { once.Do(func() { close(f.release) }) }
}

// holding holds r if it posts to the held chat, until release; it reports
// whether it answered r itself (the caller went away while held, so the
// call is dropped as a connection that died before its request was sent).
func (f *front) holding(w http.ResponseWriter, r *http.Request) bool {
	f.mu.Lock()
	chat, held, release := f.holdChat, f.held, f.release
	f.mu.Unlock()
	if chat == "" {
		return false
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return true
	}
	r.Body = io.NopCloser(strings.NewReader(string(body)))
	// The chat id follows its field name, in JSON, a form or multipart.
	i := strings.Index(string(body), "chat_id")
	if i < 0 || !strings.Contains(string(body[i:min(len(body), i+64)]), chat) {
		return false
	}
	select {
	case held <- r.Header.Get(clientHeaderName):
	default:
	}
	select {
	case <-release:
	case <-r.Context().Done():
	}
	if r.Context().Err() == nil {
		return false
	}
	f.mu.Lock()
	f.dropped++
	f.mu.Unlock()
	return true
}

// Dropped counts the held calls whose caller went away.
func (f *front) Dropped() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.dropped
}

// Close stops the front.
func (f *front) Close() {
	f.srv.CloseClientConnections()
	f.srv.Close()
	f.tr.CloseIdleConnections()
}
