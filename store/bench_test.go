package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
)

// roundTrips counts the client's round trips to Redis: one per command,
// one per pipeline.
type roundTrips struct{ n atomic.Int64 }

func (c *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}

func (c *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmds)
	}
}

// BenchmarkQuestionLifecycle runs whole questions from ask to result, the
// agent and the bridge on one Redis (the test binary's redis-server), with
// the store calls the engine makes for a question answered by a tap: the
// agent's XADD; ReadRequests, CreateHolding (the delivery lease written
// with the question), Publish requested, AddMessagePublishing (the
// message recorded and the lease given up in one script, the delivered
// event in the same round trip), AckRequest; on the tap FirstSeen, QuestionByMessage and Lookup (both
// known to the Store that recorded the message: no read),
// MarkAndEndPublishing (the finishing mark and the end in one round trip;
// the deadline and chat index left and the answered event in the next)
// and, once the message is edited, Finished; and the agent's BLPOP, one at
// a time (no autopipelining). It reports per question the round trips of
// both clients (roundtrips/q, counted by a go-redis hook), the commands
// Redis executed (cmds/q, from INFO commandstats, counting those run
// inside the Lua scripts), and the Redis memory one pending question holds
// (B/pending: used_memory over 1,000 questions created, shown and left
// pending, per question).
func BenchmarkQuestionLifecycle(b *testing.B) {
	ctx := context.Background()
	rig := newLifecycleRig(b)
	rig.run(-1) // loads the scripts and creates the consumer group

	trips0 := rig.counter.n.Load()
	cmds0, statsOK := commandCalls(ctx, rig.admin)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rig.run(i)
	}
	b.StopTimer()
	b.ReportMetric(float64(rig.counter.n.Load()-trips0)/float64(b.N), "roundtrips/q")
	if cmds1, ok := commandCalls(ctx, rig.admin); ok && statsOK {
		b.ReportMetric(float64(cmds1-cmds0)/float64(b.N), "cmds/q")
	}
	if perQ, ok := pendingMemory(b, ctx, rig.admin); ok {
		b.ReportMetric(perQ, "B/pending")
	}
}

// Budgets of one answered question, bridge and agent together, as
// BenchmarkQuestionLifecycle counts them: TestQuestionLifecycleBudget
// fails when a change spends more.
const (
	lifecycleRoundTrips = 11
	// The read runs in a script that measures each entry inside Redis
	// before it is sent (read_requests.lua: EVALSHA and XREADGROUP); the
	// delivery lease and its fencing counter are fields the create script
	// writes with the question, and the record of the prompt's last part
	// gives the lease up in its own HSET; the messages are a field of the
	// question hash (no list to write, expire and read back); a chat
	// index's expiry is refreshed once a minute; the tap reads neither the
	// record nor the message index (the Store that recorded the message
	// holds both); the answered event goes out in the round trip that
	// takes the question out of its indexes.
	lifecycleCommands = 30
)

// TestQuestionLifecycleBudget runs 20 questions the way the benchmark
// does and checks the Redis work per question against the budgets: counts,
// not timings.
func TestQuestionLifecycleBudget(t *testing.T) {
	rig := newLifecycleRig(t)
	checkBudget(t, rig, rig.run, lifecycleRoundTrips, lifecycleCommands)
}

