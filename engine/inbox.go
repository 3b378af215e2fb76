package engine

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/locale"
	"github.com/askbridge/askbridge/textparse"
)

// The engine is the Inbox of every channel.
var _ Inbox = (*Engine)(nil)

// Tap handles a button press: it checks the payload against the question
// the message showed, checks who pressed it, and ends the question when the
// press answers or skips it.
func (e *Engine) Tap(ctx context.Context, t Tap) (reply TapReply) {
	// The notice is in the question's language once it is known, else in
	// the bridge's.
	lang := e.locale
	defer func() {
		if v := recover(); v != nil {
			e.panicked("tap", v)
			// Not Retry: the same event would fail the same way.
			reply = TapReply{Notice: NoticeTryAgain}
		}
		if reply.Locale == "" {
			reply.Locale = lang
		}
	}()
	log := e.log.With("platform", t.Message.Platform, "chat", t.Message.Chat, "by", t.Person.ID)
	if t.EventID != "" {
		first, err := e.store.FirstSeen(ctx, t.Message.Platform, "tap:"+t.EventID, DedupeTTL)
		if err != nil {
			log.Error("dedupe tap", "err", err)
			return TapReply{Notice: NoticeTryAgain, Retry: true}
		}
		if !first {
			return TapReply{Notice: NoticeDuplicate, Action: TapDuplicate}
		}
		// A tap that could not be handled is forgotten, so the platform's
		// retry of it (or the person's second try) is handled.
		defer func() {
			if reply.Retry {
				e.forget(ctx, t.Message.Platform, "tap:"+t.EventID)
			}
		}()
	}
	if gen, err := askbridge.DecodeRevokePayload(t.Payload); err == nil {
		return e.tapRevoke(ctx, t, gen, log)
	}
	p, err := askbridge.DecodePayload(t.Payload)
	if err != nil {
		return TapReply{Notice: NoticeUnknown}
	}
	if p.Choice.Kind == askbridge.ControlKeep {
		return e.tapKeep(ctx, t, p, log)
	}
	rec, stop, ok := e.tappedQuestion(ctx, t, p, log)
	if !ok {
		return stop
	}
	lang = rec.Request.Locale
	if rec.Status != askbridge.StatusPending && rec.Result != nil {
		reply := e.clearReply(ctx, rec, *rec.Result, t.Message)
		if ownAnswer(rec, *rec.Result, t.Person, p) {
			reply.Notice = NoticeRecorded
		}
		return reply
	}
	return e.tapPending(ctx, rec, t, p, log)
}

// ownAnswer reports whether the tap of p by person is the answer that
// ended rec: the same person, on the same option. A tap seen again after
// its answer was written but before its reply reached the replica (a
// timeout, a pause, a replica that died) is told its answer was recorded,
// not that the question was already answered.
func ownAnswer(rec Record, res askbridge.Result, person askbridge.Person, p askbridge.Payload) bool {
	by := res.AnsweredBy
	if res.Status != askbridge.StatusAnswered || by == nil || by.Platform != person.Platform || by.ID != person.ID || res.Answers == nil {
		return false
	}
	qs := rec.Request.Questions
	if p.Choice.Kind != askbridge.ControlOption || len(qs) != 1 || p.Choice.Option >= len(qs[0].Options) {
		return false
	}
	got := res.Answers.Answers[qs[0].ID]
	return len(got) == 1 && got[0] == qs[0].Options[p.Choice.Option].Label
}

