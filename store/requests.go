package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
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
func (s *Store) ReadRequests(ctx context.Context, max int, block time.Duration) ([]engine.Entry, error) {
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

func (s *Store) readRequests(ctx context.Context, max int, block time.Duration) ([]engine.Entry, error) {
	var out []engine.Entry
	if block <= 0 || !s.idleRead.Load() || s.claimScanDue() {
		var err error
		out, err = s.readScript(ctx, max)
		if err != nil || len(out) > 0 || block <= 0 {
			return out, err
		}
	}
	// Nothing waiting: block for the next entry. Only this read, which
	// wakes an idle replica, takes an entry's body without measuring it in
	// Redis first, and only one entry: an oversize one is refused at once
	// and, should this replica die holding it, the next claim measures it.
	// When it finds nothing, the next call blocks again at once (unless a
	// claim scan is due): the script would find nothing either, as an
	// entry that comes meanwhile is new to the group and the blocking read
	// takes it. An idle replica sends one command per block.
	streams, err := s.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
		Group:    s.opts.Group,
		Consumer: s.opts.Consumer,
		Streams:  []string{s.k.Requests(), ">"},
		Count:    1,
		Block:    block,
	}).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		s.idleRead.Store(false)
		return nil, err
	}
	for _, st := range streams {
		for _, m := range st.Messages {
			out = append(out, toEntry(m))
		}
	}
	s.idleRead.Store(len(out) == 0)
	return out, nil
}

// claimScanDue reports whether read_requests.lua would run a claim scan now:
// one under way, or the pause after the last one over.
func (s *Store) claimScanDue() bool {
	s.claimMu.Lock()
	defer s.claimMu.Unlock()
	return s.claimStart != "0-0" || s.opts.Clock.Since(s.claimLast) >= s.opts.ClaimIdle/2
}

// oversizeHead is how many bytes of an oversize entry's ask value come back
// from Redis: enough to find the request's id for the refusal when the
// request names it first.
const oversizeHead = 4 << 10

// readScript runs read_requests.lua: the claim scan, when one is due (one
// XAUTOCLAIM per call while a pass over the pending entries list is under
// way, then a pause of ClaimIdle/2 on Options.Clock; how long an entry has
// been idle is Redis's own count), then new entries up to max, every one
// measured inside Redis so an oversize body never leaves it.
func (s *Store) readScript(ctx context.Context, max int) ([]engine.Entry, error) {
	s.claimMu.Lock()
	defer s.claimMu.Unlock()
	minIdle := int64(-1)
	if s.claimStart != "0-0" || s.opts.Clock.Since(s.claimLast) >= s.opts.ClaimIdle/2 { // claimScanDue
		minIdle = s.opts.ClaimIdle.Milliseconds()
	}
	v, err := readRequestsScript.run(ctx, s.rdb, []string{s.k.Requests()},
		s.opts.Group, s.opts.Consumer, max, minIdle, s.claimStart, askbridge.MaxEntryBytes, oversizeHead)
	if err != nil {
		return nil, err
	}
	rows, ok := v.([]any)
	if !ok || len(rows) == 0 {
		return nil, fmt.Errorf("read requests: unexpected reply %T", v)
	}
	if minIdle >= 0 {
		next, _ := rows[0].(string)
		if next == "" {
			next = "0-0"
		}
		s.claimStart = next
		if next == "0-0" {
			s.claimLast = s.opts.Clock.Now()
		}
	}
	out := make([]engine.Entry, 0, len(rows)-1)
	for _, row := range rows[1:] {
		e, err := scriptEntry(row)
		if err != nil {
			return nil, fmt.Errorf("read requests: %w", err)
		}
		out = append(out, e)
	}
	return out, nil
}

// scriptEntry maps one entry of read_requests.lua's reply to an Entry.
func scriptEntry(row any) (engine.Entry, error) {
	r, ok := row.([]any)
	if !ok || len(r) < 2 {
		return engine.Entry{}, fmt.Errorf("entry is %T, want {id, size, ...}", row)
	}
	id, _ := r[0].(string)
	size, ok := r[1].(int64)
	if id == "" || !ok {
		return engine.Entry{}, fmt.Errorf("entry opens with %T, %T; want an id and a size", r[0], r[1])
	}
	if size < 0 {
		return toEntry(redis.XMessage{ID: id}), nil
	}
	values := make(map[string]any, (len(r)-2)/2)
	for i := 2; i+1 < len(r); i += 2 {
		f, _ := r[i].(string)
		values[f] = r[i+1]
	}
	return entryOf(id, int(size), values), nil
}

// toEntry maps a requests stream entry read in full to an Entry.
func toEntry(m redis.XMessage) engine.Entry {
	if m.Values == nil {
		return entryOf(m.ID, 0, nil)
	}
	size := 0
	for f, v := range m.Values {
		size += len(f)
		if s, ok := v.(string); ok {
			size += len(s)
		}
	}
	return entryOf(m.ID, size, m.Values)
}

// entryFields are the fields of a requests stream entry that say what it
// is; an entry holds exactly one of them.
var entryFields = []string{"ask", "cancel", "answer", "revoke"}

// entryOf maps an entry of size bytes (field names and values together)
// with its ask, cancel, answer and revoke values to an Entry: exactly one of those
// fields (others are ignored), else Malformed; over MaxEntryBytes,
// Oversize with the head of the ask or answer value Redis sent.
func entryOf(id string, size int, values map[string]any) engine.Entry {
	e := engine.Entry{StreamID: id}
	var kinds []string
	for _, f := range entryFields {
		if _, ok := values[f]; ok {
			kinds = append(kinds, f)
		}
	}
	value := func(f string) []byte { return []byte(fmt.Sprint(values[f])) }
	switch {
	case values == nil:
		e.Malformed = "entry was deleted from the stream"
	case size > askbridge.MaxEntryBytes:
		e.Oversize = size
		if slices.Contains(kinds, "ask") {
			e.Ask = value("ask")
		} else if slices.Contains(kinds, "answer") {
			e.Answer = value("answer")
		}
	case len(kinds) > 1:
		e.Malformed = "entry has more than one of the fields ask, cancel, answer and revoke: " + strings.Join(kinds, ", ")
	case len(kinds) == 0:
		e.Malformed = "entry has none of the fields ask, cancel, answer and revoke"
	case kinds[0] == "revoke":
		e.Revoke = value("revoke")
	case kinds[0] == "ask":
		e.Ask = value("ask")
	case kinds[0] == "answer":
		e.Answer = value("answer")
	default:
		if id := fmt.Sprint(values["cancel"]); id == "" {
			e.Malformed = "cancel entry names no question id"
		} else {
			e.Cancel = id
		}
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
	ack := pipe.XAck(ctx, s.k.Requests(), s.opts.Group, streamIDs...)
	del := pipe.XDel(ctx, s.k.Requests(), streamIDs...)
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
	err := s.rdb.XGroupCreateMkStream(ctx, s.k.Requests(), s.opts.Group, "0").Err()
	if err != nil && !redis.HasErrorPrefix(err, "BUSYGROUP") {
		return fmt.Errorf("store: create consumer group: %w", err)
	}
	s.groupReady.Store(true)
	return nil
}

// isNoGroup reports Redis's NOGROUP error, also as the in-process
// server's script runner wraps it.
func isNoGroup(err error) bool {
	return err != nil && (redis.HasErrorPrefix(err, "NOGROUP") || strings.Contains(err.Error(), "NOGROUP No such key"))
}
