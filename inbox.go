package askbridge

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/askbridge/askbridge/textparse"
)

// The engine is the Inbox of every channel.
var _ Inbox = (*Engine)(nil)

// dedupeTTL is how long a platform event id is remembered: longer than any
// platform retries a delivery (Slack retries for about an hour at most).
const dedupeTTL = 2 * time.Hour

// Tap handles a button press: it checks the payload against the question
// the message showed, checks who pressed it, and ends the question when the
// press answers or skips it.
func (e *Engine) Tap(ctx context.Context, t Tap) TapReply {
	log := e.log.With("platform", t.Message.Platform, "chat", t.Message.Chat, "by", t.Person.ID)
	if t.EventID != "" {
		first, err := e.store.FirstSeen(ctx, t.Message.Platform, "tap:"+t.EventID, dedupeTTL)
		if err != nil {
			log.Error("dedupe tap", "err", err)
			return TapReply{Notice: NoticeTryAgain}
		}
		if !first {
			return TapReply{Notice: NoticeDuplicate}
		}
	}
	p, err := DecodePayload(t.Payload)
	if err != nil {
		return TapReply{Notice: NoticeUnknown}
	}
	id, found, err := e.store.QuestionByMessage(ctx, t.Message)
	if err != nil {
		log.Error("find question of message", "err", err)
		return TapReply{Notice: NoticeTryAgain}
	}
	if !found || !p.Matches(id) {
		log.Warn("tap with a payload that does not match its message")
		return TapReply{Notice: NoticeUnknown}
	}
	rec, found, err := e.store.Get(ctx, id)
	if err != nil {
		log.Error("read question", "question", id, "err", err)
		return TapReply{Notice: NoticeTryAgain, QuestionID: id}
	}
	if !found {
		return TapReply{Notice: NoticeExpired, QuestionID: id}
	}
	if rec.Status != StatusPending {
		return e.clearReply(ctx, rec, *rec.Result, t.Message)
	}
	if !mayAnswer(rec, t.Person) {
		log.Info("tap by someone who may not answer", "question", id)
		return TapReply{Notice: NoticeNotForYou, QuestionID: id}
	}
	var res Result
	switch p.Choice.Kind {
	case ControlOther:
		return TapReply{Notice: NoticeOther, Action: TapOpenReply, QuestionID: id, ReplyTo: rec.Request.Questions[0].Question}
	case ControlSkip:
		res = NoAnswer(id, ReasonSkipped, "")
	case ControlOption:
		qs := rec.Request.Questions
		if len(qs) != 1 || qs[0].MultiSelect || p.Choice.Option >= len(qs[0].Options) {
			return TapReply{Notice: NoticeUnknown, QuestionID: id}
		}
		res = Answered(id, map[string][]string{qs[0].ID: {qs[0].Options[p.Choice.Option].Label}}, personPtr(t.Person), ViaButton)
	}
	r, err := e.end(ctx, id, res)
	if err != nil {
		log.Error("end question", "question", id, "err", err)
		return TapReply{Notice: NoticeTryAgain, QuestionID: id}
	}
	if !r.Won {
		return e.clearReply(ctx, r.Record, r.Result, t.Message)
	}
	// Won: the finisher edits every message, the tapped one included.
	reply := TapReply{Notice: NoticeRecorded, QuestionID: id}
	if res.Reason == ReasonSkipped {
		reply.Notice = NoticeSkipped
	}
	return reply
}

// clearReply answers a tap on a question that had already ended: the notice
// says how, and the channel makes sure the tapped message shows the end.
func (e *Engine) clearReply(ctx context.Context, rec Record, res Result, tapped MessageRef) TapReply {
	reply := TapReply{Notice: endedNotice(res), QuestionID: rec.ID}
	ch, ok := e.channels[tapped.Platform]
	if !ok {
		return reply
	}
	// The tapped message as recorded, for its Part.
	refs, err := e.store.Messages(ctx, rec.ID)
	if err != nil {
		e.log.Error("list messages of an ended question", "question", rec.ID, "err", err)
		return reply
	}
	for _, ref := range refs {
		if ref.Same(tapped) {
			end := ending(rec, res, ch.Capabilities())
			reply.Action, reply.Message, reply.Ending = TapClear, ref, &end
			break
		}
	}
	return reply
}