// tappedQuestion finds the question of a tapped message, the one its
// payload names; when there is none (or the store fails) ok is false and
// stop is the reply.
func (e *Engine) tappedQuestion(ctx context.Context, t Tap, p askbridge.Payload, log *slog.Logger) (rec Record, stop TapReply, ok bool) {
	id, found, err := e.store.QuestionByMessage(ctx, t.Message)
	if err == nil && !found {
		id, found, err = e.adopt(ctx, t.Message, p)
	}
	if err != nil {
		log.Error("find question of message", "err", err)
		return Record{}, TapReply{Notice: NoticeTryAgain, Retry: true}, false
	}
	if !found || !p.Matches(id) {
		log.Warn("tap with a payload that does not match its message")
		return Record{}, TapReply{Notice: NoticeUnknown}, false
	}
	// End or Vote decides the tap, so a record a moment old will do.
	rec, found, err = e.store.Lookup(ctx, id)
	if err != nil {
		log.Error("read question", "question", id, "err", err)
		return Record{}, TapReply{Notice: NoticeTryAgain, QuestionID: id, Retry: true}, false
	}
	if !found {
		return Record{}, TapReply{Notice: NoticeExpired, QuestionID: id}, false
	}
	return rec, TapReply{}, true
}

// tapPending handles a tap on pending question rec: Seen, Other, Skip or
// an option, as its payload p says.
func (e *Engine) tapPending(ctx context.Context, rec Record, t Tap, p askbridge.Payload, log *slog.Logger) TapReply {
	id := rec.ID
	k, err := e.placeOf(ctx, rec, t.Message)
	if err != nil {
		log.Error("find the place of a message", "question", id, "err", err)
		return TapReply{Notice: NoticeTryAgain, QuestionID: id, Retry: true}
	}
	a := Answer{By: t.Person, Via: askbridge.ViaButton, Place: k}
	switch p.Choice.Kind {
	case askbridge.ControlSeen:
		n, err := e.acknowledge(ctx, rec, t.Person, k)
		if err != nil {
			log.Error("acknowledge", "question", id, "err", err)
			return TapReply{Notice: NoticeTryAgain, QuestionID: id, Retry: true}
		}
		return TapReply{Notice: n, QuestionID: id}
	case askbridge.ControlOther:
		if !rec.MayAnswerIn(t.Person, k) {
			return TapReply{Notice: NoticeNotForYou, QuestionID: id}
		}
		return TapReply{Notice: NoticeOther, Action: TapOpenReply, QuestionID: id, ReplyTo: rec.Request.Questions[0].Question}
	case askbridge.ControlSkip:
		a.Skip = true
	case askbridge.ControlOption:
		qs := rec.Request.Questions
		if len(qs) != 1 || qs[0].MultiSelect || p.Choice.Option >= len(qs[0].Options) {
			return TapReply{Notice: NoticeUnknown, QuestionID: id}
		}
		a.Values = map[string][]string{qs[0].ID: {qs[0].Options[p.Choice.Option].Label}}
	}
	sub, err := e.submit(ctx, rec, a)
	if err != nil {
		log.Error("end question", "question", id, "err", err)
		return TapReply{Notice: NoticeTryAgain, QuestionID: id, Retry: true}
	}
	if !sub.End.Won && sub.End.Found && sub.End.Result.Status != askbridge.StatusPending {
		reply := e.clearReply(ctx, sub.End.Record, sub.End.Result, t.Message)
		reply.Notice = sub.Notice
		if ownAnswer(sub.End.Record, sub.End.Result, t.Person, p) {
			reply.Notice = NoticeRecorded
		}
		return reply
	}
	// Won: the finisher edits every message, the tapped one included.
	return TapReply{Notice: sub.Notice, QuestionID: id, Count: sub.Count, Need: sub.Need}
}

