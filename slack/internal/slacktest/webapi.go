package slacktest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Web API: the methods the bridge calls (auth.test, apps.connections.open,
// chat.postMessage, chat.update, chat.delete, chat.postEphemeral,
// conversations.open, conversations.history), with Slack's limits and error
// bodies.

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_ = json.NewEncoder(w).Encode(v)
}

func fail(code string) map[string]any { return map[string]any{"ok": false, "error": code} }

// web wraps a Web API method: form parsing, the bot token (form field
// `token` or a Bearer header), the rate limit of chat.* methods.
func (s *Server) web(limited bool, h func(form url.Values) map[string]any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			writeJSON(w, fail("invalid_form_data"))
			return
		}
		method := strings.TrimPrefix(r.URL.Path, "/api/")
		token := r.Form.Get("token")
		if token == "" {
			token = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		}
		s.mu.Lock()
		s.calls = append(s.calls, Call{Method: method, Form: r.Form})
		if limited && s.rateN > 0 {
			now := time.Now()
			keep := s.recent[:0]
			for _, t := range s.recent {
				if now.Sub(t) < s.rateWindow {
					keep = append(keep, t)
				}
			}
			s.recent = keep
			if len(s.recent) >= s.rateN {
				s.limited++
				s.mu.Unlock()
				w.Header().Set("Retry-After", strconv.Itoa(s.retryAfter))
				w.Header().Set("Content-Type", "application/json; charset=utf-8")
				w.WriteHeader(http.StatusTooManyRequests)
				_, _ = w.Write([]byte(`{"ok":false,"error":"ratelimited"}`))
				return
			}
			s.recent = append(s.recent, now)
		}
		s.mu.Unlock()
		if token == "" {
			writeJSON(w, fail("not_authed"))
			return
		}
		if token != s.opts.BotToken {
			writeJSON(w, fail("invalid_auth"))
			return
		}
		writeJSON(w, h(r.Form))
	}
}

func (s *Server) authTest(url.Values) map[string]any {
	return map[string]any{"ok": true, "url": "https://fake.slack.test/", "team": "Fake", "user": "askbridge",
		"team_id": TeamID, "user_id": BotUserID, "bot_id": BotID}
}

// connectionsOpen answers apps.connections.open: the app token as a Bearer
// header, a ws:// URL of this fake.
func (s *Server) connectionsOpen(w http.ResponseWriter, r *http.Request) {
	token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	s.mu.Lock()
	s.calls = append(s.calls, Call{Method: "apps.connections.open"})
	s.mu.Unlock()
	switch {
	case token == "":
		writeJSON(w, fail("not_authed"))
	case token != s.opts.AppToken:
		writeJSON(w, fail("invalid_auth"))
	default:
		writeJSON(w, map[string]any{"ok": true, "url": "ws" + strings.TrimPrefix(s.URL, "http") + "/ws"})
	}
}

func (s *Server) channelError(channel string) string {
	if code := s.chanErrors[channel]; code != "" {
		return code
	}
	if _, ok := s.channels[channel]; !ok {
		return "channel_not_found"
	}
	return ""
}

