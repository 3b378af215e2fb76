package client_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/client"
	"github.com/askbridge/askbridge/internal/redistest"
)

var errStop = errors.New("stop watching")

// firstRead closes reading when its client sends its first XREAD.
type firstRead struct {
	once    sync.Once
	reading chan struct{}
}

func (h *firstRead) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *firstRead) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *firstRead) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "xread" {
			h.once.Do(func() { close(h.reading) })
		}
		return next(ctx, cmd)
	}
}

// watchUntil runs Watch from `from` until it has seen the event kind for
// question id, and returns the events of that question it saw and the
// StreamID of the last one.
func watchUntil(t *testing.T, c *client.Client, from, id string, kind askbridge.EventKind) ([]askbridge.EventKind, []string, string) {
	t.Helper()
	var kinds []askbridge.EventKind
	var others []string
	last := ""
	err := c.Watch(ctxT(t, 20*time.Second), from, func(ev client.Event) error {
		last = ev.StreamID
		if ev.ID != id {
			others = append(others, ev.ID)
			return nil
		}
		kinds = append(kinds, ev.Kind)
		if ev.Fields["event"] != string(ev.Kind) || ev.At.IsZero() {
			return fmt.Errorf("event %+v does not carry its fields", ev)
		}
		if ev.Kind == kind {
			return errStop
		}
		return nil
	})
	if !errors.Is(err, errStop) {
		t.Fatalf("Watch: %v (saw %v for %s)", err, kinds, id)
	}
	return kinds, others, last
}

// TestWatchResumes: Watch sees a question's life in order; a watcher that
// stops and resumes from the last event it handled sees exactly what came
// after, and one from "0" sees everything kept.
func TestWatchResumes(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			br := startBridge(t, b, testPrefix(), bridgeOpts{})
			c := client.New(b.client(t), client.Options{Prefix: br.prefix, PollTimeout: time.Second})
			ctx := ctxT(t, 60*time.Second)

			// A question that ends before the watch begins.
			if _, err := c.Push(ctx, deployRequest("watch-0")); err != nil {
				t.Fatal(err)
			}
			br.waitShown(t, "watch-0")
			if _, err := br.answer("watch-0", `{"skip":true}`); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Wait(ctx, "watch-0"); err != nil {
				t.Fatal(err)
			}

			type seen struct {
				kinds  []askbridge.EventKind
				others []string
				last   string
			}
			first := make(chan seen, 1)
			// The watcher's own client tells when Watch first reads the
			// stream, which is after it resolved "$".
			reads := &firstRead{reading: make(chan struct{})}
			watcherRedis := b.client(t)
			watcherRedis.AddHook(reads)
			watcher := client.New(watcherRedis, client.Options{Prefix: br.prefix, PollTimeout: time.Second})
			go func() {
				// From "$": only what comes after the watch began.
				kinds, others, last := watchUntil(t, watcher, "$", "watch-a", askbridge.EventAnswered)
				first <- seen{kinds, others, last}
			}()
			select {
			case <-reads.reading:
			case <-ctx.Done():
				t.Fatal("Watch never read the events stream")
			}
			if _, err := c.Push(ctx, deployRequest("watch-a")); err != nil {
				t.Fatal(err)
			}
			br.waitShown(t, "watch-a")
			if _, err := br.answer("watch-a", `{"answers":{"deploy_target":["Production"]}}`); err != nil {
				t.Fatal(err)
			}
			a := <-first
			// The watch began (it resolved "$") after watch-0 ended and
			// before watch-a was requested: it sees all of watch-a's life.
			life := []askbridge.EventKind{askbridge.EventRequested, askbridge.EventDelivered, askbridge.EventAnswered}
			if !slices.Equal(a.kinds, life) || len(a.others) != 0 {
				t.Errorf("from $: events %v of watch-a, want %v, and events of %v", a.kinds, life, a.others)
			}

			// While no one watches, a second question comes and goes.
			if _, err := c.Push(ctx, deployRequest("watch-b")); err != nil {
				t.Fatal(err)
			}
			br.waitShown(t, "watch-b")
			if err := c.Cancel(ctx, "watch-b"); err != nil {
				t.Fatal(err)
			}
			if res, err := c.Wait(ctx, "watch-b"); err != nil || res.Reason != askbridge.ReasonCancelled {
				t.Fatalf("watch-b: %v %s", err, res.Raw)
			}
			kinds, others, _ := watchUntil(t, c, a.last, "watch-b", askbridge.EventCancelled)
			if want := []askbridge.EventKind{askbridge.EventRequested, askbridge.EventDelivered, askbridge.EventCancelled}; len(others) != 0 || !slices.Equal(kinds, want) {
				t.Errorf("resumed after watch-a's last event: saw %v of watch-b and events of %v", kinds, others)
			}
			// From "0": watch-a's events are all still there.
			all, _, _ := watchUntil(t, c, "0", "watch-a", askbridge.EventAnswered)
			if !slices.Equal(all, life) {
				t.Errorf("from 0: %v, want %v", all, life)
			}
		})
	}
}

