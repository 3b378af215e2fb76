package engine

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/askbridge/askbridge"
)

// PlaceAt is the index of the place whose target is t, or -1.
func (r Record) PlaceAt(t askbridge.Target) int {
	for k, p := range r.Places {
		if p.Target == t {
			return k
		}
	}
	return -1
}

// stepTimer names the timer of escalation step s (1-based): "e<s>".
func stepTimer(s int) string { return "e" + strconv.Itoa(s) }

// Reached reports whether place k of r has been reached (ask-user.md §5): a
// place of the request's `to` (step 0) at once, a place of escalation step
// s once the step has been taken. The record says so once the step's
// timer has fired (Fired); until then a prompt recorded in the place does
// (the step's delivery records it before the step is announced), so
// messages, which reads the question's messages, is called for a place of
// a step the record does not show taken, and only then. A step that is
// never taken (the question was seen, or ended, first) never reaches its
// places. Only a place reached may answer, acknowledge or be told of the
// question: a platform's answers come from a message posted there, and the
// web page, which needs none, asks this. k out of range is not reached.
func (r Record) Reached(k int, messages func() ([]MessageRef, error)) (bool, error) {
	if k < 0 || k >= len(r.Places) {
		return false, nil
	}
	step := r.Places[k].Step
	if step == 0 || slices.Contains(r.Fired, stepTimer(step)) {
		return true, nil
	}
	refs, err := messages()
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(refs, func(m MessageRef) bool { return m.Place == k && m.IsPrompt() }), nil
}

// MayAnswerIn reports whether p may answer the question in place k: anyone
// there when the place names no answerers, else only those named. A k
// that is not a place reads as the question's own answerers (those of
// its first place). This is the one rule of who may answer.
//
// An email place names its one person: with no answerers, only its
// address may answer there (through the answer link the email carries).
func (r Record) MayAnswerIn(p askbridge.Person, k int) bool {
	a, t := r.Answerers, r.Target
	if k >= 0 && k < len(r.Places) {
		a, t = r.Places[k].Answerers, r.Places[k].Target
	}
	if len(a) == 0 && t.Platform == askbridge.PlatformEmail {
		return p.Platform == askbridge.PlatformEmail && p.ID == t.Chat
	}
	return len(a) == 0 || slices.Contains(a, p.Platform+":"+p.ID)
}

// MayAnswerFromAgent reports whether p may answer the question from the
// agent's own client (an answer entry): the request's answerers must be
// empty or name p, and so must those of every place of the question, so
// that a route which names who answers there cannot be passed by from
// the client. It is MayAnswerIn for that one path, where the answer is
// given in no chat of the question.
func (r Record) MayAnswerFromAgent(p askbridge.Person) bool {
	who := p.Platform + ":" + p.ID
	lists := [][]string{r.Request.Answerers, r.Answerers}
	for _, pl := range r.Places {
		lists = append(lists, pl.Answerers)
	}
	for _, a := range lists {
		if len(a) > 0 && !slices.Contains(a, who) {
			return false
		}
	}
	return true
}

// placeOf finds the place of rec a message belongs to: the place whose
// chat it is in, else the place it was recorded for, else the place of a
// message of the question recorded in its chat (a plain reply in a DM the
// bridge opened for a user: the DM's id is not the target's), else the
// first place on its platform; -1 when none fits.
func (c *core) placeOf(ctx context.Context, rec Record, ref MessageRef) (int, error) {
	if len(rec.Places) <= 1 {
		return 0, nil
	}
	if k := rec.PlaceAt(askbridge.Target{Platform: ref.Platform, Chat: ref.Chat}); k >= 0 {
		return k, nil
	}
	refs, err := c.store.Messages(ctx, rec.ID)
	if err != nil {
		return -1, err
	}
	inChat := -1
	for _, m := range refs {
		if ref.Message != "" && m.Same(ref) {
			return m.Place, nil
		}
		if inChat < 0 && m.Platform == ref.Platform && m.Chat == ref.Chat {
			inChat = m.Place
		}
	}
	if inChat >= 0 {
		return inChat, nil
	}
	for k, p := range rec.Places {
		if p.Target.Platform == ref.Platform {
			return k, nil
		}
	}
	return -1, nil
}

