package discordtest

import (
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// messageBody is a create or edit body, as discordgo sends it.
type messageBody struct {
	Content         *string          `json:"content"`
	Components      *[]Row           `json:"components"`
	AllowedMentions *AllowedMentions `json:"allowed_mentions"`
	Flags           *int             `json:"flags"`
	Reference       *Reference       `json:"message_reference"`
	Nonce           json.RawMessage  `json:"nonce"`
	EnforceNonce    bool             `json:"enforce_nonce"`
}

// Reference is a message_reference as a create call sent it (a reply).
// FailIfNotExists is nil when the field was absent, which Discord reads
// as true.
type Reference struct {
	MessageID       string `json:"message_id"`
	ChannelID       string `json:"channel_id,omitempty"`
	FailIfNotExists *bool  `json:"fail_if_not_exists,omitempty"`
}

// fails reports whether a reply to a message that does not exist is
// refused (fail_if_not_exists, true by default) rather than posted as a
// plain message.
func (r Reference) fails() bool { return r.FailIfNotExists == nil || *r.FailIfNotExists }

// flags is the body's flags, 0 when absent.
func (b messageBody) flags() int {
	if b.Flags == nil {
		return 0
	}
	return *b.Flags
}

// sentOf reads what a REST call said of a message, for Request.Message:
// nil for a call that posts or edits none (or a body that is not JSON).
func sentOf(method, path string, body []byte) *Sent {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	if len(segs) < 3 {
		return nil
	}
	route, _ := routeOf(method, segs[2:])
	var b messageBody
	switch route {
	case "POST /channels/{id}/messages", "PATCH /channels/{id}/messages/{id}",
		"POST /webhooks/{id}/{token}", "PATCH /webhooks/{id}/{token}/messages/{id}":
		if json.Unmarshal(body, &b) != nil {
			return nil
		}
	case "POST /interactions/{id}/{token}/callback":
		var cb struct {
			Data *messageBody `json:"data"`
		}
		if json.Unmarshal(body, &cb) != nil || cb.Data == nil {
			return nil
		}
		b = *cb.Data
	default:
		return nil
	}
	return &Sent{Content: b.Content, AllowedMentions: b.AllowedMentions, Flags: b.Flags, Reference: b.Reference}
}

// nonce is the body's nonce as a string: Discord takes an integer or a
// string of at most 25 characters.
func (b messageBody) nonce() (string, bool) {
	if len(b.Nonce) == 0 || string(b.Nonce) == "null" {
		return "", true
	}
	var str string
	if json.Unmarshal(b.Nonce, &str) == nil {
		return str, len(str) <= MaxNonce
	}
	var n json.Number
	if json.Unmarshal(b.Nonce, &n) == nil {
		return n.String(), len(n.String()) <= MaxNonce
	}
	return "", false
}

func decodeBody(w http.ResponseWriter, body []byte) (messageBody, bool) {
	var b messageBody
	if err := json.Unmarshal(body, &b); err != nil {
		(&apiError{status: 400, Code: 50109, Message: "The request body contains invalid JSON."}).write(w)
		return b, false
	}
	if e := validate(b); e != nil {
		e.write(w)
		return b, false
	}
	return b, true
}

func fieldError(code, msg string) map[string]any {
	return map[string]any{"_errors": []map[string]string{{"code": code, "message": msg}}}
}

// validate checks a body against Discord's limits and answers like
// Discord: 400 Invalid Form Body (50035) with the nested errors.
func validate(b messageBody) *apiError {
	errs := map[string]any{}
	if _, ok := b.nonce(); !ok {
		errs["nonce"] = fieldError("BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length.")
	}
	if b.Content != nil && utf16Len(*b.Content) > MaxContent {
		errs["content"] = fieldError("BASE_TYPE_MAX_LENGTH", "Must be 2000 or fewer in length.")
	}
	if b.Components != nil {
		rows := *b.Components
		if len(rows) > MaxRows {
			errs["components"] = fieldError("BASE_TYPE_BAD_LENGTH", "Must be between 0 and 5 in length.")
		} else {
			rowErrs := map[string]any{}
			ids := map[string]bool{}
			for i, row := range rows {
				if row.Type != 1 {
					rowErrs[strconv.Itoa(i)] = map[string]any{"type": fieldError("COMPONENT_LAYOUT_WIDTH_EXCEEDED", "The specified component exceeds the maximum width")}
					continue
				}
				if len(row.Components) == 0 || len(row.Components) > MaxRowButtons {
					rowErrs[strconv.Itoa(i)] = map[string]any{"components": fieldError("BASE_TYPE_BAD_LENGTH", "Must be between 1 and 5 in length.")}
					continue
				}
				btnErrs := map[string]any{}
				for j, btn := range row.Components {
					e := map[string]any{}
					if btn.Type != 2 {
						e["type"] = fieldError("UNION_TYPE_CHOICES", "Value of field \"type\" must be one of (2,).")
					}
					if utf16Len(btn.Label) > MaxLabel {
						e["label"] = fieldError("BASE_TYPE_MAX_LENGTH", "Must be 80 or fewer in length.")
					}
					if n := len(btn.CustomID); n == 0 || n > MaxCustomID {
						e["custom_id"] = fieldError("BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.")
					} else if ids[btn.CustomID] {
						e["custom_id"] = fieldError("COMPONENT_CUSTOM_ID_DUPLICATED", "Component custom id cannot be duplicated")
					}
					ids[btn.CustomID] = true
					if btn.Style < 1 || btn.Style > 4 {
						e["style"] = fieldError("BUTTON_COMPONENT_INVALID_STYLE", "Invalid button style")
					}
					if len(e) > 0 {
						btnErrs[strconv.Itoa(j)] = e
					}
				}
				if len(btnErrs) > 0 {
					rowErrs[strconv.Itoa(i)] = map[string]any{"components": btnErrs}
				}
			}
			if len(rowErrs) > 0 {
				errs["components"] = rowErrs
			}
		}
	}
	if len(errs) > 0 {
		return &apiError{status: 400, Code: 50035, Message: "Invalid Form Body", Errors: errs}
	}
	return nil
}

func (s *Server) createDM(w http.ResponseWriter, body []byte) {
	var b struct {
		RecipientID string `json:"recipient_id"`
	}
	_ = json.Unmarshal(body, &b)
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.users[b.RecipientID]
	if !ok {
		errUnknownUser.write(w)
		return
	}
	var ch *channel
	for _, c := range s.channels {
		if c.DMUser == u.ID {
			ch = c
		}
	}
	if ch == nil {
		ch = &channel{ID: s.id(), DMUser: u.ID}
		s.channels[ch.ID] = ch
	}
	writeJSON(w, 200, map[string]any{"id": ch.ID, "type": 1, "recipients": []User{*u}})
}

// channelFor finds a channel the bot may post in, or writes the error.
// Callers hold s.mu.
func (s *Server) channelFor(w http.ResponseWriter, id string) *channel {
	ch, ok := s.channels[id]
	if !ok {
		errUnknownChannel.write(w)
		return nil
	}
	if ch.deny != nil {
		ch.deny.write(w)
		return nil
	}
	if ch.DMUser != "" && s.closed[ch.DMUser] {
		(&apiError{status: 403, Code: 50007, Message: "Cannot send messages to this user"}).write(w)
		return nil
	}
	return ch
}

func (s *Server) createMessage(w http.ResponseWriter, channelID string, body []byte) {
	b, ok := decodeBody(w, body)
	if !ok {
		return
	}
	s.mu.Lock()
	ch := s.channelFor(w, channelID)
	if ch == nil {
		s.mu.Unlock()
		return
	}
	if (b.Content == nil || *b.Content == "") && (b.Components == nil || len(*b.Components) == 0) {
		s.mu.Unlock()
		errEmptyMessage.write(w)
		return
	}
	replyTo, refErr := s.replyTarget(channelID, b.Reference)
	if refErr != nil {
		s.mu.Unlock()
		refErr.write(w)
		return
	}
	nonce, _ := b.nonce()
	if b.EnforceNonce && nonce != "" {
		// The same author and nonce within the window: the message
		// created then is returned and none is created.
		if m, ok := s.nonces[nonce]; ok && s.opts.Clock.Since(m.Created) < NonceWindow {
			out := s.messageJSON(m)
			s.mu.Unlock()
			writeJSON(w, 200, out)
			return
		}
	}
	m := &Message{ID: s.id(), ChannelID: channelID, Author: *s.users[s.BotID], AllowedMentions: b.AllowedMentions, Flags: b.flags(), Created: s.opts.Clock.Now(), Nonce: nonce}
	if nonce != "" {
		s.nonces[nonce] = m
	}
	if b.Content != nil {
		m.Content = *b.Content
	}
	if b.Components != nil {
		m.Components = *b.Components
	}
	m.ReplyTo = replyTo
	s.messages[m.ID] = m
	s.order = append(s.order, m.ID)
	out := s.messageJSON(m)
	guild := ch.GuildID
	lost := s.loseReplies > 0
	if lost {
		s.loseReplies--
	}
	s.mu.Unlock()
	if lost {
		http.Error(w, "502 Bad Gateway", http.StatusBadGateway)
	} else {
		writeJSON(w, 200, out)
	}
	// Discord sends the bot its own messages too.
	s.dispatch("MESSAGE_CREATE", withGuild(out, guild), guild == "")
}

// replyTarget checks a create call's message_reference as Discord does and
// returns the message the new one replies to: none without a reference,
// 400 Invalid Form Body for a reference to another channel, and for a
// message that is not in the channel (never was, or deleted) 400 as well,
// unless fail_if_not_exists is false, which posts a plain message.
// Callers hold s.mu.
func (s *Server) replyTarget(channelID string, ref *Reference) (string, *apiError) {
	if ref == nil {
		return "", nil
	}
	if ref.ChannelID != "" && ref.ChannelID != channelID {
		return "", formError("message_reference", "REPLIES_CANNOT_REFERENCE_OTHER_CHANNEL", "Cannot reply to a message in a different channel")
	}
	if m, ok := s.messages[ref.MessageID]; ok && m.ChannelID == channelID {
		return m.ID, nil
	}
	if ref.fails() {
		return "", formError("message_reference", "REPLIES_UNKNOWN_MESSAGE", "Unknown message")
	}
	return "", nil
}

// formError is 400 Invalid Form Body (50035) naming one field's error.
func formError(field, code, msg string) *apiError {
	return &apiError{status: 400, Code: 50035, Message: "Invalid Form Body", Errors: map[string]any{field: fieldError(code, msg)}}
}

func withGuild(m map[string]any, guild string) map[string]any {
	if guild != "" {
		m["guild_id"] = guild
	}
	return m
}

// messageJSON renders a message the way Discord returns it. Callers hold s.mu.
func (s *Server) messageJSON(m *Message) map[string]any {
	out := map[string]any{
		"id": m.ID, "channel_id": m.ChannelID, "content": m.Content, "author": m.Author,
		"timestamp": m.Created.UTC().Format(time.RFC3339Nano), "type": 0, "flags": m.Flags,
		"components": m.Components, "tts": false, "mention_everyone": false,
	}
	if m.Nonce != "" {
		out["nonce"] = m.Nonce
	}
	if m.Components == nil {
		out["components"] = []Row{}
	}
	if m.ReplyTo != "" {
		out["type"] = 19
		out["message_reference"] = map[string]string{"message_id": m.ReplyTo, "channel_id": m.ChannelID}
		if ref, ok := s.messages[m.ReplyTo]; ok {
			out["referenced_message"] = map[string]any{"id": ref.ID, "channel_id": ref.ChannelID, "content": ref.Content, "author": ref.Author, "timestamp": ref.Created.UTC().Format(time.RFC3339Nano), "type": 0}
		}
	}
	if m.Edits > 0 {
		out["edited_timestamp"] = s.opts.Clock.Now().UTC().Format(time.RFC3339Nano)
	}
	return out
}

func (s *Server) getMessage(w http.ResponseWriter, channelID, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.channelFor(w, channelID) == nil {
		return
	}
	m, ok := s.messages[id]
	if !ok || m.ChannelID != channelID {
		errUnknownMessage.write(w)
		return
	}
	writeJSON(w, 200, s.messageJSON(m))
}

func (s *Server) editMessage(w http.ResponseWriter, channelID, id string, body []byte) {
	b, ok := decodeBody(w, body)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.channelFor(w, channelID) == nil {
		return
	}
	m, ok := s.messages[id]
	if !ok || m.ChannelID != channelID {
		errUnknownMessage.write(w)
		return
	}
	if m.Author.ID != s.BotID {
		(&apiError{status: 403, Code: 50005, Message: "Cannot edit a message authored by another user"}).write(w)
		return
	}
	applyEdit(m, b)
	writeJSON(w, 200, s.messageJSON(m))
}

// deleteMessage is DELETE /channels/{id}/messages/{id}: 204 and
// MESSAGE_DELETE for a message there, 404 Unknown Message (10008) for one
// that is not (never was, or already deleted), and 403 Missing
// Permissions (50013) for another user's message, since the bot has no
// Manage Messages; a bot may always delete its own.
func (s *Server) deleteMessage(w http.ResponseWriter, channelID, id string) {
	s.mu.Lock()
	ch := s.channelFor(w, channelID)
	if ch == nil {
		s.mu.Unlock()
		return
	}
	m, ok := s.messages[id]
	if !ok || m.ChannelID != channelID {
		s.mu.Unlock()
		errUnknownMessage.write(w)
		return
	}
	if m.Author.ID != s.BotID {
		s.mu.Unlock()
		(&apiError{status: 403, Code: 50013, Message: "Missing Permissions"}).write(w)
		return
	}
	s.remove(m)
	guild := ch.GuildID
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
	s.dispatch("MESSAGE_DELETE", withGuild(map[string]any{"id": id, "channel_id": channelID}, guild), guild == "")
}

// remove forgets a deleted message, keeping a copy for Deleted. Callers
// hold s.mu.
func (s *Server) remove(m *Message) {
	delete(s.messages, m.ID)
	s.order = slices.DeleteFunc(s.order, func(id string) bool { return id == m.ID })
	if s.nonces[m.Nonce] == m {
		delete(s.nonces, m.Nonce)
	}
	s.deleted[m.ID] = copyMessage(m)
}

func applyEdit(m *Message, b messageBody) {
	m.History = append(m.History, m.Content)
	m.Edits++
	if b.Content != nil {
		m.Content = *b.Content
	}
	if b.Components != nil {
		m.Components = *b.Components
	}
	if b.AllowedMentions != nil {
		m.AllowedMentions = b.AllowedMentions
	}
	if b.Flags != nil {
		// An edit sets or unsets SUPPRESS_EMBEDS only; without flags the
		// message keeps its own.
		m.Flags = m.Flags&^SuppressEmbeds | *b.Flags&SuppressEmbeds
	}
}

// callback is POST /interactions/{id}/{token}/callback: the first response,
// due within 3 seconds, exactly once.
func (s *Server) callback(w http.ResponseWriter, id, token string, body []byte) {
	var b struct {
		Type int         `json:"type"`
		Data messageBody `json:"data"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		(&apiError{status: 400, Code: 50109, Message: "The request body contains invalid JSON."}).write(w)
		return
	}
	if e := validate(b.Data); e != nil {
		e.write(w)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	in, ok := s.interactions[id]
	if !ok || in.Token != token {
		errUnknownInteraction.write(w)
		return
	}
	in.Calls++
	late := s.opts.Clock.Since(in.Created)
	if in.AckType != 0 {
		errAlreadyAcked.write(w)
		return
	}
	if late > InteractionDeadline {
		in.Failed = true
		errUnknownInteraction.write(w)
		return
	}
	switch b.Type {
	case 4, 5, 6, 7:
	default:
		(&apiError{status: 400, Code: 50035, Message: "Invalid Form Body", Errors: map[string]any{"type": fieldError("BASE_TYPE_CHOICES", "Value must be one of {4, 5, 6, 7, 8, 9, 10, 12}.")}}).write(w)
		return
	}
	in.AckType, in.AckLatency = b.Type, late
	switch b.Type {
	case 7:
		if m := s.messages[in.MessageID]; m != nil {
			applyEdit(m, b.Data)
		}
	case 4, 5:
		r := Message{ID: s.id(), ChannelID: in.ChannelID, Author: *s.users[s.BotID], Flags: b.Data.flags(), AllowedMentions: b.Data.AllowedMentions, Created: s.opts.Clock.Now()}
		if b.Data.Content != nil {
			r.Content = *b.Data.Content
		}
		in.Responses = append(in.Responses, r)
	}
	w.WriteHeader(http.StatusNoContent)
}

// followup is POST /webhooks/{app}/{token}: a follow-up message, allowed
// once the interaction was acknowledged.
func (s *Server) followup(w http.ResponseWriter, r *http.Request, token string, body []byte) {
	b, ok := decodeBody(w, body)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	in, ok := s.byToken[token]
	if !ok || in.AckType == 0 {
		errUnknownWebhook.write(w)
		return
	}
	m := Message{ID: s.id(), ChannelID: in.ChannelID, Author: *s.users[s.BotID], Flags: b.flags(), AllowedMentions: b.AllowedMentions, Created: s.opts.Clock.Now()}
	if b.Content != nil {
		m.Content = *b.Content
	}
	in.Responses = append(in.Responses, m)
	if r.URL.Query().Get("wait") == "true" {
		writeJSON(w, 200, s.messageJSON(&m))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// editOriginal is PATCH /webhooks/{app}/{token}/messages/@original: after a
// deferred update (6) or an update (7) it edits the pressed message.
func (s *Server) editOriginal(w http.ResponseWriter, token string, body []byte) {
	b, ok := decodeBody(w, body)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	in, ok := s.byToken[token]
	if !ok || in.AckType == 0 {
		errUnknownWebhook.write(w)
		return
	}
	var m *Message
	if in.AckType == 6 || in.AckType == 7 {
		m = s.messages[in.MessageID]
	} else if len(in.Responses) > 0 {
		m = &in.Responses[0]
	}
	if m == nil {
		errUnknownMessage.write(w)
		return
	}
	applyEdit(m, b)
	writeJSON(w, 200, s.messageJSON(m))
}

var mentionRE = regexp.MustCompile(`@everyone|@here|<@!?[0-9]+>|<@&[0-9]+>`)

// Pings lists the mentions in a message that would notify someone under
// its allowed_mentions: unescaped @everyone, @here, <@user> and <@&role>
// when allowed_mentions is absent or lets them be parsed.
func (m Message) Pings() []string {
	var out []string
	for _, loc := range mentionRE.FindAllStringIndex(m.Content, -1) {
		if escaped(m.Content, loc[0]) {
			continue
		}
		text := m.Content[loc[0]:loc[1]]
		kind := "users"
		switch {
		case text == "@everyone" || text == "@here":
			kind = "everyone"
		case strings.HasPrefix(text, "<@&"):
			kind = "roles"
		}
		if m.AllowedMentions == nil || m.AllowedMentions.Parse == nil || contains(m.AllowedMentions.Parse, kind) {
			out = append(out, text)
		}
	}
	return out
}

var urlRE = regexp.MustCompile(`https?://[^\s<>]+`)

// Unfurls lists the links in a message Discord would show an embed (a
// link preview) for: every http(s) URL not written in <…> (a masked link
// [text](<url>) included), unless the message has SUPPRESS_EMBEDS. It
// errs on the side of listing: a URL inside code counts too.
func (m Message) Unfurls() []string {
	if m.Flags&SuppressEmbeds != 0 {
		return nil
	}
	var out []string
	for _, loc := range urlRE.FindAllStringIndex(m.Content, -1) {
		if loc[0] > 0 && m.Content[loc[0]-1] == '<' {
			continue
		}
		out = append(out, m.Content[loc[0]:loc[1]])
	}
	return out
}

// escaped reports whether the character at i follows an odd run of
// backslashes.
func escaped(s string, i int) bool {
	n := 0
	for i-n-1 >= 0 && s[i-n-1] == '\\' {
		n++
	}
	return n%2 == 1
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
