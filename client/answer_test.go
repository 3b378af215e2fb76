package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/client"
	"github.com/askbridge/askbridge/internal/testwait"
)

// inClient is a person answering in the agent's own client.
var inClient = askbridge.Person{Platform: askbridge.PlatformMCP, ID: "alice", Name: "Alice"}

// pushTaken pushes req and waits until the bridge has taken it.
func pushTaken(t *testing.T, c *client.Client, req askbridge.Request) string {
	t.Helper()
	id, err := c.Push(ctxT(t, 5*time.Second), req)
	if err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 10*time.Second, "the bridge takes "+id, func() bool {
		_, found, err := c.Status(ctxT(t, 5*time.Second), id)
		return err == nil && found
	})
	return id
}

// waitEvent waits for an event that match accepts, from the start of the
// events stream.
func waitEvent(t *testing.T, c *client.Client, what string, match func(client.Event) bool) client.Event {
	t.Helper()
	var got client.Event
	found := errors.New("found")
	err := c.Watch(ctxT(t, 10*time.Second), "0", func(ev client.Event) error {
		if match(ev) {
			got = ev
			return found
		}
		return nil
	})
	if !errors.Is(err, found) {
		t.Fatalf("no %s: %v", what, err)
	}
	return got
}

// TestAnswer: an answer handed in from the agent's own client answers a
// question shown only there (the page never lists it), or one shown on the
// page too, which then shows it ended; a skip ends it skipped. On a single
// Redis and on a Redis Cluster.
func TestAnswer(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			br := startBridge(t, b, testPrefix(), bridgeOpts{})
			c := client.New(b.client(t), client.Options{Prefix: br.prefix, PollTimeout: time.Second})
			ctx := ctxT(t, 30*time.Second)

			req := deployRequest("in-client")
			req.To = askbridge.ToList{askbridge.PlatformMCP}
			id := pushTaken(t, c, req)
			if err := c.Answer(ctx, id, inClient, map[string][]string{"deploy_target": {"production"}}); err != nil {
				t.Fatal(err)
			}
			res, err := c.Wait(ctx, id)
			if err != nil || res.Status != askbridge.StatusAnswered || res.Via != askbridge.ViaMCP || res.AnsweredBy == nil ||
				*res.AnsweredBy != inClient || res.Place != "" || !slices.Equal(res.Answers.Answers["deploy_target"], []string{"Production"}) {
				t.Fatalf("result %s, %v", res.Raw, err)
			}
			if ids, err := br.open(); err != nil || slices.Contains(ids, id) {
				t.Fatalf("the page lists %v (%v)", ids, err)
			}

			onPage := pushTaken(t, c, deployRequest("on-page"))
			br.waitShown(t, onPage)
			if err := c.Answer(ctx, onPage, inClient, map[string][]string{"deploy_target": {"Staging (Recommended)"}}); err != nil {
				t.Fatal(err)
			}
			res, err = c.Wait(ctx, onPage)
			if err != nil || res.Via != askbridge.ViaMCP || res.Place != askbridge.PlatformMCP {
				t.Fatalf("result %s, %v; want via mcp, place mcp", res.Raw, err)
			}
			testwait.For(t, 10*time.Second, "the page's timeline shows the answer", func() bool {
				return historyBy(t, br, onPage) == "Alice"
			})

			skipped := pushTaken(t, c, deployRequest("skipped"))
			if err := c.Skip(ctx, skipped, inClient); err != nil {
				t.Fatal(err)
			}
			if res, err := c.Wait(ctx, skipped); err != nil || res.Status != askbridge.StatusNoAnswer || res.Reason != askbridge.ReasonSkipped {
				t.Fatalf("result %s, %v; want no_answer skipped", res.Raw, err)
			}
		})
	}
}