// adopt finds the question of a tapped prompt message that was never
// recorded: a replica posted it and died before recording it, and the
// prompt was posted again. The message's buttons name the question (the
// payload's digest), and the question is open in the same chat; the
// message is then recorded as the prompt's last part (the part with the
// buttons), so the tap answers and the message is finished with the rest.
func (e *Engine) adopt(ctx context.Context, ref MessageRef, p askbridge.Payload) (string, bool, error) {
	ids, err := e.store.OpenInChat(ctx, ref.Platform, ref.Chat)
	if err != nil {
		return "", false, err
	}
	for _, id := range ids {
		if !p.Matches(id) {
			continue
		}
		part, err := e.buttonsPart(ctx, id, ref.Platform)
		if err != nil {
			return "", false, err
		}
		ref.Part = part
		if _, err := e.store.AddMessage(ctx, id, ref); err != nil {
			return "", false, err
		}
		e.log.Warn("adopted a prompt message that was posted but never recorded", "question", id, "platform", ref.Platform, "chat", ref.Chat, "message", ref.Message)
		return id, true, nil
	}
	return "", false, nil
}

// buttonsPart is the part of question id's prompt on platform that
// carries the buttons: its last. A channel that counts its parts says
// which; otherwise it is taken as the last part recorded so far.
func (e *Engine) buttonsPart(ctx context.Context, id, platform string) (int, error) {
	if pc, ok := e.channels[platform].(PartCounter); ok {
		rec, found, err := e.store.Get(ctx, id)
		if err != nil {
			return 0, err
		}
		if found {
			return max(pc.Parts(BuildPlan(id, rec.Request, e.channels[platform].Capabilities()))-1, 0), nil
		}
	}
	msgs, err := e.store.Messages(ctx, id)
	if err != nil {
		return 0, err
	}
	part := 0
	for _, m := range msgs {
		if m.Platform == platform && m.Part > part {
			part = m.Part
		}
	}
	return part, nil
}

// clearReply answers a tap on a question that had already ended: the notice
// says how, and the finisher makes sure the tapped message shows the end
// (its buttons may still be live: the end's edit of it failed, or has not
// reached it yet).
func (e *Engine) clearReply(ctx context.Context, rec Record, res askbridge.Result, tapped MessageRef) TapReply {
	reply := TapReply{Notice: endedNotice(res), QuestionID: rec.ID, Ended: true}
	if _, ok := e.channels[tapped.Platform]; !ok {
		return reply
	}
	// The tapped message as recorded, for its Part and Place.
	refs, err := e.store.Messages(ctx, rec.ID)
	if err != nil {
		e.log.Error("list messages of an ended question", "question", rec.ID, "err", err)
		return reply
	}
	for _, ref := range refs {
		if ref.Same(tapped) {
			e.edits.clearLater(ctx, rec, res, ref)
			break
		}
	}
	return reply
}

// endedNotice says how a question had already ended.
func endedNotice(res askbridge.Result) Notice {
	switch res.Outcome() {
	case askbridge.OutcomeAnswered:
		return NoticeAlreadyAnswered
	case askbridge.OutcomeSkipped:
		return NoticeAlreadySkipped
	case askbridge.OutcomeCancelled:
		return NoticeCancelled
	case askbridge.OutcomeUndeliverable:
		return NoticeUndeliverable
	case askbridge.OutcomeNoQuorum:
		return NoticeNoQuorum
	}
	return NoticeExpired
}

