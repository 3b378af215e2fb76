package client

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
)

// watchBatch is how many events one XREAD of Watch returns at most.
const watchBatch = 100

// Event is one entry of the events stream: a question requested,
// delivered, answered, skipped, expired, cancelled, undeliverable or
// rejected (and the v1.1 kinds), decoded into the bridge's own type.
// StreamID is where a later Watch resumes from.
type Event struct {
	askbridge.Event
	// Fields holds every field of the entry as read, those this version
	// of the package does not decode included (v1.1's "to", for one).
	Fields map[string]string
}

// Watch calls fn with every event of the events stream after the stream id
// from, in order, as they come, until ctx ends (it returns ctx's error) or
// fn returns an error (it returns that error, as is). from is "$" (or "")
// for only the events from now on, "0" for every event the stream still
// keeps, or the StreamID of the last event handled: a watcher that stops
// and resumes from there misses nothing the stream still holds (it keeps
// about the last 100,000 events). Watch reads with XREAD BLOCK in rounds
// of Options.PollTimeout; fn runs on the calling goroutine.
func (c *Client) Watch(ctx context.Context, from string, fn func(Event) error) error {
	if c.bad != nil {
		return c.bad
	}
	bg := context.WithoutCancel(ctx)
	last := from
	switch {
	case from == "" || from == "$":
		// Resolve "$" now, so nothing published between two reads is lost.
		newest, err := c.rdb.XRevRangeN(bg, c.keys.Events(), "+", "-", 1).Result()
		if err != nil {
			return fmt.Errorf("client: watch: read the newest event: %w", err)
		}
		last = "0-0"
		if len(newest) > 0 {
			last = newest[0].ID
		}
	case !validStreamID(from):
		return fmt.Errorf("client: watch: %q is not an events stream id: use \"$\" for new events, \"0\" for all, or the StreamID of the last event handled", from)
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		streams, err := c.rdb.XRead(bg, &redis.XReadArgs{
			Streams: []string{c.keys.Events(), last},
			Count:   watchBatch,
			Block:   c.opts.PollTimeout,
		}).Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return fmt.Errorf("client: watch: %w", err)
		}
		for _, st := range streams {
			for _, m := range st.Messages {
				if err := fn(toEvent(m)); err != nil {
					return err
				}
				last = m.ID
			}
		}
	}
}

// toEvent decodes one events stream entry.
func toEvent(m redis.XMessage) Event {
	fields := make(map[string]string, len(m.Values))
	for k, v := range m.Values {
		fields[k] = fmt.Sprint(v)
	}
	ev := askbridge.Event{
		StreamID: m.ID,
		Kind:     askbridge.EventKind(fields["event"]),
		ID:       fields["id"],
		Platform: fields["platform"],
		Chat:     fields["chat"],
		Message:  fields["message"],
		By:       fields["by"],
		Error:    fields["error"],
	}
	if at, err := strconv.ParseInt(fields["at"], 10, 64); err == nil && at != 0 {
		ev.At = time.UnixMilli(at)
	}
	return Event{Event: ev, Fields: fields}
}

// validStreamID reports whether s is a stream id: <ms> or <ms>-<seq>.
func validStreamID(s string) bool {
	ms, seq, found := strings.Cut(s, "-")
	if _, err := strconv.ParseUint(ms, 10, 64); err != nil {
		return false
	}
	if !found {
		return true
	}
	_, err := strconv.ParseUint(seq, 10, 64)
	return err == nil
}