// endedNotice says how a question had already ended.
func endedNotice(res Result) Notice {
	switch res.Outcome() {
	case OutcomeAnswered:
		return NoticeAlreadyAnswered
	case OutcomeSkipped:
		return NoticeAlreadySkipped
	case OutcomeCancelled:
		return NoticeCancelled
	}
	return NoticeExpired
}

// Reply handles a text message: it finds the question it answers, checks
// who wrote it, parses it and ends the question when it is a whole answer.
func (e *Engine) Reply(ctx context.Context, r TextReply) ReplyOutcome {
	if r.FromBot || strings.TrimSpace(r.Text) == "" {
		return ReplyOutcome{}
	}
	log := e.log.With("platform", r.Message.Platform, "chat", r.Message.Chat, "by", r.Person.ID)
	if r.EventID != "" {
		first, err := e.store.FirstSeen(ctx, r.Message.Platform, "msg:"+r.EventID, dedupeTTL)
		if err != nil || !first {
			if err != nil {
				log.Error("dedupe message", "err", err)
			}
			return ReplyOutcome{Claimed: err == nil}
		}
	}
	rec, outcome, ok := e.questionForReply(ctx, r)
	if !ok {
		return outcome
	}
	qs := parserQuestions(rec.Request)
	parsed := textparse.Parse(r.Text, qs)
	var res Result
	switch parsed.Kind {
	case textparse.Empty:
		return ReplyOutcome{}
	case textparse.Incomplete:
		return ReplyOutcome{Claimed: true, Respond: textparse.Correction(parsed, qs)}
	case textparse.Skip:
		res = NoAnswer(rec.ID, ReasonSkipped, "")
	case textparse.Answer:
		res = Answered(rec.ID, parsed.Answers, personPtr(r.Person), ViaText)
	}
	end, err := e.end(ctx, rec.ID, res)
	if err != nil {
		log.Error("end question", "question", rec.ID, "err", err)
		return ReplyOutcome{Claimed: true, Respond: string(NoticeTryAgain)}
	}
	if !end.Won {
		return ReplyOutcome{Claimed: true, Respond: string(endedNotice(end.Result))}
	}
	return ReplyOutcome{Claimed: true}
}

// questionForReply finds the open question a text reply is for: the one
// whose message it replies to, else the only open one in the chat that the
// person may answer. When it returns ok false, outcome says what to do.
func (e *Engine) questionForReply(ctx context.Context, r TextReply) (Record, ReplyOutcome, bool) {
	if r.ReplyTo != "" {
		ref := MessageRef{Platform: r.Message.Platform, Chat: r.Message.Chat, Message: r.ReplyTo}
		id, found, err := e.store.QuestionByMessage(ctx, ref)
		if err != nil {
			e.log.Error("find question of message", "err", err)
			return Record{}, ReplyOutcome{}, false
		}
		if found {
			rec, found, err := e.store.Get(ctx, id)
			if err != nil || !found || !mayAnswer(rec, r.Person) {
				return Record{}, ReplyOutcome{}, false
			}
			if rec.Status != StatusPending {
				return Record{}, ReplyOutcome{Claimed: true, Respond: string(endedNotice(*rec.Result))}, false
			}
			return rec, ReplyOutcome{}, true
		}
	}
	ids, err := e.store.OpenInChat(ctx, r.Message.Platform, r.Message.Chat)
	if err != nil {
		e.log.Error("list open questions", "err", err)
		return Record{}, ReplyOutcome{}, false
	}
	var mine []Record
	for _, id := range ids {
		rec, found, err := e.store.Get(ctx, id)
		if err != nil || !found || rec.Status != StatusPending || !mayAnswer(rec, r.Person) {
			continue
		}
		mine = append(mine, rec)
	}
	switch len(mine) {
	case 0:
		return Record{}, ReplyOutcome{}, false
	case 1:
		return mine[0], ReplyOutcome{}, true
	}
	return Record{}, ReplyOutcome{Claimed: true, Respond: fmt.Sprintf(
		"You have %d open questions here. Reply to the question you mean so your answer goes to the right one.", len(mine))}, false
}

