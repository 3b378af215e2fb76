package store

import (
	"strings"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
)

// keys builds every Redis key the store uses. The public ones are fixed by
// the agent protocol (shared/spec/redis-protocol.md); the rest are internal
// and may change. Every per-question key carries the question id as a hash
// tag ({<id>}) so the keys of one question share a Redis Cluster slot; this
// includes the keys of its per-question leases (QuestionLease). Every other
// lease key carries the lease name as its hash tag, so the keys of one lease
// share a slot.
//
// The public keys (requests, events, result, question) are the protocol's,
// askbridge.Keys; the methods here name the internal ones.
type keys struct {
	askbridge.Keys
	prefix string
}

// messages is the legacy LIST of MessageRef JSON documents of every
// platform message that showed the question, in the order they were added,
// without duplicates (internal, same slot as the question). Questions
// created now keep their messages in the question hash (fieldMessages);
// the list is read and written only for a question stored before that, so
// a rolling upgrade loses none.
func (k keys) messages(id string) string { return k.prefix + "messages:{" + id + "}" }

// deadlines is the ZSET of question ids scored by deadline (unix ms) that
// the sweepers read, and whose size is the number of pending questions
// (Pending) (internal, shared by all questions).
func (k keys) deadlines() string { return k.prefix + "deadlines" }

// timers is the ZSET of the reminders and escalation steps still to fire,
// as "<id> <name>" members scored by when they are due (unix ms)
// (internal, shared by all questions).
func (k keys) timers() string { return k.prefix + "timers" }

// finishing is the ZSET of ended question ids whose messages are still to
// be edited, scored by when the end was won (unix ms) (internal, shared by
// all questions): a replica that dies before editing leaves its ids here
// for another to finish.
func (k keys) finishing() string { return k.prefix + "finishing" }

// message is the STRING holding the id of the question a platform message
// showed (internal), living as long as the question hash.
func (k keys) message(ref engine.MessageRef) string {
	return k.prefix + "msg:" + ref.Platform + ":" + ref.Chat + ":" + ref.Message
}

// chat is the ZSET of ids of questions shown in a chat, scored by created
// time (internal; ended members are pruned on read).
func (k keys) chat(platform, chat string) string {
	return k.prefix + "chat:" + platform + ":" + chat
}

// cooldowns is the Pub/Sub channel the replicas share rate-limit waits on
// (ShareCooldown); messages only, no key.
func (k keys) cooldowns() string { return k.prefix + "cooldowns" }

// agent is the ZSET of the ids of an agent's pending questions (the
// request's agent field; "" for requests without one), scored by deadline,
// kept only when Options.AgentIndex is set (internal; the agent name is its
// hash tag).
func (k keys) agent(name string) string { return k.prefix + "agent:{" + name + "}" }

// seen is the STRING marking a platform event id as handled, for FirstSeen
// (internal, expires after the caller's ttl).
func (k keys) seen(platform, eventID string) string {
	return k.prefix + "seen:" + platform + ":" + eventID
}

// lease is the HASH of a held lease: fields holder and token (internal,
// expires with the lease). A per-question lease (QuestionLease) is
// <prefix>lease:<kind>:{<id>}, in the slot of its question; any other is
// <prefix>lease:{<name>}. A question's delivery leases are no longer kept
// here but in the question hash (leaseField); their key is only read, for
// a lease a replica of an earlier version holds during an upgrade.
func (k keys) lease(name string) string { return k.prefix + "lease:" + leaseTag(name) }

// fence is the STRING counter the lease tokens of one lease name are drawn
// from with INCR (internal, same slot as the lease; expires a retention
// after the lease was last taken or renewed).
func (k keys) fence(name string) string { return k.lease(name) + ":fence" }

// fenceOf is where the fencing counter of a lease lives: the STRING fence
// key, field ""; for a per-question lease (QuestionLease), the field
// fence:<kind> of the question hash, which lives exactly as long as the
// question and costs no key of its own.
func (k keys) fenceOf(name string) (key, field string) {
	if kind, id, ok := questionLease(name); ok {
		return k.Question(id), fenceField(kind)
	}
	return k.fence(name), ""
}

