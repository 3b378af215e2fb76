package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge/internal/redistest"
	"github.com/askbridge/askbridge/internal/testwait"
	"github.com/askbridge/askbridge/store"
)

// sharedRedis starts a real redis-server for the test (an embedded one
// only when redis-server is missing and not required).
func sharedRedis(t *testing.T) string {
	t.Helper()
	srv, err := redistest.StartServer()
	if err == nil {
		t.Cleanup(srv.Close)
		return srv.Addr
	}
	if !errors.Is(err, redistest.ErrNotInstalled) || redistest.Required() {
		t.Fatalf("redis-server: %v", err)
	}
	emb, err := store.StartEmbedded(freeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(emb.Close)
	return emb.Addr()
}

// TestTwoReplicas runs two bridges on one Redis: a question answered on the
// page of one is shown as ended on the page of the other, and its result is
// pushed once.
func TestTwoReplicas(t *testing.T) {
	addr := sharedRedis(t)
	url := "redis://" + addr
	a := startBridge(t, map[string]string{"ASKUSER_REDIS_URL": url, "ASKUSER_REPLICA": "a"})
	b := startBridge(t, map[string]string{"ASKUSER_REDIS_URL": url, "ASKUSER_REPLICA": "b"})

	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	ctx := context.Background()
	for _, id := range []string{"rep-1", "rep-2", "rep-3"} {
		req := `{"id":"` + id + `","questions":[{"id":"pick","header":"Pick","question":"Which?","options":[{"label":"A"},{"label":"B"}]}]}`
		if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: "askuser:requests", Values: []string{"ask", req}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"rep-1", "rep-2", "rep-3"} {
		waitOpen(t, a, id)
		waitOpen(t, b, id)
	}
	answerOnPage(t, a, "rep-2", `{"answers":{"pick":["B"]}}`)

	// The other page no longer offers it, and its history shows the answer.
	var open, history string
	if !testwait.Until(5*time.Second, func() bool {
		_, open = b.get(t, "/api/questions")
		_, history = b.get(t, "/api/history")
		return !strings.Contains(open, `"rep-2"`) && strings.Contains(history, "rep-2") && strings.Contains(history, "Answered: B")
	}) {
		t.Fatalf("replica b still shows rep-2 open:\n%s\nhistory:\n%s", open, history)
	}
	// Answering it again on b is refused with what happened.
	code, body := postAnswer(t, b, "rep-2", `{"answers":{"pick":["A"]}}`)
	if code != 409 || !strings.Contains(body, `"B"`) {
		t.Errorf("second answer on b: %d %s", code, body)
	}
	// The refusal came from the end script itself: had it pushed a second
	// result, it would be there by now.
	if n, _ := rdb.LLen(ctx, "askuser:result:{rep-2}").Result(); n != 1 {
		t.Errorf("%d results pushed, want 1", n)
	}
	// Each question was shown once although both replicas read the stream.
	for _, id := range []string{"rep-1", "rep-2", "rep-3"} {
		msgs, err := rdb.HGet(ctx, "askuser:question:{"+id+"}", "msgs").Result()
		if n := len(strings.FieldsFunc(msgs, func(r rune) bool { return r == '\n' })); err != nil || n != 1 {
			t.Errorf("%s recorded %d messages: %v", id, n, err)
		}
	}
}
