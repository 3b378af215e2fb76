package web

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/locale"
)

// Platform is the platform name of the web page, as in targets ("web").
const Platform = "web"

// chat is the one chat of the web page: every page shows every question
// whose target is "web".
const chat = "web"

// History is the timeline of ended questions the page shows under the open
// ones. The store keeps it as a capped list in Redis, so every replica's page
// shows the same timeline. *store.Store implements it.
type History interface {
	// AppendHistory adds entry (a HistoryEntry as JSON) at the head of the
	// timeline and drops the oldest entries past the cap. It blocks on
	// Redis and may be called concurrently. A repeat adds the entry again;
	// readers drop repeats of an id.
	AppendHistory(ctx context.Context, entry []byte) error
	// History returns up to max entries, newest first. It blocks on Redis,
	// may be called concurrently and is safe to repeat.
	History(ctx context.Context, max int) ([][]byte, error)
}

// HistoryEntry is one ended question in the timeline: what was asked and how
// it ended, compact enough to keep a thousand. How it ended is typed
// (Outcome); its words (Intro, Status) are in the question's language
// (Locale), written once by the engine, never read back for a decision.
type HistoryEntry struct {
	// ID is the question id.
	ID    string `json:"id"`
	Agent string `json:"agent,omitempty"`
	// Locale is the question's catalog: the entry is worded in it.
	Locale string `json:"locale,omitempty"`
	// Intro is the first line of the prompt ("Question from deploy-bot:").
	Intro string `json:"intro"`
	// Context is the request's Markdown context (at most 3,000
	// characters), as stored; the API sends it as ContextHTML instead,
	// sanitised when it is read.
	Context     string           `json:"context,omitempty"`
	ContextHTML string           `json:"contextHTML,omitempty"`
	Sections    []HistorySection `json:"sections"`
	// Status is the status line every channel shows ("Answered: Staging",
	// "Skipped", "ตอบแล้ว: โปรดักชัน"), for display only.
	Status string `json:"status"`
	// Outcome is how it ended, as a code: answered, skipped, expired,
	// cancelled, undeliverable or no_quorum.
	Outcome string `json:"outcome"`
	// By names who answered ("web page"), when someone did.
	By string `json:"by,omitempty"`
	// Quorum is how many people had to give the same answer (ask-user.md
	// §6), for a quorum question; Votes are then the votes given, in
	// order: who, and what (labels only, as in Sections).
	Quorum int           `json:"quorum,omitempty"`
	Votes  []HistoryVote `json:"votes,omitempty"`
	// Created and At (when it ended) are unix milliseconds.
	Created int64 `json:"created,omitempty"`
	At      int64 `json:"at"`
	// Offer is the open offer to keep the answer (ask-user.md §9), while
	// it is open: Finish records it, RemoveOffer records the entry again
	// without it, and the API leaves it out past its Until.
	Offer *HistoryOffer `json:"offer,omitempty"`
}

// HistoryOffer is the offer to keep an answer as the page shows it under
// the ended question: a keep button per duration, for For alone.
type HistoryOffer struct {
	// For names the person who answered and may keep it.
	For string `json:"for"`
	// Until is when the offer closes (unix milliseconds).
	Until int64         `json:"until"`
	Keep  []HistoryKeep `json:"keep"`
}

// HistoryKeep is one duration of an offer: its index in the request's
// remember.offer (what POST api/questions/{id}/keep takes), its length
// and its button's label, in the question's words.
type HistoryKeep struct {
	Index   int    `json:"index"`
	Seconds int64  `json:"seconds"`
	Label   string `json:"label"`
}

