package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
)

// defaultEventCount is the batch of Events when max < 1.
const defaultEventCount = 100

// Publish appends events to the events stream (XADD MAXLEN ~), in order,
// several in one pipeline, with the fields of the protocol in a fixed
// order: event, id, at (unix ms; 0 when At is zero), then platform, chat,
// message, by, error, to, via, agent and key where set. Safe for concurrent use; not idempotent
// (a repeat appends again).
func (s *Store) Publish(ctx context.Context, evs ...askbridge.Event) error {
	switch len(evs) {
	case 0:
		return nil
	case 1:
		if err := s.cl().XAdd(ctx, s.eventArgs(evs[0])).Err(); err != nil {
			return fmt.Errorf("store: publish: %w", err)
		}
		return nil
	}
	pipe := s.cl().Pipeline()
	for _, ev := range evs {
		pipe.XAdd(ctx, s.eventArgs(ev))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("store: publish: %w", err)
	}
	return nil
}

// eventArgs is the XADD of one event onto the capped events stream.
func (s *Store) eventArgs(ev askbridge.Event) *redis.XAddArgs {
	var at int64
	if !ev.At.IsZero() {
		at = ev.At.UnixMilli()
	}
	values := []any{"event", string(ev.Kind), "id", ev.ID, "at", strconv.FormatInt(at, 10)}
	for _, f := range [...]struct{ k, v string }{
		{"platform", ev.Platform},
		{"chat", ev.Chat},
		{"message", ev.Message},
		{"by", ev.By},
		{"error", ev.Error},
		{"to", ev.To},
		{"via", string(ev.Via)},
		{"agent", ev.Agent},
		{"key", ev.Key},
	} {
		if f.v != "" {
			values = append(values, f.k, f.v)
		}
	}
	return &redis.XAddArgs{Stream: s.k.Events(), MaxLen: s.opts.EventsMaxLen, Approx: true, Values: values}
}

// Events reads up to max (default 100) events after the stream id after,
// blocking up to block (block ≤ 0: not at all) when there are none. after
// "0" reads all kept events; "$" (or "") means only events published from
// now on: it is first resolved to the id of the newest entry, so no event
// published between this call and the next is lost, provided the next call
// passes the returned id. The returned id is the one to continue from (after
// itself when nothing arrived). Safe for concurrent use.
func (s *Store) Events(ctx context.Context, after string, max int, block time.Duration) ([]askbridge.Event, string, error) {
	if max < 1 {
		max = defaultEventCount
	}
	if after == "" || after == "$" {
		last, err := s.rdb.XRevRangeN(ctx, s.k.Events(), "+", "-", 1).Result()
		if err != nil {
			return nil, "", fmt.Errorf("store: events: %w", err)
		}
		after = "0-0"
		if len(last) > 0 {
			after = last[0].ID
		}
	}
	wait := time.Duration(-1) // go-redis: Block < 0 omits BLOCK; 0 would block forever
	if block > 0 {
		wait = block
	}
	streams, err := s.rdb.XRead(ctx, &redis.XReadArgs{
		Streams: []string{s.k.Events(), after},
		Count:   int64(max),
		Block:   wait,
	}).Result()
	if errors.Is(err, redis.Nil) {
		return nil, after, nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("store: events: %w", err)
	}
	var out []askbridge.Event
	next := after
	for _, st := range streams {
		for _, m := range st.Messages {
			out = append(out, toEvent(m))
			next = m.ID
		}
	}
	return out, next, nil
}

func toEvent(m redis.XMessage) askbridge.Event {
	str := func(k string) string {
		v, ok := m.Values[k]
		if !ok {
			return ""
		}
		return fmt.Sprint(v)
	}
	ev := askbridge.Event{
		StreamID: m.ID,
		Kind:     askbridge.EventKind(str("event")),
		ID:       str("id"),
		Platform: str("platform"),
		Chat:     str("chat"),
		Message:  str("message"),
		By:       str("by"),
		Error:    str("error"),
		To:       str("to"),
		Via:      askbridge.Via(str("via")),
		Agent:    str("agent"),
		Key:      str("key"),
	}
	if at, err := strconv.ParseInt(str("at"), 10, 64); err == nil && at != 0 {
		ev.At = time.UnixMilli(at)
	}
	return ev
}
