package engine

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/locale"
)

// What the channels show of standing answers (ask-user.md §9): the offer
// to keep an answer under the message that shows it (Ending.Offer), the
// message that shows a standing answer where it was kept (ViewStanding),
// and the taps on their buttons (keep and revoke payloads). The engine
// decides what is shown; a channel renders it.

// StandingEditEvery paces the edits of a standing answer's message as it
// is used (ask-user.md §9: at most one a minute per standing answer).
const StandingEditEvery = time.Minute

// OfferView is the offer to keep an answer as a channel shows it on the
// message of the place the answer was given in (Ending.Offer): a button
// per offered duration, for For alone (anyone else who taps one gets a
// private notice and nothing changes), under the part that carries a
// prompt's buttons (the last). A channel without buttons shows Hint, the
// reply that keeps it, after the status line instead. The engine calls
// OfferShower.RemoveOffer once the offer closes.
type OfferView struct {
	For askbridge.Person
	// Ends is when the offer closes (15 minutes after the answer).
	Ends time.Time
	// Rows are the keep buttons (Choice ControlKeep, Option the
	// duration's index in remember.offer); empty where the channel has
	// no buttons.
	Rows [][]Button
	// Hint says how to keep it by a reply: `... reply "keep 1h" or "keep
	// 24h".`, plain text in the question's words.
	Hint string
}

// offerView is how a channel with caps shows offer o of question rec.
func offerView(o Offer, rec Record, caps Capabilities) *OfferView {
	w := locale.For(rec.Request.Locale)
	v := &OfferView{For: o.By, Ends: o.Ends}
	replies := make([]string, len(o.Durations))
	for i, d := range o.Durations {
		replies[i] = `"` + KeepReply(d) + `"`
	}
	v.Hint = w.Format("OfferHint", map[string]any{"Replies": w.List(replies)})
	if !caps.Buttons || caps.PayloadBytes < askbridge.PayloadLen {
		return v
	}
	per := caps.ButtonsPerRow
	if per <= 0 {
		per = len(o.Durations)
	}
	for i, d := range o.Durations {
		if i%per == 0 {
			v.Rows = append(v.Rows, nil)
		}
		c := askbridge.Choice{Kind: askbridge.ControlKeep, Option: i}
		label := CutLabel(w.Format("ButtonKeep", map[string]any{"For": KeepDuration(w, d)}), caps.MaxButtonLabel)
		v.Rows[len(v.Rows)-1] = append(v.Rows[len(v.Rows)-1], Button{Label: label, Choice: c, Payload: askbridge.EncodePayload(rec.ID, c)})
	}
	return v
}

// KeepDuration says an offered duration in w's words: whole days in days
// ("7 days"), anything else as HumanDuration ("1 h", "90 min").
func KeepDuration(w *locale.Words, d time.Duration) string {
	const day = 24 * time.Hour
	if d >= day && d%day == 0 {
		return w.Count("DurationDays", int(d/day), nil)
	}
	return HumanDuration(w, d)
}

// KeepReply is the reply that keeps an answer for d (textparse.ParseKeep
// reads it back): "keep 1h", "keep 7d", "keep 90m".
func KeepReply(d time.Duration) string {
	switch {
	case d >= 24*time.Hour && d%(24*time.Hour) == 0:
		return fmt.Sprintf("keep %dd", d/(24*time.Hour))
	case d >= time.Hour && d%time.Hour == 0:
		return fmt.Sprintf("keep %dh", d/time.Hour)
	}
	return fmt.Sprintf("keep %dm", d/time.Minute)
}

// openOffer is the offer of ended question rec that is still open at
// now (made, not kept, not past its 15 minutes), nil when there is none
// or it cannot be read (logged: the message is then shown without it).
func (c *core) openOffer(ctx context.Context, rec Record, res askbridge.Result) *Offer {
	if rec.Request.Remember == nil || res.Status != askbridge.StatusAnswered || res.Via == askbridge.ViaStanding {
		return nil
	}
	o, found, err := c.store.PeekOffer(ctx, rec.ID)
	if err != nil {
		c.log.Warn("read the offer to keep an answer", "question", rec.ID, "err", err)
		return nil
	}
	if !found || o.Kept != nil || !c.clock.Now().Before(o.Ends) {
		return nil
	}
	return &o
}

// withOffer adds open offer o (nil: none) to end, the ending of message
// ref, when ref is a prompt message of the place the answer was given in.
func withOffer(end Ending, o *Offer, ref MessageRef, caps Capabilities) Ending {
	if o != nil && ref.IsPrompt() && ref.Place == o.Place {
		end.Offer = offerView(*o, end.Question, caps)
	}
	return end
}

// StandingView is what a channel shows for a standing answer where it was
// kept (StandingShower): the text, and the Revoke button while it stands.
type StandingView struct {
	// Locale is the catalog of Text (the question's it was kept from).
	Locale string
	// Text is plain text in that catalog's words: "Alice keeps Production
	// for deploy-bot’s deploy:prod until 2026-05-01 16:05 UTC — used 3
	// times, last at 15:20 UTC", and, once revoked or ended, a line that
	// says so. A channel escapes it for its markup.
	Text string
	// Rows holds the Revoke button (payload askbridge.EncodeRevokePayload
	// of the keep's Gen) while it stands; empty once revoked or ended.
	Rows [][]Button
}

