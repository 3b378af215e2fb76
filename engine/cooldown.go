package engine

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Cooldowns: a platform's rate limit holds every replica that calls it,
// so a 429 one replica gets is shared through the Coordinator, and every
// replica holds its own calls to the bucket back too, instead of running
// into the limit in turn. The channels use these two helpers.

// shareCooldownTimeout bounds the PUBLISH that shares one cooldown.
const shareCooldownTimeout = 2 * time.Second

// ShareCooldown tells the other replicas, in the background, that platform
// limited bucket for d. A failure (Redis down) is logged at debug level:
// the others then learn from their own 429, as they would without sharing.
func ShareCooldown(coord Coordinator, platform, bucket string, d time.Duration, log *slog.Logger) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), shareCooldownTimeout)
		defer cancel()
		if err := coord.ShareCooldown(ctx, platform, bucket, d); err != nil {
			log.Debug("share cooldown", "bucket", bucket, "err", err)
		}
	}()
}

// HearCooldowns calls hold with each cooldown other replicas share for
// platform, until ctx is done, on a goroutine of its own; the function it
// returns waits for that goroutine to end (call it after ctx is done).
func HearCooldowns(ctx context.Context, coord Coordinator, platform string, log *slog.Logger, hold func(bucket string, d time.Duration)) (wait func()) {
	var wg sync.WaitGroup
	wg.Go(func() {
		err := coord.Cooldowns(ctx, platform, func(bucket string, d time.Duration) {
			log.Info("rate limited on another replica", "bucket", bucket, "retry_after", d)
			hold(bucket, d)
		})
		if err != nil && ctx.Err() == nil {
			log.Warn("cooldowns of other replicas not heard", "err", err)
		}
	})
	return wg.Wait
}
