package web

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/retry"
)

// Tuning of the events stream.
const (
	// tailBlock is how long one read of the events stream waits for news.
	// It also bounds how long Close waits for the tail: a blocked read does
	// not end when its context is cancelled.
	tailBlock = 2 * time.Second
	// tailBatch is how many events one read takes.
	tailBatch = 100
	// subscriberBuffer is how many events a page may fall behind before
	// its stream is ended; the browser reconnects and catches up with
	// Last-Event-ID.
	subscriberBuffer = 256
	// maxReplay bounds the events one reconnect catches up on; the page
	// reloads its lists on every (re)connect anyway.
	maxReplay = 10 * tailBatch
	// writeTimeout bounds one write to a page.
	writeTimeout = 10 * time.Second
	// streamRetryAfter is the Retry-After of a stream refused because
	// MaxStreams are open.
	streamRetryAfter = 10 * time.Second
	// maxPlaced bounds the questions the hub remembers the places of.
	maxPlaced = 4096
)

// pageEvents are the events the page reacts to: a question's lifecycle,
// what reaching people adds (ask-user.md §5): a Seen, a reminder, an
// escalation step, a place that cannot be reached; and a quorum
// question's votes and its end without agreement (§6).
var pageEvents = map[askbridge.EventKind]bool{
	askbridge.EventRequested: true, askbridge.EventDelivered: true,
	askbridge.EventAnswered: true, askbridge.EventSkipped: true,
	askbridge.EventExpired: true, askbridge.EventCancelled: true,
	askbridge.EventUndeliverable: true, askbridge.EventAcknowledged: true,
	askbridge.EventReminded: true, askbridge.EventEscalated: true,
	askbridge.EventVoted: true, askbridge.EventOf(askbridge.OutcomeNoQuorum): true,
	askbridge.EventKept: true, askbridge.EventRevoked: true,
}

// eventView is the data of one event sent to the page.
type eventView struct {
	Event string `json:"event"`
	ID    string `json:"id"`
	At    int64  `json:"at,omitempty"`
	// By is who answered, saw or voted, as "<platform>:<id>".
	By    string `json:"by,omitempty"`
	Error string `json:"error,omitempty"`
	// To names the places of a per-place event (reminded, escalated, an
	// undeliverable place), comma-separated, as the request or route
	// named them. An undeliverable event without it is the question's
	// end.
	To string `json:"to,omitempty"`
	// Agent and Key name the standing answer of a kept, revoked or
	// expired event (ask-user.md §9).
	Agent string `json:"agent,omitempty"`
	Key   string `json:"key,omitempty"`
}

// streamEvents: GET api/events, Server-Sent Events, one per lifecycle event
// of a web question, from now on, or after the Last-Event-ID the browser
// sends when it reconnects. Each carries the events stream id as its id.
func (h *Handler) streamEvents(w http.ResponseWriter, r *http.Request) {
	if h.streams.Add(1) > h.maxStreams {
		h.streams.Add(-1)
		w.Header().Set("Retry-After", strconv.Itoa(int(streamRetryAfter/time.Second)))
		writeError(w, http.StatusServiceUnavailable, "Too many pages are open on this bridge; this one tries again shortly.")
		return
	}
	defer h.streams.Add(-1)
	ctx := r.Context()
	last := r.Header.Get("Last-Event-ID")
	if _, ok := parseStreamID(last); !ok {
		last = ""
	}
	sub, err := h.hub.subscribe(ctx)
	if errors.Is(err, errClosed) {
		writeError(w, http.StatusServiceUnavailable, "the bridge is shutting down")
		return
	}
	if err != nil {
		h.fail(w, r, "start events", err)
		return
	}
	defer h.hub.unsubscribe(sub)

	s := eventStream{w: w, rc: http.NewResponseController(w)}
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if !s.send("retry: 2000\n: connected\n\n") {
		return
	}
	sent := last // the newest stream id sent, or the one the browser had
	if last != "" {
		var ok bool
		if sent, ok = h.replay(ctx, s, last); !ok {
			return
		}
	}
	h.relay(ctx, s, sub, sent)
}

// eventStream writes Server-Sent Events to a page.
type eventStream struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

// send writes and flushes s, and reports whether the page took it.
func (s eventStream) send(str string) bool {
	// A stream outlives the server's WriteTimeout, which bounds ordinary
	// requests: each write gets its own deadline instead (ignored where
	// unsupported). The server's ReadTimeout ends with the request, whose
	// body is empty.
	_ = s.rc.SetWriteDeadline(time.Now().Add(writeTimeout))
	if _, err := s.w.Write([]byte(str)); err != nil {
		return false
	}
	return s.rc.Flush() == nil
}

