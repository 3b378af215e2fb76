package slack_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/slack/internal/slacktest"
)

// askKept asks, in chat to (a channel or a user id), a question of agent
// deploy-bot with remember (1 h or 7 days) that only answerers may answer
// (none: anyone), in the catalog lang ("" for English).
func askKept(e *env, id, to, lang string, answerers ...string) string {
	extra := ""
	if lang != "" {
		extra += fmt.Sprintf(`"locale":%q,`, lang)
	}
	if len(answerers) > 0 {
		extra += fmt.Sprintf(`"answerers":["%s"],`, strings.Join(answerers, `","`))
	}
	return e.Ask(fmt.Sprintf(`{"id":%q,"to":"slack:%s","agent":"deploy-bot",%s"remember":{"key":"deploy:prod","offer":[3600,604800]},`+
		`"questions":[{"id":"deploy_target","header":"Target","question":"Where should build %s go?","options":[{"label":"Staging"},{"label":"Production"}]}]}`,
		id, to, extra, id))
}

// buttonsShow waits until message ts of channel shows exactly buttons.
func (e *env) buttonsShow(channel, ts string, buttons ...string) slacktest.Message {
	e.t.Helper()
	var m slacktest.Message
	if !e.fake.Wait(10*time.Second, func() bool {
		m, _ = e.fake.Message(channel, ts)
		return slices.Equal(slacktest.Buttons(m.Blocks), buttons)
	}) {
		e.t.Fatalf("message %s shows buttons %q, want %q", ts, slacktest.Buttons(m.Blocks), buttons)
	}
	return m
}

// standingMessage waits until the bot's n-th message in channel (not in a
// thread) starts with head and holds tail.
func (e *env) standingMessage(channel string, n int, head, tail string) slacktest.Message {
	e.t.Helper()
	var m slacktest.Message
	if !e.fake.Wait(10*time.Second, func() bool {
		var msgs []slacktest.Message
		for _, m := range e.fake.Messages(channel) {
			if m.BotID == slacktest.BotID && m.ThreadTS == "" {
				msgs = append(msgs, m)
			}
		}
		if len(msgs) < n {
			return false
		}
		m = msgs[n-1]
		return strings.HasPrefix(m.Text, head) && strings.Contains(m.Text, tail) && strings.Contains(string(m.Blocks), jsonString(tail))
	}) {
		e.t.Fatalf("bot message %d in %s: want %q…%q, now %q", n, channel, head, tail, m.Text)
	}
	return m
}

// pressHandled presses label on message ts as p and waits until the
// engine has answered the press and p has its private notice.
func (e *env) pressHandled(p slacktest.Person, channel, ts, label, notice string) {
	e.t.Helper()
	taps := func() int {
		return len(slices.DeleteFunc(e.handledEvents(), func(h handledEvent) bool { return h != handledEvent{Tap: true, Person: p.ID} }))
	}
	before := taps()
	e.press(p, channel, ts, label)
	if !e.fake.Wait(10*time.Second, func() bool { return taps() > before }) {
		e.t.Fatalf("%s's press of %q was never handled", p.ID, label)
	}
	e.waitEphemeral(p.ID, notice)
}