// Acknowledge records that by, in place k of question id, has seen it
// (ask-user.md §5: the Seen button, a "seen" reply, the web page's Seen):
// reminders and escalation stop, every prompt gains "Seen by …" and loses
// its Seen button, and an acknowledged event is published. It never
// answers and never moves the deadline. It returns what to tell by: Seen
// when this call acknowledged, AlreadySeen when someone had, NotForYou for
// a person who may not answer there, Unknown for a question that offers no
// Seen, or how the question ended. An error is trouble reaching the store.
func (e *Engine) Acknowledge(ctx context.Context, id string, by askbridge.Person, k int) (Notice, error) {
	rec, found, err := e.store.Get(ctx, id)
	if err != nil {
		return "", fmt.Errorf("read question: %w", err)
	}
	if !found {
		return NoticeExpired, nil
	}
	return e.acknowledge(ctx, rec, by, k)
}

func (e *Engine) acknowledge(ctx context.Context, rec Record, by askbridge.Person, k int) (Notice, error) {
	switch {
	case rec.Status != askbridge.StatusPending && rec.Result != nil:
		return endedNotice(*rec.Result), nil
	case !rec.Request.Pings():
		return NoticeUnknown, nil
	case !rec.MayAnswerIn(by, k):
		return NoticeNotForYou, nil
	case rec.Acknowledged != nil:
		return NoticeAlreadySeen, nil
	}
	won, now, found, err := e.store.Acknowledge(ctx, rec.ID, by)
	if err != nil {
		return "", fmt.Errorf("acknowledge: %w", err)
	}
	switch {
	case !found:
		return NoticeExpired, nil
	case now.Status != askbridge.StatusPending && now.Result != nil:
		return endedNotice(*now.Result), nil
	case !won:
		return NoticeAlreadySeen, nil
	}
	where := ""
	if k >= 0 && k < len(now.Places) {
		where = now.Places[k].Name
	}
	e.metrics.Reached(askbridge.EventAcknowledged, by.Platform)
	e.log.Info("question acknowledged", "question", rec.ID, "by", by.Platform+":"+by.ID, "place", where)
	if err := e.publish(ctx, askbridge.Event{Kind: askbridge.EventAcknowledged, ID: rec.ID, By: by.Platform + ":" + by.ID, Platform: by.Platform, To: where}); err != nil {
		e.log.Warn("publish acknowledged event", "question", rec.ID, "err", err)
	}
	if !e.edits.refreshLater(now) {
		e.log.Warn("too many edits under way; prompts keep their Seen button", "question", rec.ID)
	}
	return NoticeSeen, nil
}

// SeenMark is a person marking a prompt seen by a means of the platform's
// own other than a button or a reply word: a 👀 reaction on a Matrix
// prompt.
type SeenMark struct {
	// EventID is the platform's id of the mark, for deduplication.
	EventID string
	// Message is the prompt marked.
	Message MessageRef
	Person  askbridge.Person
}

// SeenMarker takes a SeenMark. The engine, every channel's Inbox,
// implements it; a channel with such a mark asserts its Inbox to it.
type SeenMarker interface {
	// MarkSeen acknowledges the question of m.Message as a Seen button
	// or a "seen" reply does, and returns what Acknowledge returns (Seen,
	// AlreadySeen, NotForYou, Unknown for a question that offers no Seen
	// or a message of none, or how the question ended), Duplicate for a
	// mark handled before. An error is trouble reaching the store: the
	// mark is then forgotten, so the platform's retry of it is handled.
	MarkSeen(ctx context.Context, m SeenMark) (Notice, error)
}

var _ SeenMarker = (*Engine)(nil)

// MarkSeen implements SeenMarker: it finds the question whose prompt m
// marks and the place of that prompt, and acknowledges it there for
// m.Person (ask-user.md §5), once per m.EventID.
func (e *Engine) MarkSeen(ctx context.Context, m SeenMark) (n Notice, err error) {
	key := "seen:" + m.EventID
	if m.EventID != "" {
		first, err := e.store.FirstSeen(ctx, m.Message.Platform, key, DedupeTTL)
		if err != nil {
			return "", fmt.Errorf("dedupe mark: %w", err)
		}
		if !first {
			return NoticeDuplicate, nil
		}
		defer func() {
			if err != nil {
				e.forget(ctx, m.Message.Platform, key)
			}
		}()
	}
	id, found, err := e.store.QuestionByMessage(ctx, m.Message)
	if err != nil {
		return "", fmt.Errorf("find question of message: %w", err)
	}
	if !found {
		return NoticeUnknown, nil
	}
	rec, found, err := e.store.Get(ctx, id)
	if err != nil {
		return "", fmt.Errorf("read question: %w", err)
	}
	if !found {
		return NoticeExpired, nil
	}
	k, err := e.placeOf(ctx, rec, m.Message)
	if err != nil {
		return "", fmt.Errorf("find the place of a message: %w", err)
	}
	return e.acknowledge(ctx, rec, m.Person, k)
}