// replay sends the page's events after stream id last, at most maxReplay
// of them, and returns the stream id it read up to; ok is false when the
// page stopped taking them. A read that fails ends the replay, not the
// stream.
func (h *Handler) replay(ctx context.Context, s eventStream, last string) (after string, ok bool) {
	after = last
	for n := 0; n < maxReplay; n += tailBatch {
		evs, next, err := h.events.Events(ctx, after, tailBatch, 0)
		if err != nil {
			h.log.Warn("web: replay events", "err", err)
			break
		}
		for _, ev := range evs {
			if h.hub.relevant(ctx, ev) && !s.send(formatEvent(ev)) {
				return "", false
			}
		}
		after = next
		if len(evs) < tailBatch {
			break
		}
	}
	return after, true
}

// relay sends the page the hub's events after stream id sent ("" for
// all), and a heartbeat every h.heartbeat, until the request ends, the hub
// closes or drops the page, or the page stops taking them.
func (h *Handler) relay(ctx context.Context, s eventStream, sub *subscriber, sent string) {
	beat := time.NewTicker(h.heartbeat)
	defer beat.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.hub.done:
			return
		case <-sub.gone:
			return
		case <-beat.C:
			if !s.send(": ping\n\n") {
				return
			}
		case ev := <-sub.ch:
			if sent != "" && !streamAfter(ev.StreamID, sent) {
				continue // already sent by the replay
			}
			if !s.send(formatEvent(ev)) {
				return
			}
			sent = ev.StreamID
		}
	}
}

func formatEvent(ev askbridge.Event) string {
	v := eventView{Event: string(ev.Kind), ID: ev.ID, By: ev.By, Error: ev.Error, To: ev.To, Key: ev.Key}
	if ev.Key != "" {
		v.Agent = ev.Agent
	}
	if !ev.At.IsZero() {
		v.At = ev.At.UnixMilli()
	}
	b, _ := json.Marshal(v) // strings and ints only: cannot fail
	// The id line carries the stream id, so a reconnect resumes after it.
	// Neither part can hold a newline: JSON escapes them, and stream ids are
	// digits and a dash.
	return "id: " + ev.StreamID + "\ndata: " + string(b) + "\n\n"
}

// parseStreamID reads a Redis stream id "<ms>-<seq>".
func parseStreamID(s string) ([2]uint64, bool) {
	ms, seq, ok := strings.Cut(s, "-")
	if !ok {
		return [2]uint64{}, false
	}
	a, err1 := strconv.ParseUint(ms, 10, 64)
	b, err2 := strconv.ParseUint(seq, 10, 64)
	return [2]uint64{a, b}, err1 == nil && err2 == nil
}

// streamAfter reports whether stream id a comes after b.
func streamAfter(a, b string) bool {
	x, ok1 := parseStreamID(a)
	y, ok2 := parseStreamID(b)
	if !ok1 || !ok2 {
		return true
	}
	return x[0] > y[0] || (x[0] == y[0] && x[1] > y[1])
}

var errClosed = errors.New("web: handler closed")

// hub tails the events stream once for every page this process serves, so
// a hundred open pages cost one blocking read, not a hundred Redis
// connections. The tail runs only while at least one page is connected.
type hub struct {
	events    engine.EventLog
	questions Questions
	log       *slog.Logger

	mu     sync.Mutex
	subs   map[*subscriber]struct{}
	stop   context.CancelFunc // stops the running tail; nil when none runs
	closed bool
	done   chan struct{} // closed by close
	tails  sync.WaitGroup

	// placed remembers, by question id, whether a question has a place
	// on the page (at most maxPlaced; forgotten all at once when full).
	placedMu sync.Mutex
	placed   map[string]bool
}

// subscriber is one connected page.
type subscriber struct {
	ch chan askbridge.Event
	// gone is closed when the hub drops the page: it fell too far behind.
	gone chan struct{}
}

func newHub(events engine.EventLog, questions Questions, log *slog.Logger) *hub {
	return &hub{
		events: events, questions: questions, log: log,
		subs: map[*subscriber]struct{}{}, done: make(chan struct{}), placed: map[string]bool{},
	}
}

