package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/testwait"
)

// testAgentProtocol plays an agent that knows nothing but the commands of
// shared/spec/redis-protocol.md (XADD ask, BLPOP, HGETALL, XREAD, XADD
// cancel), sent raw, against the store driven the way the engine drives it.
func testAgentProtocol(t *testing.T, b backend) {
	prefix := testPrefix()
	s := newStore(t, b, Options{Prefix: prefix})
	agent := b.client(t) // the agent's own connection
	ctx := ctxT(t)
	do := func(args ...any) any {
		t.Helper()
		v, err := agent.Do(ctx, args...).Result()
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return v
	}

	// The bridge side: read requests, create, show, end, as the engine does.
	engineCtx, stop := context.WithCancel(ctx)
	defer stop()
	engineDone := make(chan error, 1)
	go func() { engineDone <- fakeEngine(engineCtx, s) }()

	// XADD askuser:requests * ask '<request JSON>' (the protocol's example).
	req := `{"id":"deploy-42","to":"web","agent":"deploy-bot","questions":[{"id":"deploy_target","header":"Target","question":"Where should this deploy?","options":[{"label":"Staging (Recommended)"},{"label":"Production"}]}]}`
	do("XADD", prefix+"requests", "*", "ask", req)

	// BLPOP askuser:result:{deploy-42} <seconds>: a long-poll loop, as an
	// agent may write it.
	var result string
	for i := 0; i < 20 && result == ""; i++ {
		v, err := agent.Do(ctx, "BLPOP", prefix+"result:{deploy-42}", 1).Result()
		if err == redis.Nil {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		pair := v.([]any)
		if pair[0] != prefix+"result:{deploy-42}" {
			t.Fatalf("BLPOP key %v", pair[0])
		}
		result = pair[1].(string)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(result), &res); err != nil {
		t.Fatalf("result %q: %v", result, err)
	}
	if res["status"] != "answered" || res["id"] != "deploy-42" {
		t.Fatalf("result %s", result)
	}
	answers := res["answers"].(map[string]any)["answers"].(map[string]any)
	if fmt.Sprint(answers["deploy_target"]) != "[Staging (Recommended)]" {
		t.Fatalf("answers %v: values are always arrays", answers)
	}

	// HGETALL askuser:question:{deploy-42}
	h := toMap(t, do("HGETALL", prefix+"question:{deploy-42}"))
	if h["status"] != "answered" || h["result"] != result || h["created"] == "" || h["deadline"] == "" {
		t.Fatalf("question hash %v", h)
	}
	var stored map[string]any
	if err := json.Unmarshal([]byte(h["request"]), &stored); err != nil || stored["agent"] != "deploy-bot" {
		t.Fatalf("request field %q: %v", h["request"], err)
	}

	// XREAD STREAMS askuser:events 0: the lifecycle so far (the answered
	// event may follow the result by a moment).
	var kinds []string
	waitFor(t, func() bool {
		kinds = readEventKinds(t, do("XREAD", "COUNT", 100, "STREAMS", prefix+"events", "0"))
		return len(kinds) == 3
	})
	if strings.Join(kinds, ",") != "requested:deploy-42,delivered:deploy-42,answered:deploy-42" {
		t.Fatalf("events %v", kinds)
	}

	// A second question, cancelled: XADD askuser:requests * cancel <id>.
	do("XADD", prefix+"requests", "*", "ask", strings.Replace(req, "deploy-42", "deploy-43", 1))
	waitFor(t, func() bool {
		return toMap(t, do("HGETALL", prefix+"question:{deploy-43}"))["status"] == "pending"
	})
	do("XADD", prefix+"requests", "*", "cancel", "deploy-43")
	v, err := agent.Do(ctx, "BLPOP", prefix+"result:{deploy-43}", 10).Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(v.([]any)[1].(string)), &res); err != nil {
		t.Fatal(err)
	}
	if res["status"] != "no_answer" || res["reason"] != "cancelled" {
		t.Fatalf("cancelled result %v", res)
	}
	// Cancelling an unknown or finished question does nothing.
	do("XADD", prefix+"requests", "*", "cancel", "deploy-43")
	do("XADD", prefix+"requests", "*", "cancel", "never-asked")
	waitFor(t, func() bool { return agent.XLen(ctx, prefix+"requests").Val() == 0 })
	if n := agent.LLen(ctx, prefix+"result:{deploy-43}").Val(); n != 0 {
		t.Fatalf("a repeated cancel pushed %d more results", n)
	}
	if n := agent.Exists(ctx, prefix+"result:{never-asked}", prefix+"question:{never-asked}").Val(); n != 0 {
		t.Fatal("cancelling an unknown id created keys")
	}

	// A retried XADD of an answered id is ignored: no second result.
	do("XADD", prefix+"requests", "*", "ask", req)
	waitFor(t, func() bool { return agent.XLen(ctx, prefix+"requests").Val() == 0 })
	if n := agent.LLen(ctx, prefix+"result:{deploy-42}").Val(); n != 0 {
		t.Fatalf("a retried ask pushed %d more results", n)
	}
	stop()
	if err := <-engineDone; err != nil {
		t.Fatal(err)
	}
}