// Reply handles a text message: it finds the question it answers, checks
// who wrote it, parses it and ends the question when it is a whole answer.
func (e *Engine) Reply(ctx context.Context, r TextReply) (out ReplyOutcome) {
	defer func() {
		if v := recover(); v != nil {
			e.panicked("reply", v)
			out = ReplyOutcome{Claimed: true, Respond: NoticeTryAgain.Text(e.locale)}
		}
	}()
	if r.FromBot || strings.TrimSpace(r.Text) == "" {
		return ReplyOutcome{}
	}
	log := e.log.With("platform", r.Message.Platform, "chat", r.Message.Chat, "by", r.Person.ID)
	// Trouble reaching the store is told to the person when the message
	// replies to another (it is then surely meant for a question): the
	// message is lost otherwise, as nothing would answer it.
	tryAgain := ReplyOutcome{Claimed: r.ReplyTo != "", Retry: true}
	if tryAgain.Claimed {
		tryAgain.Respond = NoticeTryAgain.Text(e.locale)
	}
	if r.EventID != "" {
		first, err := e.store.FirstSeen(ctx, r.Message.Platform, "msg:"+r.EventID, DedupeTTL)
		if err != nil {
			log.Error("dedupe message", "err", err)
			return tryAgain
		}
		if !first {
			return ReplyOutcome{Claimed: true}
		}
		// A message that could not be handled is forgotten, so the
		// platform's retry of it is handled.
		defer func() {
			if out.Retry {
				e.forget(ctx, r.Message.Platform, "msg:"+r.EventID)
			}
		}()
	}
	rec, outcome, ok, err := e.questionForReply(ctx, r)
	if err != nil {
		log.Error("find the question of a reply", "err", err)
		return tryAgain
	}
	if !ok {
		return outcome
	}
	lang := rec.Request.Locale
	qs := parserQuestions(rec.Request)
	parsed := textparse.ParseWith(r.Text, qs, textparse.Options{Words: replyWords(), Acknowledge: rec.Request.Pings()})
	k, err := e.placeOf(ctx, rec, r.Message)
	if err != nil {
		log.Error("find the place of a reply", "question", rec.ID, "err", err)
		return tryAgain
	}
	a := Answer{By: r.Person, Via: askbridge.ViaText, Place: k}
	switch parsed.Kind {
	case textparse.Empty:
		return ReplyOutcome{}
	case textparse.Acknowledge:
		n, err := e.acknowledge(ctx, rec, r.Person, k)
		if err != nil {
			log.Error("acknowledge", "question", rec.ID, "err", err)
			return ReplyOutcome{Claimed: true, Respond: NoticeTryAgain.Text(lang), Retry: true}
		}
		return ReplyOutcome{Claimed: true, Respond: n.Text(lang)}
	case textparse.Incomplete:
		return ReplyOutcome{Claimed: true, Respond: correction(locale.For(lang), parsed, qs)}
	case textparse.Skip:
		a.Skip = true
	case textparse.Answer:
		a.Values = parsed.Answers
	}
	sub, err := e.submit(ctx, rec, a)
	if err != nil {
		log.Error("end question", "question", rec.ID, "err", err)
		return ReplyOutcome{Claimed: true, Respond: NoticeTryAgain.Text(lang), Retry: true}
	}
	if !sub.Won {
		return ReplyOutcome{Claimed: true, Respond: sub.Notice.TextCount(lang, sub.Count, sub.Need)}
	}
	return ReplyOutcome{Claimed: true}
}