// TestWatchStops: Watch returns ctx's error when ctx ends, and refuses a
// from that is not a stream id.
func TestWatchStops(t *testing.T) {
	c := client.New(single.client(t), client.Options{Prefix: testPrefix(), PollTimeout: time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	err := c.Watch(ctx, "$", func(client.Event) error { return errors.New("no event was published") })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Watch after its context ended: %v", err)
	}
	if err := c.Watch(context.Background(), "yesterday", nil); err == nil || !strings.Contains(err.Error(), "not an events stream id") {
		t.Errorf("Watch from a bad id: %v", err)
	}
}

// TestPushJSON: a raw request is pushed as it is; its id is the request's
// own, or the stream entry id, which is where the bridge answers, refusals
// included.
func TestPushJSON(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			br := startBridge(t, b, testPrefix(), bridgeOpts{})
			rdb := b.client(t)
			c := client.New(rdb, client.Options{Prefix: br.prefix, PollTimeout: time.Second})
			ctx := ctxT(t, 30*time.Second)
			tests := []struct {
				name, body string
				entryID    bool
				want       string
			}{
				{"own id", `{"id":"raw-1","questions":[{"id":"a","header":"H","question":"Q?","options":[{"label":"A"}]}]}`, false, "questions[0].options must contain 2 to 4 options"},
				{"no id", `{"questions":[]}`, true, "questions must contain 1 to 3 questions"},
				{"cut after its id", `{"id":"raw-2","questions":[`, false, "not valid JSON"},
				{"not an id", `{"id":"raw 3","questions":[]}`, true, "id must be 1 to 128 characters"},
			}
			for _, tt := range tests {
				id, err := c.PushJSON(ctx, []byte(tt.body))
				if err != nil {
					t.Fatal(err)
				}
				if isEntry := strings.Contains(id, "-") && !strings.HasPrefix(id, "raw"); isEntry != tt.entryID {
					t.Errorf("%s: id %q", tt.name, id)
				}
				res, err := c.Wait(ctx, id)
				var refused *client.RefusedError
				if !errors.As(err, &refused) || !strings.Contains(refused.Message, tt.want) || refused.ID != id {
					t.Errorf("%s: Wait(%s) = %s, %v; want a refusal with %q", tt.name, id, res.Raw, err, tt.want)
				}
			}
			// The entry holds the bytes as given (read where no bridge
			// takes it away).
			quiet := testPrefix()
			body := `{"questions":[] , "id" : "raw-4"}`
			if id, err := client.New(rdb, client.Options{Prefix: quiet}).PushJSON(ctx, []byte(body)); err != nil || id != "raw-4" {
				t.Fatalf("PushJSON: %q %v", id, err)
			}
			entries := rdb.XRange(ctx, quiet+"requests", "-", "+").Val()
			if len(entries) != 1 || entries[0].Values["ask"] != body || len(entries[0].Values) != 1 {
				t.Errorf("entries %+v", entries)
			}
		})
	}
}