// checkBudget runs run once to warm up, then for 20 questions, and fails
// t when a question takes more round trips or commands than the budgets.
func checkBudget(t *testing.T, rig *lifecycleRig, run func(int), roundTrips, commands int) {
	t.Helper()
	ctx := context.Background()
	run(-1)
	const n = 20
	trips0 := rig.counter.n.Load()
	cmds0, statsOK := commandCalls(ctx, rig.admin)
	for i := range n {
		run(i)
	}
	trips := float64(rig.counter.n.Load()-trips0) / n
	t.Logf("%.1f round trips per question (budget %d)", trips, roundTrips)
	if trips > float64(roundTrips) {
		t.Errorf("%.1f round trips per question, budget %d", trips, roundTrips)
	}
	cmds1, ok := commandCalls(ctx, rig.admin)
	if !ok || !statsOK {
		if backendSingle.real {
			t.Fatal("redis-server has no INFO commandstats")
		}
		return // the embedded fallback counts no commands
	}
	cmds := float64(cmds1-cmds0) / n
	t.Logf("%.1f Redis commands per question (budget %d)", cmds, commands)
	if cmds > float64(commands) {
		t.Errorf("%.1f Redis commands per question, budget %d", cmds, commands)
	}
}

// Budgets of one question answered on the web page, as the web page's path
// runs it (webRun): TestWebLifecycleBudget fails when a change spends more.
const (
	webRoundTrips = 10
	// The agent's XADD and BLPOP (2); the read and the ack of one request
	// alone (4: EVALSHA, XREADGROUP, XACK, XDEL; the bridge reads and acks
	// a burst's requests together, which the bench counts as 0.4); the
	// create (6: EVALSHA, EXISTS, HSET, PEXPIRE, the deadline's ZADD, the
	// page's chat index ZADD, its expiry refreshed once a minute); the
	// requested and delivered events (2); the end (7: the finishing mark's
	// ZADD, EVALSHA, HGETALL, HSET, RPUSH, two PEXPIRE); the deadline and
	// the chat index left with the answered event in one round trip (3);
	// the timeline entry and the mark taken back (2).
	webCommands = 26
)

// TestWebLifecycleBudget runs 20 questions the way the web page's path
// does and checks the Redis work per question against the budgets.
func TestWebLifecycleBudget(t *testing.T) {
	rig := newLifecycleRig(t)
	checkBudget(t, rig, rig.webRun, webRoundTrips, webCommands)
}

// webRun takes question i from ask to result the way the web page's path
// does: the message is premade (recorded by the create, unindexed), no
// delivery lease is taken, and the answer comes by the question's id.
func (rig *lifecycleRig) webRun(i int) {
	b, s, agent, ctx := rig.tb, rig.s, rig.agent, context.Background()
	id := "web-" + strconv.Itoa(i)
	req := strings.Replace(exampleAsk, "deploy-42", id, 1)
	if err := agent.XAdd(ctx, &redis.XAddArgs{Stream: s.k.Requests(), Values: []any{"ask", req}}).Err(); err != nil {
		b.Fatal(err)
	}
	entries, err := s.ReadRequests(ctx, 10, time.Second)
	if err != nil || len(entries) != 1 {
		b.Fatalf("read %v, %v", entries, err)
	}
	now := t0.Add(time.Duration(i) * time.Second)
	page := askbridge.Target{Platform: "web", Chat: "page"}
	ref := engine.MessageRef{Platform: "web", Chat: "page", Message: id}
	q := engine.NewQuestion{ID: id, Request: sampleRequest(id), Target: page, Shown: []engine.MessageRef{ref},
		Created: now, Deadline: now.Add(15 * time.Minute)}
	if created, _, err := s.Create(ctx, q); err != nil || !created {
		b.Fatalf("create %v, %v", created, err)
	}
	ev := askbridge.Event{Kind: askbridge.EventRequested, ID: id, At: now, Platform: "web", Chat: "page"}
	delivered := ev
	delivered.Kind, delivered.Message = askbridge.EventDelivered, id
	if err := s.Publish(ctx, ev, delivered); err != nil {
		b.Fatal(err)
	}
	if err := s.AckRequest(ctx, entries[0].StreamID); err != nil {
		b.Fatal(err)
	}
	// The page's answer.
	if _, found, err := s.Lookup(ctx, id); err != nil || !found {
		b.Fatalf("lookup %v, %v", found, err)
	}
	ev.Kind, ev.By = askbridge.EventAnswered, "web:alice"
	_, r, err := s.MarkAndEndPublishing(ctx, id, answered(id), now.Add(time.Minute), func(engine.EndResult) []askbridge.Event { return []askbridge.Event{ev} })
	if err != nil || !r.Won {
		b.Fatalf("end %+v, %v", r, err)
	}
	if err := s.AppendHistory(ctx, []byte(`{"id":"`+id+`"}`)); err != nil {
		b.Fatal(err)
	}
	if err := agent.BLPop(ctx, time.Second, s.k.Result(id)).Err(); err != nil {
		b.Fatal(err)
	}
	if err := s.Finished(ctx, id); err != nil {
		b.Fatal(err)
	}
}

