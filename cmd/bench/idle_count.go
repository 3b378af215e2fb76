package main

import (
	"context"
	"time"
)

// idleCommands counts the Redis commands the main bridge sends per second
// while nothing is asked, over d: the difference of INFO commandstats
// (commands inside scripts included, INFO itself excluded) divided by the
// seconds between the two snapshots. top names the commands, most first,
// per second. Only the bridge talks to Redis meanwhile.
func (w *world) idleCommands(ctx context.Context, d time.Duration) (perSec float64, top string, err error) {
	s0, err := snapshot(ctx, w.admin)
	if err != nil {
		return 0, "", err
	}
	start := time.Now()
	if !sleep(ctx, d) {
		return 0, "", ctx.Err()
	}
	s1, err := snapshot(ctx, w.admin)
	if err != nil {
		return 0, "", err
	}
	secs := time.Since(start).Seconds()
	return float64(s1.cmds-s0.cmds) / secs, topCommands(s0, s1, secs), nil
}