// TestStatus: the question hash as the agent sees it, pending and ended;
// an unknown id is not found.
func TestStatus(t *testing.T) {
	br := startBridge(t, single, testPrefix(), bridgeOpts{})
	c := client.New(single.client(t), client.Options{Prefix: br.prefix, PollTimeout: time.Second})
	ctx := ctxT(t, 30*time.Second)
	req := deployRequest("status-1")
	req.Questions[0].Header = "Deployment target"
	req.TimeoutSeconds = 5000
	if _, err := c.Push(ctx, req); err != nil {
		t.Fatal(err)
	}
	br.waitShown(t, "status-1")
	q, found, err := c.Status(ctx, "status-1")
	if err != nil || !found {
		t.Fatalf("Status: %v found=%v", err, found)
	}
	if q.ID != "status-1" || q.Status != askbridge.StatusPending || q.Result != nil {
		t.Errorf("pending question %+v", q)
	}
	// Normalised: the header cut to 12 characters, the timeout clamped.
	if q.Request.Questions[0].Header != "Deployment t" || q.Request.TimeoutSeconds != askbridge.MaxTimeout {
		t.Errorf("request %+v", q.Request)
	}
	if got := q.Deadline.Sub(q.Created); got != time.Duration(askbridge.MaxTimeout)*time.Second {
		t.Errorf("deadline %s after creation", got)
	}
	if _, err := br.answer("status-1", `{"skip":true}`); err != nil {
		t.Fatal(err)
	}
	if res, err := c.Wait(ctx, "status-1"); err != nil || res.Reason != askbridge.ReasonSkipped {
		t.Fatalf("Wait: %v %s", err, res.Raw)
	}
	q, found, err = c.Status(ctx, "status-1")
	if err != nil || !found || q.Status != askbridge.StatusNoAnswer || q.Result == nil || q.Result.Reason != askbridge.ReasonSkipped || len(q.Result.Raw) == 0 {
		t.Errorf("ended question %+v found=%v err=%v", q, found, err)
	}
	if _, found, err := c.Status(ctx, "never-asked"); found || err != nil {
		t.Errorf("unknown id: found=%v err=%v", found, err)
	}
}

// TestWaitWithoutBridge: with no bridge running, Wait says so through
// NotTaken, gives up when a question's deadline is long past, and Poll
// finds nothing; a bad id or prefix is an error before any Redis call.
func TestWaitWithoutBridge(t *testing.T) {
	rdb := single.client(t)
	prefix := testPrefix()
	var told []string
	c := client.New(rdb, client.Options{
		Prefix: prefix, PollTimeout: time.Second, ResultGrace: time.Millisecond,
		NotTakenAfter: time.Nanosecond, NotTaken: func(id string) { told = append(told, id) },
	})
	ctx := context.Background()

	id, err := c.Push(ctx, deployRequest(""))
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 2500*time.Millisecond)
	defer cancel()
	if _, err := c.Wait(wctx, id); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait with no bridge: %v", err)
	}
	if len(told) != 1 || told[0] != id {
		t.Errorf("NotTaken called for %v, want once for %s", told, id)
	}

	// A question a bridge took and then left: pending, its deadline past.
	past := time.Now().Add(-time.Hour).UnixMilli()
	if err := rdb.HSet(ctx, prefix+"question:{left-1}", "status", "pending", "created", past-1000, "deadline", past).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Wait(ctxT(t, 10*time.Second), "left-1"); !errors.Is(err, client.ErrNoResult) || !strings.Contains(err.Error(), "left-1") {
		t.Errorf("Wait on an abandoned question: %v", err)
	}

	if _, ok, err := c.Poll(ctx, "left-1", 0); ok || err != nil {
		t.Errorf("Poll of an empty list: ok=%v err=%v", ok, err)
	}
	if err := c.Cancel(ctx, "bad id"); err == nil || !strings.Contains(err.Error(), "not a question id") {
		t.Errorf("Cancel(bad id): %v", err)
	}
	if _, err := c.Push(ctx, deployRequest("bad{id}")); err == nil || !strings.Contains(err.Error(), "not a question id") {
		t.Errorf("Push with a bad id: %v", err)
	}
	bad := client.New(rdb, client.Options{Prefix: "ask{user}:"})
	if _, err := bad.Push(ctx, deployRequest("")); err == nil || !strings.Contains(err.Error(), "braces") {
		t.Errorf("Push under a bad prefix: %v", err)
	}
	if n := rdb.Exists(ctx, "ask{user}:requests").Val(); n != 0 {
		t.Errorf("a bad prefix pushed anyway")
	}
}