// questionForReply finds the open question a text reply is for: the one
// whose message it replies to, else the only open one in the chat that the
// person may answer. When it returns ok false, outcome says what to do; an
// error is trouble reaching the store.
func (e *Engine) questionForReply(ctx context.Context, r TextReply) (Record, ReplyOutcome, bool, error) {
	if r.ReplyTo != "" {
		ref := MessageRef{Platform: r.Message.Platform, Chat: r.Message.Chat, Message: r.ReplyTo}
		id, found, err := e.store.QuestionByMessage(ctx, ref)
		if err != nil {
			return Record{}, ReplyOutcome{}, false, err
		}
		if found {
			rec, found, err := e.store.Get(ctx, id)
			if err != nil {
				return Record{}, ReplyOutcome{}, false, err
			}
			if !found {
				return Record{}, ReplyOutcome{}, false, nil
			}
			k, err := e.placeOf(ctx, rec, ref)
			if err != nil {
				return Record{}, ReplyOutcome{}, false, err
			}
			if !rec.MayAnswerIn(r.Person, k) {
				return Record{}, ReplyOutcome{}, false, nil
			}
			if rec.Status != askbridge.StatusPending && rec.Result != nil {
				if out, ok, err := e.keepReply(ctx, rec, r); ok || err != nil {
					return Record{}, out, false, err
				}
				return Record{}, ReplyOutcome{Claimed: true, Respond: endedNotice(*rec.Result).Text(rec.Request.Locale)}, false, nil
			}
			return rec, ReplyOutcome{}, true, nil
		}
	}
	ids, err := e.store.OpenInChat(ctx, r.Message.Platform, r.Message.Chat)
	if err != nil {
		return Record{}, ReplyOutcome{}, false, err
	}
	var mine []Record
	for _, id := range ids {
		rec, found, err := e.store.Get(ctx, id)
		if err != nil {
			return Record{}, ReplyOutcome{}, false, err
		}
		if !found || rec.Status != askbridge.StatusPending {
			continue
		}
		k, err := e.placeOf(ctx, rec, MessageRef{Platform: r.Message.Platform, Chat: r.Message.Chat})
		if err != nil {
			return Record{}, ReplyOutcome{}, false, err
		}
		if !rec.MayAnswerIn(r.Person, k) {
			continue
		}
		mine = append(mine, rec)
	}
	switch len(mine) {
	case 0:
		return Record{}, ReplyOutcome{}, false, nil
	case 1:
		return mine[0], ReplyOutcome{}, true, nil
	}
	// Several questions, perhaps in several languages: the person is told
	// in the language of the latest.
	w := locale.For(mine[len(mine)-1].Request.Locale)
	return Record{}, ReplyOutcome{Claimed: true, Respond: w.Count("WhichQuestion", len(mine), nil)}, false, nil
}

// correction is the short reply ask-user.md §3 asks for when a text reply
// leaves questions without an answer: it names what is missing and says
// how to reply, for example
//
//	Missing an answer for 2 (Budget). Reply with one line per question, e.g. "2: Small".
//
// o and qs are a textparse result (Kind Incomplete) and the questions it was
// parsed against.
func correction(w *locale.Words, o textparse.Outcome, qs []textparse.Question) string {
	if len(qs) == 1 {
		if qs[0].Multi {
			return w.Get("NoAnswerMulti")
		}
		return w.Get("NoAnswerOne")
	}
	var names []string
	first := -1
	for _, id := range o.Missing {
		i := slices.IndexFunc(qs, func(q textparse.Question) bool { return q.ID == id })
		if i < 0 {
			continue
		}
		if first < 0 {
			first = i
		}
		title := strings.TrimSpace(qs[i].Header)
		if title == "" {
			title = qs[i].ID
		}
		names = append(names, fmt.Sprintf("%d (%s)", i+1, title))
	}
	if first < 0 {
		return w.Get("NoAnswerOne")
	}
	example := textparse.Example(qs[first], textparse.Options{Words: replyWords()})
	if example == "" {
		example = w.Get("ExampleAnswer")
	}
	return w.Count("MissingAnswers", len(names), map[string]any{
		"Questions": w.List(names),
		"Example":   fmt.Sprintf("%d: %s", first+1, example),
	})
}

// forget undoes the first-seen mark of an event whose handling failed.
func (e *Engine) forget(ctx context.Context, platform, key string) {
	if err := e.store.ForgetSeen(context.WithoutCancel(ctx), platform, key); err != nil {
		e.log.Warn("forget a failed event; the platform's retry of it will be taken as seen", "err", err)
	}
}

// Locale is the bridge's default catalog (see Inbox).
func (e *Engine) Locale() string { return e.locale }

// Attach links a message to a question (see Inbox).
func (e *Engine) Attach(ctx context.Context, id string, ref MessageRef) error {
	_, err := e.store.AddMessage(ctx, id, ref)
	return err
}

// Answer is a person's answer to a question, or their skip, by any path:
// a tap, a text reply, the web page.
type Answer struct {
	By  askbridge.Person
	Via askbridge.
		// Skip is set for a skip; Values is then empty.
		Via

	Skip bool
	// Values maps question ids to the chosen labels or the person's own
	// words.
	Values map[string][]string
	// Place is the index of the place (Record.Places) the answer was
	// given in: who may answer is decided per place, and a question shown
	// in several says where it was answered.
	Place int
}

