package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// goalIntakeTrips is issue 33's goal for the intake: Redis round trips per
// 1,000 requests taken in.
const goalIntakeTrips = 60

// tripCount counts a client's round trips to Redis: one per command, one
// per pipeline. The bench counts its own admin client's, to take them out
// of Redis's count of reads.
type tripCount struct{ n atomic.Int64 }

func (c *tripCount) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *tripCount) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}

func (c *tripCount) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmds)
	}
}

// intakeReads is Redis's reads per 1,000 requests taken in: the growth of
// total_reads_processed from s0 to s1 (one read per
// request or pipeline that arrives in one piece), less the bench's own
// reads meanwhile (own: the reads its XADDs of the batch take, measured by
// adding the same requests to a scratch stream, and its admin client's
// calls, the s1 snapshot included), per request, times 1,000.
// Redis reads at most 16 KB of a connection at once, so a large pipeline
// (a batch of creates carries each request's body) is several reads: this
// is at least the bytes the bridge sends divided by 16 KB, and counts more
// than its round trips (intakeTrips).
func intakeReads(s0, s1 redisSnap, own int64, n int) float64 {
	if n <= 0 {
		return nan()
	}
	return float64(s1.reads-s0.reads-own) / float64(n) * 1000
}

// intakeTrips is the bridge's Redis round trips per 1,000 requests taken
// in, by its own count (redisCalls) before (c0) and after (c1).
func intakeTrips(c0, c1 int64, n int) float64 {
	if n <= 0 || c0 < 0 || c1 < 0 {
		return nan()
	}
	return float64(c1-c0) / float64(n) * 1000
}

// redisCallsMetric is the bridge's histogram of its Redis calls: one
// observation per command, and one per pipeline as a whole.
const redisCallsMetric = "askbridge_redis_call_duration_seconds_count"

// redisCalls is the bridge's own count of its Redis round trips so far:
// the count of its Redis call histogram summed over its labels (every
// command, "pipeline" for a pipeline), from its /metrics beside the page.
func (p *proc) redisCalls(ctx context.Context) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.addr+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("bench: bridge metrics: %w", err)
	}
	defer resp.Body.Close()
	var total int64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, redisCallsMetric+"{") && !strings.HasPrefix(line, redisCallsMetric+" ") {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			return 0, fmt.Errorf("bench: bridge metrics: %q: %w", line, err)
		}
		total += int64(v)
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("bench: bridge metrics: %w", err)
	}
	return total, nil
}