// TestWaitTakesTheStoredResult: when another waiter took the result off
// the list, Wait returns the one the question hash keeps, and Poll sees
// the list as the bridge left it.
func TestWaitTakesTheStoredResult(t *testing.T) {
	br := startBridge(t, single, testPrefix(), bridgeOpts{})
	c := client.New(single.client(t), client.Options{Prefix: br.prefix, PollTimeout: time.Second})
	ctx := ctxT(t, 30*time.Second)
	if _, err := c.Push(ctx, deployRequest("twice-1")); err != nil {
		t.Fatal(err)
	}
	br.waitShown(t, "twice-1")
	if _, err := br.answer("twice-1", `{"answers":{"deploy_target":["Production"]}}`); err != nil {
		t.Fatal(err)
	}
	res, ok, err := c.Poll(ctx, "twice-1", 5*time.Second)
	if err != nil || !ok || res.Status != askbridge.StatusAnswered {
		t.Fatalf("Poll: %v %v %s", ok, err, res.Raw)
	}
	again, err := c.Wait(ctx, "twice-1")
	if err != nil || string(again.Raw) != string(res.Raw) {
		t.Errorf("second Wait: %v %s, want %s", err, again.Raw, res.Raw)
	}
}

// TestSentinel: the client works through a Sentinel-managed Redis, as
// agents given a redis-sentinel:// URL do.
func TestSentinel(t *testing.T) {
	redistest.NeedServer(t)
	sentinel, err := redistest.StartSentinel(single.addrs[0], "askmaster")
	if err != nil {
		t.Fatal(err)
	}
	defer sentinel.Close()
	br := startBridge(t, single, testPrefix(), bridgeOpts{})
	rdb := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "askmaster", SentinelAddrs: []string{sentinel.Addr}})
	defer rdb.Close()
	c := client.New(rdb, client.Options{Prefix: br.prefix, PollTimeout: time.Second})
	person := br.person(`{"answers":{"deploy_target":["Production"]}}`)
	res, err := c.Ask(ctxT(t, 30*time.Second), deployRequest(""))
	if err := <-person; err != nil {
		t.Fatal(err)
	}
	if err != nil || res.Status != askbridge.StatusAnswered {
		t.Fatalf("Ask through Sentinel: %v %s", err, res.Raw)
	}
}

// TestWaitNotified: WaitNotified takes the result without a BLPOP: when
// told of an event of its question (here by hand, as a Watch of the events
// stream would), and, with no word at all, at its next look; on a single
// Redis and on a Redis Cluster.
func TestWaitNotified(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			br := startBridge(t, b, testPrefix(), bridgeOpts{})
			rdb := b.client(t)
			var blpops atomic.Int64
			rdb.AddHook(blpopCounter{&blpops})
			c := client.New(rdb, client.Options{Prefix: br.prefix, PollTimeout: time.Second})
			for _, tc := range []struct {
				name   string
				notify bool
			}{{"notified", true}, {"not notified", false}} {
				id, err := c.Push(ctxT(t, 5*time.Second), deployRequest(""))
				if err != nil {
					t.Fatal(err)
				}
				wake := make(chan struct{}, 1)
				got := make(chan error, 1)
				ctx := ctxT(t, 30*time.Second)
				go func() {
					res, err := c.WaitNotified(ctx, id, wake, 2*time.Second)
					if err == nil && (res.Status != askbridge.StatusAnswered || res.ID != id) {
						err = fmt.Errorf("result %+v", res.Result)
					}
					got <- err
				}()
				br.waitShown(t, id)
				if _, err := br.answer(id, `{"answers":{"deploy_target":["Production"]}}`); err != nil {
					t.Fatal(err)
				}
				if tc.notify {
					wake <- struct{}{}
				}
				if err := <-got; err != nil {
					t.Errorf("%s: %v", tc.name, err)
				}
			}
			if n := blpops.Load(); n != 0 {
				t.Errorf("%d BLPOPs; want none", n)
			}
		})
	}
}

// blpopCounter counts the BLPOPs of a client.
type blpopCounter struct{ n *atomic.Int64 }

func (h blpopCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h blpopCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "blpop" {
			h.n.Add(1)
		}
		return next(ctx, cmd)
	}
}
func (h blpopCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