// fenceField is the question hash field counting the tokens of the
// question's lease of a kind.
func fenceField(kind string) string { return "fence:" + kind }

// leaseField is the question hash field holding the question's delivery
// lease of a kind (LeaseDeliver, or a place's, PlaceLeaseKind) as
// "<until>:<token>:<holder>" (qlease.lua): such a lease has no key of its
// own.
func leaseField(kind string) string { return "lease:" + kind }

// fieldLease reports whether the lease called name lives in its
// question's hash (leaseField): a delivery lease of a question, of its
// first place or another.
func fieldLease(name string) (kind, id string, ok bool) {
	kind, id, ok = questionLease(name)
	if !ok || !strings.HasPrefix(kind, LeaseDeliver) {
		return "", "", false
	}
	return kind, id, true
}

// cursor is the STRING holding a named position such as a poller's update
// offset (internal, never expires, same slot as the lease of the same name).
func (k keys) cursor(name string) string { return k.prefix + "cursor:" + leaseTag(name) }

// textCursor is the STRING holding a named text position such as a Matrix
// sync's next_batch token (internal, never expires, same slot as the lease
// of the same name).
func (k keys) textCursor(name string) string { return k.prefix + "textcursor:" + leaseTag(name) }

// leaseTag is a lease name with its hash tag: <kind>:{<id>} for a
// per-question lease, so its keys share the question's slot, and {<name>}
// for any other.
func leaseTag(name string) string {
	if kind, id, ok := questionLease(name); ok {
		return kind + ":{" + id + "}"
	}
	return "{" + name + "}"
}

// webHistory is the LIST of the web page's timeline: one JSON entry per
// ended question shown on the page, newest first, capped at historyMax
// entries by LTRIM, never expiring (internal; the page reads it back).
func (k keys) webHistory() string { return k.prefix + "web:history" }

// offer is the HASH of the offer to keep the answer of question id
// (ask-user.md §9: who may keep it, the durations, the answers, the shape,
// where; and, once taken, the keep: gen, since, until) (internal, same
// slot as the question; expires an hour after the offer's end).
func (k keys) offer(id string) string { return k.prefix + "offer:{" + id + "}" }

// standingEnd is the HASH marking the keep a standing answer's end timer
// is for (gen, state live|revoked|expired, since, by), so its expired
// event is published once and a revoked keep is never set again
// (internal, in the agent's slot beside the standing hash; expires a day
// after the standing answer's until).
func (k keys) standingEnd(agent, key string) string {
	return k.prefix + "standing-end:{" + askbridge.StandingTag(agent) + "}:" + key
}

// standingUse is the HASH of the decision whether a standing answer of
// agent answered question id (used 0|1 and, when 1, the standing answer's
// fields as they stood), so a retried intake gets the same decision
// (internal, in the agent's slot; expires after the retention).
func (k keys) standingUse(agent, id string) string {
	return k.prefix + "standing-use:{" + askbridge.StandingTag(agent) + "}:" + id
}

// standingTimers is the ZSET of the timers of offers and standing
// answers ("offer <id>", "end <gen> <key> <agent>"), scored by when they
// are due (unix ms) (internal, shared by all; handed out like the
// reminders' timers).
func (k keys) standingTimers() string { return k.prefix + "standing-timers" }

// validTag reports whether s can sit inside a hash tag: a brace would end
// the tag early or start another, and the keys would no longer share a slot.
func validTag(s string) bool { return !strings.ContainsAny(s, "{}") }

// newKeys names the keys under prefix.
func newKeys(prefix string) keys { return keys{Keys: askbridge.Keys{Prefix: prefix}, prefix: prefix} }

// sent is the STRING marking one send of question id that cannot be taken
// back once made, such as an email (MarkSend; internal, in the question's
// slot, expiring with the caller's ttl).
func (k keys) sent(id, name string) string { return k.prefix + "sent:{" + id + "}:" + name }
