package discordtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// Gateway intents the fake looks at (discord-api-docs, topics/gateway.mdx).
const (
	IntentGuildMessages  = 1 << 9
	IntentDirectMessages = 1 << 12
	IntentMessageContent = 1 << 15
)

// gatewayState holds the gateway sessions. Its own mutex orders writes to
// the connections; it is never held while s.mu is wanted.
type gatewayState struct {
	mu       sync.Mutex
	conns    map[*gwConn]bool
	sessions map[string]*gwSession // by session id, kept for RESUME
	closed   []int                 // close codes the fake sent
	opened   int                   // READY or RESUMED sent
	identify int
	resumes  int
	beats    int // heartbeats acknowledged
}

func (g *gatewayState) init() {
	g.conns = map[*gwConn]bool{}
	g.sessions = map[string]*gwSession{}
}

// gwSession is a gateway session: it outlives its connection so it can be
// resumed, and keeps the events it was sent for replay.
type gwSession struct {
	id      string
	intents int
	seq     int64
	events  []frame
	conn    *gwConn
	lostAt  time.Time // when conn went away
}

// resumeWindow is how long a session without a connection keeps its
// events for a RESUME.
const resumeWindow = 30 * time.Second

type gwConn struct {
	ws      *websocket.Conn
	wmu     sync.Mutex
	session *gwSession
}

type frame struct {
	Op   int             `json:"op"`
	D    json.RawMessage `json:"d"`
	S    *int64          `json:"s,omitempty"`
	T    string          `json:"t,omitempty"`
	seqv int64
}

func (c *gwConn) send(v any) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.ws.SetWriteDeadline(time.Now().Add(5 * time.Second))
	return c.ws.WriteJSON(v)
}

func (c *gwConn) close(code int, text string) {
	c.wmu.Lock()
	_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, text), time.Now().Add(time.Second))
	c.wmu.Unlock()
	_ = c.ws.Close()
}

var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

func (s *Server) serveGateway(w http.ResponseWriter, r *http.Request) {
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	c := &gwConn{ws: ws}
	g := &s.gw
	g.mu.Lock()
	g.conns[c] = true
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		delete(g.conns, c)
		if c.session != nil && c.session.conn == c {
			c.session.conn = nil
			c.session.lostAt = s.opts.Clock.Now()
		}
		g.mu.Unlock()
		_ = ws.Close()
	}()
	hello := map[string]any{"op": 10, "d": map[string]int64{"heartbeat_interval": s.opts.HeartbeatInterval.Milliseconds()}}
	if c.send(hello) != nil {
		return
	}
	for {
		_, data, err := ws.ReadMessage()
		if err != nil {
			return
		}
		var f frame
		if json.Unmarshal(data, &f) != nil {
			s.closeWith(c, 4002, "Error while decoding payload.")
			return
		}
		switch f.Op {
		case 1:
			g.mu.Lock()
			g.beats++
			g.mu.Unlock()
			if c.send(map[string]any{"op": 11}) != nil {
				return
			}
		case 2:
			if !s.identify(c, f.D) {
				return
			}
		case 6:
			if !s.resume(c, f.D) {
				return
			}
		default:
			s.closeWith(c, 4001, "Unknown opcode.")
			return
		}
	}
}

func (s *Server) closeWith(c *gwConn, code int, text string) {
	s.gw.mu.Lock()
	s.gw.closed = append(s.gw.closed, code)
	s.gw.mu.Unlock()
	c.close(code, text)
}

func (s *Server) identify(c *gwConn, d json.RawMessage) bool {
	var id struct {
		Token   string `json:"token"`
		Intents int    `json:"intents"`
	}
	_ = json.Unmarshal(d, &id)
	if id.Token != "Bot "+s.Token() {
		s.closeWith(c, 4004, "Authentication failed.")
		return false
	}
	g := &s.gw
	g.mu.Lock()
	if c.session != nil {
		g.mu.Unlock()
		s.closeWith(c, 4005, "Already authenticated.")
		return false
	}
	s.mu.Lock()
	sid := fmt.Sprintf("fake-session-%s", s.id())
	bot := *s.users[s.BotID]
	s.mu.Unlock()
	sess := &gwSession{id: sid, intents: id.Intents, conn: c}
	c.session = sess
	g.sessions[sid] = sess
	g.identify++
	g.opened++
	ready := map[string]any{
		"v": 9, "session_id": sid, "user": bot, "guilds": []any{},
		"resume_gateway_url": "ws" + strings.TrimPrefix(s.srv.URL, "http") + "/gateway-ws",
		"application":        map[string]any{"id": s.AppID, "flags": 0},
	}
	err := s.sendEvent(sess, "READY", ready)
	g.mu.Unlock()
	return err == nil
}

