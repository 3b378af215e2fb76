package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/askbridge/askbridge"
)

// Result is the one result of a question (ask-user.md §2), decoded into the
// bridge's own type, with the JSON exactly as the bridge pushed it.
type Result struct {
	askbridge.Result
	// Raw is the result JSON as the bridge pushed it, fields this version
	// of the package does not decode included: print or forward it when
	// the agent needs the whole result.
	Raw json.RawMessage `json:"-"`
}

// Err returns a *RefusedError when the bridge refused the request (status
// "error"), and nil for any other result: an answer, and also no answer
// (skipped, timed out, cancelled, undeliverable), after which an agent
// goes on with its best judgment.
func (r Result) Err() error {
	if r.Status != askbridge.StatusError {
		return nil
	}
	return &RefusedError{ID: r.ID, Message: r.Error}
}

// RefusedError is a request the bridge refused: it failed validation (the
// message names the field, as in `questions[0].options must contain 2 to 4
// options (got 1)`), named a route or chat the bridge does not allow, or
// went over a limit of the bridge's configuration (the message names the
// setting). Fix the request and push it again under a new id: the refusal
// is the id's one result.
type RefusedError struct {
	// ID is the question id the refusal was pushed for.
	ID string
	// Message is the bridge's reason.
	Message string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("askbridge refused request %s: %s", e.ID, e.Message)
}

// ErrNoResult means a question's deadline passed long ago (more than
// Options.ResultGrace) and no result came: no bridge is ending questions on
// this Redis under this prefix. Wait and Ask return it wrapped, with the id.
var ErrNoResult = errors.New("no result came after the question's deadline: is a bridge running on this Redis, with the same ASKUSER_REDIS_PREFIX?")

// Question is the state of a question as the protocol's question hash
// (HGETALL <prefix>question:{<id>}) shows it.
type Question struct {
	ID string
	// Status is pending while the question is open, then the status of
	// its result.
	Status askbridge.Status
	// Request is the request as the bridge normalised it (headers cut,
	// timeout clamped); zero for a request the bridge refused.
	Request askbridge.Request
	// Created and Deadline are zero for a refused request.
	Created, Deadline time.Time
	// Result is set once the question has ended.
	Result *Result
}

// decodeResult decodes one result JSON of question id.
func decodeResult(id, raw string) (Result, error) {
	var r askbridge.Result
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		return Result{}, fmt.Errorf("client: the result of %s is not a result JSON (%v): %.200q", id, err, raw)
	}
	return Result{Result: r, Raw: json.RawMessage(raw)}, nil
}

// questionFrom reads the public fields of a question hash.
func questionFrom(id string, h map[string]string) (Question, error) {
	q := Question{ID: id, Status: askbridge.Status(h["status"])}
	if s := h["request"]; s != "" {
		// Leniently: the bridge has already validated it.
		if err := json.Unmarshal([]byte(s), &q.Request); err != nil {
			return Question{}, fmt.Errorf("client: the request of %s in its question hash is not JSON: %w", id, err)
		}
	}
	q.Created = unixMilli(h["created"])
	q.Deadline = unixMilli(h["deadline"])
	if s := h["result"]; s != "" {
		r, err := decodeResult(id, s)
		if err != nil {
			return Question{}, err
		}
		q.Result = &r
	}
	return q, nil
}

// unixMilli reads a protocol timestamp; zero when absent or unreadable.
func unixMilli(s string) time.Time {
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil || ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}
