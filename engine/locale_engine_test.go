package engine_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/testwait"
)

// TestEngineLocale: the language of a prompt comes from the request, then
// the route, then the bridge's default, then English; an unknown tag falls
// back by language; the notices and the status line follow the question's
// language.
func TestEngineLocale(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	ask := func(id, extra string) engine.Plan {
		t.Helper()
		n := len(h.ch.sends())
		h.ask(fmt.Sprintf(`{"id":%q%s,"questions":[{"id":"env","header":"Env","question":"Where?","options":[{"label":"Staging"},{"label":"Production"}]}]}`, id, extra))
		return h.waitSent(n + 1)[n].plan
	}
	for _, c := range []struct {
		id, extra, want, intro string
	}{
		{"loc-request", `,"locale":"th"`, "th", "มีคำถามถึงคุณ:"},
		{"loc-region", `,"locale":"th-TH","agent":"บอท"`, "th", "คำถามจาก บอท:"},
		{"loc-route", `,"to":"thai-ops"`, "th", "มีคำถามถึงคุณ:"},
		{"loc-request-wins", `,"to":"thai-ops","locale":"en-GB"`, "en", "Question for you:"},
		{"loc-unknown", `,"locale":"fr-CA"`, "en", "Question for you:"},
		{"loc-none", ``, "en", "Question for you:"},
	} {
		p := ask(c.id, c.extra)
		if p.Locale != c.want || p.Intro != c.intro {
			t.Errorf("%s: plan in %q with intro %q, want %q and %q", c.id, p.Locale, p.Intro, c.want, c.intro)
		}
	}

	// A Thai prompt: Thai buttons and instructions, a Thai notice for the
	// tap, a Thai status line on every message.
	sent := h.ch.sends()[0]
	if got := sent.plan.Buttons(); got[len(got)-1].Label != "ข้าม" {
		t.Errorf("skip button %q", got[len(got)-1].Label)
	}
	if !strings.Contains(sent.plan.Closing, "ข้าม") || strings.Contains(sent.plan.Closing, "Tap") {
		t.Errorf("closing %q", sent.plan.Closing)
	}
	r := tap(h, sent, 1, alice, "loc-tap")
	if r.Notice != engine.NoticeRecorded || r.Locale != "th" || r.Text() != "บันทึกคำตอบแล้ว" {
		t.Fatalf("tap reply %+v, text %q", r, r.Text())
	}
	h.waitStatus(sent.refs[0].Message, "ตอบแล้ว: Production")
	if late := tap(h, sent, 0, alice, "loc-late"); late.Text() != "คำถามนี้มีคนตอบไปแล้ว" {
		t.Errorf("late tap: %q", late.Text())
	}
	// A reply to the ended Thai prompt gets the same notice, in Thai.
	if out := reply(h, "ops-room", sent.refs[0].Message, "๑", alice); !out.Claimed || out.Respond != "คำถามนี้มีคนตอบไปแล้ว" {
		t.Errorf("reply to the ended question: %+v", out)
	}
}

// TestEngineDefaultLocale: the bridge's default applies to requests and
// routes that name none, and to taps on buttons the bridge does not know.
func TestEngineDefaultLocale(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{locale: "th"})
	h.ask(fmt.Sprintf(oneQuestion, "default-th"))
	p := h.waitSent(1)[0]
	if p.plan.Locale != "th" || !strings.HasPrefix(p.plan.FreeText, "ไม่มีตัวเลือก") {
		t.Errorf("plan in %q: %q", p.plan.Locale, p.plan.FreeText)
	}
	forged := h.engine.Tap(t.Context(), engine.Tap{EventID: "forged-2", Message: p.refs[0], Person: alice, Payload: "garbage"})
	if forged.Notice != engine.NoticeUnknown || forged.Text() != "ปุ่มนี้ใช้ไม่ได้แล้ว" {
		t.Errorf("unknown button: %+v %q", forged, forged.Text())
	}
}

// TestEngineCorrectionsInTheQuestionsLanguage: a partial reply is answered
// in the prompt's language, naming what is missing with a line to copy
// without the recommended suffix of any language.
func TestEngineCorrectionsInTheQuestionsLanguage(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	q := `{"id":%q,"locale":%q,"questions":[` +
		`{"id":"env","header":"ที่ไหน","question":"ปล่อยที่ไหน?","options":[{"label":"สเตจจิ้ง (แนะนำ)"},{"label":"โปรดักชัน"}]},` +
		`{"id":"when","header":"เมื่อไร","question":"เมื่อไร?","options":[{"label":"ตอนนี้"},{"label":"พรุ่งนี้"}]},` +
		`{"id":"who","header":"ใคร","question":"ใครรู้?","options":[{"label":"ทีม"},{"label":"ไม่มี"}]}]}`
	for i, c := range []struct{ locale, want string }{
		{"th", `ยังขาดคำตอบข้อ 1 (ที่ไหน) และ 3 (ใคร) ตอบบรรทัดละหนึ่งข้อ เช่น "1: สเตจจิ้ง"`},
		{"en", `Missing answers for 1 (ที่ไหน) and 3 (ใคร). Reply with one line per question, e.g. "1: สเตจจิ้ง".`},
	} {
		h.ask(fmt.Sprintf(q, "corr-"+c.locale, c.locale))
		p := h.waitSent(i + 1)[i]
		out := reply(h, "ops-room", p.refs[0].Message, "เมื่อไร: ๒", alice)
		if !out.Claimed || out.Respond != c.want {
			t.Errorf("%s: %+v, want %q", c.locale, out, c.want)
		}
	}
	h.ask(`{"id":"corr-one","locale":"th","questions":[{"id":"env","header":"Env","question":"Where?","multiSelect":true,"options":[{"label":"A"},{"label":"B"}]}]}`)
	p := h.waitSent(3)[2]
	if out := reply(h, "ops-room", p.refs[0].Message, ",", alice); out.Respond != "ยังไม่เห็นคำตอบ พิมพ์หมายเลขตัวเลือกคั่นด้วยจุลภาค ชื่อตัวเลือก หรือคำตอบของคุณเองก็ได้" {
		t.Errorf("nothing found: %+v", out)
	}
}

// TestEngineWhichQuestionInThai: several open questions in one chat, a
// reply that names none is asked to reply to one, in the language of the
// latest.
func TestEngineWhichQuestionInThai(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	h.ask(fmt.Sprintf(oneQuestion, "which-en"))
	h.ask(`{"id":"which-th","locale":"th","questions":[{"id":"env","header":"Env","question":"ที่ไหน?","options":[{"label":"A"},{"label":"B"}]}]}`)
	h.waitSent(2)
	var out engine.ReplyOutcome
	testwait.Until(5*time.Second, func() bool {
		out = reply(h, "ops-room", "", "1", alice)
		return strings.Contains(out.Respond, "2")
	})
	if out.Respond != "ตอนนี้คุณมีคำถามค้างอยู่ 2 ข้อในแชทนี้ กด “ตอบกลับ” ที่ข้อความของคำถามที่ต้องการ คำตอบจะได้ไปถูกข้อ" {
		t.Errorf("%+v", out)
	}
}
