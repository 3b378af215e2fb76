package store

import (
	"sync"
	"time"
)

// chatTTLEvery is how often a Store refreshes the expiry of one chat
// index: a chat that gets a question a second costs one PEXPIRE a minute,
// not one a question. The index lives indexTTL (the longest a question
// lives plus the retention, days), far longer than a minute, so a skipped
// refresh never lets a live index expire.
const chatTTLEvery = time.Minute

// chatTTLMax bounds the chats whose last refresh a Store remembers; past
// it the memory starts again (the next write of each chat refreshes).
const chatTTLMax = 10000

// chatTTLs remembers when this Store last refreshed the expiry of each
// chat index key. Safe for concurrent use.
type chatTTLs struct {
	mu   sync.Mutex
	last map[string]time.Time
}

// due reports whether the expiry of chat index key should be refreshed
// now (never refreshed by this Store, or over chatTTLEvery ago) and, when
// it should, notes now as its last refresh.
func (c *chatTTLs) due(key string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.last[key]; ok && now.Sub(t) < chatTTLEvery && !now.Before(t) {
		return false
	}
	if c.last == nil || len(c.last) >= chatTTLMax {
		c.last = make(map[string]time.Time)
	}
	c.last[key] = now
	return true
}

// forget drops what due noted for keys: their refresh may not have
// reached Redis (the pipeline failed), so the next write refreshes again.
func (c *chatTTLs) forget(keys ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range keys {
		delete(c.last, k)
	}
}
