package store

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
)

// unindexed reports whether the messages of platform get no message →
// question key: the web page's "message" is the question itself, answered
// by its id, and so is the agent's own client's (mcp), which is not even
// a chat; neither is ever looked up by message (QuestionByMessage finds
// nothing for them). Sparing the key saves a command and a key per
// question. Nor does the agent's client get a chat index: nothing lists
// the open questions of a chat there.
func unindexed(platform string) bool { return platform == "web" || platform == askbridge.PlatformMCP }

// indexReadLimit bounds how many members OpenInChat reads from one chat
// index: far more than the questions one chat can have open at once.
const indexReadLimit = 1000

// AddMessage records a message that showed a question, once, and indexes
// it: the message → question key (for QuestionByMessage, living as long as
// the question; none for the web page's, see unindexed) and, while
// the question is pending, the chat index (for OpenInChat). One round trip
// when this Store holds the question's record (it created or looked it up:
// the index writes go in one pipeline with the add-message script on the
// question's slot); otherwise two, the script then the index writes. An
// unknown id changes nothing (but for an index key, in the one round trip,
// that expires with the question it names). Safe to repeat (a repeat also
// redoes the index writes a failed call may have missed) and to call
// concurrently.
//
// A message is recorded once by its identity (platform, chat, message; see
// MessageRef.Same): the first record wins, and a later one for the same
// message changes nothing, even with another Part. The engine records each
// message once, with its final part, so a second record is a repeat.
func (s *Store) AddMessage(ctx context.Context, id string, ref engine.MessageRef) (askbridge.Status, error) {
	status, _, err := s.addMessage(ctx, id, ref, engine.Lease{}, nil)
	return status, err
}

// AddMessageReleasing is AddMessage that also gives up lease, a delivery
// lease of question id (QuestionLease(LeaseDeliver, id) or a place's,
// PlaceLeaseKind), in the same script and round trip, as ReleaseLease
// would: the delivery of a prompt records its last part and lets the
// question go in one step. A lease no longer held with its holder and
// token is left as it is. When the call fails, or the question already
// has Options.MaxMessages messages, the lease may still be held: the
// caller gives it up itself (ReleaseLease). Safe to repeat.
func (s *Store) AddMessageReleasing(ctx context.Context, id string, ref engine.MessageRef, lease engine.Lease) (askbridge.Status, error) {
	status, _, err := s.AddMessagePublishing(ctx, id, ref, lease, nil)
	return status, err
}

// AddMessagePublishing is AddMessage (AddMessageReleasing when lease.Name
// is set) that also publishes evs, as Publish would, in the call's round
// trip: the delivered event of the message needs none of its own. When
// this Store holds the question's record pending (one round trip) the
// events go in the same pipeline, after the script, whatever its answer
// (the message was posted: a question that ended meanwhile has it
// published after its end); otherwise in the second round trip, only when
// the question is pending. published reports whether every event was
// appended: when it is false the caller publishes them itself (a repeat
// of the call would publish them again). Safe to repeat, but for the
// events.
func (s *Store) AddMessagePublishing(ctx context.Context, id string, ref engine.MessageRef, lease engine.Lease, evs []askbridge.Event) (status askbridge.Status, published bool, err error) {
	if lease.Name != "" {
		if _, of, ok := fieldLease(lease.Name); !ok || of != id {
			return "", false, fmt.Errorf("store: add message: %q is not a delivery lease of question %q", lease.Name, id)
		}
	}
	return s.addMessage(ctx, id, ref, lease, evs)
}

