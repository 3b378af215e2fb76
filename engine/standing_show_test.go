package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/testwait"
)

type standingPost struct {
	ref engine.MessageRef
	s   engine.StandingAnswer
}

type standingEdit struct {
	ref   engine.MessageRef
	s     engine.StandingAnswer
	state engine.StandingState
}

// The fake channel shows offers and standing answers.
var (
	_ engine.OfferShower    = (*fakeChannel)(nil)
	_ engine.StandingShower = (*fakeChannel)(nil)
)

// RemoveOffer records the ending the message was edited to (OfferShower).
func (f *fakeChannel) RemoveOffer(ctx context.Context, ref engine.MessageRef, end engine.Ending) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.offerRemoved == nil {
		f.offerRemoved = map[string]int{}
	}
	f.offerRemoved[ref.Message]++
	f.finished[ref.Message] = end.Status
	if f.offers == nil {
		f.offers = map[string]*engine.OfferView{}
	}
	f.offers[ref.Message] = end.Offer
	return nil
}

// ShowStanding posts a standing answer's message (StandingShower).
func (f *fakeChannel) ShowStanding(ctx context.Context, s engine.StandingAnswer) (engine.MessageRef, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	ref := engine.MessageRef{Platform: f.platform, Chat: s.Target.Chat, Message: fmt.Sprint(f.nextID)}
	f.standing = append(f.standing, standingPost{ref: ref, s: s})
	return ref, nil
}

// EditStanding records an edit of a standing answer's message.
func (f *fakeChannel) EditStanding(ctx context.Context, ref engine.MessageRef, s engine.StandingAnswer, state engine.StandingState) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.standingEdits = append(f.standingEdits, standingEdit{ref: ref, s: s, state: state})
	return nil
}

func (f *fakeChannel) offerOn(message string) (*engine.OfferView, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.offers[message], f.offerRemoved[message]
}

func (f *fakeChannel) standingPosts() []standingPost {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]standingPost(nil), f.standing...)
}

func (f *fakeChannel) editsOfStanding() []standingEdit {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]standingEdit(nil), f.standingEdits...)
}

// waitOffer waits until message shows an offer, and returns it.
func (h *harness) waitOffer(message string) *engine.OfferView {
	h.t.Helper()
	var o *engine.OfferView
	testwait.For(h.t, 5*time.Second, "the offer on the ended message", func() bool {
		o, _ = h.ch.offerOn(message)
		return o != nil
	})
	return o
}

// waitOfferRemoved waits until RemoveOffer has edited message to show no
// offer.
func (h *harness) waitOfferRemoved(message string) {
	h.t.Helper()
	testwait.For(h.t, 5*time.Second, "the offer removed from the message", func() bool {
		o, n := h.ch.offerOn(message)
		return n > 0 && o == nil
	})
}

func keepTap(h *harness, message engine.MessageRef, o *engine.OfferView, i int, who askbridge.Person, event string) engine.TapReply {
	return h.engine.Tap(context.Background(), engine.Tap{EventID: event, Message: message, Person: who, Payload: o.Rows[i][0].Payload})
}

