package askbridge

import "time"

// Event is one entry of the events stream of the protocol.
type Event struct {
	// StreamID is the events stream entry id; set when read, ignored on Publish.
	StreamID string
	Kind     EventKind
	ID       string
	At       time.Time
	Platform string
	Chat     string
	Message  string
	By       string
	Error    string
	// To names the place of a per-place event (reminded, escalated, an
	// undeliverable place), as the request or route named it.
	To string
	// Via is how the answer of an answered event came, when it came from a
	// standing answer (ViaStanding).
	Via Via
	// Agent and Key name the standing answer of a kept, revoked or
	// expired-standing event (ask-user.md §9); ID is then empty.
	Agent string
	Key   string
}

// EventKind is the `event` field of an events stream entry.
type EventKind string

// The event kinds of the protocol (redis-protocol.md, "Events").
const (
	EventRequested     EventKind = "requested"
	EventDelivered     EventKind = "delivered"
	EventAnswered      EventKind = "answered"
	EventSkipped       EventKind = "skipped"
	EventExpired       EventKind = "expired"
	EventCancelled     EventKind = "cancelled"
	EventUndeliverable EventKind = "undeliverable"
	EventRejected      EventKind = "rejected"
	// ask-user.md §5.
	EventAcknowledged EventKind = "acknowledged"
	EventReminded     EventKind = "reminded"
	EventEscalated    EventKind = "escalated"
	// ask-user.md §6: one person's vote on a quorum question.
	EventVoted EventKind = "voted"
	// ask-user.md §9: a standing answer kept, revoked, or ended at its
	// time. Its expiry is an EventExpired with Key set and no ID.
	EventKept    EventKind = "kept"
	EventRevoked EventKind = "revoked"
)

// EventOf is the event kind that announces an outcome.
func EventOf(o Outcome) EventKind { return EventKind(o) }
