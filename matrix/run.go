package matrix

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"

	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/retry"
)

// syncFilter is the inline /sync filter: up to 100 timeline events a room
// per sync (Dendrite's default is 20), so a busy room is not cut off.
const syncFilter = `{"room":{"timeline":{"limit":100}}}`

// Run syncs in one replica at a time (it holds the syncer lease, and a
// standby takes over within LeaseTTL + RenewEvery of the holder dying),
// handing each vote and reply to in. It owns its reconnects, hears the
// rate limits other replicas share, and returns only when ctx is done.
func (c *Channel) Run(ctx context.Context, in engine.Inbox) error {
	var wg sync.WaitGroup
	wg.Go(func() { c.hearCooldowns(ctx) })
	defer wg.Wait()
	defer c.sharing.Wait()
	b := retry.Backoff{Min: time.Second, Max: 30 * time.Second}
	for ctx.Err() == nil {
		lease, ok, err := c.store.AcquireLease(ctx, c.leaseName(), c.cfg.Replica, c.cfg.LeaseTTL)
		switch {
		case err != nil:
			c.log.Warn("syncer lease not reached", "err", err)
			c.setState(engine.StateRetrying)
			retry.Sleep(ctx, b.Next())
		case !ok:
			c.setState(engine.StateStandby)
			retry.Sleep(ctx, c.cfg.RenewEvery)
		default:
			b.Reset()
			c.holdAndSync(ctx, in, lease)
		}
	}
	return nil
}

// leaseName names the syncer lease and the since cursor it fences: one
// per bot account.
func (c *Channel) leaseName() string { return "matrix:" + c.cfg.User }

// hearCooldowns holds this replica's sends to a room another replica was
// rate limited in, until ctx is done.
func (c *Channel) hearCooldowns(ctx context.Context) {
	err := c.store.Cooldowns(ctx, Platform, func(room string, d time.Duration) {
		c.log.Info("rate limited on another replica", "room", room, "retry_after", d)
		c.hold(room, d)
	})
	if err != nil && ctx.Err() == nil {
		c.log.Warn("cooldowns of other replicas not heard", "err", err)
	}
}

// holdAndSync syncs while lease is held: a goroutine renews it every
// RenewEvery and stops the syncing when it is lost. The lease is released
// when the syncing stops for any other reason than a crash.
func (c *Channel) holdAndSync(ctx context.Context, in engine.Inbox, lease engine.Lease) {
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	wg.Go(func() {
		defer stop()
		t := time.NewTicker(c.cfg.RenewEvery)
		defer t.Stop()
		for {
			select {
			case <-sctx.Done():
				return
			case <-t.C:
			}
			if ok, err := c.store.RenewLease(sctx, lease, c.cfg.LeaseTTL); err != nil || !ok {
				if sctx.Err() == nil {
					c.log.Warn("syncer lease lost", "err", err)
				}
				return
			}
		}
	})
	c.syncLoop(sctx, in, lease)
	stop()
	wg.Wait()
	if c.crash.Load() {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if err := c.store.ReleaseLease(rctx, lease); err != nil {
		c.log.Warn("release the syncer lease", "err", err)
	}
}

// syncLoop long-polls /sync from the stored since token until ctx is done,
// handles every event of a batch, and only then stores the batch's
// next_batch, fenced by lease: a batch not wholly handled is fetched again.
// Without a stored token it starts from now (what came before is not
// answered).
func (c *Channel) syncLoop(ctx context.Context, in engine.Inbox, lease engine.Lease) {
	b := retry.Backoff{Min: 500 * time.Millisecond, Max: 30 * time.Second}
	for ctx.Err() == nil {
		since, found, err := c.store.TextCursor(ctx, lease.Name)
		if err != nil {
			c.log.Warn("read the since token", "err", err)
			c.setState(engine.StateRetrying)
			retry.Sleep(ctx, b.Next())
			continue
		}
		timeout := int(c.cfg.SyncTimeout.Milliseconds())
		if !found {
			timeout = 0
		}
		resp, err := c.cli.SyncRequest(ctx, timeout, since, syncFilter, false, event.PresenceOffline)
		if err != nil {
			c.syncFailed(ctx, err, &b)
			continue
		}
		c.setState(engine.StateConnected)
		if found {
			if err := c.handleBatch(ctx, in, resp); err != nil {
				c.log.Warn("sync batch not wholly handled; fetched again", "err", err)
				retry.Sleep(ctx, b.Next())
				continue
			}
		}
		if ok, err := c.store.SetTextCursor(ctx, lease.Name, resp.NextBatch, lease); err != nil || !ok {
			c.log.Warn("since token not stored", "lost_lease", err == nil, "err", err)
			return
		}
		b.Reset()
	}
}

// syncFailed reports a failed /sync and waits before the next.
func (c *Channel) syncFailed(ctx context.Context, err error, b *retry.Backoff) {
	if ctx.Err() != nil {
		return
	}
	if badToken(err) {
		c.setState(engine.StateBadCredentials)
		c.log.Error("the homeserver refuses the access token: give the bot a new one", "err", err)
		retry.Sleep(ctx, 30*time.Second)
		return
	}
	c.setState(engine.StateRetrying)
	c.log.Warn("sync failed", "err", err)
	retry.Sleep(ctx, b.Next())
}

// handleBatch handles every invite and timeline event of one sync
// response, in order; the first error stops it (the batch is fetched
// again, and what was handled is skipped then by its first-seen mark).
func (c *Channel) handleBatch(ctx context.Context, in engine.Inbox, resp *mautrix.RespSync) error {
	for room, inv := range resp.Rooms.Invite {
		c.onInvite(ctx, room, inv)
	}
	for room, joined := range resp.Rooms.Join {
		if joined.Timeline.Limited {
			c.log.Warn("sync left events of a room out", "room", room)
		}
		for _, ev := range joined.Timeline.Events {
			ev.RoomID = room
			if err := c.handleEvent(ctx, in, ev); err != nil {
				return fmt.Errorf("matrix: event %s in %s: %w", ev.ID, room, err)
			}
		}
	}
	return nil
}

// errClaimed is the error of an event another replica claimed and has
// not settled: it is in hand there, or that replica died with it.
var errClaimed = errors.New("claimed by another replica and not settled yet")
