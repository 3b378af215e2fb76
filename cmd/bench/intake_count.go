package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// intakeTrips is the bridge's Redis round trips per 1,000 requests taken
// in, by its own count (redisCalls) before (c0) and after (c1) the intake
// of n requests. Redis's own count of reads (total_reads_processed) is no
// count of round trips here: Redis reads a connection 16 KB at a time, so
// a pipeline of creates (each carries its request's body) is several
// reads, and the reads are at least the bytes sent divided by 16 KB
// whatever the batching.
func intakeTrips(c0, c1 int64, n int) float64 {
	if n <= 0 || c0 < 0 || c1 < c0 {
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
