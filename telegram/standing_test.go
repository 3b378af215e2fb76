package telegram_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/telegramtest"
)

// askKept asks, in the ops group, a question of agent deploy-bot with
// remember (1 h or 7 days) that only answerers may answer (none: anyone),
// in the catalog lang ("" for English).
func askKept(e *env, id, lang string, answerers ...string) string {
	extra := ""
	if lang != "" {
		extra += fmt.Sprintf(`"locale":%q,`, lang)
	}
	if len(answerers) > 0 {
		extra += fmt.Sprintf(`"answerers":["%s"],`, strings.Join(answerers, `","`))
	}
	return e.Ask(fmt.Sprintf(`{"id":%q,"to":"telegram:%d","agent":"deploy-bot",%s"remember":{"key":"deploy:prod","offer":[3600,604800]},`+
		`"questions":[{"id":"deploy_target","header":"Target","question":"Where should build %s go?","options":[{"label":"Staging"},{"label":"Production"}]}]}`,
		id, opsGroup, extra, id))
}

// keyboardShows waits until message id of the ops group shows buttons.
func (e *env) keyboardShows(id int, buttons ...string) telegramtest.Message {
	e.t.Helper()
	var m telegramtest.Message
	e.eventually(5*time.Second, fmt.Sprintf("message %d to show the buttons %q", id, buttons), func() bool {
		m = e.message(opsGroup, id)
		return slices.Equal(buttonTexts(m), buttons)
	})
	return m
}

// TestStandingOfferKeepRevoke: the ended message offers the answerer a
// button per duration; someone else's tap is told privately that it is
// not theirs; the answerer's keeps the answer, the offer goes, and a
// message with a Revoke button says it stands; a use edits it; a Revoke
// tap by someone not allowed is refused, the keeper's revokes.
func TestStandingOfferKeepRevoke(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{standing: true})
	e.start("a")
	id := askKept(e, "build-1", "", "telegram:"+strconv.FormatInt(alice.ID, 10))
	p := e.prompt(opsGroup, 1)
	if a := e.tap(opsGroup, p.ID, alice, "Production"); a.Text != en(engine.NoticeRecorded) {
		t.Fatalf("answer: %+v", a)
	}
	e.Result(id, 5*time.Second)
	m := e.keyboardShows(p.ID, "Keep this answer for 1 h", "Keep this answer for 7 days")
	if !strings.HasSuffix(m.Text, "\n\nAnswered: Production") {
		t.Errorf("the ended message with the offer shows %q", m.Text)
	}
	if a := e.tap(opsGroup, p.ID, bob, "Keep this answer for 1 h"); a.Text != en(engine.NoticeKeepNotYours) || a.ShowAlert {
		t.Fatalf("bob's keep: %+v", a)
	}
	e.keyboardShows(p.ID, "Keep this answer for 1 h", "Keep this answer for 7 days")
	if a := e.tap(opsGroup, p.ID, alice, "Keep this answer for 1 h"); a.Text != en(engine.NoticeKept) {
		t.Fatalf("alice's keep: %+v", a)
	}
	e.finished(opsGroup, p.ID, "Answered: Production")
	st := e.standingMessage(2, "Alice keeps Production for deploy-bot’s deploy:prod until ", "not used yet")
	if !slices.Equal(buttonTexts(st), []string{"Revoke"}) {
		t.Fatalf("standing message buttons %q", buttonTexts(st))
	}

	again := askKept(e, "build-2", "", "telegram:"+strconv.FormatInt(alice.ID, 10))
	if r := e.Result(again, 5*time.Second); r.Via != askbridge.ViaStanding {
		t.Fatalf("second request: %+v", r)
	}
	e.standingMessage(2, "Alice keeps Production", "used 1 time, last at ")

	if a := e.tap(opsGroup, st.ID, bob, "Revoke"); a.Text != en(engine.NoticeRevokeNotAllowed) {
		t.Fatalf("bob's revoke: %+v", a)
	}
	if a := e.tap(opsGroup, st.ID, alice, "Revoke"); a.Text != en(engine.NoticeRevoked) {
		t.Fatalf("alice's revoke: %+v", a)
	}
	m = e.standingMessage(2, "Alice keeps Production", "Revoked: it is no longer used.")
	if len(m.Keyboard) != 0 {
		t.Errorf("the revoked message keeps buttons %q", buttonTexts(m))
	}
	askKept(e, "build-3", "", "telegram:"+strconv.FormatInt(alice.ID, 10))
	e.prompt(opsGroup, 3)
}

// standingMessage waits until the bot's n-th message in the ops group
// starts with head and holds tail.
func (e *env) standingMessage(n int, head, tail string) telegramtest.Message {
	e.t.Helper()
	var m telegramtest.Message
	e.eventually(5*time.Second, fmt.Sprintf("bot message %d to read %q…%q", n, head, tail), func() bool {
		msgs := e.fake.BotMessages(opsGroup)
		if len(msgs) < n {
			return false
		}
		m = msgs[n-1]
		return strings.HasPrefix(m.Text, head) && strings.Contains(m.Text, tail)
	})
	return m
}

// TestStandingThai: the offer, the notices and the standing message in a
// Thai question's words; the offer leaves the message after 15 minutes.
func TestStandingThai(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{standing: true})
	e.start("a")
	id := askKept(e, "build-th", "th")
	p := e.prompt(opsGroup, 1)
	e.tap(opsGroup, p.ID, alice, "Production")
	e.Result(id, 5*time.Second)
	e.keyboardShows(p.ID, "จำคำตอบนี้ไว้ 1 ชั่วโมง", "จำคำตอบนี้ไว้ 7 วัน")
	if a := e.tap(opsGroup, p.ID, bob, "จำคำตอบนี้ไว้ 7 วัน"); a.Text != engine.NoticeKeepNotYours.Text("th") {
		t.Fatalf("bob's keep: %q", a.Text)
	}
	e.clock.Advance(engine.OfferOpen + time.Second)
	e.finished(opsGroup, p.ID, "ตอบแล้ว: Production")

	id = askKept(e, "build-th-2", "th")
	p = e.prompt(opsGroup, 2)
	e.tap(opsGroup, p.ID, alice, "Staging")
	e.Result(id, 5*time.Second)
	// The offer is on the message once the ending's edit lands.
	e.keyboardShows(p.ID, "จำคำตอบนี้ไว้ 1 ชั่วโมง", "จำคำตอบนี้ไว้ 7 วัน")
	if a := e.tap(opsGroup, p.ID, alice, "จำคำตอบนี้ไว้ 7 วัน"); a.Text != engine.NoticeKept.Text("th") {
		t.Fatalf("alice's keep: %q", a.Text)
	}
	st := e.standingMessage(3, "Alice จำคำตอบ Staging ไว้สำหรับ deploy:prod ของ deploy-bot จนถึง ", "ยังไม่ได้ใช้")
	if !slices.Equal(buttonTexts(st), []string{"ยกเลิก"}) {
		t.Errorf("Thai Revoke button %q", buttonTexts(st))
	}
}