// addMessage is AddMessage, giving up lease in the same script when its
// Name is set and publishing evs in its round trip (AddMessagePublishing).
func (s *Store) addMessage(ctx context.Context, id string, ref engine.MessageRef, lease engine.Lease, evs []askbridge.Event) (askbridge.Status, bool, error) {
	if err := checkID(id); err != nil {
		return "", false, fmt.Errorf("store: add message: %w", err)
	}
	b, err := json.Marshal(ref)
	if err != nil {
		return "", false, fmt.Errorf("store: add message: encode: %w", err)
	}
	ident, err := refIdentity(ref)
	if err != nil {
		return "", false, fmt.Errorf("store: add message: encode: %w", err)
	}
	now := s.opts.Clock.Now()
	keys := []string{s.k.Question(id), s.k.messages(id)}
	args := []any{string(b), s.opts.MaxMessages, ident, now.UnixMilli(), ms(s.opts.Retention)}
	if kind, _, ok := fieldLease(lease.Name); ok {
		args = append(args, lease.Holder, strconv.FormatInt(lease.Token, 10), leaseField(kind))
	}
	if rec, ok := s.recent.get(id); ok && rec.Status == askbridge.StatusPending {
		return s.addKnown(ctx, rec, ref, keys, args, evs)
	}
	v, err := addMessageScript.run(ctx, s.cl(), keys, args...)
	if err != nil {
		return "", false, fmt.Errorf("store: add message: %w", err)
	}
	status, created, life, target, err := s.addReply(id, v)
	if err != nil || status == "" {
		return status, false, err
	}
	if status != askbridge.StatusPending {
		// Ended: the chat index keeps no ended question, and the caller
		// decides about the events.
		target, evs = ref.Platform+":"+ref.Chat, nil
	}
	pipe := s.cl().Pipeline()
	index := s.queueIndex(ctx, pipe, id, ref, target, created, life)
	adds := s.queueEvents(ctx, pipe, evs)
	if pipe.Len() > 0 {
		_, err := pipe.Exec(ctx)
		s.chatTTLFailed(index)
		if err := firstErr(index); err != nil {
			return "", false, fmt.Errorf("store: add message: index: %w", err)
		}
		if err != nil && len(adds) == 0 {
			return "", false, fmt.Errorf("store: add message: index: %w", err)
		}
	}
	return status, len(evs) > 0 && firstErr(adds) == nil, nil
}

// addKnown is addMessage for a question whose pending record this Store
// holds (rec): the script, the index writes and the events in one round
// trip.
func (s *Store) addKnown(ctx context.Context, rec engine.Record, ref engine.MessageRef, keys []string, args []any, evs []askbridge.Event) (askbridge.Status, bool, error) {
	id, now := rec.ID, s.opts.Clock.Now()
	pipe := s.cl().Pipeline()
	call := addMessageScript.queue(ctx, pipe, keys, args...)
	life := max(rec.Deadline.Sub(now), 0) + s.opts.Retention
	index := s.queueIndex(ctx, pipe, id, ref, rec.Target.String(), rec.Created, life)
	adds := s.queueEvents(ctx, pipe, evs)
	vals, errs := runQueued(ctx, s.cl(), pipe, []*queued{call})
	s.chatTTLFailed(index)
	published := len(evs) > 0 && firstErr(adds) == nil
	if errs[0] != nil {
		return "", published, fmt.Errorf("store: add message: %w", errs[0])
	}
	status, _, _, _, err := s.addReply(id, vals[0])
	if err != nil {
		return "", published, err
	}
	if err := firstErr(index); err != nil {
		return "", published, fmt.Errorf("store: add message: index: %w", err)
	}
	if status == askbridge.StatusPending && !unindexed(ref.Platform) {
		s.recent.putMessage(s.k.message(ref), id, s.opts.MaxMessages)
	}
	return status, published, nil
}

// queueEvents queues the XADD of each event in pipe, as Publish would.
func (s *Store) queueEvents(ctx context.Context, pipe redis.Pipeliner, evs []askbridge.Event) []redis.Cmder {
	var adds []redis.Cmder
	for _, ev := range evs {
		adds = append(adds, pipe.XAdd(ctx, s.eventArgs(ev)))
	}
	return adds
}

// firstErr is the first error among cmds.
func firstErr(cmds []redis.Cmder) error {
	for _, c := range cmds {
		if err := c.Err(); err != nil {
			return err
		}
	}
	return nil
}

// addReply reads the add-message script's reply: the question's status
// ("" for an unknown id), created time, how long its index keys live, and
// its target.
func (s *Store) addReply(id string, v any) (status askbridge.Status, created time.Time, life time.Duration, target string, err error) {
	o, rest, err := reply(v)
	if err != nil {
		return "", created, 0, "", fmt.Errorf("store: add message: %w", err)
	}
	switch o {
	case outMissing:
		return "", created, 0, "", nil
	case outFull:
		return "", created, 0, "", fmt.Errorf("%w (%s, %d kept)", ErrTooManyMessages, id, s.opts.MaxMessages)
	}
	if len(rest) != 4 {
		return "", created, 0, "", fmt.Errorf("store: add message: unexpected reply %v", v)
	}
	st, _ := rest[0].(string)
	if created, err = unixMilli(fmt.Sprint(rest[1])); err != nil {
		return "", created, 0, "", fmt.Errorf("store: add message: created: %w", err)
	}
	life = s.indexTTL()
	if ms, _ := rest[2].(int64); ms > 0 {
		life = time.Duration(ms) * time.Millisecond
	}
	target, _ = rest[3].(string)
	return askbridge.Status(st), created, life, target, nil
}

