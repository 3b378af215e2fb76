package slack

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/askbridge/askbridge/engine"
	"github.com/slack-go/slack"
)

var _ engine.Finder = (*Channel)(nil)

// promptEvent is the event_type of the metadata on every prompt message.
const promptEvent = "askbridge_prompt"

// promptMetadata names part of question id. Metadata is not shown to
// people; it comes back from conversations.history with
// include_all_metadata.
func promptMetadata(id string, part int) slack.SlackMetadata {
	return slack.SlackMetadata{EventType: promptEvent, EventPayload: map[string]any{"question": id, "part": part}}
}

// findPages bounds a lookup: Slack may serve as few as 15 messages a page
// (the limit of apps distributed outside the Marketplace), and a prompt
// posted since l.Since is among the newest messages of its channel.
const (
	findPages    = 4
	findPageSize = 15
)

// Find looks in the channel's history since l.Since, newest first, for the
// messages this bot posted for parts l.From on of l.Plan (their metadata
// names the question and the part), and returns them in part order. It
// needs the history scope of the conversation (channels:history,
// groups:history or im:history), which text answers need too. One page of
// conversations.history is usually enough; at most findPages are read.
func (c *Channel) Find(ctx context.Context, l engine.Lookup) ([]engine.MessageRef, error) {
	channel, err := c.conversation(ctx, l.Chat)
	if err != nil {
		return nil, err
	}
	params := &slack.GetConversationHistoryParameters{
		ChannelID: channel, Limit: findPageSize, IncludeAllMetadata: true,
		Oldest: fmt.Sprintf("%d.%06d", l.Since.Unix(), l.Since.Nanosecond()/1000),
	}
	bot, _ := c.botUser.Load().(string)
	byPart := map[int]engine.MessageRef{}
	for range findPages {
		res, err := c.api.GetConversationHistoryContext(ctx, params)
		if err != nil {
			return nil, fmt.Errorf("slack: conversations.history: %w", c.classify(err))
		}
		for _, m := range res.Messages {
			part, ok := promptPart(m, l.Plan.ID, bot)
			if ok && part >= l.From {
				if _, seen := byPart[part]; !seen {
					byPart[part] = engine.MessageRef{Platform: Platform, Chat: channel, Message: m.Timestamp, Part: part}
				}
			}
		}
		if !res.HasMore || res.ResponseMetaData.NextCursor == "" {
			break
		}
		params.Cursor = res.ResponseMetaData.NextCursor
	}
	out := make([]engine.MessageRef, 0, len(byPart))
	for _, ref := range byPart {
		out = append(out, ref)
	}
	slices.SortFunc(out, func(a, b engine.MessageRef) int { return a.Part - b.Part })
	return out, nil
}

// promptPart reports which part of question id message m is, if it is one
// this bot posted (bot is the bot's user id, "" when not known yet).
func promptPart(m slack.Message, id, bot string) (int, bool) {
	md := m.Metadata
	if md.EventType != promptEvent || md.EventPayload["question"] != id {
		return 0, false
	}
	if bot != "" && m.User != "" && m.User != bot {
		return 0, false
	}
	switch p := md.EventPayload["part"].(type) {
	case int:
		return p, p >= 0
	case float64:
		if p >= 0 && p == float64(int(p)) {
			return int(p), true
		}
	case string:
		if n, err := strconv.Atoi(p); err == nil && n >= 0 {
			return n, true
		}
	}
	return 0, false
}
