package discord_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/discord"
	"github.com/askbridge/askbridge/discord/internal/discordtest"
	"github.com/askbridge/askbridge/engine"
)

// askKept asks a question of agent deploy-bot with remember (1 h or 7
// days), to target ("" for the room, where alice alone may answer), in
// the catalog lang ("" for English).
func askKept(e *env, id, target, lang string) string {
	extra := ""
	if target != "" {
		extra += fmt.Sprintf(`"to":%q,`, target)
	}
	if lang != "" {
		extra += fmt.Sprintf(`"locale":%q,`, lang)
	}
	return e.Ask(fmt.Sprintf(`{"id":%q,%s"agent":"deploy-bot","remember":{"key":"deploy:prod","offer":[3600,604800]},`+
		`"questions":[{"id":"deploy_target","header":"Target","question":"Where should build %s go?","options":[{"label":"Staging"},{"label":"Production"}]}]}`,
		id, extra, id))
}

func buttonLabels(m discordtest.Message) []string {
	var out []string
	for _, row := range m.Components {
		for _, b := range row.Components {
			out = append(out, b.Label)
		}
	}
	return out
}

// showsButtons waits until message id shows exactly these buttons.
func (e *env) showsButtons(id string, labels ...string) discordtest.Message {
	e.t.Helper()
	return e.message(id, fmt.Sprintf("to show the buttons %q", labels), func(m discordtest.Message) bool {
		return slices.Equal(buttonLabels(m), labels)
	})
}

// button is the custom_id of the button labelled label on m.
func button(t *testing.T, m discordtest.Message, label string) string {
	t.Helper()
	for _, row := range m.Components {
		for _, b := range row.Components {
			if b.Label == label {
				return b.CustomID
			}
		}
	}
	t.Fatalf("message %s has no button %q: %q", m.ID, label, buttonLabels(m))
	return ""
}

// standingMessage waits until the bot's n-th message in channel starts
// with head and holds tail (both as Discord shows them, escaped).
func (e *env) standingMessage(channel string, n int, head, tail string) discordtest.Message {
	e.t.Helper()
	var m discordtest.Message
	head, tail = discord.Escape(head), discord.Escape(tail)
	e.eventually(10*time.Second, fmt.Sprintf("bot message %d to read %q…%q", n, head, tail), func() bool {
		msgs := e.botMessages(channel)
		if len(msgs) < n {
			return false
		}
		m = msgs[n-1]
		return strings.HasPrefix(m.Content, head) && strings.Contains(m.Content, tail)
	})
	return m
}

// privately checks that press in was answered at once with an ephemeral
// notice (type 4, flags 64) saying want in catalog tag.
func privately(t *testing.T, who string, in discordtest.Interaction, want engine.Notice, tag string) {
	t.Helper()
	if in.AckType != 4 || in.Failed || notice(in) != discord.Escape(want.Text(tag)) {
		t.Fatalf("%s: answered with type %d (failed %v), notice %q, want an ephemeral %q", who, in.AckType, in.Failed, notice(in), want.Text(tag))
	}
}