// TestStandingOfferButtons: the ended message offers the answerer a keep
// button per duration; someone else's tap changes nothing; the
// answerer's keeps the answer, removes the offer and shows the standing
// answer in the chat.
func TestStandingOfferButtons(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{standing: true})
	ctx := context.Background()
	answered(t, h, "offered", "deploy-bot")
	p := h.ch.sends()[0]
	o := h.waitOffer(p.refs[0].Message)
	var labels []string
	for _, row := range o.Rows {
		for _, b := range row {
			labels = append(labels, b.Label)
		}
	}
	if got := strings.Join(labels, " | "); got != "Keep this answer for 1 h | Keep this answer for 1 day" || o.For != alice {
		t.Fatalf("offer %q for %+v", got, o.For)
	}
	if len(o.Rows[0][0].Payload) > 64 { // Telegram: callback_data is 1-64 bytes
		t.Errorf("payload %q too long", o.Rows[0][0].Payload)
	}
	if r := keepTap(h, p.refs[0], o, 0, bob, "keep-bob"); r.Notice != engine.NoticeKeepNotYours || r.Locale != "en" {
		t.Fatalf("bob's keep tap: %+v", r)
	}
	if _, found, err := h.store.PeekStanding(ctx, "deploy-bot", "deploy:prod", h.clock.Now()); err != nil || found {
		t.Fatalf("a standing answer after bob's tap: %v %v", found, err)
	}
	if _, removed := h.ch.offerOn(p.refs[0].Message); removed != 0 {
		t.Fatalf("offer removed after bob's tap")
	}
	if r := keepTap(h, p.refs[0], o, 1, alice, "keep-alice"); r.Notice != engine.NoticeKept {
		t.Fatalf("alice's keep tap: %+v", r)
	}
	s, found, err := h.store.PeekStanding(ctx, "deploy-bot", "deploy:prod", h.clock.Now())
	if err != nil || !found || s.Until.Sub(s.Since) != 24*time.Hour {
		t.Fatalf("standing %+v found %v err %v; want a day", s, found, err)
	}
	h.waitOfferRemoved(p.refs[0].Message)
	if st := h.ch.status(p.refs[0].Message); st != "Answered: Production" {
		t.Errorf("the message shows %q without the offer", st)
	}
	posts := h.ch.standingPosts()
	if len(posts) != 1 || posts[0].ref.Chat != "ops-room" || s.Message == nil || !s.Message.Same(posts[0].ref) {
		t.Fatalf("standing messages %+v; recorded %+v", posts, s.Message)
	}
	v := engine.ViewStanding(posts[0].s, engine.StandingKept, h.ch.caps)
	want := "Alice keeps Production for deploy-bot’s deploy:prod until " + s.Until.UTC().Format("2006-01-02 15:04") + " UTC — not used yet"
	if v.Text != want || len(v.Rows) != 1 || v.Rows[0][0].Label != "Revoke" || v.Rows[0][0].Payload != "r1:"+s.Gen {
		t.Errorf("standing view %+v; want %q and a Revoke button", v, want)
	}
	if r := keepTap(h, p.refs[0], o, 0, bob, "keep-bob-2"); r.Notice != engine.NoticeKeepNotYours {
		t.Errorf("bob's tap after the keep: %+v", r)
	}
}

// TestStandingOfferEnds: 15 minutes after the answer, the offer leaves
// the message, and a keep is refused.
func TestStandingOfferEnds(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{standing: true})
	answered(t, h, "offered", "a")
	p := h.ch.sends()[0]
	o := h.waitOffer(p.refs[0].Message)
	h.advance(engine.OfferOpen + time.Second)
	h.waitOfferRemoved(p.refs[0].Message)
	if r := keepTap(h, p.refs[0], o, 0, alice, "late"); r.Notice != engine.NoticeKeepClosed {
		t.Errorf("late keep tap: %+v", r)
	}
	if n := len(h.ch.standingPosts()); n != 0 {
		t.Errorf("%d standing messages after a refused keep", n)
	}
}

// TestStandingOfferThai: the offer in a Thai question's words.
func TestStandingOfferThai(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{standing: true})
	h.ask(strings.Replace(rememberAsk("thai", "a", "ops", ""), `"agent"`, `"locale":"th","agent"`, 1))
	p := h.waitSent(1)[0]
	if r := tap(h, p, 1, alice, "t1"); r.Notice != engine.NoticeRecorded {
		t.Fatalf("tap: %+v", r)
	}
	o := h.waitOffer(p.refs[0].Message)
	if got := o.Rows[0][0].Label; got != "จำคำตอบนี้ไว้ 1 ชั่วโมง" {
		t.Errorf("Thai keep button %q", got)
	}
	if !strings.Contains(o.Hint, `"keep 1h"`) || !strings.Contains(o.Hint, `"keep 1d"`) {
		t.Errorf("Thai hint %q", o.Hint)
	}
	if r := keepTap(h, p.refs[0], o, 0, bob, "t2"); r.Locale != "th" || r.Text() != "เฉพาะผู้ที่ตอบเท่านั้นที่จำคำตอบนี้ได้" {
		t.Errorf("bob's notice %+v %q", r, r.Text())
	}
}

