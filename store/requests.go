package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
)

// defaultReadCount is the batch size of ReadRequests when max < 1.
const defaultReadCount = 10

// ReadRequests returns up to max entries of the requests stream for this
// replica's consumer, blocking up to block (block ≤ 0: not at all) when none
// are waiting. Entries another consumer took and left unacknowledged for
// ClaimIdle are claimed first: the claim scan runs at most every ClaimIdle/2
// and continues where the previous call stopped, so its cost per call is
// bounded by max. Safe for concurrent use; each entry goes to one consumer
// at a time.
func (s *Store) ReadRequests(ctx context.Context, max int, block time.Duration) ([]askbridge.Entry, error) {
	if max < 1 {
		max = defaultReadCount
	}
	if err := s.ensureGroup(ctx); err != nil {
		return nil, err
	}
	entries, err := s.readRequests(ctx, max, block)
	if isNoGroup(err) {
		// The stream or the group was deleted under us: recreate, retry once.
		s.groupReady.Store(false)
		if err := s.ensureGroup(ctx); err != nil {
			return nil, err
		}
		entries, err = s.readRequests(ctx, max, block)
	}
	if err != nil {
		return nil, fmt.Errorf("store: read requests: %w", err)
	}
	return entries, nil
}

func (s *Store) readRequests(ctx context.Context, max int, block time.Duration) ([]askbridge.Entry, error) {
	claimed, err := s.claim(ctx, max)
	if err != nil {
		return nil, err
	}
	out := make([]askbridge.Entry, 0, len(claimed))
	for _, m := range claimed {
		out = append(out, toEntry(m))
	}
	if len(out) >= max {
		return out, nil
	}
	wait := time.Duration(-1) // go-redis: Block < 0 omits BLOCK; 0 would block forever
	if block > 0 && len(out) == 0 {
		wait = block
	}
	streams, err := s.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
		Group:    s.opts.Group,
		Consumer: s.opts.Consumer,
		Streams:  []string{s.k.requests(), ">"},
		Count:    int64(max - len(out)),
		Block:    wait,
	}).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	for _, st := range streams {
		for _, m := range st.Messages {
			out = append(out, toEntry(m))
		}
	}
	return out, nil
}

// claim takes over up to max entries idle for at least ClaimIdle, when a
// scan is due: one XAUTOCLAIM call per ReadRequests while a pass over the
// pending entries list is under way, then a pause of ClaimIdle/2 on
// Options.Clock. (How long an entry has been idle is Redis's own count.)
func (s *Store) claim(ctx context.Context, max int) ([]redis.XMessage, error) {
	s.claimMu.Lock()
	defer s.claimMu.Unlock()
	if s.claimStart == "0-0" && s.opts.Clock.Since(s.claimLast) < s.opts.ClaimIdle/2 {
		return nil, nil
	}
	msgs, next, err := s.rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{
		Stream:   s.k.requests(),
		Group:    s.opts.Group,
		Consumer: s.opts.Consumer,
		MinIdle:  s.opts.ClaimIdle,
		Start:    s.claimStart,
		Count:    int64(max),
	}).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	if next == "" {
		next = "0-0"
	}
	s.claimStart = next
	if next == "0-0" {
		s.claimLast = s.opts.Clock.Now()
	}
	return msgs, nil
}

// toEntry maps a requests stream entry to an Entry: exactly one of the
// fields ask and cancel (others are ignored), else Malformed.
func toEntry(m redis.XMessage) askbridge.Entry {
	e := askbridge.Entry{StreamID: m.ID}
	ask, hasAsk := m.Values["ask"]
	cancel, hasCancel := m.Values["cancel"]
	switch {
	case m.Values == nil:
		e.Malformed = "entry was deleted from the stream"
	case hasAsk && hasCancel:
		e.Malformed = "entry has both an ask and a cancel field"
	case hasAsk:
		e.Ask = []byte(fmt.Sprint(ask))
	case hasCancel:
		id := fmt.Sprint(cancel)
		if id == "" {
			e.Malformed = "cancel entry names no question id"
		} else {
			e.Cancel = id
		}
	default:
		e.Malformed = "entry has neither an ask nor a cancel field"
	}
	return e
}

// AckRequest acknowledges handled entries and deletes them from the
// stream, so the stream holds only entries still to handle: one XACK and
// one XDEL for all of them, in one pipeline. Safe to repeat and to call
// concurrently.
func (s *Store) AckRequest(ctx context.Context, streamIDs ...string) error {
	if len(streamIDs) == 0 {
		return nil
	}
	pipe := s.rdb.Pipeline()
	ack := pipe.XAck(ctx, s.k.requests(), s.opts.Group, streamIDs...)
	del := pipe.XDel(ctx, s.k.requests(), streamIDs...)
	_, _ = pipe.Exec(ctx)
	if err := ack.Err(); err != nil && !isNoGroup(err) {
		return fmt.Errorf("store: ack request: %w", err)
	}
	if err := del.Err(); err != nil {
		return fmt.Errorf("store: ack request: %w", err)
	}
	return nil
}

// ensureGroup creates the consumer group (and the stream) once. The group
// starts at 0, so requests pushed before any replica ever ran are read.
func (s *Store) ensureGroup(ctx context.Context) error {
	if s.groupReady.Load() {
		return nil
	}
	err := s.rdb.XGroupCreateMkStream(ctx, s.k.requests(), s.opts.Group, "0").Err()
	if err != nil && !redis.HasErrorPrefix(err, "BUSYGROUP") {
		return fmt.Errorf("store: create consumer group: %w", err)
	}
	s.groupReady.Store(true)
	return nil
}

func isNoGroup(err error) bool { return redis.HasErrorPrefix(err, "NOGROUP") }
