package store

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/jonboulle/clockwork"
)

// Defaults of Options.
const (
	DefaultPrefix    = askbridge.DefaultPrefix
	DefaultGroup     = "bridge"
	DefaultClaimIdle = 30 * time.Second
	// DefaultRetention is the result retention of the protocol: how long a
	// result and the question hash are kept after the question ended.
	DefaultRetention = 24 * time.Hour
	// DefaultEventsMaxLen caps the events stream (protocol: "about 100,000
	// entries, MAXLEN ~").
	DefaultEventsMaxLen = 100_000
	// DefaultMaxLifetime is the longest time from a question's creation to
	// its deadline the indexes are sized for. ask-user.md §1 clamps
	// timeoutSeconds into [30, 3600].
	DefaultMaxLifetime = time.Hour
	// DefaultMaxMessages bounds the messages recorded per question (and so
	// the loop of the add-message script).
	DefaultMaxMessages = 64
)

// Options configure a Store. The zero value of every field means its default.
type Options struct {
	// Prefix starts every key (default "askuser:"). It must not contain
	// braces, which would break the hash tags Redis Cluster needs.
	Prefix string
	// Group is the consumer group on the requests stream (default "bridge").
	Group string
	// Consumer names this replica in the group (default: the host name).
	// Every replica needs its own.
	Consumer string
	// ClaimIdle is how long an entry another consumer took may stay
	// unacknowledged before this one claims it (default 30 s).
	ClaimIdle time.Duration
	// Retention is how long a question and its result are kept after it
	// ended (default 24 h).
	Retention time.Duration
	// EventsMaxLen caps the events stream, approximately (default 100,000).
	EventsMaxLen int64
	// MaxLifetime is the longest deadline − created of any question (default
	// 1 h). The chat index keys live MaxLifetime + Retention from their last
	// write, so they never expire under a pending question.
	MaxLifetime time.Duration
	// MaxMessages bounds the messages recorded per question (default 64).
	MaxMessages int
	// AgentIndex keeps, per agent, the ids of its pending questions, which
	// Admit counts: each ending question leaves its agent's index in the
	// same round trip as its other indexes. Set it on every replica when
	// the engine caps the pending questions per agent.
	AgentIndex bool
	// Logger receives the few problems the store heals by itself (such as
	// an index cleanup that failed after a question ended). Default: none.
	Logger *slog.Logger
	// Clock is the store's own time, for the few decisions no caller hands
	// a time to: when an index member without its question is old enough to
	// prune (OpenInChat), and when the next claim scan of ReadRequests is
	// due. Every question transition takes its time from the caller (the
	// now of End, Reject, Sweep). Default: the real clock.
	Clock clockwork.Clock
	// AutoPipeline lets the calls of a burst share round trips: while four
	// or more calls are already on their way to Redis (blocking reads not
	// counted), a further non-blocking call joins go-redis's
	// autopipeliner, which sends the calls that come together as one
	// pipeline; a call alone still takes its own round trip, with no
	// hand-off. Each call still waits for its own reply, so a caller's calls
	// stay in order. The bridge sets it: under load it halves the round
	// trips per question and cuts the bridge's CPU per question by about a
	// fifth (docs/performance.md).
	AutoPipeline bool
}

func (o Options) withDefaults() Options {
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if o.Group == "" {
		o.Group = DefaultGroup
	}
	if o.Consumer == "" {
		o.Consumer = defaultConsumer()
	}
	if o.ClaimIdle <= 0 {
		o.ClaimIdle = DefaultClaimIdle
	}
	if o.Retention <= 0 {
		o.Retention = DefaultRetention
	}
	if o.EventsMaxLen <= 0 {
		o.EventsMaxLen = DefaultEventsMaxLen
	}
	if o.MaxLifetime <= 0 {
		o.MaxLifetime = DefaultMaxLifetime
	}
	if o.MaxMessages <= 0 {
		o.MaxMessages = DefaultMaxMessages
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Clock == nil {
		o.Clock = clockwork.NewRealClock()
	}
	return o
}

// Validate reports the first option that cannot work, naming it. The zero
// value is valid.
func (o Options) Validate() error {
	if err := askbridge.CheckPrefix(o.Prefix); err != nil {
		return fmt.Errorf("store: prefix %w", err)
	}
	if o.ClaimIdle < 0 {
		return errors.New("store: claim idle must not be negative")
	}
	if o.Retention < 0 {
		return errors.New("store: retention must not be negative")
	}
	if o.EventsMaxLen < 0 {
		return errors.New("store: events max length must not be negative")
	}
	if o.MaxLifetime < 0 {
		return errors.New("store: max lifetime must not be negative")
	}
	if o.MaxMessages < 0 {
		return errors.New("store: max messages must not be negative")
	}
	return nil
}

func defaultConsumer() string {
	if h, err := os.Hostname(); err == nil && h != "" {
		return h
	}
	return "bridge"
}