// TestStandingRevokeTap: the Revoke button revokes for the keeper and
// anyone allowed to answer where it was kept, and the message says so;
// anyone else is refused and nothing changes.
func TestStandingRevokeTap(t *testing.T) {
	t.Parallel()
	carol := askbridge.Person{Platform: "telegram", ID: "carol"}
	discord := askbridge.Person{Platform: "discord", ID: "dave"}
	for _, tc := range []struct {
		name, to string
		refused  []askbridge.Person
		by       askbridge.Person
	}{
		{"the keeper, in a room only she answers", "only-alice", []askbridge.Person{carol, discord}, alice},
		{"someone else allowed to answer there", "ops", []askbridge.Person{discord}, carol},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, harnessOpts{standing: true})
			ctx := context.Background()
			h.ask(rememberAsk("kept", "a", tc.to, ""))
			p := h.waitSent(1)[0]
			if r := tap(h, p, 1, alice, "answer"); r.Notice != engine.NoticeRecorded {
				t.Fatalf("tap: %+v", r)
			}
			o := h.waitOffer(p.refs[0].Message)
			if r := keepTap(h, p.refs[0], o, 0, alice, "keep"); r.Notice != engine.NoticeKept {
				t.Fatalf("keep: %+v", r)
			}
			post := h.ch.standingPosts()[0]
			revoke := engine.ViewStanding(post.s, engine.StandingKept, h.ch.caps).Rows[0][0].Payload
			for i, who := range tc.refused {
				r := h.engine.Tap(ctx, engine.Tap{EventID: "no-" + who.ID, Message: post.ref, Person: who, Payload: revoke})
				if r.Notice != engine.NoticeRevokeNotAllowed {
					t.Fatalf("refused %d: %+v", i, r)
				}
			}
			if _, found, _ := h.store.PeekStanding(ctx, "a", "deploy:prod", h.clock.Now()); !found {
				t.Fatal("revoked by a refused tap")
			}
			if r := h.engine.Tap(ctx, engine.Tap{EventID: "yes", Message: post.ref, Person: tc.by, Payload: revoke}); r.Notice != engine.NoticeRevoked {
				t.Fatalf("revoke: %+v", r)
			}
			if _, found, _ := h.store.PeekStanding(ctx, "a", "deploy:prod", h.clock.Now()); found {
				t.Fatal("still stands after the revoke")
			}
			edits := h.ch.editsOfStanding()
			if len(edits) != 1 || edits[0].state != engine.StandingRevoked || !edits[0].ref.Same(post.ref) {
				t.Fatalf("edits %+v; want the message revoked", edits)
			}
			if v := engine.ViewStanding(edits[0].s, edits[0].state, h.ch.caps); !strings.Contains(v.Text, "Revoked") || len(v.Rows) != 0 {
				t.Errorf("revoked view %+v", v)
			}
			if r := h.engine.Tap(ctx, engine.Tap{EventID: "again", Message: post.ref, Person: tc.by, Payload: revoke}); r.Notice != engine.NoticeRevokeGone {
				t.Errorf("second revoke: %+v", r)
			}
		})
	}
}

// TestStandingMessageEdits: uses edit the standing message, at most once
// a minute; its end edits it to say it ended.
func TestStandingMessageEdits(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{standing: true})
	keptBy(t, h, "kept", "a")
	edits := func(n int) []standingEdit {
		t.Helper()
		var e []standingEdit
		testwait.For(t, 5*time.Second, "the standing message's edits", func() bool { e = h.ch.editsOfStanding(); return len(e) >= n })
		return e
	}
	use := func(id string) {
		t.Helper()
		h.ask(rememberAsk(id, "a", "ops", ""))
		if r := h.result(id, 5*time.Second); r.Via != askbridge.ViaStanding {
			t.Fatalf("%s: %+v", id, r)
		}
		h.waitHandled()
	}
	use("use-1")
	if e := edits(1); e[0].state != engine.StandingUsed || e[0].s.Uses != 1 ||
		!strings.HasSuffix(engine.ViewStanding(e[0].s, e[0].state, h.ch.caps).Text, "used 1 time, last at "+h.clock.Now().UTC().Format("15:04")+" UTC") {
		t.Fatalf("edit after the first use %+v", e[0])
	}
	use("use-2")
	if n := len(h.ch.editsOfStanding()); n != 1 {
		t.Fatalf("%d edits after a second use within the minute; want 1", n)
	}
	h.advance(engine.StandingEditEvery)
	use("use-3")
	if e := edits(2); e[1].state != engine.StandingUsed || e[1].s.Uses != 3 {
		t.Fatalf("edit after a minute %+v", e[1])
	}
	h.advance(time.Hour)
	e := edits(3)
	if e[2].state != engine.StandingExpired || !strings.Contains(engine.ViewStanding(e[2].s, e[2].state, h.ch.caps).Text, "Ended") {
		t.Fatalf("edit at the end %+v", e[2])
	}
}
