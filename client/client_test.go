package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/client"
	"github.com/askbridge/askbridge/internal/testwait"
)

// TestAskAnswered: a question asked with Ask appears on the page, the
// person picks an option, and Ask returns the answered result, on a single
// Redis and on a Redis Cluster.
func TestAskAnswered(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			br := startBridge(t, b, testPrefix(), bridgeOpts{})
			c := client.New(b.client(t), client.Options{Prefix: br.prefix, PollTimeout: time.Second})
			person := br.person(`{"answers":{"deploy_target":["Staging (Recommended)"]}}`)
			req := deployRequest("")
			req.Agent = "deploy-bot"
			res, err := c.Ask(ctxT(t, 30*time.Second), req)
			if err != nil {
				t.Fatalf("Ask: %v", err)
			}
			if err := <-person; err != nil {
				t.Fatal(err)
			}
			if res.Status != askbridge.StatusAnswered || res.Answers == nil || strings.Join(res.Answers.Answers["deploy_target"], ",") != "Staging (Recommended)" {
				t.Fatalf("result %+v, raw %s", res.Result, res.Raw)
			}
			if !strings.HasPrefix(res.ID, client.IDPrefix) || !askbridge.ValidRequestID(res.ID) {
				t.Errorf("Ask gave the request id %q, want a generated %s… id", res.ID, client.IDPrefix)
			}
			if res.AnsweredBy == nil || res.AnsweredBy.Platform != "web" || res.Via != askbridge.ViaWeb {
				t.Errorf("answered by %+v via %q", res.AnsweredBy, res.Via)
			}
			if res.Err() != nil {
				t.Errorf("Err() of an answer: %v", res.Err())
			}
			var raw map[string]any
			if err := json.Unmarshal(res.Raw, &raw); err != nil || raw["status"] != "answered" || raw["id"] != res.ID {
				t.Errorf("Raw is not the pushed result: %s", res.Raw)
			}
			// The one result was taken off the list; the hash keeps it.
			q, found, err := c.Status(ctxT(t, 5*time.Second), res.ID)
			if err != nil || !found {
				t.Fatalf("Status: %v found=%v", err, found)
			}
			if q.Status != askbridge.StatusAnswered || q.Result == nil || q.Result.Status != askbridge.StatusAnswered || q.Request.Agent != "deploy-bot" {
				t.Errorf("status %+v", q)
			}
		})
	}
}

// TestAskTimesOut: nobody answers; once the deadline passes (the bridge's
// clock is moved past it) Ask returns no_answer with reason timeout, and
// no error.
func TestAskTimesOut(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			clock := clockwork.NewFakeClock()
			br := startBridge(t, b, testPrefix(), bridgeOpts{clock: clock})
			c := client.New(b.client(t), client.Options{Prefix: br.prefix, PollTimeout: time.Second})
			req := deployRequest("timeout-1")
			req.TimeoutSeconds = 30
			type outcome struct {
				res client.Result
				err error
			}
			done := make(chan outcome, 1)
			go func() {
				res, err := c.Ask(ctxT(t, 30*time.Second), req)
				done <- outcome{res, err}
			}()
			br.waitShown(t, "timeout-1")
			// Move the bridge's clock past the deadline until the sweeper
			// sees it (it ticks on that clock).
			for {
				clock.Advance(31 * time.Second)
				select {
				case o := <-done:
					if o.err != nil {
						t.Fatalf("Ask: %v", o.err)
					}
					if o.res.Status != askbridge.StatusNoAnswer || o.res.Reason != askbridge.ReasonTimeout || o.res.ID != "timeout-1" {
						t.Fatalf("result %s", o.res.Raw)
					}
					return
				case <-time.After(100 * time.Millisecond):
				}
			}
		})
	}
}

// TestAskCancelledByContext: when the agent's context ends while the
// question is open, Ask cancels it and returns the cancelled result; the
// question hash and the events stream say so too.
func TestAskCancelledByContext(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			br := startBridge(t, b, testPrefix(), bridgeOpts{})
			rdb := b.client(t)
			c := client.New(rdb, client.Options{Prefix: br.prefix, PollTimeout: time.Second})
			ctx, interrupt := context.WithCancel(context.Background())
			defer interrupt()
			type outcome struct {
				res client.Result
				err error
			}
			done := make(chan outcome, 1)
			go func() {
				res, err := c.Ask(ctx, deployRequest("ctrl-c"))
				done <- outcome{res, err}
			}()
			br.waitShown(t, "ctrl-c")
			start := time.Now()
			interrupt()
			var o outcome
			select {
			case o = <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("Ask did not return after its context ended")
			}
			if o.err != nil {
				t.Fatalf("Ask: %v", o.err)
			}
			if o.res.Status != askbridge.StatusNoAnswer || o.res.Reason != askbridge.ReasonCancelled {
				t.Fatalf("result %s", o.res.Raw)
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("cancelling took %s", took)
			}
			q, found, err := c.Status(ctxT(t, 5*time.Second), "ctrl-c")
			if err != nil || !found || q.Status != askbridge.StatusNoAnswer || q.Result == nil || q.Result.Reason != askbridge.ReasonCancelled {
				t.Errorf("status %+v found=%v err=%v", q, found, err)
			}
			if n := rdb.LLen(ctxT(t, 5*time.Second), br.prefix+"result:{ctrl-c}").Val(); n != 0 {
				t.Errorf("%d results left on the list", n)
			}
		})
	}
}