// Submitted says what became of an Answer.
type Submitted struct {
	// Won is true when this answer ended the question.
	Won bool
	// Notice is what to tell the person: NoticeRecorded or NoticeSkipped
	// when it won, else why not (not theirs to answer, already answered,
	// expired…).
	Notice Notice
	// End is the question as it stands after the call; End.Found is false
	// for an unknown id.
	End EndResult
	// Count and Need go with NoticeVoted (a quorum question): how many
	// votes agree with this one, and how many must.
	Count, Need int
}

// Submit is the one path every answer takes (taps and text replies come
// through Tap and Reply, the web page calls it directly): it checks that the
// person may answer and that the question is open, checks and normalises the
// answer (see CheckAnswers), and ends the question, first writer wins. An
// answer that does not fit the question is a *ValidationError; any other
// error is trouble reaching the store. Blocks on Redis; safe for concurrent
// use.
func (e *Engine) Submit(ctx context.Context, id string, a Answer) (Submitted, error) {
	rec, found, err := e.store.Get(ctx, id)
	if err != nil {
		return Submitted{}, fmt.Errorf("read question: %w", err)
	}
	if !found {
		return Submitted{Notice: NoticeExpired}, nil
	}
	return e.submit(ctx, rec, a)
}

// SubmitRecord is Submit for a question the caller has just read (the web
// page reads it to check where it is shown): it saves reading it again.
// rec may be a moment old; the end is still decided in Redis, first writer
// wins, so an answer to a question that ended meanwhile loses as it would
// through Submit.
func (e *Engine) SubmitRecord(ctx context.Context, rec Record, a Answer) (Submitted, error) {
	return e.submit(ctx, rec, a)
}

// submit is Submit for a question already read.
func (e *Engine) submit(ctx context.Context, rec Record, a Answer) (Submitted, error) {
	if rec.Status != askbridge.StatusPending && rec.Result != nil {
		return Submitted{Notice: endedNotice(*rec.Result), End: EndResult{Found: true, Result: *rec.Result, Record: rec}}, nil
	}
	if !rec.MayAnswerIn(a.By, a.Place) {
		return Submitted{Notice: NoticeNotForYou, End: EndResult{Found: true, Result: askbridge.Result{ID: rec.ID, Status: rec.Status}, Record: rec}}, nil
	}
	if rec.Request.Quorum > 0 {
		return e.vote(ctx, rec, a)
	}
	res := askbridge.NoAnswer(rec.ID, askbridge.ReasonSkipped, "")
	if !a.Skip {
		clean, err := CheckAnswers(rec.Request, a.Values)
		if err != nil {
			return Submitted{}, err
		}
		res = askbridge.Answered(rec.ID, clean, personPtr(a.By), a.Via)
		res.Place = answeredIn(rec, a)
	}
	r, err := e.end(ctx, rec.ID, res)
	if err != nil {
		return Submitted{}, err
	}
	switch {
	case r.Won && r.Result.Reason == askbridge.ReasonTimeout:
		// Past its deadline: the store ended it as a timeout instead.
		return Submitted{Notice: NoticeExpired, End: r}, nil
	case r.Won && a.Skip:
		return Submitted{Won: true, Notice: NoticeSkipped, End: r}, nil
	case r.Won:
		return Submitted{Won: true, Notice: NoticeRecorded, End: r}, nil
	case !r.Found:
		return Submitted{Notice: NoticeExpired, End: r}, nil
	}
	return Submitted{Notice: endedNotice(r.Result), End: r}, nil
}