// Attach links a message to a question (see Inbox).
func (e *Engine) Attach(ctx context.Context, id string, ref MessageRef) error {
	return e.store.AddMessage(ctx, id, ref)
}

// ErrNotPending is returned by Submit for a question that has ended; the
// EndResult says how.
var ErrNotPending = errors.New("the question is no longer open")

// Submit answers or skips a question directly, as the web page does.
// answers maps question ids to the chosen labels or free text; each value is
// trimmed, matched to a declared label ignoring case, and deduplicated. It
// returns a *ValidationError for an answer that does not fit the question.
func (e *Engine) Submit(ctx context.Context, id string, answers map[string][]string, skip bool, by Person, via Via) (EndResult, error) {
	rec, found, err := e.store.Get(ctx, id)
	if err != nil {
		return EndResult{}, err
	}
	if !found {
		return EndResult{}, fmt.Errorf("question %q: %w", id, ErrNotPending)
	}
	if rec.Status != StatusPending {
		return EndResult{Found: true, Result: *rec.Result, Record: rec}, ErrNotPending
	}
	res := NoAnswer(id, ReasonSkipped, "")
	if !skip {
		clean, err := CheckAnswers(rec.Request, answers)
		if err != nil {
			return EndResult{}, err
		}
		res = Answered(id, clean, personPtr(by), via)
	}
	r, err := e.end(ctx, id, res)
	if err == nil && !r.Won {
		err = ErrNotPending
	}
	return r, err
}

// CheckAnswers checks a structured answer against the request: every
// question answered, no unknown question, one value for a single-select
// question. Values are trimmed, declared labels take their declared casing,
// and duplicates are dropped.
func CheckAnswers(req Request, answers map[string][]string) (map[string][]string, error) {
	v := &validator{}
	for key := range answers {
		if !slices.ContainsFunc(req.Questions, func(q Question) bool { return q.ID == key }) {
			v.addf("answers.%s is not a question of this request", key)
		}
	}
	clean := map[string][]string{}
	for _, q := range req.Questions {
		var vals []string
		for _, raw := range answers[q.ID] {
			val := canonical(q, strings.TrimSpace(raw))
			if val != "" && !contains(vals, val) {
				vals = append(vals, val)
			}
		}
		switch {
		case len(vals) == 0:
			v.addf("answers.%s needs an answer", q.ID)
		case len(vals) > 1 && !q.MultiSelect:
			v.addf("answers.%s takes one answer", q.ID)
		}
		for _, val := range vals {
			if len([]rune(val)) > MaxQuestionChars*4 {
				v.addf("answers.%s is too long", q.ID)
			}
		}
		clean[q.ID] = vals
	}
	if len(v.problems) > 0 {
		return nil, v.err()
	}
	return clean, nil
}

func canonical(q Question, val string) string {
	for _, o := range q.Options {
		if strings.EqualFold(o.Label, val) {
			return o.Label
		}
	}
	return val
}

// mayAnswer reports whether person may answer the question: anyone in the
// chat when the question names no answerers, else only those named.
func mayAnswer(rec Record, p Person) bool {
	if len(rec.Answerers) == 0 {
		return true
	}
	return contains(rec.Answerers, p.Platform+":"+p.ID)
}

func personPtr(p Person) *Person {
	if p.ID == "" && p.Platform == "" {
		return nil
	}
	return &p
}

// parserQuestions converts a request's questions for textparse.
func parserQuestions(req Request) []textparse.Question {
	qs := make([]textparse.Question, len(req.Questions))
	for i, q := range req.Questions {
		labels := make([]string, len(q.Options))
		for j, o := range q.Options {
			labels[j] = o.Label
		}
		qs[i] = textparse.Question{ID: q.ID, Header: q.Header, Labels: labels, Multi: q.MultiSelect}
	}
	return qs
}