// fakeEngine drives the store as the engine does: an ask is created,
// "delivered" (a message recorded) and answered at once with the first
// option; a cancel ends its question.
func fakeEngine(ctx context.Context, s *Store) error {
	for ctx.Err() == nil {
		entries, err := s.ReadRequests(ctx, 10, 100*time.Millisecond)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		for _, e := range entries {
			now := time.Now()
			switch {
			case e.Ask != nil:
				var req askbridge.Request
				if err := json.Unmarshal(e.Ask, &req); err != nil {
					return err
				}
				created, _, err := s.Create(ctx, engine.NewQuestion{
					ID: req.ID, Request: req, Target: askbridge.Target{Platform: "web"},
					Created: now, Deadline: now.Add(15 * time.Minute),
				})
				if err != nil {
					return err
				}
				if created {
					ref := engine.MessageRef{Platform: "web", Message: req.ID}
					if err := s.Publish(ctx, askbridge.Event{Kind: "requested", ID: req.ID, At: now, Platform: "web"}); err != nil {
						return err
					}
					if _, err := s.AddMessage(ctx, req.ID, ref); err != nil {
						return err
					}
					if err := s.Publish(ctx, askbridge.Event{Kind: "delivered", ID: req.ID, At: now, Platform: "web", Message: req.ID}); err != nil {
						return err
					}
					if req.ID == "deploy-42" {
						res := askbridge.Answered(req.ID, map[string][]string{"deploy_target": {req.Questions[0].Options[0].Label}},
							&askbridge.Person{Platform: "web", ID: "ada"}, askbridge.ViaWeb)
						r, err := s.End(ctx, req.ID, res, time.Now())
						if err != nil {
							return err
						}
						if r.Won {
							if err := s.Publish(ctx, askbridge.Event{Kind: "answered", ID: req.ID, At: time.Now(), By: "web:ada"}); err != nil {
								return err
							}
						}
					}
				}
			case e.Cancel != "":
				r, err := s.End(ctx, e.Cancel, askbridge.NoAnswer(e.Cancel, askbridge.ReasonCancelled, ""), now)
				if err != nil {
					return err
				}
				if r.Won {
					if err := s.Publish(ctx, askbridge.Event{Kind: "cancelled", ID: e.Cancel, At: now}); err != nil {
						return err
					}
				}
			}
			if err := s.AckRequest(ctx, e.StreamID); err != nil {
				return err
			}
		}
	}
	return nil
}

// toMap reads a raw HGETALL reply (an array in RESP2, a map in RESP3).
func toMap(t *testing.T, v any) map[string]string {
	t.Helper()
	m := map[string]string{}
	switch r := v.(type) {
	case map[any]any:
		for k, val := range r {
			m[fmt.Sprint(k)] = fmt.Sprint(val)
		}
	case []any:
		for i := 0; i+1 < len(r); i += 2 {
			m[fmt.Sprint(r[i])] = fmt.Sprint(r[i+1])
		}
	default:
		t.Fatalf("HGETALL reply %T", v)
	}
	return m
}

// readEventKinds reads a raw XREAD reply into "event:id" items.
func readEventKinds(t *testing.T, v any) []string {
	t.Helper()
	var entries []any
	switch r := v.(type) {
	case map[any]any: // RESP3: stream name → entries
		for _, e := range r {
			entries = e.([]any)
		}
	case []any: // RESP2: [[stream, entries]]
		entries = r[0].([]any)[1].([]any)
	default:
		t.Fatalf("XREAD reply %T", v)
	}
	var out []string
	for _, e := range entries {
		fields := toMap(t, e.([]any)[1])
		if fields["at"] == "" {
			t.Fatalf("event without at: %v", fields)
		}
		out = append(out, fields["event"]+":"+fields["id"])
	}
	return out
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	testwait.For(t, 10*time.Second, "the condition", cond)
}