// historyBy is who the page's timeline says answered question id, "" when
// it does not list it.
func historyBy(t *testing.T, br *bridge, id string) string {
	t.Helper()
	resp, err := http.Get(br.page.URL + "/api/history")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h struct {
		Entries []struct{ ID, By, Outcome string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	for _, e := range h.Entries {
		if e.ID == id && e.Outcome == "answered" {
			return e.By
		}
	}
	return ""
}

// TestAnswerQuorum: on a quorum question the client's answer is one vote,
// and the page's agreeing vote ends it.
func TestAnswerQuorum(t *testing.T) {
	br := startBridge(t, single, testPrefix(), bridgeOpts{})
	c := client.New(single.client(t), client.Options{Prefix: br.prefix, PollTimeout: time.Second})
	ctx := ctxT(t, 30*time.Second)
	req := deployRequest("quorum")
	req.Quorum, req.Answerers = 2, []string{"mcp:alice", "web:web"}
	id := pushTaken(t, c, req)
	if err := c.Answer(ctx, id, inClient, map[string][]string{"deploy_target": {"Production"}}); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, c, "vote from the client", func(ev client.Event) bool {
		return ev.ID == id && ev.Kind == askbridge.EventVoted && ev.By == "mcp:alice"
	})
	if _, err := br.answer(id, `{"answers":{"deploy_target":["Production"]}}`); err != nil {
		t.Fatal(err)
	}
	res, err := c.Wait(ctx, id)
	if err != nil || res.Status != askbridge.StatusAnswered || len(res.Votes) != 2 || res.Votes[0].By != inClient || res.Votes[1].By.Platform != "web" {
		t.Fatalf("result %s, %v; want answered with the client's vote, then the page's", res.Raw, err)
	}
}

// TestAnswerRefusedByTheBridge: an answer from someone the request does
// not allow is pushed, and refused by the bridge with a rejected event
// under the question's id; the question stays open.
func TestAnswerRefusedByTheBridge(t *testing.T) {
	br := startBridge(t, single, testPrefix(), bridgeOpts{})
	c := client.New(single.client(t), client.Options{Prefix: br.prefix, PollTimeout: time.Second})
	ctx := ctxT(t, 30*time.Second)
	req := deployRequest("not-yours")
	req.Answerers = []string{"web:web"}
	id := pushTaken(t, c, req)
	if err := c.Answer(ctx, id, inClient, map[string][]string{"deploy_target": {"Production"}}); err != nil {
		t.Fatal(err)
	}
	ev := waitEvent(t, c, "rejected event", func(ev client.Event) bool { return ev.ID == id && ev.Kind == askbridge.EventRejected })
	if ev.Error != "answer: mcp:alice may not answer this question" {
		t.Fatalf("rejected with %q", ev.Error)
	}
	if q, _, err := c.Status(ctx, id); err != nil || q.Status != askbridge.StatusPending {
		t.Fatalf("question %s, %v; want still pending", q.Status, err)
	}
}

// TestAnswerChecks: what the bridge would refuse for its shape, and an
// answer to a question no bridge has taken, is not pushed.
func TestAnswerChecks(t *testing.T) {
	rdb := single.client(t)
	prefix := testPrefix() // no bridge on it
	c := client.New(rdb, client.Options{Prefix: prefix})
	ctx := ctxT(t, 10*time.Second)
	one := map[string][]string{"deploy_target": {"Production"}}
	tests := []struct {
		name string
		call func() error
		want string
	}{
		{"a bad id", func() error { return c.Answer(ctx, "a b", inClient, one) }, `client: "a b" is not a question id`},
		{"another platform", func() error { return c.Skip(ctx, "q", askbridge.Person{Platform: "web", ID: "web"}) },
			`client: answer q: by.platform must be "mcp" (got "web")`},
		{"no person id", func() error { return c.Answer(ctx, "q", askbridge.Person{Platform: "mcp"}, one) }, "client: answer q: by.id must be 1 to 128"},
		{"a name over lines", func() error { return c.Answer(ctx, "q", askbridge.Person{Platform: "mcp", ID: "a", Name: "A\nB"}, one) },
			"client: answer q: by.name must not contain control characters or line breaks"},
		{"no answers", func() error { return c.Answer(ctx, "q", inClient, nil) }, "client: answer q: no answers"},
		{"not a question id", func() error { return c.Answer(ctx, "q", inClient, map[string][]string{"Target": {"x"}}) },
			`client: answer q: answers: "Target" is not a question id`},
		{"not taken", func() error { return c.Answer(ctx, "nobody-took-it", inClient, one) }, "client: answer nobody-took-it: no bridge has taken the question"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("error %v, want one starting %q", err, tt.want)
			}
		})
	}
	if err := c.Skip(ctx, "nobody-took-it", inClient); !errors.Is(err, client.ErrNotTaken) {
		t.Fatalf("Skip of a question no bridge took: %v, want ErrNotTaken", err)
	}
	if n := rdb.XLen(context.Background(), prefix+"requests").Val(); n != 0 {
		t.Fatalf("%d entries pushed", n)
	}
}