func (s *Server) resume(c *gwConn, d json.RawMessage) bool {
	var rs struct {
		Token     string `json:"token"`
		SessionID string `json:"session_id"`
		Seq       int64  `json:"seq"`
	}
	_ = json.Unmarshal(d, &rs)
	if rs.Token != "Bot "+s.Token() {
		s.closeWith(c, 4004, "Authentication failed.")
		return false
	}
	g := &s.gw
	g.mu.Lock()
	defer g.mu.Unlock()
	sess, ok := g.sessions[rs.SessionID]
	if !ok || rs.Seq > sess.seq {
		// Unknown session: op 9, d false (cannot resume).
		return c.send(map[string]any{"op": 9, "d": false}) == nil
	}
	if old := sess.conn; old != nil && old != c {
		old.close(4009, "Session timed out.")
	}
	sess.conn = c
	c.session = sess
	g.resumes++
	g.opened++
	for _, f := range sess.events {
		if f.seqv > rs.Seq {
			if c.send(f) != nil {
				return false
			}
		}
	}
	return s.sendEvent(sess, "RESUMED", map[string]any{}) == nil
}

// sendEvent sends a dispatch on a session and keeps it for replay. Callers
// hold s.gw.mu.
func (s *Server) sendEvent(sess *gwSession, t string, d any) error {
	raw, err := json.Marshal(d)
	if err != nil {
		return err
	}
	sess.seq++
	seq := sess.seq
	f := frame{Op: 0, D: raw, S: &seq, T: t, seqv: seq}
	sess.events = append(sess.events, f)
	if len(sess.events) > 1000 {
		sess.events = sess.events[len(sess.events)-1000:]
	}
	if sess.conn == nil {
		return nil
	}
	return sess.conn.send(f)
}

// dispatch sends an event to every identified session on the token, as
// Discord does for several sessions of one shard; MESSAGE_CREATE follows
// the intents (no GUILD_MESSAGES: no guild messages; no DIRECT_MESSAGES:
// no DMs; no MESSAGE_CONTENT: empty content outside DMs).
func (s *Server) dispatch(t string, d map[string]any, dm bool) {
	g := &s.gw
	g.mu.Lock()
	defer g.mu.Unlock()
	for id, sess := range g.sessions {
		if sess.conn == nil && s.opts.Clock.Since(sess.lostAt) > resumeWindow {
			delete(g.sessions, id)
			continue
		}
		ev := d
		if t == "MESSAGE_CREATE" || t == "MESSAGE_DELETE" {
			if dm && sess.intents&IntentDirectMessages == 0 || !dm && sess.intents&IntentGuildMessages == 0 {
				continue
			}
			if t == "MESSAGE_CREATE" && !dm && sess.intents&IntentMessageContent == 0 {
				ev = map[string]any{}
				for k, v := range d {
					ev[k] = v
				}
				ev["content"] = ""
			}
		}
		_ = s.sendEvent(sess, t, ev)
	}
}

// Sessions counts the gateway connections that are identified or resumed.
func (s *Server) Sessions() int {
	g := &s.gw
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for c := range g.conns {
		if c.session != nil {
			n++
		}
	}
	return n
}

// GatewayStats reports how many IDENTIFYs and RESUMEs the gateway served
// and the close codes it sent.
func (s *Server) GatewayStats() (identifies, resumes int, closeCodes []int) {
	g := &s.gw
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.identify, g.resumes, append([]int(nil), g.closed...)
}

// Heartbeats counts the heartbeats the gateway acknowledged, on every
// connection.
func (s *Server) Heartbeats() int {
	g := &s.gw
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.beats
}

// DropSessions cuts every gateway connection without a close frame, like a
// network failure; the sessions stay resumable.
func (s *Server) DropSessions() {
	g := &s.gw
	g.mu.Lock()
	conns := make([]*gwConn, 0, len(g.conns))
	for c := range g.conns {
		conns = append(conns, c)
	}
	g.mu.Unlock()
	for _, c := range conns {
		_ = c.ws.Close()
	}
}

