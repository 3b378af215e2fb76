package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/client"
)

// The examples ask through a real bridge (the engine and its web page,
// started by TestMain) on the test Redis at exampleRedis; an agent uses its
// bridge's Redis instead, 127.0.0.1:6380 for one started with no
// configuration. personAnswers plays the person on the web page.
var (
	exampleRedis  string
	exampleBridge *bridge
)

const examplePrefix = "example:"

// personAnswers answers the next question shown on the examples' web page
// with answers (question id → labels), as a person clicking would.
func personAnswers(answers map[string][]string) {
	body, _ := json.Marshal(map[string]any{"answers": answers})
	done := exampleBridge.person(string(body))
	go func() {
		if err := <-done; err != nil {
			fmt.Fprintln(os.Stderr, "the example's person could not answer:", err)
		}
	}()
}

// Ask pushes a question and blocks until the person answers (or the
// question times out, is skipped or cancelled: the agent then goes on with
// its best judgment).
func ExampleClient_Ask() {
	rdb := redis.NewClient(&redis.Options{Addr: exampleRedis})
	defer rdb.Close()
	c := client.New(rdb, client.Options{Prefix: examplePrefix})

	personAnswers(map[string][]string{"deploy_target": {"Staging (Recommended)"}})

	res, err := c.Ask(context.Background(), askbridge.Request{
		To:    askbridge.ToList{"web"},
		Agent: "deploy-bot",
		Questions: []askbridge.Question{{
			ID:       "deploy_target",
			Header:   "Target",
			Question: "Where should this deploy?",
			Options: []askbridge.Option{
				{Label: "Staging (Recommended)", Description: "Safer default"},
				{Label: "Production"},
			},
		}},
		TimeoutSeconds: 300,
	})
	if err != nil {
		fmt.Println("ask:", err)
		return
	}
	if res.Status == askbridge.StatusAnswered {
		fmt.Println("deploying to", res.Answers.Answers["deploy_target"][0])
	} else {
		fmt.Println("no answer (", res.Reason, "): deploying to staging")
	}
	fmt.Println("answered on the", res.AnsweredBy.Name)
	// Output:
	// deploying to Staging (Recommended)
	// answered on the web page
}

// A request the bridge refuses comes back at once as a *RefusedError whose
// message names the field.
func ExampleClient_Ask_refused() {
	rdb := redis.NewClient(&redis.Options{Addr: exampleRedis})
	defer rdb.Close()
	c := client.New(rdb, client.Options{Prefix: examplePrefix})

	_, err := c.Ask(context.Background(), askbridge.Request{
		Questions: []askbridge.Question{{
			ID:       "size",
			Header:   "Size",
			Question: "Which size?",
			Options:  []askbridge.Option{{Label: "Large"}},
		}},
	})
	var refused *client.RefusedError
	if errors.As(err, &refused) {
		fmt.Println("refused:", refused.Message)
	}
	// Output:
	// refused: questions[0].options must contain 2 to 4 options (got 1)
}

// Remember lets the person who answers keep the answer for a while
// (ask-user.md §9): once kept (here the example's bridge keeps it for them,
// as their "keep 1h" reply would), the same question of the same agent is
// answered at once, via "standing", without asking anyone.
func ExampleClient_Ask_remember() {
	rdb := redis.NewClient(&redis.Options{Addr: exampleRedis})
	defer rdb.Close()
	c := client.New(rdb, client.Options{Prefix: examplePrefix})
	ctx := context.Background()
	req := askbridge.Request{
		To:       askbridge.ToList{"web"},
		Agent:    "release-bot",
		Remember: &askbridge.Remember{Key: "release:notes", Offer: []int{3600, 86400}},
		Questions: []askbridge.Question{{
			ID: "publish", Header: "Publish", Question: "Publish the release notes of 1.4?",
			Options: []askbridge.Option{{Label: "Publish"}, {Label: "Hold"}},
		}},
	}
	personAnswers(map[string][]string{"publish": {"Publish"}})
	res, err := c.Ask(ctx, req)
	if err != nil {
		fmt.Println("ask:", err)
		return
	}
	if err := exampleBridge.keep(ctx, res.ID, *res.AnsweredBy, time.Hour); err != nil {
		fmt.Println("keep:", err)
		return
	}
	req.Questions[0].Question = "Publish the release notes of 1.5?"
	again, err := c.Ask(ctx, req)
	if err != nil {
		fmt.Println("ask:", err)
		return
	}
	fmt.Println(again.Status, again.Answers.Answers["publish"], again.Via, time.Duration(again.Standing.Until-again.Standing.Since)*time.Millisecond)
	// Output:
	// answered [Publish] standing 1h0m0s
}

// Push and Wait split Ask for agents that ask in one place and collect the
// answer in another; the id (made once with NewID) makes a retried push
// safe. Status reads the question at any time.
func ExampleClient_Push() {
	rdb := redis.NewClient(&redis.Options{Addr: exampleRedis})
	defer rdb.Close()
	c := client.New(rdb, client.Options{Prefix: examplePrefix})
	ctx := context.Background()

	req := askbridge.Request{
		ID: client.NewID(),
		Questions: []askbridge.Question{{
			ID:          "regions",
			Header:      "Regions",
			Question:    "Which regions get the new build?",
			Options:     []askbridge.Option{{Label: "eu-west"}, {Label: "us-east"}, {Label: "ap-south"}},
			MultiSelect: true,
		}},
	}
	id, err := c.Push(ctx, req)
	if err != nil {
		fmt.Println("push:", err)
		return
	}

	personAnswers(map[string][]string{"regions": {"us-east", "eu-west"}})

	res, err := c.Wait(ctx, id)
	if err != nil {
		fmt.Println("wait:", err)
		return
	}
	fmt.Println(res.Status, res.Answers.Answers["regions"])
	q, found, err := c.Status(ctx, id)
	if err != nil || !found {
		fmt.Println("status:", found, err)
		return
	}
	fmt.Println(q.Status, q.Result.Via, q.Deadline.Sub(q.Created))
	// Output:
	// answered [us-east eu-west]
	// answered web 15m0s
}

// Watch follows the events stream; here from "0", every event kept, up to
// the end of one question. A watcher that stops keeps the StreamID of the
// last event it handled and resumes from there.
func ExampleClient_Watch() {
	rdb := redis.NewClient(&redis.Options{Addr: exampleRedis})
	defer rdb.Close()
	c := client.New(rdb, client.Options{Prefix: examplePrefix})
	ctx := context.Background()

	id, err := c.Push(ctx, askbridge.Request{Questions: []askbridge.Question{{
		ID: "proceed", Header: "Migration", Question: "Run the migration now or tonight?",
		Options: []askbridge.Option{{Label: "Tonight (Recommended)"}, {Label: "Now"}},
	}}})
	if err != nil {
		fmt.Println("push:", err)
		return
	}
	personAnswers(map[string][]string{"proceed": {"Tonight (Recommended)"}})

	errEnded := errors.New("question ended")
	err = c.Watch(ctx, "0", func(ev client.Event) error {
		if ev.ID != id {
			return nil
		}
		fmt.Println(ev.Kind, ev.Platform)
		if ev.Kind == askbridge.EventAnswered {
			return errEnded
		}
		return nil
	})
	fmt.Println(err)
	// Output:
	// requested web
	// delivered web
	// answered web
	// question ended
}