// IndexInChat indexes question id (created at created) in chat t before a
// prompt of it is posted there: an escalation step's places are indexed
// as they are reached, not at the create, so a tap on the step's prompt
// that comes before the prompt is recorded still finds its question
// (Inbox adopts the message). Safe to repeat.
func (s *Store) IndexInChat(ctx context.Context, id string, t askbridge.Target, created time.Time) error {
	if err := checkID(id); err != nil {
		return fmt.Errorf("store: index in chat: %w", err)
	}
	if t.Platform == "" || t.Chat == "" {
		return nil
	}
	var cmds []redis.Cmder
	_, err := s.cl().Pipelined(ctx, func(pipe redis.Pipeliner) error {
		cmds = s.queueChatIndex(ctx, pipe, s.k.chat(t.Platform, t.Chat), id, created)
		return nil
	})
	s.chatTTLFailed(cmds)
	if err != nil {
		return fmt.Errorf("store: index in chat: %w", err)
	}
	return nil
}

// queueChatIndex queues the write of question id (created at created) into
// the chat index key and, when it is due (at most once a minute per chat
// from this Store, chatTTLs), the refresh of the index's expiry. A caller
// hands the commands to chatTTLFailed once its pipeline ran.
func (s *Store) queueChatIndex(ctx context.Context, pipe redis.Pipeliner, key, id string, created time.Time) []redis.Cmder {
	cmds := []redis.Cmder{pipe.ZAddNX(ctx, key, redis.Z{Score: float64(created.UnixMilli()), Member: id})}
	if s.chatTTL.due(key, s.opts.Clock.Now()) {
		cmds = append(cmds, pipe.PExpire(ctx, key, s.indexTTL()))
	}
	return cmds
}

// chatTTLFailed forgets the refresh of each chat index whose PEXPIRE among
// cmds failed (or never ran), so the next write of the chat refreshes it.
func (s *Store) chatTTLFailed(cmds []redis.Cmder) {
	for _, c := range cmds {
		if c.Name() != "pexpire" || c.Err() == nil {
			continue
		}
		if args := c.Args(); len(args) > 1 {
			if key, ok := args[1].(string); ok {
				s.chatTTL.forget(key)
			}
		}
	}
}

// queueIndex queues the index writes of message ref of question id (whose
// target and created time are given, and whose keys live for life): the
// message → question key, and, for a message in another chat than the
// target's (a DM opened for a user), that chat's index (Create indexed the
// target's).
func (s *Store) queueIndex(ctx context.Context, pipe redis.Pipeliner, id string, ref engine.MessageRef, target string, created time.Time, life time.Duration) []redis.Cmder {
	var cmds []redis.Cmder
	if !unindexed(ref.Platform) {
		cmds = append(cmds, pipe.Set(ctx, s.k.message(ref), id, life))
	}
	if ref.Platform == askbridge.PlatformMCP {
		return cmds
	}
	if target != (askbridge.Target{Platform: ref.Platform, Chat: ref.Chat}).String() {
		cmds = append(cmds, s.queueChatIndex(ctx, pipe, s.k.chat(ref.Platform, ref.Chat), id, created)...)
	}
	return cmds
}

// refIdentity is the opening of the JSON of every ref to the same message,
// whatever its Part: encoding/json writes the fields in their declared order
// and Part comes last, left out when 0, so that JSON is the identity
// followed by "}" or by ",". The add-message script compares the recorded
// refs with it.
func refIdentity(ref engine.MessageRef) (string, error) {
	b, err := json.Marshal(engine.MessageRef{Platform: ref.Platform, Chat: ref.Chat, Message: ref.Message})
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(string(b), "}"), nil
}

// Messages lists every message recorded for a question, in the order they
// were added (none for an unknown id). Safe for concurrent use.
func (s *Store) Messages(ctx context.Context, id string) ([]engine.MessageRef, error) {
	if err := checkID(id); err != nil {
		return nil, fmt.Errorf("store: messages: %w", err)
	}
	var items []string
	msgs, err := s.cl().HGet(ctx, s.k.Question(id), fieldMessages).Result()
	switch {
	case err == nil:
		items = splitMessages(msgs)
	case errors.Is(err, redis.Nil):
		// Stored before the field existed, or unknown: the legacy list.
		if items, err = s.cl().LRange(ctx, s.k.messages(id), 0, -1).Result(); err != nil {
			return nil, fmt.Errorf("store: messages: %w", err)
		}
	default:
		return nil, fmt.Errorf("store: messages: %w", err)
	}
	refs := make([]engine.MessageRef, 0, len(items))
	for _, it := range items {
		var ref engine.MessageRef
		if err := json.Unmarshal([]byte(it), &ref); err != nil {
			return nil, fmt.Errorf("store: messages: decode: %w", err)
		}
		refs = append(refs, ref)
	}
	return refs, nil
}