// answeredIn names where answer a to rec was given, for its result: the
// place as the request named it when the question has several, and
// "mcp" for an answer from the agent's own client given in no place of
// the question (one shown only in chats); "" when the question has one
// place and the answer came from there.
func answeredIn(rec Record, a Answer) string {
	switch {
	case a.Place < 0 && a.Via == askbridge.ViaMCP:
		return askbridge.PlatformMCP
	case len(rec.Places) > 1 && a.Place >= 0 && a.Place < len(rec.Places):
		return rec.Places[a.Place].Name
	}
	return ""
}

// CheckAnswers checks a structured answer against the request: every
// question answered, no unknown question, one value for a single-select
// question. Values are trimmed, declared labels take their declared casing,
// and duplicates are dropped.
func CheckAnswers(req askbridge.Request, answers map[string][]string) (map[string][]string, error) {
	v := &answerProblems{}
	for key := range answers {
		if !slices.ContainsFunc(req.Questions, func(q askbridge.Question) bool { return q.ID == key }) {
			v.addf("answers.%s is not a question of this request", key)
		}
	}
	clean := map[string][]string{}
	for _, q := range req.Questions {
		var vals []string
		for _, raw := range answers[q.ID] {
			for _, val := range canonical(q, strings.TrimSpace(raw)) {
				if val != "" && !slices.Contains(vals, val) {
					vals = append(vals, val)
				}
			}
		}
		switch {
		case len(vals) == 0:
			v.addf("answers.%s needs an answer", q.ID)
		case len(vals) > 1 && !q.MultiSelect:
			v.addf("answers.%s takes one answer", q.ID)
		}
		for _, val := range vals {
			if len([]rune(val)) > askbridge.MaxQuestionChars*4 {
				v.addf("answers.%s is too long", q.ID)
			}
		}
		clean[q.ID] = vals
	}
	if len(v.problems) > 0 {
		return nil, &askbridge.ValidationError{Problems: v.problems}
	}
	return clean, nil
}

// answerProblems collects what is wrong with an answer, as request
// validation does.
type answerProblems struct{ problems []string }

func (v *answerProblems) addf(format string, args ...any) {
	v.problems = append(v.problems, fmt.Sprintf(format, args...))
}

// canonical reads one value given for q the way a typed reply is read
// (ask-user.md §3): an option's number (in any script) or its label (any
// case, with or without its recommended suffix, composed or not) is that
// option's label as declared; anything else, a skip word included, is the
// person's own words, as given. For a multi-select question the value is
// first split as a reply is, on commas, semicolons and newlines (a label
// that holds a comma stays whole), and each part read so. So "2" typed in
// the web page's "Other" box picks the second option, and "1, 3" the first
// and the third, as they would in a chat.
func canonical(q askbridge.Question, val string) []string {
	if val == "" {
		return nil
	}
	labels := make([]string, len(q.Options))
	for i, o := range q.Options {
		if strings.EqualFold(o.Label, val) {
			return []string{o.Label}
		}
		labels[i] = o.Label
	}
	one := []textparse.Question{{ID: q.ID, Header: q.Header, Labels: labels, Multi: q.MultiSelect}}
	out := textparse.ParseWith(val, one, textparse.Options{Words: replyWords()})
	if out.Kind != textparse.Answer {
		return []string{val}
	}
	got := out.Answers[q.ID]
	switch {
	case len(got) == 1 && slices.Contains(labels, got[0]):
		return got
	case q.MultiSelect && len(got) > 1:
		return got
	}
	return []string{val}
}

func personPtr(p askbridge.Person) *askbridge.Person {
	if p.ID == "" && p.Platform == "" {
		return nil
	}
	return &p
}

// parserQuestions converts a request's questions for textparse.
func parserQuestions(req askbridge.Request) []textparse.Question {
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

// replyWords are the words a typed reply is read with: those of every
// catalog at once, whatever the language of the prompt (a Thai speaker may
// answer an English prompt with ข้าม or ๒). Digits of any script are read
// by textparse itself. They are read on first use, not at package init:
// loading every catalog was most of the bridge's start before it polls.
var replyWords = sync.OnceValue(locale.ReplyWords)
