package engine_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/store"
)

// BenchmarkEngineAnswered takes questions from an agent's XADD to the
// agent's BLPOP of the result through one engine on the test redis-server:
// the request read, created, shown (by a channel that posts nothing) and
// answered through Submit, as the web page answers. Agents ask from
// 16 goroutines per core at once, so the engine is kept busy; ns/op is the
// time per answered question at that load (its inverse the throughput), and a CPU profile of it
// (-cpuprofile) shows where the bridge's time goes.
func BenchmarkEngineAnswered(b *testing.B) {
	ctx, stop := context.WithCancel(context.Background())
	prefix := fmt.Sprintf("enginebench%d:", prefixSeq.Add(1))
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr, PoolSize: 64})
	defer rdb.Close()
	trips := &tripCounter{}
	rdb.AddHook(trips)
	ch := newFakeChannel("telegram")
	eng := engine.NewEngine(engine.EngineConfig{
		Store: store.New(rdb, store.Options{Prefix: prefix, Consumer: "bench"}),
		Resolve: func(string) (engine.Route, error) {
			return engine.Route{Target: askbridge.Target{Platform: "telegram", Chat: "ops-room"}}, nil
		},
		Channels: []engine.Channel{ch}, Replica: "bench",
	})
	done := make(chan struct{})
	go func() { defer close(done); _ = eng.Run(ctx) }()
	defer func() { stop(); <-done }()
	var seq atomic.Int64
	b.SetParallelism(16) // 32 agents on 2 cores: the engine is never idle
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		agent := redis.NewClient(&redis.Options{Addr: redisAddr})
		defer agent.Close()
		for pb.Next() {
			id := fmt.Sprintf("bench-%d", seq.Add(1))
			body := fmt.Sprintf(oneQuestion, id)
			if err := agent.XAdd(ctx, &redis.XAddArgs{Stream: prefix + "requests", Values: []any{"ask", body}}).Err(); err != nil {
				b.Fatal(err)
			}
			for {
				s, err := eng.Submit(ctx, id, engine.Answer{By: alice, Via: askbridge.ViaWeb, Values: map[string][]string{"deploy_target": {"Production"}}})
				if err != nil {
					b.Fatal(err)
				}
				if s.Won {
					break
				}
				time.Sleep(50 * time.Microsecond) // not created yet
			}
			if err := agent.BLPop(ctx, time.Second, prefix+"result:{"+id+"}").Err(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(trips.n.Load())/float64(b.N), "bridge-roundtrips/q")
}

// tripCounter counts a client's round trips to Redis: one per command, one
// per pipeline.
type tripCounter struct{ n atomic.Int64 }

func (c *tripCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *tripCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}

func (c *tripCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmds)
	}
}
