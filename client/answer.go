package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/askbridge/askbridge"
)

// ErrNotTaken means an answer was not handed in because no bridge knows
// its question: none has taken the request yet (try again in a moment),
// or the question ended longer ago than the bridge's result retention.
var ErrNotTaken = errors.New("no bridge has taken the question: not yet, or it ended longer ago than the result retention")

// Answer hands in the answer a person gave to question id in a place the
// agent shows itself (the MCP server's form in the agent's own client):
// XADD answer. by.Platform must be "mcp" (askbridge.PlatformMCP); answers
// maps question ids to the chosen labels or the person's own words, read
// as the web page's are (an option's number or label, else own words).
// It does not wait; the question's result (Wait) says whether it won.
//
// The id, by and the shape of answers are checked first, and nothing is
// pushed when they are wrong (a clear error). Nor is anything pushed for
// a question no bridge has taken (an error wrapping ErrNotTaken): an
// answer the bridge cannot place is refused. The bridge checks the rest:
// whether by may answer (the request's answerers and those of every
// place of the question must be empty or name mcp:<by.ID>) and whether
// the answers fit the questions; a refusal is a `rejected` event under
// the question's id, with an error that starts "answer:" (Watch), and
// the question stays open. Answer blocks on two Redis calls (EXISTS and
// XADD); a repeat hands the answer in again, which changes nothing once
// the question has ended (a quorum question counts one vote per person).
func (c *Client) Answer(ctx context.Context, id string, by askbridge.Person, answers map[string][]string) error {
	return c.handIn(ctx, askbridge.AnswerEntry{ID: id, By: by, Answers: answers})
}

// Skip hands in that the person skipped question id in such a place
// (XADD answer with skip): a question that ends so ends no_answer,
// skipped; on a quorum question it is an abstention. Its checks and
// errors are Answer's.
func (c *Client) Skip(ctx context.Context, id string, by askbridge.Person) error {
	return c.handIn(ctx, askbridge.AnswerEntry{ID: id, By: by, Skip: true})
}

// handIn checks answer entry a, then pushes it if a bridge has taken its
// question.
func (c *Client) handIn(ctx context.Context, a askbridge.AnswerEntry) error {
	if err := c.checkID(a.ID); err != nil {
		return err
	}
	if err := askbridge.CheckAnswerBy(a.By); err != nil {
		return fmt.Errorf("client: answer %s: %w", a.ID, err)
	}
	if !a.Skip && len(a.Answers) == 0 {
		return fmt.Errorf("client: answer %s: no answers: give the answer to at least one question (Skip hands in a skip)", a.ID)
	}
	body, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("client: answer %s: encode: %w", a.ID, err)
	}
	// The bridge's own rules, so what it would refuse is never pushed.
	if _, err := askbridge.DecodeAnswerEntry(body); err != nil {
		return fmt.Errorf("client: answer %s: %w", a.ID, err)
	}
	n, err := c.rdb.Exists(ctx, c.keys.Question(a.ID)).Result()
	if err != nil {
		return fmt.Errorf("client: answer %s: read the question: %w", a.ID, err)
	}
	if n == 0 {
		return fmt.Errorf("client: answer %s: %w", a.ID, ErrNotTaken)
	}
	if _, err := c.xadd(ctx, "answer", string(body)); err != nil {
		return fmt.Errorf("client: answer %s: %w", a.ID, err)
	}
	return nil
}
