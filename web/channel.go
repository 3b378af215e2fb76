package web

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/askbridge/askbridge"
)

// Platform is the platform name of the web page, as in targets ("web").
const Platform = "web"

// chat is the one chat of the web page: every page shows every question
// whose target is "web".
const chat = "web"

// History is the timeline of ended questions the page shows under the open
// ones. The store keeps it as a capped list in Redis, so every replica's page
// shows the same timeline.
type History interface {
	// AppendHistory adds entry (a HistoryEntry as JSON) at the head of the
	// timeline and drops the oldest entries past the cap. It blocks on
	// Redis and may be called concurrently. A repeat adds the entry again;
	// readers drop repeats of an id.
	AppendHistory(ctx context.Context, entry []byte) error
	// History returns up to max entries, newest first. It blocks on Redis
	// and may be called concurrently.
	History(ctx context.Context, max int) ([][]byte, error)
}

// Records reads questions. *store.Store implements it.
type Records interface {
	// Get reads a question; found is false for an unknown id.
	Get(ctx context.Context, id string) (q askbridge.Record, found bool, err error)
}

// HistoryEntry is one ended question in the timeline: what was asked and how
// it ended, compact enough to keep a thousand.
type HistoryEntry struct {
	// ID is the question id.
	ID    string `json:"id"`
	Agent string `json:"agent,omitempty"`
	// Intro is the first line of the prompt ("Question from deploy-bot:").
	Intro    string           `json:"intro"`
	Sections []HistorySection `json:"sections"`
	// Status is the status line every channel shows ("Answered: Staging",
	// "Skipped", "Expired", "Cancelled").
	Status string `json:"status"`
	// Outcome is how it ended: answered, skipped, expired, cancelled or
	// undeliverable.
	Outcome string `json:"outcome"`
	// By names who answered ("web page"), when someone did.
	By string `json:"by,omitempty"`
	// Created and At (when it ended) are unix milliseconds.
	Created int64 `json:"created,omitempty"`
	At      int64 `json:"at"`
}

// HistorySection is one question of an ended prompt.
type HistorySection struct {
	Header   string `json:"header"`
	Question string `json:"question"`
	// Answer lists the declared option labels chosen. Free text is not
	// echoed back (ask-user.md §3, "After the end"): OwnWords says there
	// was some.
	Answer   []string `json:"answer,omitempty"`
	OwnWords bool     `json:"ownWords,omitempty"`
}

// Channel is the web page as an askbridge.Channel. Nothing is pushed to the
// page: it reads the open questions and the timeline from Redis. It is safe
// for concurrent use.
type Channel struct {
	history History
	records Records
}

var _ askbridge.Channel = (*Channel)(nil)

// NewChannel returns the web channel. Finish writes the timeline to history
// and reads the ended question from records to say how it was answered;
// *store.Store is both.
func NewChannel(history History, records Records) *Channel {
	return &Channel{history: history, records: records}
}

// Platform returns "web".
func (c *Channel) Platform() string { return Platform }

// Capabilities of the page: buttons for everything, no limit on rows or
// text. PayloadBytes only has to admit the planner's payloads; the page
// answers through the API, not with payloads.
func (c *Channel) Capabilities() askbridge.Capabilities {
	return askbridge.Capabilities{Buttons: true, PayloadBytes: 64}
}

// Send "shows" a question on the page: the page lists the open questions of
// the web chat, so the one message reference returned (message = the
// question id), once the engine records it, is what puts it there. It never
// fails and does not block. A repeat returns the same reference, which the
// store records once.
func (c *Channel) Send(_ context.Context, _ string, plan askbridge.Plan) ([]askbridge.MessageRef, error) {
	return []askbridge.MessageRef{{Platform: Platform, Chat: chat, Message: plan.ID}}, nil
}

// Finish adds the ended question to the timeline. It blocks on Redis and
// may be called concurrently. A repeat after an error may add the entry
// twice; the timeline drops repeats of an id when it is read.
func (c *Channel) Finish(ctx context.Context, ref askbridge.MessageRef, plan askbridge.Plan, status string) error {
	entry := HistoryEntry{
		ID:      plan.ID,
		Intro:   plan.Intro,
		Status:  status,
		Outcome: outcomeOf(status),
		At:      time.Now().UnixMilli(),
	}
	for _, s := range plan.Sections {
		entry.Sections = append(entry.Sections, HistorySection{Header: s.Header, Question: s.Question})
	}
	rec, found, err := c.records.Get(ctx, plan.ID)
	if err != nil {
		return fmt.Errorf("web: finish: read question: %w", err)
	}
	if found && rec.Result != nil {
		describe(&entry, rec)
	}
	b, err := json.Marshal(entry)
	if err != nil {
		return fmt.Errorf("web: finish: encode: %w", err)
	}
	if err := c.history.AppendHistory(ctx, b); err != nil {
		return fmt.Errorf("web: finish: %w", err)
	}
	return nil
}

// describe fills in what the ended question's record tells: the agent, when
// it was asked and ended, who answered, and each question's answer.
func describe(e *HistoryEntry, rec askbridge.Record) {
	res := *rec.Result
	e.Agent = rec.Request.Agent
	e.Outcome = string(res.Outcome())
	e.Created = rec.Created.UnixMilli()
	if res.EndedAt != 0 {
		e.At = res.EndedAt
	}
	if res.AnsweredBy != nil {
		e.By = res.AnsweredBy.Name
		if e.By == "" {
			e.By = res.AnsweredBy.Platform + ":" + res.AnsweredBy.ID
		}
	}
	if res.Answers == nil {
		return
	}
	for i, q := range rec.Request.Questions {
		if i >= len(e.Sections) {
			break
		}
		for _, v := range res.Answers.Answers[q.ID] {
			if declared(q, v) {
				e.Sections[i].Answer = append(e.Sections[i].Answer, v)
			} else {
				e.Sections[i].OwnWords = true
			}
		}
	}
}

func declared(q askbridge.Question, v string) bool {
	for _, o := range q.Options {
		if o.Label == v {
			return true
		}
	}
	return false
}

// outcomeOf reads the outcome from a status line, for a question whose
// record is gone.
func outcomeOf(status string) string {
	switch {
	case strings.HasPrefix(status, "Answered"):
		return string(askbridge.OutcomeAnswered)
	case status == "Skipped":
		return string(askbridge.OutcomeSkipped)
	case status == "Cancelled":
		return string(askbridge.OutcomeCancelled)
	case status == "Not delivered":
		return string(askbridge.OutcomeUndeliverable)
	}
	return string(askbridge.OutcomeExpired)
}

// Run has nothing to receive, the page answers through the Handler; it
// blocks until ctx is done and returns nil.
func (c *Channel) Run(ctx context.Context, _ askbridge.Inbox) error {
	<-ctx.Done()
	return nil
}

// State is always connected: the page needs nothing but Redis, which
// /readyz checks on its own.
func (c *Channel) State() askbridge.ChannelState { return askbridge.StateConnected }
