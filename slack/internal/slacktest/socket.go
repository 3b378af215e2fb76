package slacktest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/gorilla/websocket"
)

// Socket mode: envelopes over a local websocket, acks, redelivery.

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
		"connection_info": map[string]any{"app_id": AppID}, "debug_info": map[string]any{"host": "slacktest", "approximate_connection_time": 3600}})
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
	return c.write(map[string]any{"type": "disconnect", "reason": "refresh_requested", "debug_info": map[string]any{"host": "slacktest"}}) == nil
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