// relevant reports whether the page shows ev: an event it reacts to, of a
// question with a place on the page that has been reached (pagePlace).
// An event on the page's platform is. Any other (the end or a Seen of a
// question shown first elsewhere, a reminder or an escalation step, which
// name no platform) is when its question has a place on the page,
// whichever, once reached: the question is read, and the answer
// remembered once it is final (no place on the page, or one reached; a
// place of a step not taken yet is read again for the next event). A
// question that cannot be read is not the page's, for now (it is read
// again for its next event); the page reads its lists again on every
// reconnect anyway.
func (h *hub) relevant(ctx context.Context, ev askbridge.Event) bool {
	if !pageEvents[ev.Kind] {
		return false
	}
	if ev.Platform == Platform || standingEvent(ev) {
		return true
	}
	if !askbridge.ValidRequestID(ev.ID) {
		return false
	}
	h.placedMu.Lock()
	on, known := h.placed[ev.ID]
	h.placedMu.Unlock()
	if known {
		return on
	}
	rec, found, err := h.questions.Get(ctx, ev.ID)
	if err != nil {
		if ctx.Err() == nil {
			h.log.Warn("web: read the question of an event", "question", ev.ID, "event", ev.Kind, "err", err)
		}
		return false
	}
	if !found {
		return false
	}
	on = rec.PlaceAt(pageTarget) >= 0
	if on {
		k, err := pagePlace(rec, func() ([]engine.MessageRef, error) { return h.questions.Messages(ctx, ev.ID) })
		if err != nil {
			if ctx.Err() == nil {
				h.log.Warn("web: read the messages of an event's question", "question", ev.ID, "event", ev.Kind, "err", err)
			}
			return false
		}
		if k < 0 {
			return false // not reached yet: asked again at its next event
		}
	}
	h.placedMu.Lock()
	if len(h.placed) >= maxPlaced {
		clear(h.placed)
	}
	h.placed[ev.ID] = on
	h.placedMu.Unlock()
	return on
}

// standingEvent reports whether ev is about a standing answer (kept,
// revoked, or ended at its time): the page lists every standing answer,
// whatever the place it was kept in.
func standingEvent(ev askbridge.Event) bool {
	switch ev.Kind {
	case askbridge.EventKept, askbridge.EventRevoked:
		return true
	}
	return ev.Kind == askbridge.EventExpired && ev.Key != "" && ev.ID == ""
}

// subscribe adds a page. The first page starts the tail at the newest
// event, resolved before subscribe returns, so nothing published after the
// page connected is missed.
func (h *hub) subscribe(ctx context.Context) (*subscriber, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, errClosed
	}
	if h.stop == nil {
		_, start, err := h.events.Events(ctx, "$", 1, 0)
		if err != nil {
			return nil, err
		}
		tctx, cancel := context.WithCancel(context.Background())
		h.stop = cancel
		h.tails.Add(1)
		go h.tail(tctx, start)
	}
	s := &subscriber{ch: make(chan askbridge.Event, subscriberBuffer), gone: make(chan struct{})}
	h.subs[s] = struct{}{}
	return s, nil
}

// unsubscribe removes a page; the last one stops the tail. Safe to repeat.
func (h *hub) unsubscribe(s *subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.subs, s)
	if len(h.subs) == 0 && h.stop != nil {
		h.stop()
		h.stop = nil
	}
}

// tail reads the events stream from after until ctx is done, handing each
// event for the page to every subscriber. Redis trouble is retried with
// backoff; the pages keep their streams open meanwhile.
func (h *hub) tail(ctx context.Context, after string) {
	defer h.tails.Done()
	wait := retry.Backoff{Min: 100 * time.Millisecond, Max: 5 * time.Second}
	for {
		evs, next, err := h.events.Events(ctx, after, tailBatch, tailBlock)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			h.log.Warn("web: read events", "err", err)
			if !retry.Sleep(ctx, wait.Next()) {
				return
			}
			continue
		}
		wait.Reset()
		after = next
		for _, ev := range evs {
			if h.relevant(ctx, ev) {
				h.broadcast(ev)
			}
		}
	}
}

// broadcast hands ev to every page without waiting: a page whose buffer is
// full is dropped (its stream ends, and the browser reconnects).
func (h *hub) broadcast(ev askbridge.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		select {
		case s.ch <- ev:
		default:
			delete(h.subs, s)
			close(s.gone)
		}
	}
}

// close ends every stream, refuses new ones and waits for the tail to
// stop. Safe to repeat.
func (h *hub) close() {
	h.mu.Lock()
	if !h.closed {
		h.closed = true
		close(h.done)
		if h.stop != nil {
			h.stop()
			h.stop = nil
		}
		clear(h.subs)
	}
	h.mu.Unlock()
	h.tails.Wait()
}
