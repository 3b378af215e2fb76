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
			delete(c.byID, old)
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
	delete(c.byID, id)
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
