package askbridge

import "time"

// Status is the top-level outcome of a question, as the agent sees it.
type Status string

const (
	// StatusPending is only ever seen in the question hash, never in a result.
	StatusPending  Status = "pending"
	StatusAnswered Status = "answered"
	StatusNoAnswer Status = "no_answer"
	StatusError    Status = "error"
)

// Reason says why a question ended without an answer.
type Reason string

const (
	ReasonTimeout       Reason = "timeout"
	ReasonSkipped       Reason = "skipped"
	ReasonCancelled     Reason = "cancelled"
	ReasonUndeliverable Reason = "undeliverable"
	// ReasonNoQuorum: agreement among the voters became impossible
	// (ask-user.md §6).
	ReasonNoQuorum Reason = "no_quorum"
)

// Via says how an answer arrived.
type Via string

const (
	ViaButton Via = "button"
	ViaText   Via = "text"
	ViaWeb    Via = "web"
	// ViaLink: the page of an answer link (ask-user.md §10), opened from
	// an email or a chat.
	ViaLink Via = "link"
	// ViaMCP: an answer entry from the agent's own client (the MCP
	// server's form; AnswerEntry).
	ViaMCP Via = "mcp"
	// ViaStanding: a standing answer answered the request at once
	// (ask-user.md §9); the result's Standing says whose.
	ViaStanding Via = "standing"
)

// Person is someone on a platform: the one who answered, or who may answer.
type Person struct {
	Platform string `json:"platform"`
	ID       string `json:"id"`
	Name     string `json:"name,omitempty"`
}

// Display is how a person is named in a line others read: their name,
// else their id.
func (p Person) Display() string {
	if p.Name != "" {
		return p.Name
	}
	return p.ID
}

// Answers is the seed envelope of an answer: its inner map is keyed by
// question id, and every value is an array, even for single-select questions.
type Answers struct {
	Answers map[string][]string `json:"answers"`
}

// Result is the one JSON document pushed to the agent when a question ends
// (ask-user.md §2). The seed keys `status` and `answers.answers` are kept
// exactly; everything else is an extension.
type Result struct {
	ID         string   `json:"id,omitempty"`
	Status     Status   `json:"status"`
	Answers    *Answers `json:"answers,omitempty"`
	Reason     Reason   `json:"reason,omitempty"`
	Error      string   `json:"error,omitempty"`
	AnsweredBy *Person  `json:"answeredBy,omitempty"`
	Via        Via      `json:"via,omitempty"`
	// Place names where the answer was given, as the request named the
	// place, when the question was shown in several (ask-user.md §5).
	Place string `json:"place,omitempty"`
	// AcknowledgedBy is who pressed Seen, when someone did; the store
	// adds it as the question ends.
	AcknowledgedBy *Person `json:"acknowledgedBy,omitempty"`
	// Votes lists every vote of a quorum question, in order (ask-user.md
	// §6); the store adds them as the question ends.
	Votes []Vote `json:"votes,omitempty"`
	// Standing is the standing answer that answered the request, when
	// Via is ViaStanding (ask-user.md §9).
	Standing *Standing `json:"standing,omitempty"`
	// CreatedAt and EndedAt are unix milliseconds.
	CreatedAt int64 `json:"createdAt,omitempty"`
	EndedAt   int64 `json:"endedAt,omitempty"`
}

// Answered builds the result of an answered question.
func Answered(id string, answers map[string][]string, by *Person, via Via) Result {
	return Result{ID: id, Status: StatusAnswered, Answers: &Answers{Answers: answers}, AnsweredBy: by, Via: via}
}

// NoAnswer builds the result of a question that ended without an answer.
// errText is set only for undeliverable questions.
func NoAnswer(id string, reason Reason, errText string) Result {
	return Result{ID: id, Status: StatusNoAnswer, Reason: reason, Error: errText}
}

// Refused builds the error result of a request the bridge refused.
func Refused(id string, err error) Result {
	return Result{ID: id, Status: StatusError, Error: err.Error()}
}

// Outcome names how a question ended, for events, metrics and status lines.
type Outcome string

const (
	OutcomeAnswered      Outcome = "answered"
	OutcomeSkipped       Outcome = "skipped"
	OutcomeExpired       Outcome = "expired"
	OutcomeCancelled     Outcome = "cancelled"
	OutcomeUndeliverable Outcome = "undeliverable"
	OutcomeRejected      Outcome = "rejected"
	OutcomeNoQuorum      Outcome = "no_quorum"
)

// Vote is one person's answer to a quorum question (ask-user.md §6), or
// their abstention (Skipped).
type Vote struct {
	By      Person              `json:"by"`
	Answers map[string][]string `json:"answers,omitempty"`
	Skipped bool                `json:"skipped,omitempty"`
	// At is unix milliseconds.
	At int64 `json:"at"`
}

// Outcome reports how the result ended its question.
func (r Result) Outcome() Outcome {
	switch r.Status {
	case StatusAnswered:
		return OutcomeAnswered
	case StatusError:
		return OutcomeRejected
	}
	switch r.Reason {
	case ReasonSkipped:
		return OutcomeSkipped
	case ReasonCancelled:
		return OutcomeCancelled
	case ReasonUndeliverable:
		return OutcomeUndeliverable
	case ReasonNoQuorum:
		return OutcomeNoQuorum
	}
	return OutcomeExpired
}

// Stamp sets the result's timestamps.
func (r Result) Stamp(created, ended time.Time) Result {
	r.CreatedAt = created.UnixMilli()
	r.EndedAt = ended.UnixMilli()
	return r
}