// splitMessages splits the question hash's msgs field into the JSON of
// each ref.
func splitMessages(msgs string) []string {
	if msgs == "" {
		return nil
	}
	return strings.Split(msgs, "\n")
}

// QuestionByMessage finds the question a message showed. A message this
// Store recorded for a question whose record it holds (Lookup's, see
// recent.go) is answered from memory, without a read: the key it wrote
// names that question for as long as the question lives. Safe for
// concurrent use.
func (s *Store) QuestionByMessage(ctx context.Context, ref engine.MessageRef) (string, bool, error) {
	key := s.k.message(ref)
	if id, ok := s.recent.message(key); ok {
		return id, true, nil
	}
	id, err := s.cl().Get(ctx, key).Result()
	if errors.Is(err, redis.Nil) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("store: question by message: %w", err)
	}
	return id, true, nil
}

// OpenInChat lists the pending questions shown in a chat, oldest first.
// Ended questions are dropped from the index as they are found. Safe for
// concurrent use.
func (s *Store) OpenInChat(ctx context.Context, platform, chat string) ([]string, error) {
	ids, err := s.openIn(ctx, s.k.chat(platform, chat))
	if err != nil {
		return nil, fmt.Errorf("store: open in chat: %w", err)
	}
	return ids, nil
}

// openIn reads an index, re-checks each member's status (one pipelined
// round trip) and prunes the members that are not pending.
func (s *Store) openIn(ctx context.Context, key string) ([]string, error) {
	zs, err := s.cl().ZRangeWithScores(ctx, key, 0, indexReadLimit-1).Result()
	if err != nil {
		return nil, err
	}
	pending, gone, err := s.pendingOf(ctx, zs)
	if err != nil {
		return nil, err
	}
	if len(gone) > 0 {
		if err := s.cl().ZRem(ctx, key, gone...).Err(); err != nil {
			return nil, err
		}
	}
	if pending == nil {
		pending = []string{}
	}
	return pending, nil
}

// FirstSeen records a platform event id (SET NX PX) and reports whether
// this is the first time it was seen within ttl (ttl ≤ 0: the retention).
// Exactly one of concurrent callers gets true. The mark holds a token of
// this call: when the client retried the SET because a reply was lost on
// a cut connection, the retry finds the call's own mark, and the call is
// still the first (one GET, only when the SET found a mark).
func (s *Store) FirstSeen(ctx context.Context, platform, eventID string, ttl time.Duration) (bool, error) {
	if ttl <= 0 {
		ttl = s.opts.Retention
	}
	key := s.k.seen(platform, eventID)
	token := rand.Text()
	ok, err := s.cl().SetNX(ctx, key, token, time.Duration(ms(ttl))*time.Millisecond).Result()
	if err != nil {
		return false, fmt.Errorf("store: first seen: %w", err)
	}
	if ok {
		return true, nil
	}
	held, err := s.cl().Get(ctx, key).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return false, nil // expired in between: it was seen
	case err != nil:
		return false, fmt.Errorf("store: first seen: %w", err)
	}
	return held == token, nil
}

// settledMark is the value of a first-seen mark once Settle has run; a mark
// in hand holds the token of its FirstSeen call.
const settledMark = "settled"

// Settle turns the mark of an event into a settled one that lives ttl
// (ttl ≤ 0: the retention). Safe to repeat.
func (s *Store) Settle(ctx context.Context, platform, eventID string, ttl time.Duration) error {
	if ttl <= 0 {
		ttl = s.opts.Retention
	}
	if err := s.cl().Set(ctx, s.k.seen(platform, eventID), settledMark, time.Duration(ms(ttl))*time.Millisecond).Err(); err != nil {
		return fmt.Errorf("store: settle: %w", err)
	}
	return nil
}

// Settled reports whether an event's mark is settled.
func (s *Store) Settled(ctx context.Context, platform, eventID string) (bool, error) {
	v, err := s.cl().Get(ctx, s.k.seen(platform, eventID)).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("store: settled: %w", err)
	}
	return v == settledMark, nil
}

// ForgetSeen removes the mark FirstSeen set, for an event whose handling
// failed: the platform's retry of it is then handled. Safe to repeat.
func (s *Store) ForgetSeen(ctx context.Context, platform, eventID string) error {
	if err := s.cl().Del(ctx, s.k.seen(platform, eventID)).Err(); err != nil {
		return fmt.Errorf("store: forget seen: %w", err)
	}
	return nil
}
