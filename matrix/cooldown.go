package matrix

import (
	"context"
	"time"
)

// shareTimeout bounds the PUBLISH that shares one cooldown.
const shareTimeout = 2 * time.Second

// hold keeps every send to room back for d (a 429's retry_after_ms, here
// or on another replica).
func (c *Channel) hold(room string, d time.Duration) {
	until := time.Now().Add(d)
	c.mu.Lock()
	if until.After(c.cooling[room]) {
		c.cooling[room] = until
	}
	c.mu.Unlock()
}

// share tells the other replicas, in the background, that room is rate
// limited for d. A failure is logged: they then learn from their own 429.
func (c *Channel) share(room string, d time.Duration) {
	c.sharing.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), shareTimeout)
		defer cancel()
		if err := c.store.ShareCooldown(ctx, Platform, room, d); err != nil {
			c.log.Debug("share cooldown", "room", room, "err", err)
		}
	})
}

// waitCooldown waits until room is no longer rate limited, or ctx is done.
func (c *Channel) waitCooldown(ctx context.Context, room string) error {
	c.mu.Lock()
	until, ok := c.cooling[room]
	if ok && !time.Now().Before(until) {
		delete(c.cooling, room)
	}
	c.mu.Unlock()
	wait := time.Until(until)
	if !ok || wait <= 0 {
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