func (s *Server) postMessage(form url.Values) map[string]any {
	channel, text, blocks := form.Get("channel"), form.Get("text"), form.Get("blocks")
	if text == "" && (blocks == "" || blocks == "[]") {
		return fail("no_text")
	}
	if problems := checkBlocks(blocks); len(problems) > 0 {
		return map[string]any{"ok": false, "error": "invalid_blocks", "errors": problems}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if code := s.channelError(channel); code != "" {
		return fail(code)
	}
	m := &Message{Channel: channel, TS: s.newTS(), ThreadTS: form.Get("thread_ts"), User: BotUserID, BotID: BotID, Text: text, Displays: []Display{DisplayOf(form)}}
	if blocks != "" {
		m.Blocks = json.RawMessage(blocks)
	}
	if meta := form.Get("metadata"); meta != "" {
		var md struct {
			EventType    string         `json:"event_type"`
			EventPayload map[string]any `json:"event_payload"`
		}
		if json.Unmarshal([]byte(meta), &md) != nil || md.EventType == "" || md.EventPayload == nil {
			return fail("invalid_metadata_format")
		}
		m.Metadata = json.RawMessage(meta)
	}
	if m.ThreadTS != "" && s.find(channel, m.ThreadTS) == nil {
		return fail("thread_not_found")
	}
	s.channels[channel] = append(s.channels[channel], m)
	s.cond.Broadcast()
	return map[string]any{"ok": true, "channel": channel, "ts": m.TS, "message": map[string]any{"type": "message", "text": text, "user": BotUserID, "bot_id": BotID, "ts": m.TS}}
}

func (s *Server) update(form url.Values) map[string]any {
	channel, ts := form.Get("channel"), form.Get("ts")
	blocks := form.Get("blocks")
	if problems := checkBlocks(blocks); len(problems) > 0 {
		return map[string]any{"ok": false, "error": "invalid_blocks", "errors": problems}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if code := s.channelError(channel); code != "" {
		return fail(code)
	}
	m := s.find(channel, ts)
	if m == nil {
		return fail("message_not_found")
	}
	if m.BotID != BotID {
		return fail("cant_update_message")
	}
	if _, ok := form["text"]; ok {
		m.Text = form.Get("text")
	}
	if _, ok := form["blocks"]; ok {
		m.Blocks = json.RawMessage(blocks)
	}
	m.Updates++
	m.Displays = append(m.Displays, DisplayOf(form))
	return map[string]any{"ok": true, "channel": channel, "ts": ts, "text": m.Text}
}

// deleteMessage answers chat.delete: a bot token deletes only the bot's own
// messages (cant_delete_message for anyone else's); a message that is not
// there is message_not_found. The message is gone afterwards: reading,
// updating, deleting or replying to it fails as it would on Slack.
func (s *Server) deleteMessage(form url.Values) map[string]any {
	channel, ts := form.Get("channel"), form.Get("ts")
	s.mu.Lock()
	defer s.mu.Unlock()
	if code := s.channelError(channel); code != "" {
		return fail(code)
	}
	m := s.find(channel, ts)
	if m == nil {
		return fail("message_not_found")
	}
	if m.BotID != BotID {
		return fail("cant_delete_message")
	}
	s.channels[channel] = slices.DeleteFunc(s.channels[channel], func(o *Message) bool { return o == m })
	s.deleted = append(s.deleted, m.copy())
	s.cond.Broadcast()
	return map[string]any{"ok": true, "channel": channel, "ts": ts}
}

func (s *Server) postEphemeral(form url.Values) map[string]any {
	channel, user := form.Get("channel"), form.Get("user")
	s.mu.Lock()
	defer s.mu.Unlock()
	if code := s.channelError(channel); code != "" {
		return fail(code)
	}
	if user == "" {
		return fail("user_not_in_channel")
	}
	s.ephemerals = append(s.ephemerals, Ephemeral{Channel: channel, User: user, ThreadTS: form.Get("thread_ts"), Text: form.Get("text"), Display: DisplayOf(form)})
	return map[string]any{"ok": true, "message_ts": s.newTS()}
}

// conversationsHistory answers conversations.history: the channel's
// messages outside threads, newest first, between oldest and latest
// (exclusive unless inclusive), limit at a time (default 100, at most 999)
// with a cursor for the next page; metadata only with include_all_metadata.
func (s *Server) conversationsHistory(form url.Values) map[string]any {
	channel := form.Get("channel")
	limit := 100
	if v := form.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return fail("invalid_limit")
		}
		limit = min(n, 999)
	}
	skip := 0
	if c := form.Get("cursor"); c != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(c, "next:"))
		if err != nil || n < 0 {
			return fail("invalid_cursor")
		}
		skip = n
	}
	oldest, latest := form.Get("oldest"), form.Get("latest")
	inclusive := form.Get("inclusive") == "1" || form.Get("inclusive") == "true"
	meta := form.Get("include_all_metadata") == "1" || form.Get("include_all_metadata") == "true"
	s.mu.Lock()
	defer s.mu.Unlock()
	if code := s.channelError(channel); code != "" {
		return fail(code)
	}
	var in []map[string]any
	all := s.channels[channel]
	for i := len(all) - 1; i >= 0; i-- {
		m := all[i]
		if m.ThreadTS != "" && m.ThreadTS != m.TS {
			continue
		}
		if oldest != "" && (tsLess(m.TS, oldest) || (!inclusive && m.TS == oldest)) {
			continue
		}
		if latest != "" && (tsLess(latest, m.TS) || (!inclusive && m.TS == latest)) {
			continue
		}
		out := map[string]any{"type": "message", "ts": m.TS, "text": m.Text, "user": m.User}
		if m.BotID != "" {
			out["bot_id"] = m.BotID
		}
		if m.Blocks != nil {
			out["blocks"] = m.Blocks
		}
		if meta && m.Metadata != nil {
			out["metadata"] = m.Metadata
		}
		in = append(in, out)
	}
	page := in[min(skip, len(in)):]
	more := len(page) > limit
	if more {
		page = page[:limit]
	}
	res := map[string]any{"ok": true, "messages": page, "has_more": more}
	if more {
		res["response_metadata"] = map[string]any{"next_cursor": fmt.Sprintf("next:%d", skip+limit)}
	}
	return res
}

