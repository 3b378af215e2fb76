package email

import (
	"testing"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/golden"
)

// goldenLink stands for an answer link in the goldens.
const goldenLink = publicURL + "/a/AQAAAABpZJ2AAAVxLWdvbGRlbgVlbWFpbBFhbGljZUBleGFtcGxlLmNvbQ"

// goldenRequests are the prompts of the goldens, in English and Thai: two
// questions (a subject with "more"), context with Markdown, a code block
// and raw HTML, options with descriptions, a multi-select.
var goldenRequests = map[string]string{
	"en": `{"agent":"deploy-bot","timeoutSeconds":600,"context":"Release **v2.3** passed CI. Notes: [changelog](https://example.com/changelog?from=2.2&to=2.3)\n\n- 14 fixes\n- 2 migrations\n\n` + "```" + `\nmake deploy ENV=prod\n` + "```" + `\n\n<img src=x onerror=alert(1)>",` +
		`"questions":[{"id":"target","header":"Deploy","question":"Where should v2.3 go first?","options":[{"label":"Staging (Recommended)","description":"Try it on staging for a day"},{"label":"Production","description":"Customers see it at once"}]},` +
		`{"id":"notify","header":"Notify","question":"Who should hear about it?","multiSelect":true,"options":[{"label":"Support"},{"label":"Sales"}]}]}`,
	"th": `{"agent":"deploy-bot","locale":"th","timeoutSeconds":600,"context":"รุ่น **v2.3** ผ่านการทดสอบแล้ว ดู[บันทึกการเปลี่ยนแปลง](https://example.com/changelog)",` +
		`"questions":[{"id":"target","header":"ติดตั้ง","question":"ควรติดตั้ง v2.3 ที่ไหนก่อน?","options":[{"label":"สเตจจิง (แนะนำ)","description":"ลองบนสเตจจิงหนึ่งวัน"},{"label":"โปรดักชัน","description":"ลูกค้าเห็นทันที"}]},` +
		`{"id":"notify","header":"แจ้ง","question":"ควรแจ้งใครบ้าง?","multiSelect":true,"options":[{"label":"ฝ่ายบริการลูกค้า"},{"label":"ฝ่ายขาย"}]}]}`,
}

func goldenPlan(t *testing.T, lang string) engine.Plan {
	t.Helper()
	req, err := askbridge.DecodeRequest([]byte(goldenRequests[lang]))
	if err != nil {
		t.Fatal(err)
	}
	return engine.BuildPlan("q-golden", req, engine.Capabilities{})
}

// checkLetter compares both parts of v's letter with the goldens
// <name>.txt and <name>.html.
func checkLetter(t *testing.T, name string, v view) letter {
	t.Helper()
	l, err := render(v)
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, name+".txt", []byte("Subject: "+l.Subject+"\n\n"+l.Text))
	golden.Check(t, name+".html", []byte(l.HTML))
	return l
}

// TestGoldens: the prompt in English and Thai, a follow-up and a
// reminder, as a person reads them (testdata/*.txt and *.html; refresh
// with go test -update).
func TestGoldens(t *testing.T) {
	for _, lang := range []string{"en", "th"} {
		checkLetter(t, "prompt."+lang, promptView(goldenPlan(t, lang), goldenLink))
	}
	p := goldenPlan(t, "en")
	res := askbridge.Result{ID: "q-golden", Status: askbridge.StatusAnswered, AnsweredBy: &askbridge.Person{Platform: Platform, ID: alice},
		Answers: &askbridge.Answers{Answers: map[string][]string{"target": {"Staging (Recommended)"}, "notify": {"Support"}}}}
	req, _ := askbridge.DecodeRequest([]byte(goldenRequests["en"]))
	status := engine.StatusLine(req, res)
	checkLetter(t, "ended.en", endedView(p, status, answeredBy(engine.Record{Result: &res}), goldenLink))
	checkLetter(t, "reminder.en", reminderView(p, "Still waiting for your answer — 8 min left.", goldenLink))
}