// TestAskRefused: a request the bridge refuses comes back at once as its
// error result and a *RefusedError with the bridge's message, whether it
// fails validation or names a route the bridge does not have.
func TestAskRefused(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			br := startBridge(t, b, testPrefix(), bridgeOpts{})
			c := client.New(b.client(t), client.Options{Prefix: br.prefix, PollTimeout: time.Second})
			badID := deployRequest("refused-1")
			badID.Questions[0].ID = "DeployTarget"
			nowhere := deployRequest("refused-2")
			nowhere.To = askbridge.ToList{"nowhere"}
			tests := []struct {
				name string
				req  askbridge.Request
				want string
			}{
				{"validation", badID, "questions[0].id must be snake_case"},
				{"route", nowhere, `to: unknown route "nowhere"`},
			}
			for _, tt := range tests {
				start := time.Now()
				res, err := c.Ask(ctxT(t, 20*time.Second), tt.req)
				var refused *client.RefusedError
				if !errors.As(err, &refused) {
					t.Fatalf("%s: Ask returned %v, want a *RefusedError", tt.name, err)
				}
				if refused.ID != tt.req.ID || !strings.Contains(refused.Message, tt.want) || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("%s: refusal %+v, want the message %q", tt.name, refused, tt.want)
				}
				if res.Status != askbridge.StatusError || !strings.Contains(string(res.Raw), `"status":"error"`) {
					t.Errorf("%s: result %s", tt.name, res.Raw)
				}
				if again := res.Err(); again == nil || again.Error() != err.Error() {
					t.Errorf("%s: Result.Err() = %v, want %v", tt.name, again, err)
				}
				if took := time.Since(start); took > 5*time.Second {
					t.Errorf("%s: the refusal took %s", tt.name, took)
				}
			}
		})
	}
}

// TestPushIsIdempotent: pushing a request with the same id twice asks
// once (one question on the page, one requested event, one result), and
// waiting on it after it ended returns the same result instead of hanging.
func TestPushIsIdempotent(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			// A duplicate that comes while the first is being delivered is
			// left unacknowledged for a while: taken up again after a
			// second here, and then found known.
			br := startBridge(t, b, testPrefix(), bridgeOpts{claimIdle: time.Second})
			rdb := b.client(t)
			c := client.New(rdb, client.Options{Prefix: br.prefix, PollTimeout: time.Second})
			ctx := ctxT(t, 60*time.Second)
			req := deployRequest(client.NewID())
			for i := 0; i < 2; i++ {
				id, err := c.Push(ctx, req)
				if err != nil || id != req.ID {
					t.Fatalf("push %d: %q %v", i, id, err)
				}
			}
			br.waitShown(t, req.ID)
			if _, err := br.answer(req.ID, `{"answers":{"deploy_target":["Production"]}}`); err != nil {
				t.Fatal(err)
			}
			first, err := c.Wait(ctx, req.ID)
			if err != nil || first.Status != askbridge.StatusAnswered {
				t.Fatalf("Wait: %v %s", err, first.Raw)
			}
			// Both entries have been handled once the stream's group has
			// read them all; the second asked nothing.
			waitHandled(t, rdb, br.prefix)
			ids, err := br.open()
			if err != nil || len(ids) != 0 {
				t.Fatalf("page shows %v (%v) after the answer", ids, err)
			}
			// A third push after the end, and a wait: the same outcome.
			if _, err := c.Push(ctx, req); err != nil {
				t.Fatal(err)
			}
			again, err := c.Wait(ctx, req.ID)
			if err != nil || again.Status != askbridge.StatusAnswered || again.Answers.Answers["deploy_target"][0] != "Production" || again.EndedAt != first.EndedAt {
				t.Fatalf("wait after a re-push: %v %s (first %s)", err, again.Raw, first.Raw)
			}
			waitHandled(t, rdb, br.prefix)
			requested := 0
			for _, m := range rdb.XRange(ctx, br.prefix+"events", "-", "+").Val() {
				if m.Values["id"] == req.ID && m.Values["event"] == "requested" {
					requested++
				}
			}
			if requested != 1 {
				t.Errorf("%d requested events for one id pushed three times", requested)
			}
		})
	}
}

// waitHandled waits until the bridge has handled every entry of the
// requests stream: it deletes an entry once it has acknowledged it.
func waitHandled(t *testing.T, rdb redis.UniversalClient, prefix string) {
	t.Helper()
	ctx := ctxT(t, 10*time.Second)
	if testwait.Until(10*time.Second, func() bool { return rdb.XLen(ctx, prefix+"requests").Val() == 0 }) {
		return
	}
	t.Fatal("requests still unhandled")
}
