package dendritetest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"maunium.net/go/mautrix/id"
)

// Proxy is a reverse proxy on 127.0.0.1 in front of a homeserver that
// injects the faults Dendrite cannot produce on demand: a 429 on a send
// (Dendrite never rate-limits sends) and a connection dropped before or
// after the homeserver handled the request. Everything else passes
// through untouched. Its methods are safe for concurrent use.
type Proxy struct {
	// URL is the proxy's base URL: give it to clients instead of the
	// homeserver's.
	URL string

	target    *url.URL
	rp        *httputil.ReverseProxy
	transport *http.Transport

	mu        sync.Mutex
	faults    []*fault
	forwarded map[id.RoomID]int
}

// Drop says when DropSends closes the connection.
type Drop int

const (
	// DropRequest closes the connection without forwarding the request:
	// the event is not sent.
	DropRequest Drop = iota
	// DropReply forwards the request, lets the homeserver handle it, then
	// closes the connection instead of answering: the event is sent but
	// the client does not learn its ID.
	DropReply
)

// fault is one injected behaviour for the next left sends to room (any
// room when room is empty).
type fault struct {
	room       id.RoomID
	left       int
	limited    bool
	retryAfter time.Duration
	drop       Drop
}

// NewProxy starts a proxy in front of the homeserver at target (a
// Server's URL) and stops it when the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatalf("dendritetest: proxy target %q: %v", target, err)
	}
	p := &Proxy{target: u, rp: httputil.NewSingleHostReverseProxy(u), transport: &http.Transport{}, forwarded: map[id.RoomID]int{}}
	p.rp.Transport = p.transport
	srv := httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(func() {
		srv.Close()
		p.transport.CloseIdleConnections()
	})
	p.URL = srv.URL
	return p
}

// LimitSends answers the next n sends to room (any room when room is
// empty) with 429 and Dendrite's own error body,
// {"errcode":"M_LIMIT_EXCEEDED","error":"Too Many Requests","retry_after_ms":<retryAfter>},
// without forwarding them.
func (p *Proxy) LimitSends(room id.RoomID, n int, retryAfter time.Duration) {
	p.add(&fault{room: room, left: n, limited: true, retryAfter: retryAfter})
}

// DropSends closes the connection of the next n sends to room (any room
// when room is empty), before or after forwarding them.
func (p *Proxy) DropSends(room id.RoomID, n int, when Drop) {
	p.add(&fault{room: room, left: n, drop: when})
}

// Forwarded returns how many sends to room reached the homeserver.
func (p *Proxy) Forwarded(room id.RoomID) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.forwarded[room]
}

func (p *Proxy) add(f *fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults = append(p.faults, f)
}

// take returns the fault for a send to room, if one is pending, and
// counts the send as forwarded unless the fault stops it.
func (p *Proxy) take(room id.RoomID) *fault {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, f := range p.faults {
		if f.room != "" && f.room != room {
			continue
		}
		if f.left--; f.left <= 0 {
			p.faults = append(p.faults[:i], p.faults[i+1:]...)
		}
		if !f.limited && f.drop == DropReply {
			p.forwarded[room]++
		}
		return f
	}
	p.forwarded[room]++
	return nil
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	room, ok := sendRoom(r)
	if !ok {
		p.rp.ServeHTTP(w, r)
		return
	}
	f := p.take(room)
	switch {
	case f == nil:
		p.rp.ServeHTTP(w, r)
	case f.limited:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		_ = json.NewEncoder(w).Encode(map[string]any{
			"errcode":        "M_LIMIT_EXCEEDED",
			"error":          "Too Many Requests",
			"retry_after_ms": f.retryAfter.Milliseconds(),
		})
	case f.drop == DropReply:
		p.forwardAndDrop(w, r)
	default:
		hangUp(w)
	}
}

// forwardAndDrop sends the request to the homeserver, reads its whole
// answer, and closes the client's connection without passing it on.
func (p *Proxy) forwardAndDrop(w http.ResponseWriter, r *http.Request) {
	out := r.Clone(r.Context())
	out.RequestURI = ""
	out.URL.Scheme, out.URL.Host, out.Host = p.target.Scheme, p.target.Host, p.target.Host
	resp, err := p.transport.RoundTrip(out)
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	hangUp(w)
}

// hangUp closes the client's connection without an answer.
func hangUp(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler) // the server closes the connection
	}
	_ = conn.Close()
}

// sendRoom reports whether r sends a message event
// (PUT /_matrix/client/{version}/rooms/{roomID}/send/{type}/{txnID}, or
// POST without the transaction ID), and to which room.
func sendRoom(r *http.Request) (id.RoomID, bool) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if len(parts) < 7 || parts[0] != "_matrix" || parts[1] != "client" || parts[3] != "rooms" || parts[5] != "send" {
		return "", false
	}
	return id.RoomID(parts[4]), r.Method == http.MethodPut || r.Method == http.MethodPost
}