// tsLess compares two Slack timestamps ("seconds.micros").
func tsLess(a, b string) bool {
	fa, _ := strconv.ParseFloat(a, 64)
	fb, _ := strconv.ParseFloat(b, 64)
	return fa < fb
}

func (s *Server) conversationsOpen(form url.Values) map[string]any {
	users := form.Get("users")
	if users == "" || strings.Contains(users, ",") {
		return fail("users_list_not_supplied")
	}
	if users[0] != 'U' && users[0] != 'W' {
		return fail("user_not_found")
	}
	id := "D" + users[1:]
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.channels[id]; !ok {
		s.channels[id] = nil
	}
	return map[string]any{"ok": true, "channel": map[string]any{"id": id}}
}

// checkBlocks applies Block Kit's limits; each problem is worded the way
// Slack's invalid_blocks errors are.
func checkBlocks(raw string) []string {
	if raw == "" {
		return nil
	}
	var blocks []struct {
		Type    string `json:"type"`
		BlockID string `json:"block_id"`
		Text    *struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"text"`
		Fields   json.RawMessage `json:"fields"`
		Elements json.RawMessage `json:"elements"`
	}
	if err := json.Unmarshal([]byte(raw), &blocks); err != nil {
		return []string{"invalid_blocks_format"}
	}
	var problems []string
	if len(blocks) > MaxBlocks {
		problems = append(problems, fmt.Sprintf("no more than %d items allowed [json-pointer:/blocks]", MaxBlocks))
	}
	for i, b := range blocks {
		// Slack refuses a header, or a section without fields, whose
		// text is missing or blank.
		if (b.Type == "header" || (b.Type == "section" && len(b.Fields) == 0)) && (b.Text == nil || strings.TrimSpace(b.Text.Text) == "") {
			problems = append(problems, fmt.Sprintf("must be more than 0 characters [json-pointer:/blocks/%d/text/text]", i))
		}
		if b.Type == "context" {
			var elems []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			}
			if err := json.Unmarshal(b.Elements, &elems); err != nil {
				return []string{"invalid_blocks_format"}
			}
			if len(elems) == 0 {
				problems = append(problems, fmt.Sprintf("must provide at least 1 items [json-pointer:/blocks/%d/elements]", i))
			}
			for j, e := range elems {
				if (e.Type == "mrkdwn" || e.Type == "plain_text") && strings.TrimSpace(e.Text) == "" {
					problems = append(problems, fmt.Sprintf("must be more than 0 characters [json-pointer:/blocks/%d/elements/%d/text]", i, j))
				}
				if utf16Len(e.Text) > MaxSectionText {
					problems = append(problems, fmt.Sprintf("must be less than %d characters [json-pointer:/blocks/%d/elements/%d/text]", MaxSectionText+1, i, j))
				}
			}
		}
		if b.Text != nil {
			limit := MaxSectionText
			if b.Type == "header" {
				limit = MaxHeaderText
			}
			if utf16Len(b.Text.Text) > limit {
				problems = append(problems, fmt.Sprintf("must be less than %d characters [json-pointer:/blocks/%d/text/text]", limit+1, i))
			}
		}
		if b.Type != "actions" {
			continue
		}
		var elems []struct {
			Type     string `json:"type"`
			ActionID string `json:"action_id"`
			Value    string `json:"value"`
			Text     *struct {
				Text string `json:"text"`
			} `json:"text"`
		}
		if err := json.Unmarshal(b.Elements, &elems); err != nil {
			return []string{"invalid_blocks_format"}
		}
		if len(elems) > MaxActionElements {
			problems = append(problems, fmt.Sprintf("no more than %d items allowed [json-pointer:/blocks/%d/elements]", MaxActionElements, i))
		}
		seen := map[string]bool{}
		for j, e := range elems {
			p := fmt.Sprintf("[json-pointer:/blocks/%d/elements/%d", i, j)
			if e.Text != nil && utf8.RuneCountInString(e.Text.Text) > MaxButtonText {
				problems = append(problems, fmt.Sprintf("must be less than %d characters %s/text/text]", MaxButtonText+1, p))
			}
			if utf8.RuneCountInString(e.Value) > MaxButtonValue {
				problems = append(problems, fmt.Sprintf("must be less than %d characters %s/value]", MaxButtonValue+1, p))
			}
			if len(e.ActionID) > MaxActionID {
				problems = append(problems, fmt.Sprintf("must be less than %d characters %s/action_id]", MaxActionID+1, p))
			}
			if seen[e.ActionID] {
				problems = append(problems, fmt.Sprintf("action_id must be unique %s/action_id]", p))
			}
			seen[e.ActionID] = true
		}
	}
	return problems
}

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}