// TestStandingOfferKeepRevoke: the ended message offers the answerer a
// keep button per duration; someone else's press is told privately that
// it is not theirs and changes nothing; the answerer's keeps the answer,
// the offer goes, and a message with a Revoke button says it stands; a
// use edits it; a Revoke press by someone not allowed is refused
// privately, the keeper's revokes and the message says so.
func TestStandingOfferKeepRevoke(t *testing.T) {
	bothModes(t, func(t *testing.T, mode string) {
		e := newEnv(t, mode, envOpts{standing: true})
		id := askKept(e, "build-1-"+mode, opsChannel, "", "slack:"+alice.ID)
		p := e.prompt(opsChannel, id)
		e.press(alice, opsChannel, p.TS, "Production")
		e.Result(id, 10*time.Second)
		e.waitEphemeral(alice.ID, engine.NoticeRecorded.Text("en"))
		keeps := []string{"Keep this answer for 1 h", "Keep this answer for 7 days"}
		m := e.buttonsShow(opsChannel, p.TS, keeps...)
		if !strings.HasSuffix(m.Text, "\n\nAnswered: Production") {
			t.Errorf("the ended message with the offer reads %q", m.Text)
		}

		e.pressHandled(bob, opsChannel, p.TS, keeps[0], engine.NoticeKeepNotYours.Text("en"))
		e.buttonsShow(opsChannel, p.TS, keeps...)
		if n := len(e.waitMessages(opsChannel, 1)); n != 1 {
			t.Fatalf("bob's keep posted something: %d messages", n)
		}
		e.pressHandled(alice, opsChannel, p.TS, keeps[0], engine.NoticeKept.Text("en"))
		e.waitEnded(opsChannel, p.TS, "Answered: Production")
		st := e.standingMessage(opsChannel, 2, "alice keeps Production for deploy-bot’s deploy:prod until ", "not used yet")
		if b := slacktest.Buttons(st.Blocks); !slices.Equal(b, []string{"Revoke"}) {
			t.Fatalf("standing message buttons %q", b)
		}
		e.quiet(st)

		again := askKept(e, "build-2-"+mode, opsChannel, "", "slack:"+alice.ID)
		if r := e.Result(again, 10*time.Second); r.Via != askbridge.ViaStanding {
			t.Fatalf("second request: %+v", r)
		}
		e.standingMessage(opsChannel, 2, "alice keeps Production", "used 1 time, last at ")

		e.pressHandled(bob, opsChannel, st.TS, "Revoke", engine.NoticeRevokeNotAllowed.Text("en"))
		e.buttonsShow(opsChannel, st.TS, "Revoke")
		e.pressHandled(alice, opsChannel, st.TS, "Revoke", engine.NoticeRevoked.Text("en"))
		e.standingMessage(opsChannel, 2, "alice keeps Production", "Revoked: it is no longer used.")
		e.buttonsShow(opsChannel, st.TS)
		e.prompt(opsChannel, askKept(e, "build-3-"+mode, opsChannel, "", "slack:"+alice.ID))
	})
}

// TestStandingThaiDM: asked in bob's DM in Thai, the offer, the notices
// and the standing message (posted in the DM) in Thai words; an offer not
// taken leaves the message after 15 minutes.
func TestStandingThaiDM(t *testing.T) {
	t.Parallel()
	e := newEnv(t, socketMode, envOpts{standing: true})
	const dm = "DBOB"
	id := askKept(e, "build-th", bob.ID, "th", "slack:"+bob.ID)
	p := e.prompt(dm, id)
	e.press(bob, dm, p.TS, "Production")
	e.Result(id, 10*time.Second)
	keeps := []string{"จำคำตอบนี้ไว้ 1 ชั่วโมง", "จำคำตอบนี้ไว้ 7 วัน"}
	e.buttonsShow(dm, p.TS, keeps...)
	e.pressHandled(alice, dm, p.TS, keeps[1], engine.NoticeKeepNotYours.Text("th"))
	e.clock.Advance(engine.OfferOpen + time.Second)
	e.waitEnded(dm, p.TS, "ตอบแล้ว: Production")

	id = askKept(e, "build-th-2", bob.ID, "th", "slack:"+bob.ID)
	p = e.prompt(dm, id)
	e.press(bob, dm, p.TS, "Staging")
	e.Result(id, 10*time.Second)
	e.buttonsShow(dm, p.TS, keeps...)
	e.pressHandled(bob, dm, p.TS, keeps[1], engine.NoticeKept.Text("th"))
	e.waitEnded(dm, p.TS, "ตอบแล้ว: Staging")
	st := e.standingMessage(dm, 3, "bob จำคำตอบ Staging ไว้สำหรับ deploy:prod ของ deploy-bot จนถึง ", "ยังไม่ได้ใช้")
	if b := slacktest.Buttons(st.Blocks); !slices.Equal(b, []string{"ยกเลิก"}) {
		t.Errorf("Thai Revoke button %q", b)
	}
}