// lifecycleRig is an agent and a bridge store on the test redis-server,
// their round trips counted.
type lifecycleRig struct {
	tb      testing.TB
	s       *Store
	agent   redis.UniversalClient
	admin   redis.UniversalClient
	counter *roundTrips
}

func newLifecycleRig(tb testing.TB) *lifecycleRig {
	counter := &roundTrips{}
	bridgeClient := backendSingle.client(tb)
	agent := backendSingle.client(tb)
	bridgeClient.AddHook(counter)
	agent.AddHook(counter)
	s := New(bridgeClient, Options{Prefix: testPrefix(), Consumer: "bench"})
	return &lifecycleRig{tb: tb, s: s, agent: agent, admin: backendSingle.client(tb), counter: counter}
}

// run takes question i from ask to result.
func (rig *lifecycleRig) run(i int) {
	b, s, agent, ctx := rig.tb, rig.s, rig.agent, context.Background()
	id := "bench-" + strconv.Itoa(i)
	req := strings.Replace(exampleAsk, "deploy-42", id, 1)
	if err := agent.XAdd(ctx, &redis.XAddArgs{Stream: s.k.Requests(), Values: []any{"ask", req}}).Err(); err != nil {
		b.Fatal(err)
	}
	entries, err := s.ReadRequests(ctx, 10, time.Second)
	if err != nil || len(entries) != 1 {
		b.Fatalf("read %v, %v", entries, err)
	}
	now := t0.Add(time.Duration(i) * time.Second)
	q := engine.NewQuestion{ID: id, Request: sampleRequest(id), Target: askbridge.Target{Platform: "telegram", Chat: "42"},
		Answerers: []string{"telegram:7"}, Created: now, Deadline: now.Add(15 * time.Minute)}
	created, _, lease, err := s.CreateHolding(ctx, q, "bench/1", 15*time.Second)
	if err != nil || !created {
		b.Fatalf("create %v, %v", created, err)
	}
	ev := askbridge.Event{Kind: askbridge.EventRequested, ID: id, At: now, Platform: "telegram", Chat: "42"}
	if err := s.Publish(ctx, ev); err != nil {
		b.Fatal(err)
	}
	// The prompt's one part recorded, its delivery lease given up in the
	// same script (the engine does so for a channel that counts its parts)
	// and its delivered event published in the same round trip.
	ref := engine.MessageRef{Platform: "telegram", Chat: "42", Message: strconv.Itoa(1000 + i)}
	ev.Kind, ev.Message = askbridge.EventDelivered, ref.Message
	if _, published, err := s.AddMessagePublishing(ctx, id, ref, lease, []askbridge.Event{ev}); err != nil || !published {
		b.Fatalf("record %v, %v", published, err)
	}
	if err := s.AckRequest(ctx, entries[0].StreamID); err != nil {
		b.Fatal(err)
	}
	// The tap.
	if first, err := s.FirstSeen(ctx, "telegram", "tap-"+id, time.Hour); err != nil || !first {
		b.Fatalf("first seen %v, %v", first, err)
	}
	if got, found, err := s.QuestionByMessage(ctx, ref); err != nil || !found || got != id {
		b.Fatalf("question by message %q %v, %v", got, found, err)
	}
	if _, found, err := s.Lookup(ctx, id); err != nil || !found {
		b.Fatalf("lookup %v, %v", found, err)
	}
	ev.Kind, ev.Message, ev.By = askbridge.EventAnswered, "", "telegram:7"
	_, r, err := s.MarkAndEndPublishing(ctx, id, answered(id), now.Add(time.Minute), func(engine.EndResult) []askbridge.Event { return []askbridge.Event{ev} })
	if err != nil || !r.Won || len(r.Messages) != 1 {
		b.Fatalf("end %+v, %v", r, err)
	}
	if err := agent.BLPop(ctx, time.Second, s.k.Result(id)).Err(); err != nil {
		b.Fatal(err)
	}
	if err := s.Finished(ctx, id); err != nil {
		b.Fatal(err)
	}
}