// ViewStanding is how a channel with caps shows standing answer s in
// state.
func ViewStanding(s StandingAnswer, state StandingState, caps Capabilities) StandingView {
	w := locale.For(s.Locale)
	args := map[string]any{
		"Who": s.By.Display(), "Answer": strings.Join(standingLabels(s), w.Get("ListSeparator")),
		"Agent": s.Agent, "Key": s.Key, "Until": s.Until.UTC().Format("2006-01-02 15:04 UTC"),
	}
	id := "StandingKeeps"
	if s.Agent != "" {
		id = "StandingKeepsFrom"
	}
	uses := w.Get("StandingUnused")
	if s.Uses > 0 {
		last := s.LastUse
		if last.IsZero() {
			last = s.Since
		}
		uses = w.Count("StandingUses", s.Uses, map[string]any{"Last": last.UTC().Format("15:04 UTC")})
	}
	v := StandingView{Locale: w.Tag(), Text: w.Format(id, args) + " — " + uses}
	switch state {
	case StandingRevoked:
		v.Text += "\n" + w.Get("StandingRevokedNote")
	case StandingExpired:
		v.Text += "\n" + w.Get("StandingExpiredNote")
	default:
		if caps.Buttons && s.Gen != "" {
			label := CutLabel(w.Get("ButtonRevoke"), caps.MaxButtonLabel)
			v.Rows = [][]Button{{{Label: label, Payload: askbridge.EncodeRevokePayload(s.Gen)}}}
		}
	}
	return v
}

// standingLabels are the labels a standing answer gives, question by
// question in the order of their ids.
func standingLabels(s StandingAnswer) []string {
	ids := make([]string, 0, len(s.Answers))
	for id := range s.Answers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var out []string
	for _, id := range ids {
		out = append(out, s.Answers[id]...)
	}
	return out
}

// tapKeep handles a keep button under an ended question's message: the
// keep path (Keep), its outcome as the tapper's private notice.
func (e *Engine) tapKeep(ctx context.Context, t Tap, p askbridge.Payload, log *slog.Logger) TapReply {
	rec, stop, ok := e.tappedQuestion(ctx, t, p, log)
	if !ok {
		return stop
	}
	reply := TapReply{QuestionID: rec.ID, Locale: rec.Request.Locale}
	r := rec.Request.Remember
	if r == nil || p.Choice.Option >= len(r.Offer) {
		reply.Notice = NoticeUnknown
		return reply
	}
	out, err := e.Keep(ctx, rec.ID, t.Person, r.Durations()[p.Choice.Option])
	if err != nil {
		log.Error("keep an answer", "question", rec.ID, "err", err)
		reply.Notice, reply.Retry = NoticeTryAgain, true
		return reply
	}
	reply.Notice = out.Notice()
	return reply
}

// tapRevoke handles the Revoke button of a standing answer's message: the
// keep gen names it. The keeper, or anyone allowed to answer where it
// was kept, revokes it (the message is then edited to say so); anyone
// else is told privately, and nothing changes.
func (e *Engine) tapRevoke(ctx context.Context, t Tap, gen string, log *slog.Logger) TapReply {
	list, err := e.store.ListStanding(ctx, e.clock.Now())
	if err != nil {
		log.Error("list standing answers", "err", err)
		return TapReply{Notice: NoticeTryAgain, Retry: true}
	}
	i := slices.IndexFunc(list, func(s StandingAnswer) bool { return s.Gen == gen })
	if i < 0 {
		return TapReply{Notice: NoticeRevokeGone}
	}
	s := list[i]
	if s.Message != nil && !s.Message.Same(t.Message) {
		log.Warn("revoke tap on a message that does not show its standing answer", "key", s.Key)
		return TapReply{Notice: NoticeUnknown, Locale: s.Locale}
	}
	out, err := e.revoke(ctx, s.Agent, s.Key, gen, &t.Person)
	if err != nil {
		log.Error("revoke a standing answer", "key", s.Key, "err", err)
		return TapReply{Notice: NoticeTryAgain, Locale: s.Locale, Retry: true}
	}
	switch {
	case out.NotAllowed:
		return TapReply{Notice: NoticeRevokeNotAllowed, Locale: s.Locale}
	case out.Revoked:
		return TapReply{Notice: NoticeRevoked, Locale: s.Locale}
	}
	return TapReply{Notice: NoticeRevokeGone, Locale: s.Locale}
}

// noteUse edits the message of standing answer s after a use, to show
// its count, unless another edit was made within StandingEditEvery (on
// any replica). A failure is logged: the count shows at the next edit.
func (c *core) noteUse(ctx context.Context, s StandingAnswer, now time.Time) {
	if s.Message == nil {
		return
	}
	if _, ok := c.channels[s.Message.Platform].(StandingShower); !ok {
		return
	}
	ok, err := c.store.PaceStandingEdit(ctx, s.Agent, s.Key, s.Gen, now, StandingEditEvery)
	if err != nil {
		c.log.Warn("pace a standing answer's edit", "key", s.Key, "err", err)
		return
	}
	if ok {
		c.editStanding(ctx, s, StandingUsed)
	}
}