// historyOffer is offer v of question rec as the timeline keeps it.
func historyOffer(v *engine.OfferView, rec engine.Record) *HistoryOffer {
	if v == nil || rec.Request.Remember == nil {
		return nil
	}
	labels := map[int]string{}
	for _, row := range v.Rows {
		for _, b := range row {
			labels[b.Choice.Option] = b.Label
		}
	}
	w := locale.For(rec.Request.Locale)
	o := &HistoryOffer{For: personName(v.For), Until: v.Ends.UnixMilli()}
	for i, d := range rec.Request.Remember.Durations() {
		label, ok := labels[i]
		if !ok {
			label = engine.KeepDuration(w, d)
		}
		o.Keep = append(o.Keep, HistoryKeep{Index: i, Seconds: int64(d / time.Second), Label: label})
	}
	return o
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

// HistoryAnswer is one person's answer to one question of a prompt, as the
// page shows it: the declared labels chosen; free text is not echoed
// back, OwnWords says there was some.
type HistoryAnswer struct {
	Answer   []string `json:"answer,omitempty"`
	OwnWords bool     `json:"ownWords,omitempty"`
}

// HistoryVote is one vote on a quorum question: who (a name), and their
// answer to each question of the prompt, in order, or an abstention
// (Skipped). At is unix milliseconds.
type HistoryVote struct {
	By      string          `json:"by"`
	Skipped bool            `json:"skipped,omitempty"`
	Answers []HistoryAnswer `json:"answers,omitempty"`
	At      int64           `json:"at,omitempty"`
}

// historyAnswers is an answer (by question id) as the page shows it, one
// per question of qs, in order.
func historyAnswers(qs []askbridge.Question, answers map[string][]string) []HistoryAnswer {
	out := make([]HistoryAnswer, len(qs))
	for i, q := range qs {
		for _, v := range answers[q.ID] {
			if declared(q, v) {
				out[i].Answer = append(out[i].Answer, v)
			} else {
				out[i].OwnWords = true
			}
		}
	}
	return out
}

// historyVote is a vote as the page shows it.
func historyVote(qs []askbridge.Question, v askbridge.Vote) HistoryVote {
	h := HistoryVote{By: personName(v.By), Skipped: v.Skipped, At: v.At}
	if !v.Skipped {
		h.Answers = historyAnswers(qs, v.Answers)
	}
	return h
}

// personName names a person on the page: their name, else
// "<platform>:<id>".
func personName(p askbridge.Person) string {
	if p.Name != "" {
		return p.Name
	}
	return p.Platform + ":" + p.ID
}

// Channel is the web page as an engine.Channel. Nothing is pushed to the
// page: it reads the open questions and the timeline from Redis. It is safe
// for concurrent use.
type Channel struct {
	history History
	now     func() time.Time
}

var (
	_ engine.Channel  = (*Channel)(nil)
	_ engine.Updater  = (*Channel)(nil)
	_ engine.Reminder = (*Channel)(nil)
	_ engine.Premade  = (*Channel)(nil)

	_ engine.OfferShower    = (*Channel)(nil)
	_ engine.StandingShower = (*Channel)(nil)
)

// pageCapabilities are what the page can show: buttons for everything, no
// limit on rows or text. PayloadBytes only has to admit the planner's
// payloads; the page answers through the API, not with payloads. Local: the
// page posts nothing, so showing a question twice does no harm.
var pageCapabilities = engine.Capabilities{Buttons: true, PayloadBytes: 64, Local: true}

// reminderMark joins a question id and a reminder's own part in the
// message of a reminder on the page: "<question id>/reminder/<unique>".
const reminderMark = "/reminder/"

// NewChannel returns the web channel. Finish writes the timeline to history
// (*store.Store). now is the clock that dates a timeline entry whose result
// carries no end time (every result the store returns has one); nil means
// time.Now.
func NewChannel(history History, now func() time.Time) *Channel {
	if now == nil {
		now = time.Now
	}
	return &Channel{history: history, now: now}
}

// Platform returns "web".
func (c *Channel) Platform() string { return Platform }

// Capabilities of the page (pageCapabilities).
func (c *Channel) Capabilities() engine.Capabilities { return pageCapabilities }

// Send "shows" a question on the page: the page lists the open questions of
// the web chat, so the one message the prompt takes (part 0: platform "web",
// chat "web", message = the question id), once d.Sent has recorded it, is
// what puts it there. A d.From past 0 has nothing left to post. It posts
// nothing anywhere, so it never fails, and blocks only as long as d.Sent.
// A repeat hands the same reference to d.Sent again.
func (c *Channel) Send(_ context.Context, d engine.Delivery) error {
	if d.From == 0 {
		d.Sent(c.Premade(d.Chat, d.Plan.ID))
	}
	return nil
}

// Premade returns the one message that shows question id on the page, the
// one Send hands over: the engine records it with the question.
func (c *Channel) Premade(_, id string) engine.MessageRef {
	return engine.MessageRef{Platform: Platform, Chat: chat, Message: id}
}

// Finish adds the ended question to the timeline, from end alone: its plan,
// outcome and status line, and the ended record for the agent, the times,
// who answered and the answers. It reads nothing back, so the entry is right
// even when the record has already left the store. It blocks on Redis and
// may be called concurrently. A repeat after an error may add the entry
// twice; the timeline drops repeats of an id when it is read.
func (c *Channel) Finish(ctx context.Context, _ engine.MessageRef, end engine.Ending) error {
	b, err := json.Marshal(c.entry(end))
	if err != nil {
		return fmt.Errorf("web: finish: encode: %w", err)
	}
	if err := c.history.AppendHistory(ctx, b); err != nil {
		return fmt.Errorf("web: finish: %w", err)
	}
	return nil
}

// entry is the timeline entry of an ended question.
func (c *Channel) entry(end engine.Ending) HistoryEntry {
	rec := end.Question
	e := HistoryEntry{
		ID:      end.Plan.ID,
		Agent:   rec.Request.Agent,
		Locale:  end.Plan.Locale,
		Intro:   end.Plan.Intro,
		Context: end.Plan.Context,
		Status:  end.Status,
		Outcome: string(end.Outcome),
		Offer:   historyOffer(end.Offer, rec),
	}
	if !rec.Created.IsZero() {
		e.Created = rec.Created.UnixMilli()
	}
	for _, s := range end.Plan.Sections {
		e.Sections = append(e.Sections, HistorySection{Header: s.Header, Question: s.Question})
	}
	if rec.Result == nil {
		e.At = c.now().UnixMilli()
		return e
	}
	res := *rec.Result
	e.At = res.EndedAt
	if e.At == 0 {
		e.At = c.now().UnixMilli()
	}
	if res.AnsweredBy != nil {
		e.By = personName(*res.AnsweredBy)
	}
	if rec.Request.Quorum > 0 {
		e.Quorum = rec.Request.Quorum
		// The store adds the votes to the result as the question ends;
		// the record holds them too.
		votes := res.Votes
		if len(votes) == 0 {
			votes = rec.Votes
		}
		for _, v := range votes {
			e.Votes = append(e.Votes, historyVote(rec.Request.Questions, v))
		}
	}
	if res.Answers == nil {
		return e
	}
	for i, a := range historyAnswers(rec.Request.Questions, res.Answers.Answers) {
		if i >= len(e.Sections) {
			break
		}
		e.Sections[i].Answer, e.Sections[i].OwnWords = a.Answer, a.OwnWords
	}
	return e
}

func declared(q askbridge.Question, v string) bool {
	for _, o := range q.Options {
		if o.Label == v {
			return true
		}
	}
	return false
}

// Update has nothing to edit, and succeeds at once: the page draws an open
// question from its record each time it lists it (GET api/questions: the
// notes, "Seen by …", the Seen button only while nobody has seen it), and
// lists the questions again on every acknowledged event, the change the
// engine updates prompts for, which it publishes before it calls Update.
func (c *Channel) Update(context.Context, engine.MessageRef, engine.Plan) error { return nil }

// Remind "posts" a reminder under a prompt of the page and returns its
// reference: platform "web", chat "web", message "<question id>/reminder/
// <random, unique to the call>". It posts nothing anywhere: the engine
// records the reference as a reminder of the question in the page's place
// and publishes a reminded event, on which the page lists the question
// again, and the card shows the reminders recorded for it (a badge, in
// the question's language; the countdown already says the time left, so
// text is not kept). A prompt that is not the page's is refused for good.
func (c *Channel) Remind(_ context.Context, prompt engine.MessageRef, _ string) (engine.MessageRef, error) {
	if prompt.Platform != Platform || !askbridge.ValidRequestID(prompt.Message) {
		return engine.MessageRef{}, &engine.SendError{Kind: engine.Permanent, Reason: fmt.Sprintf("web: %s message %q is not a prompt of the page", prompt.Platform, prompt.Message)}
	}
	return engine.MessageRef{Platform: Platform, Chat: chat, Message: prompt.Message + reminderMark + rand.Text()}, nil
}

// Delete takes a reminder off the page, which has nothing to remove: a
// reminder shows only in the count on its question's card, and the engine
// deletes reminders when the question ends, which takes the card, count and
// all, off the page. It succeeds for a reminder of the page, however
// often; any other message is refused for good, since the page deletes
// nothing else.
func (c *Channel) Delete(_ context.Context, ref engine.MessageRef) error {
	id, _, ok := strings.Cut(ref.Message, reminderMark)
	if ref.Platform != Platform || !ok || !askbridge.ValidRequestID(id) {
		return &engine.SendError{Kind: engine.Permanent, Reason: fmt.Sprintf("web: %s message %q is not a reminder of the page", ref.Platform, ref.Message)}
	}
	return nil
}

// Run has nothing to receive, the page answers through the Handler; it
// blocks until ctx is done and returns nil.
func (c *Channel) Run(ctx context.Context, _ engine.Inbox) error {
	<-ctx.Done()
	return nil
}

// State is always connected: the page needs nothing but Redis, which
// /readyz checks on its own.
func (c *Channel) State() engine.ChannelState { return engine.StateConnected }

// RemoveOffer takes the offer to keep the answer off the ended question:
// the timeline gets the entry again without it, and the page, which reads
// the newest entry of an id, lists the timeline again on the kept event
// or once the offer's time is past. It blocks on Redis; a repeat adds the
// entry again, which readers drop.
func (c *Channel) RemoveOffer(ctx context.Context, ref engine.MessageRef, end engine.Ending) error {
	end.Offer = nil
	return c.Finish(ctx, ref, end)
}

// standingMark starts the message of a standing answer on the page:
// "standing/<gen>".
const standingMark = "standing/"

// ShowStanding "posts" standing answer s: the page's list of standing
// answers (GET api/standing, read from the store) is its message, so
// nothing is posted, and the reference names the keep. It never fails.
func (c *Channel) ShowStanding(_ context.Context, s engine.StandingAnswer) (engine.MessageRef, error) {
	return engine.MessageRef{Platform: Platform, Chat: chat, Message: standingMark + s.Gen}, nil
}

// EditStanding has nothing to edit, and succeeds at once: the page lists
// the standing answers from the store again on the kept, revoked and
// expired events, with their uses as they are.
func (c *Channel) EditStanding(context.Context, engine.MessageRef, engine.StandingAnswer, engine.StandingState) error {
	return nil
}