// commandCalls sums the calls of every command in INFO commandstats except
// INFO itself. ok is false where the server has no commandstats (miniredis).
func commandCalls(ctx context.Context, c redis.UniversalClient) (int64, bool) {
	info, err := c.Info(ctx, "commandstats").Result()
	if err != nil || !strings.Contains(info, "cmdstat_") {
		return 0, false
	}
	var total int64
	for _, line := range strings.Split(info, "\n") {
		name, stats, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") || name == "cmdstat_info" {
			continue
		}
		for _, kv := range strings.Split(stats, ",") {
			if v, ok := strings.CutPrefix(kv, "calls="); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				total += n
			}
		}
	}
	return total, true
}

// usedMemory reads used_memory from INFO memory.
func usedMemory(ctx context.Context, c redis.UniversalClient) (int64, bool) {
	info, err := c.Info(ctx, "memory").Result()
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// pendingMemory creates 1,000 questions the way the bridge does (request
// read and acknowledged, question created and shown in one of 10 chats)
// and leaves them pending; it returns the growth of used_memory per
// question.
func pendingMemory(b *testing.B, ctx context.Context, admin redis.UniversalClient) (float64, bool) {
	const n = 1000
	s := New(backendSingle.client(b), Options{Prefix: testPrefix(), Consumer: "bench-memory"})
	if _, err := s.ReadRequests(ctx, 1, 0); err != nil { // creates the group and stream
		b.Fatal(err)
	}
	before, ok := usedMemory(ctx, admin)
	if !ok {
		return 0, false
	}
	for i := range n {
		id := fmt.Sprintf("mem-%04d", i)
		req := strings.Replace(exampleAsk, "deploy-42", id, 1)
		if err := admin.XAdd(ctx, &redis.XAddArgs{Stream: s.k.Requests(), Values: []any{"ask", req}}).Err(); err != nil {
			b.Fatal(err)
		}
		entries, err := s.ReadRequests(ctx, 1, 0)
		if err != nil || len(entries) != 1 {
			b.Fatalf("read %v, %v", entries, err)
		}
		now := t0.Add(time.Duration(i) * time.Millisecond)
		q := engine.NewQuestion{ID: id, Request: sampleRequest(id), Target: askbridge.Target{Platform: "telegram", Chat: strconv.Itoa(i % 10)},
			Answerers: []string{"telegram:" + strconv.Itoa(i%10)}, Created: now, Deadline: now.Add(15 * time.Minute)}
		if _, _, err := s.Create(ctx, q); err != nil {
			b.Fatal(err)
		}
		if _, err := s.AddMessage(ctx, id, engine.MessageRef{Platform: "telegram", Chat: strconv.Itoa(i % 10), Message: strconv.Itoa(100000 + i)}); err != nil {
			b.Fatal(err)
		}
		if err := s.AckRequest(ctx, entries[0].StreamID); err != nil {
			b.Fatal(err)
		}
	}
	after, ok := usedMemory(ctx, admin)
	if !ok {
		return 0, false
	}
	return float64(after-before) / n, true
}