// CloseSessions closes every gateway connection with a close code (for
// example 4000 unknown error, resumable).
func (s *Server) CloseSessions(code int) {
	g := &s.gw
	g.mu.Lock()
	conns := make([]*gwConn, 0, len(g.conns))
	for c := range g.conns {
		conns = append(conns, c)
	}
	g.mu.Unlock()
	for _, c := range conns {
		s.closeWith(c, code, "closed by the test")
	}
}

// SetToken changes the accepted bot token (to revoke the one in use).
func (s *Server) SetToken(token string) {
	s.mu.Lock()
	s.opts.Token = token
	s.mu.Unlock()
}

// Click presses a button on a message as user: it records an interaction
// and sends INTERACTION_CREATE to every session. The interaction's first
// response is due within 3 seconds.
func (s *Server) Click(user, messageID, customID string) (string, error) {
	s.mu.Lock()
	m, ok := s.messages[messageID]
	if !ok {
		s.mu.Unlock()
		return "", fmt.Errorf("discordtest: no message %s", messageID)
	}
	u, ok := s.users[user]
	if !ok {
		s.mu.Unlock()
		return "", fmt.Errorf("discordtest: no user %s", user)
	}
	ch := s.channels[m.ChannelID]
	in := &Interaction{ID: s.id(), Token: "itok" + s.id(), ChannelID: m.ChannelID, MessageID: m.ID, UserID: u.ID, CustomID: customID, Created: s.opts.Clock.Now()}
	s.interactions[in.ID] = in
	s.byToken[in.Token] = in
	d := map[string]any{
		"id": in.ID, "application_id": s.AppID, "type": 3, "token": in.Token, "version": 1,
		"channel_id": m.ChannelID, "message": s.messageJSON(m), "locale": "en-US",
		"data": map[string]any{"custom_id": customID, "component_type": 2},
	}
	if ch != nil && ch.GuildID != "" {
		d["guild_id"] = ch.GuildID
		d["member"] = map[string]any{"user": *u, "roles": []string{}, "permissions": "0"}
	} else {
		d["user"] = *u
	}
	s.mu.Unlock()
	s.dispatch("INTERACTION_CREATE", d, false)
	return in.ID, nil
}

// Post writes a message in a channel as user and sends MESSAGE_CREATE.
func (s *Server) Post(user, channelID, content string) (string, error) {
	return s.post(user, channelID, "", content)
}

// Reply writes a reply to a message as user (message_reference set).
func (s *Server) Reply(user, channelID, replyTo, content string) (string, error) {
	return s.post(user, channelID, replyTo, content)
}

func (s *Server) post(user, channelID, replyTo, content string) (string, error) {
	s.mu.Lock()
	u, ok := s.users[user]
	if !ok {
		s.mu.Unlock()
		return "", fmt.Errorf("discordtest: no user %s", user)
	}
	ch, ok := s.channels[channelID]
	if !ok {
		s.mu.Unlock()
		return "", fmt.Errorf("discordtest: no channel %s", channelID)
	}
	m := &Message{ID: s.id(), ChannelID: channelID, Author: *u, Content: content, ReplyTo: replyTo, Created: s.opts.Clock.Now()}
	s.messages[m.ID] = m
	s.order = append(s.order, m.ID)
	d := withGuild(s.messageJSON(m), ch.GuildID)
	s.mu.Unlock()
	s.dispatch("MESSAGE_CREATE", d, ch.DMUser != "")
	return m.ID, nil
}

// Ack reports an interaction's first response type and latency, for tests
// that wait on it.
func (s *Server) Ack(id string) (int, time.Duration) {
	in, _ := s.Interaction(id)
	return in.AckType, in.AckLatency
}

// ForgetSessions makes every gateway session unknown, as after Discord
// restarted: a RESUME gets op 9 INVALID SESSION and must IDENTIFY again.
func (s *Server) ForgetSessions() {
	g := &s.gw
	g.mu.Lock()
	defer g.mu.Unlock()
	g.sessions = map[string]*gwSession{}
}

// RequestReconnect sends op 7 RECONNECT on every connection, as Discord
// does before it moves a session: the client should reconnect and resume.
func (s *Server) RequestReconnect() {
	g := &s.gw
	g.mu.Lock()
	conns := make([]*gwConn, 0, len(g.conns))
	for c := range g.conns {
		conns = append(conns, c)
	}
	g.mu.Unlock()
	for _, c := range conns {
		_ = c.send(map[string]any{"op": 7, "d": nil})
	}
}
