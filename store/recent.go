package store

import (
	"context"
	"sync"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
)

// recentMax bounds the records a Store keeps in memory for Lookup: every
// question of a replica with up to this many open (answers then never read
// a record), a megabyte or two, whatever the number pending.
const recentMax = 1024

// recentRecords holds the records of questions this Store created or read
// pending lately, for Lookup: an answer to a question this replica just
// showed needs no read of it. Oldest first out, by insertion. Safe for
// concurrent use.
type recentRecords struct {
	mu   sync.Mutex
	byID map[string]engine.Record
	// byMessage maps the message → question key of each message recorded
	// by this Store for a question held here to its id, and refsOf lists
	// those keys by id: QuestionByMessage answers from it for as long as
	// the record is held (a message shows one question for good).
	byMessage map[string]string
	refsOf    map[string][]string
	// ring lists the ids in insertion order, next the slot to fill (and
	// the oldest id, evicted when the ring is full).
	ring []string
	next int
}

func (c *recentRecords) put(r engine.Record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byID == nil {
		c.byID = make(map[string]engine.Record, recentMax)
		c.ring = make([]string, recentMax)
	}
	if _, ok := c.byID[r.ID]; !ok {
		if old := c.ring[c.next]; old != "" {
			c.forget(old)
		}
		c.ring[c.next] = r.ID
		c.next = (c.next + 1) % len(c.ring)
	}
	c.byID[r.ID] = r
}

func (c *recentRecords) get(id string) (engine.Record, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.byID[id]
	return r, ok
}

// drop forgets id (its slot in the ring stays until it comes round).
func (c *recentRecords) drop(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.forget(id)
}

// forget drops id and its messages; c.mu is held.
func (c *recentRecords) forget(id string) {
	delete(c.byID, id)
	for _, k := range c.refsOf[id] {
		delete(c.byMessage, k)
	}
	delete(c.refsOf, id)
}

// putMessage notes that message key (its message → question key) shows
// question id, while id's record is held; at most maxRefs per question.
func (c *recentRecords) putMessage(key, id string, maxRefs int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byID[id]; !ok || len(c.refsOf[id]) >= maxRefs {
		return
	}
	if c.byMessage == nil {
		c.byMessage = make(map[string]string)
		c.refsOf = make(map[string][]string)
	}
	if _, ok := c.byMessage[key]; ok {
		return
	}
	c.byMessage[key] = id
	c.refsOf[id] = append(c.refsOf[id], key)
}

// message returns the question message key shows, when known here.
func (c *recentRecords) message(key string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id, ok := c.byMessage[key]
	return id, ok
}

// Lookup reads a question like Get, from memory when this Store created it
// or read it pending lately (see engine.Store). A record read here
// pending is kept for the next Lookup; an ended one is not. Safe for
// concurrent use.
func (s *Store) Lookup(ctx context.Context, id string) (engine.Record, bool, error) {
	if r, ok := s.recent.get(id); ok {
		return r, true, nil
	}
	r, found, err := s.Get(ctx, id)
	if err == nil && found && r.Status == askbridge.StatusPending {
		s.recent.put(r)
	}
	return r, found, err
}
