package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"golang.org/x/text/unicode/norm"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/locale"
)

// AnswerKey names an answer for agreement (ask-user.md §6): two answers
// agree when they give the same values for every question, declared labels
// exactly, free text trimmed and compared ignoring case, the values of a
// multi-select question in any order. Answers that agree have equal keys.
func AnswerKey(answers map[string][]string) string {
	ids := make([]string, 0, len(answers))
	for id := range answers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	norm := make([][]string, len(ids))
	for i, id := range ids {
		vals := make([]string, 0, len(answers[id]))
		for _, v := range answers[id] {
			vals = append(vals, foldAnswer(v))
		}
		slices.Sort(vals)
		norm[i] = append([]string{id}, slices.Compact(vals)...)
	}
	b, _ := json.Marshal(norm) // strings only: never fails
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// foldAnswer is a value as agreement compares it: NFC, trimmed, blanks
// collapsed, lower case.
func foldAnswer(v string) string {
	return strings.ToLower(strings.Join(strings.Fields(norm.NFC.String(v)), " "))
}

// voters counts who may vote on rec: everyone named in any of its places.
// ok is false when a place lets anyone there answer (no one can be
// counted).
func voters(places []askbridge.Place) (n int, ok bool) {
	seen := map[string]bool{}
	for _, p := range places {
		if len(p.Answerers) == 0 {
			return 0, false
		}
		for _, a := range p.Answerers {
			seen[a] = true
		}
	}
	return len(seen), true
}

// checkQuorum refuses a quorum that the places' answerers cannot reach.
func checkQuorum(req askbridge.Request, places []askbridge.Place) error {
	if req.Quorum == 0 {
		return nil
	}
	n, ok := voters(places)
	if !ok {
		return fmt.Errorf("quorum needs the people who may answer: give answerers, or use routes that name them (a place where anyone may answer cannot be counted)")
	}
	if req.Quorum > n {
		return fmt.Errorf("quorum (%d) is more than the %d people allowed to answer", req.Quorum, n)
	}
	return nil
}

// vote records a's vote on quorum question rec (ask-user.md §6) and ends it
// when the vote decides it; a skip is an abstention. The question is marked
// finishing first, so a replica that dies right after the deciding vote
// leaves its edits to another; settleMark then takes back a mark no end
// needs.
func (e *Engine) vote(ctx context.Context, rec Record, a Answer) (Submitted, error) {
	v := askbridge.Vote{By: a.By, Skipped: a.Skip, At: e.clock.Now().UnixMilli()}
	if !a.Skip {
		clean, err := CheckAnswers(rec.Request, a.Values)
		if err != nil {
			return Submitted{}, err
		}
		v.Answers = clean
	}
	n, _ := voters(rec.Places)
	now := e.clock.Now()
	added, err := e.store.MarkFinishing(ctx, rec.ID, now)
	if err != nil {
		return Submitted{}, fmt.Errorf("vote: mark finishing: %w", err)
	}
	if rec.Request.Callback != "" {
		e.calls.ending(ctx, now, rec.ID)
	}
	r, err := e.store.Vote(ctx, rec.ID, v, rec.Request.Quorum, n, now)
	if err != nil {
		return Submitted{}, fmt.Errorf("vote: %w", err)
	}
	e.settleMark(ctx, rec.ID, added, r, now)
	switch r.Outcome {
	case VoteClosed:
		if !r.End.Found {
			return Submitted{Notice: NoticeExpired, End: r.End}, nil
		}
		return Submitted{Notice: endedNotice(r.End.Result), End: r.End}, nil
	case VoteAgain:
		return Submitted{Notice: NoticeAlreadyVoted, End: r.End}, nil
	}
	by := a.By.Platform + ":" + a.By.ID
	if err := e.publish(ctx, askbridge.Event{Kind: askbridge.EventVoted, ID: rec.ID, By: by, Platform: a.By.Platform}); err != nil {
		e.log.Warn("publish voted event", "question", rec.ID, "err", err)
	}
	tally := TallyOf(r.End.Record)
	sub := Submitted{Notice: NoticeVoted, End: r.End, Count: tally.Count(v), Need: rec.Request.Quorum}
	if v.Skipped {
		sub.Notice = NoticeAbstained
	}
	if r.Outcome == VoteDecided {
		sub.Won = true
		switch r.End.Result.Reason {
		case askbridge.ReasonTimeout:
			sub.Won, sub.Notice = false, NoticeExpired
		case askbridge.ReasonNoQuorum:
			// This vote made agreement impossible.
			sub.Notice = NoticeNoQuorum
		}
		e.afterEnd(ctx, true, r.End)
		return sub, nil
	}
	if !e.edits.refreshLater(r.End.Record) {
		e.log.Warn("too many edits under way; the tally is shown at the end", "question", rec.ID)
	}
	return sub, nil
}

// settleMark deals with the finishing mark of question id once a vote
// marked at now (added: this call made the mark) has been counted, r. The
// mark is one per question, shared by every vote on every replica, and the
// one a deciding vote relies on until its edits land:
//
//   - A vote that found the question still open (VoteRecorded, VoteAgain)
//     takes back the mark it made. Another vote may have decided the
//     question meanwhile, having found this very mark: so the question is
//     read after the take-back, and marked again if it has ended.
//   - A deciding vote that found the mark made marks again after the
//     decision: the vote that made it takes it back if it did not decide,
//     maybe before the decision (and then reads the question open).
//   - A vote that came after the end (VoteClosed) leaves a mark it made to
//     the winner, as core.end does, unless the question is unknown or
//     ended well before the mark.
func (e *Engine) settleMark(ctx context.Context, id string, added bool, r VoteResult, now time.Time) {
	switch r.Outcome {
	case VoteDecided:
		if !added {
			if _, err := e.store.MarkFinishing(ctx, id, now); err != nil {
				e.log.Warn("mark a decided question finishing", "question", id, "err", err)
			}
		}
	case VoteRecorded, VoteAgain:
		if !added {
			return
		}
		if err := e.store.Finished(ctx, id); err != nil {
			e.log.Warn("take back a finishing mark", "question", id, "err", err)
			return
		}
		rec, found, err := e.store.Get(ctx, id)
		if err != nil {
			// Not known to have ended: a mark may be missing, and then
			// the leftover pass cannot see the question.
			e.log.Warn("read a question after taking back its finishing mark", "question", id, "err", err)
		}
		if err != nil || (found && rec.Status != askbridge.StatusPending) {
			if _, err := e.store.MarkFinishing(ctx, id, e.clock.Now()); err != nil {
				e.log.Warn("mark a question that ended meanwhile finishing", "question", id, "err", err)
			}
		}
	case VoteClosed:
		ended := time.UnixMilli(r.End.Result.EndedAt)
		if added && (!r.End.Found || ended.Before(now.Add(-clockSkew))) {
			if err := e.store.Finished(ctx, id); err != nil {
				e.log.Warn("take back a finishing mark", "question", id, "err", err)
			}
		}
	}
}

// Tally is the count of a quorum question's votes by answer.
type Tally struct {
	// Keys lists the distinct answers given, in the order first given;
	// Counts and Answers are by key.
	Keys      []string
	Counts    map[string]int
	Answers   map[string]map[string][]string
	Abstained int
}

// TallyOf counts rec's votes.
func TallyOf(rec Record) Tally {
	t := Tally{Counts: map[string]int{}, Answers: map[string]map[string][]string{}}
	for _, v := range rec.Votes {
		if v.Skipped {
			t.Abstained++
			continue
		}
		k := AnswerKey(v.Answers)
		if _, ok := t.Counts[k]; !ok {
			t.Keys = append(t.Keys, k)
			t.Answers[k] = v.Answers
		}
		t.Counts[k]++
	}
	return t
}

// Count is how many votes agree with v (v among them once recorded).
func (t Tally) Count(v askbridge.Vote) int {
	if v.Skipped {
		return 0
	}
	return t.Counts[AnswerKey(v.Answers)]
}

// Lead is the most votes any one answer has.
func (t Tally) Lead() int {
	most := 0
	for _, n := range t.Counts {
		most = max(most, n)
	}
	return most
}

// tallyLine is the line a quorum question's messages show while it is open
// and after (ask-user.md §6), in w's words: "Votes: 1 of 2 needed —
// Approve 1, Reject 0". A one-question prompt lists every option, then
// the other answers given (several options of a multi-select question:
// "Unit + Load 1"), then "Other" for answers in people's own words. Several
// questions list the answers given, a question's values joined with " + ",
// the questions with " / ". Free text is never shown (§3): it is "Other"
// wherever it is, and answers that read the same once it is are counted
// together.
func tallyLine(w *locale.Words, req askbridge.Request, rec Record) string {
	t := TallyOf(rec)
	other := w.Get("TallyOther")
	var order []string
	counts := map[string]int{}
	for _, k := range t.Keys {
		var vals []string
		for _, q := range req.Questions {
			vals = append(vals, tallyValues(q, t.Answers[k][q.ID], other))
		}
		s := strings.Join(vals, " / ")
		if _, ok := counts[s]; !ok {
			order = append(order, s)
		}
		counts[s] += t.Counts[k]
	}
	var parts []string
	if len(req.Questions) == 1 {
		// Every option, then the rest as given, "Other" last.
		var rest []string
		for _, o := range req.Questions[0].Options {
			parts = append(parts, fmt.Sprintf("%s %d", o.Label, counts[o.Label]))
		}
		for _, s := range order {
			if s != other && !slices.ContainsFunc(req.Questions[0].Options, func(o askbridge.Option) bool { return o.Label == s }) {
				rest = append(rest, fmt.Sprintf("%s %d", s, counts[s]))
			}
		}
		parts = append(parts, rest...)
		if n := counts[other]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", other, n))
		}
	} else {
		for _, s := range order {
			parts = append(parts, fmt.Sprintf("%s %d", s, counts[s]))
		}
	}
	if t.Abstained > 0 {
		parts = append(parts, w.Count("TallyAbstained", t.Abstained, nil))
	}
	return w.Format("TallyLine", map[string]any{
		"Lead": t.Lead(), "Need": req.Quorum, "Counts": strings.Join(parts, w.Get("ListSeparator")),
	})
}

// tallyValues is one question's values in a tally: each declared label as
// declared, in the order given, and other (the catalog's "Other") once, last,
// for any free text among them.
func tallyValues(q askbridge.Question, vals []string, other string) string {
	var shown []string
	free := false
	for _, v := range vals {
		if slices.ContainsFunc(q.Options, func(o askbridge.Option) bool { return o.Label == v }) {
			if !slices.Contains(shown, v) {
				shown = append(shown, v)
			}
			continue
		}
		free = true
	}
	if free {
		shown = append(shown, other)
	}
	return strings.Join(shown, " + ")
}
