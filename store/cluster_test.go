package store

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
)

// TestQuestionKeysOneSlot drives questions through their whole life on the
// real three-master Redis Cluster with the store API, as the engine does
// (request read, create, messages, the delivery lease, end, the finishing
// mark and lease, acknowledgement), then scans every master for the test's
// keys: every key the question made, but for those shared by all questions
// (the request and event streams, the deadlines and finishing zsets, the
// chat and message indexes), must be in the question's slot, as
// CLUSTER KEYSLOT says. Without redis-server (and never in CI, where
// TestMain fails instead) the cluster backend is miniredis behind a cluster
// client: one node holding every slot, whose KEYSLOT computes the same
// slots, so the check still holds.
func TestQuestionKeysOneSlot(t *testing.T) {
	needCluster(t)
	b := backendCluster
	for _, id := range []string{"deploy-42", "1767322800000-0", "a.b:c_d"} {
		t.Run(id, func(t *testing.T) {
			t.Parallel()
			questionKeysOneSlot(t, b, id)
		})
	}
}

func questionKeysOneSlot(t *testing.T, b backend, id string) {
	s := newStore(t, b, Options{Retention: time.Hour})
	ctx := ctxT(t)
	cc, ok := s.rdb.(*redis.ClusterClient)
	if !ok {
		t.Fatalf("cluster backend client is %T", s.rdb)
	}

	// The request arrives and is read.
	ask := strings.Replace(exampleAsk, "deploy-42", id, 1)
	if err := s.rdb.XAdd(ctx, &redis.XAddArgs{Stream: s.k.Requests(), Values: []any{"ask", ask}}).Err(); err != nil {
		t.Fatal(err)
	}
	entries, err := s.ReadRequests(ctx, 10, 0)
	if err != nil || len(entries) != 1 {
		t.Fatalf("read %v, %v", entries, err)
	}
	mustCreate(t, s, newQ(id, t0, 15*time.Minute))

	// Delivery, under the question's delivery lease: two parts and a reply
	// box an "Other…" tap opened.
	deliver, ok, err := s.AcquireLease(ctx, QuestionLease(LeaseDeliver, id), "replica-a", time.Minute)
	if err != nil || !ok {
		t.Fatalf("delivery lease: %v, %v", ok, err)
	}
	refs := []engine.MessageRef{
		{Platform: "telegram", Chat: "42", Message: "1001", Part: 0},
		{Platform: "telegram", Chat: "42", Message: "1002", Part: 1},
		{Platform: "telegram", Chat: "42", Message: "1003", Part: engine.PartReplyBox},
	}
	for _, ref := range refs {
		if st, err := s.AddMessage(ctx, id, ref); err != nil || st != askbridge.StatusPending {
			t.Fatalf("AddMessage(%+v) = %q, %v", ref, st, err)
		}
	}
	if ok, err := s.RenewLease(ctx, deliver, time.Minute); err != nil || !ok {
		t.Fatalf("renew delivery lease: %v, %v", ok, err)
	}
	if err := s.ReleaseLease(ctx, deliver); err != nil {
		t.Fatal(err)
	}
	if err := s.AckRequest(ctx, entries[0].StreamID); err != nil {
		t.Fatal(err)
	}
	if err := s.Publish(ctx, askbridge.Event{Kind: askbridge.EventDelivered, ID: id, At: t0, Platform: "telegram", Chat: "42", Message: "1001"}); err != nil {
		t.Fatal(err)
	}
	if open, err := s.OpenInChat(ctx, "telegram", "42"); err != nil || !slices.Equal(open, []string{id}) {
		t.Fatalf("OpenInChat = %v, %v", open, err)
	}
	if got, found, err := s.QuestionByMessage(ctx, refs[1]); err != nil || !found || got != id {
		t.Fatalf("QuestionByMessage = %q, %v, %v", got, found, err)
	}

	// The answer, and the finishing of its messages under the finishing
	// lease, which is still held when the keys are scanned.
	now := t0.Add(time.Minute)
	if _, err := s.MarkFinishing(ctx, id, now); err != nil {
		t.Fatal(err)
	}
	if r, err := s.End(ctx, id, answered(id), now); err != nil || !r.Won {
		t.Fatalf("End = %+v, %v", r, err)
	}
	finish, ok, err := s.AcquireLease(ctx, QuestionLease(LeaseFinish, id), "replica-b", time.Minute)
	if err != nil || !ok {
		t.Fatalf("finishing lease: %v, %v", ok, err)
	}
	if got, err := s.Messages(ctx, id); err != nil || len(got) != len(refs) {
		t.Fatalf("Messages = %v, %v", got, err)
	}
	if err := s.Finished(ctx, id); err != nil {
		t.Fatal(err)
	}
	if rec, found, err := s.Get(ctx, id); err != nil || !found || rec.Result == nil {
		t.Fatalf("Get = %+v, %v, %v", rec, found, err)
	}

	shared := map[string]bool{
		s.k.Requests():             true,
		s.k.Events():               true,
		s.k.deadlines():            true,
		s.k.finishing():            true,
		s.k.chat("telegram", "42"): true,
	}
	for _, ref := range refs {
		shared[s.k.message(ref)] = true
	}
	want := s.rdb.ClusterKeySlot(ctx, s.k.Question(id)).Val()
	var perQuestion []string
	for _, key := range clusterKeys(t, cc, s.opts.Prefix) {
		if shared[key] || strings.HasPrefix(key, s.opts.Prefix+"seen:") {
			continue
		}
		perQuestion = append(perQuestion, key)
		got, err := s.rdb.ClusterKeySlot(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s is in slot %d, the question %s in slot %d", key, got, s.k.Question(id), want)
		}
	}
	// The scan saw the keys the question is known to make, so the check
	// above was not vacuous.
	for _, key := range []string{
		s.k.Question(id), s.k.Result(id),
		s.k.lease(QuestionLease(LeaseFinish, id)),
	} {
		if !slices.Contains(perQuestion, key) {
			t.Errorf("the scan did not find %s among %v", key, perQuestion)
		}
	}
	if err := s.ReleaseLease(ctx, finish); err != nil {
		t.Fatal(err)
	}
}

// clusterKeys lists the keys under prefix on every master of the cluster.
func clusterKeys(t *testing.T, cc *redis.ClusterClient, prefix string) []string {
	t.Helper()
	var (
		mu  sync.Mutex
		all []string
	)
	err := cc.ForEachMaster(ctxT(t), func(ctx context.Context, node *redis.Client) error {
		var cursor uint64
		for {
			ks, next, err := node.Scan(ctx, cursor, prefix+"*", 1000).Result()
			if err != nil {
				return err
			}
			mu.Lock()
			all = append(all, ks...)
			mu.Unlock()
			if cursor = next; cursor == 0 {
				return nil
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(all)
	return all
}
