package slacktest

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Playing a person: pressing buttons and posting messages.

// Person is someone in the workspace.
type Person struct {
	ID   string
	Name string
}

// Press presses the button labelled label on message ts of channel as p
// and returns the delivery (to send again as a duplicate). It fails when
// the message has no such button now.
func (s *Server) Press(p Person, channel, ts, label string) (Delivery, error) {
	m, ok := s.Message(channel, ts)
	if !ok {
		return Delivery{}, fmt.Errorf("slacktest: no message %s in %s", ts, channel)
	}
	return s.PressOn(p, m, label)
}

// PressOn presses a button of m as it stood when the test took it, as a
// person does whose Slack still shows the old message (a late press).
func (s *Server) PressOn(p Person, m Message, label string) (Delivery, error) {
	d, err := s.PressPayload(p, m, label)
	if err != nil {
		return d, err
	}
	return d, s.Deliver(d)
}

// PressPayload builds the block_actions payload of p pressing label on m,
// without sending it.
func (s *Server) PressPayload(p Person, m Message, label string) (Delivery, error) {
	channel, ts := m.Channel, m.TS
	btn, blockID, err := findButton(m.Blocks, label)
	if err != nil {
		return Delivery{}, err
	}
	s.mu.Lock()
	actionTS := s.newTS()
	s.mu.Unlock()
	var blocks any
	_ = json.Unmarshal(m.Blocks, &blocks)
	payload, _ := json.Marshal(map[string]any{
		"type": "block_actions", "api_app_id": AppID, "token": "verification-token-unused",
		"team":       map[string]any{"id": TeamID, "domain": "fake"},
		"user":       map[string]any{"id": p.ID, "username": p.Name, "name": p.Name, "team_id": TeamID},
		"channel":    map[string]any{"id": channel, "name": channel},
		"container":  map[string]any{"type": "message", "message_ts": ts, "channel_id": channel, "is_ephemeral": false},
		"message":    map[string]any{"type": "message", "ts": ts, "text": m.Text, "user": m.User, "bot_id": m.BotID, "blocks": blocks},
		"trigger_id": "trigger-" + actionTS, "response_url": s.URL + "/response/" + actionTS,
		"actions": []map[string]any{{
			"type": "button", "action_id": btn.ActionID, "block_id": blockID, "value": btn.Value,
			"text": map[string]any{"type": "plain_text", "text": btn.Text.Text}, "action_ts": actionTS,
		}},
	})
	return Delivery{Kind: "interactive", Payload: payload}, nil
}

type button struct {
	Type     string `json:"type"`
	ActionID string `json:"action_id"`
	Value    string `json:"value"`
	Text     struct {
		Text string `json:"text"`
	} `json:"text"`
}

// Buttons lists the labels of the buttons a message now shows.
func Buttons(blocks json.RawMessage) []string {
	var bs []struct {
		Type     string   `json:"type"`
		Elements []button `json:"elements"`
	}
	_ = json.Unmarshal(blocks, &bs)
	var out []string
	for _, b := range bs {
		if b.Type != "actions" {
			continue
		}
		for _, e := range b.Elements {
			if e.Type == "button" {
				out = append(out, e.Text.Text)
			}
		}
	}
	return out
}

func findButton(blocks json.RawMessage, label string) (button, string, error) {
	var bs []struct {
		Type     string   `json:"type"`
		BlockID  string   `json:"block_id"`
		Elements []button `json:"elements"`
	}
	_ = json.Unmarshal(blocks, &bs)
	for _, b := range bs {
		if b.Type != "actions" {
			continue
		}
		for _, e := range b.Elements {
			if e.Type == "button" && e.Text.Text == label {
				return e, b.BlockID, nil
			}
		}
	}
	return button{}, "", fmt.Errorf("slacktest: no button %q on the message", label)
}

// Say posts text as p in channel (in the thread of threadTS when it is
// set), as Slack stores it (&, <, > escaped), and delivers the message
// event. It returns the message's ts and the delivery.
func (s *Server) Say(p Person, channel, threadTS, text string) (string, Delivery, error) {
	s.mu.Lock()
	if _, ok := s.channels[channel]; !ok {
		s.mu.Unlock()
		return "", Delivery{}, fmt.Errorf("slacktest: no channel %s", channel)
	}
	esc := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(text)
	m := &Message{Channel: channel, TS: s.newTS(), ThreadTS: threadTS, User: p.ID, Text: esc}
	s.channels[channel] = append(s.channels[channel], m)
	s.evSeq++
	eventID := fmt.Sprintf("Ev%08d", s.evSeq)
	s.mu.Unlock()
	ev := map[string]any{"type": "message", "user": p.ID, "text": esc, "ts": m.TS, "channel": channel,
		"event_ts": m.TS, "channel_type": channelType(channel), "client_msg_id": "c-" + m.TS}
	if threadTS != "" {
		ev["thread_ts"] = threadTS
		ev["parent_user_id"] = BotUserID
	}
	d := Delivery{Kind: "events_api", Payload: callback(ev, eventID)}
	return m.TS, d, s.Deliver(d)
}

// SayAsBot delivers a message event of another bot (bot_id set, subtype
// bot_message) in channel.
func (s *Server) SayAsBot(channel, text string) error {
	s.mu.Lock()
	ts := s.newTS()
	s.evSeq++
	eventID := fmt.Sprintf("Ev%08d", s.evSeq)
	s.mu.Unlock()
	ev := map[string]any{"type": "message", "subtype": "bot_message", "bot_id": "B0OTHER", "text": text, "ts": ts, "channel": channel, "channel_type": channelType(channel)}
	return s.Deliver(Delivery{Kind: "events_api", Payload: callback(ev, eventID)})
}

func callback(inner map[string]any, eventID string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{
		"token": "verification-token-unused", "team_id": TeamID, "api_app_id": AppID, "type": "event_callback",
		"event": inner, "event_id": eventID, "event_time": time.Now().Unix(), "authorizations": []map[string]any{{"team_id": TeamID, "user_id": BotUserID, "is_bot": true}},
	})
	return b
}

func channelType(id string) string {
	if strings.HasPrefix(id, "D") {
		return "im"
	}
	return "channel"
}