// TestStandingOfferKeepRevoke: the ended message offers the answerer a
// button per duration; someone else's press is told privately that it is
// not theirs, and the message stays as it is; the answerer's keeps the
// answer, the offer goes, and a message with a Revoke button says it
// stands; a use edits it; a Revoke by someone not allowed is refused
// privately, the keeper's revokes and edits the message.
func TestStandingOfferKeepRevoke(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{standing: true})
	e.waitGateway()
	id := askKept(e, "build-1", "", "")
	p := e.shown(id)[0]
	privately(t, "alice's answer", e.click(e.alice, p.ID, button(t, p, "Production")), engine.NoticeRecorded, "en")
	e.Result(id, 5*time.Second)
	m := e.showsButtons(p.ID, "Keep this answer for 1 h", "Keep this answer for 7 days")
	if !strings.HasSuffix(m.Content, "\n\n**Answered: Production**") {
		t.Errorf("the ended message with the offer shows %q", m.Content)
	}
	for _, b := range m.Components[0].Components {
		if pl, err := askbridge.DecodePayload(b.CustomID); err != nil || pl.Choice.Kind != askbridge.ControlKeep || b.Style != 2 {
			t.Errorf("keep button %+v: a secondary button with a keep payload wanted", b)
		}
	}
	privately(t, "bob's keep", e.click(e.bob, p.ID, button(t, m, "Keep this answer for 1 h")), engine.NoticeKeepNotYours, "en")
	if now, _ := e.fake.Message(p.ID); now.Edits != m.Edits || !slices.Equal(buttonLabels(now), buttonLabels(m)) {
		t.Fatalf("bob's keep changed the message: %d edits, buttons %q", now.Edits, buttonLabels(now))
	}
	privately(t, "alice's keep", e.click(e.alice, p.ID, button(t, m, "Keep this answer for 1 h")), engine.NoticeKept, "en")
	e.message(p.ID, "without the offer", ended("Answered: Production"))
	st := e.standingMessage(e.room, 2, "alice keeps Production for deploy-bot’s deploy:prod until ", "not used yet")
	if labels := buttonLabels(st); !slices.Equal(labels, []string{"Revoke"}) || st.Components[0].Components[0].Style != 4 {
		t.Fatalf("standing message buttons %+v, want a red Revoke", st.Components)
	}

	again := askKept(e, "build-2", "", "")
	if r := e.Result(again, 5*time.Second); r.Via != askbridge.ViaStanding {
		t.Fatalf("second request: %+v", r)
	}
	e.standingMessage(e.room, 2, "alice keeps Production", "used 1 time, last at ")

	revoke := button(t, st, "Revoke")
	privately(t, "bob's revoke", e.click(e.bob, st.ID, revoke), engine.NoticeRevokeNotAllowed, "en")
	if now, _ := e.fake.Message(st.ID); !slices.Equal(buttonLabels(now), []string{"Revoke"}) {
		t.Fatalf("bob's revoke took the button away: %q", buttonLabels(now))
	}
	privately(t, "alice's revoke", e.click(e.alice, st.ID, revoke), engine.NoticeRevoked, "en")
	m = e.standingMessage(e.room, 2, "alice keeps Production", "\nRevoked: it is no longer used.")
	if len(m.Components) != 0 {
		t.Errorf("the revoked message keeps buttons %q", buttonLabels(m))
	}
	e.shown(askKept(e, "build-3", "", ""))
}

// TestStandingThaiAndDM: the offer and the notices in a Thai question's
// words; the offer leaves the message after 15 minutes; an answer kept
// in a DM is shown standing in that DM, its Revoke button in Thai.
func TestStandingThaiAndDM(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{standing: true})
	e.waitGateway()
	id := askKept(e, "build-th", "", "th")
	p := e.shown(id)[0]
	e.click(e.alice, p.ID, button(t, p, "Production"))
	e.Result(id, 5*time.Second)
	m := e.showsButtons(p.ID, "จำคำตอบนี้ไว้ 1 ชั่วโมง", "จำคำตอบนี้ไว้ 7 วัน")
	privately(t, "bob's keep", e.click(e.bob, p.ID, button(t, m, "จำคำตอบนี้ไว้ 7 วัน")), engine.NoticeKeepNotYours, "th")
	e.clock.Advance(engine.OfferOpen + time.Second)
	e.message(p.ID, "without the offer", ended("ตอบแล้ว: Production"))

	id = askKept(e, "build-th-dm", "discord:@"+e.alice, "th")
	p = e.shown(id)[0]
	dm := p.ChannelID
	e.click(e.alice, p.ID, button(t, p, "Staging"))
	e.Result(id, 5*time.Second)
	m = e.showsButtons(p.ID, "จำคำตอบนี้ไว้ 1 ชั่วโมง", "จำคำตอบนี้ไว้ 7 วัน")
	privately(t, "alice's keep", e.click(e.alice, p.ID, button(t, m, "จำคำตอบนี้ไว้ 7 วัน")), engine.NoticeKept, "th")
	st := e.standingMessage(dm, 2, "alice จำคำตอบ Staging ไว้สำหรับ deploy:prod ของ deploy-bot จนถึง ", "ยังไม่ได้ใช้")
	if !slices.Equal(buttonLabels(st), []string{"ยกเลิก"}) {
		t.Errorf("Thai Revoke button %q", buttonLabels(st))
	}
	if n := len(e.botMessages(e.room)); n != 1 {
		t.Errorf("the room has %d bot messages, want the first question's alone", n)
	}
}
