package matrix

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/golden"
)

// shape is a prompt shape of the golden files, asked in English and in
// Thai, and how the golden file ends it.
type shape struct {
	name, en, th string
	end, thEnd   askbridge.Result
}

const buildFailure = "Build **#4812** failed on `main`:\n```\nTestPay … FAIL\n```\nSee [the log](https://ci.example.com/4812), " +
	"ask [Alice](https://matrix.to/#/@alice:example.org) — @room <b>not bold</b>"

var shapes = []shape{
	{name: "poll",
		en:    `{"questions":[{"id":"deploy_target","header":"Target","question":"Where should this deploy?","options":[{"label":"Staging (Recommended)"},{"label":"Production","description":"Customers see it at once"}]}]}`,
		th:    `{"locale":"th","questions":[{"id":"deploy_target","header":"เป้าหมาย","question":"จะปล่อยขึ้นที่ไหน?","options":[{"label":"สเตจจิ้ง (แนะนำ)"},{"label":"โปรดักชัน","description":"ลูกค้าเห็นทันที"}]}]}`,
		end:   answered("deploy_target", "Production"),
		thEnd: answered("deploy_target", "โปรดักชัน")},
	{name: "poll-context",
		en:    `{"agent":"ci-bot","context":` + quote(buildFailure) + `,"questions":[{"id":"next_step","header":"Next step","question":"What should I do with the failing build?","options":[{"label":"Retry (Recommended)","description":"It was flaky before"},{"label":"Revert the last commit"},{"label":"Leave it"}]}]}`,
		th:    `{"locale":"th","agent":"ci-bot","context":` + quote(buildFailure) + `,"questions":[{"id":"next_step","header":"ขั้นต่อไป","question":"จะทำอย่างไรกับบิลด์ที่ล้มเหลว?","options":[{"label":"ลองใหม่ (แนะนำ)","description":"เคยล้มแบบสุ่มมาก่อน"},{"label":"ย้อนคอมมิตล่าสุด"},{"label":"ปล่อยไว้ก่อน"}]}]}`,
		end:   askbridge.NoAnswer("", askbridge.ReasonTimeout, ""),
		thEnd: askbridge.NoAnswer("", askbridge.ReasonTimeout, "")},
	{name: "text-multi",
		en:    `{"questions":[{"id":"checks","header":"Checks","question":"Which checks should run?","multiSelect":true,"options":[{"label":"Unit"},{"label":"Integration","description":"About 20 minutes"},{"label":"<Load & soak>"}]}]}`,
		th:    `{"locale":"th","questions":[{"id":"checks","header":"การตรวจ","question":"ควรรันการตรวจอะไรบ้าง?","multiSelect":true,"options":[{"label":"ยูนิต"},{"label":"อินทิเกรชัน","description":"ประมาณ 20 นาที"},{"label":"<โหลด & แช่>"}]}]}`,
		end:   answered("checks", "Unit", "checks", "<Load & soak>"),
		thEnd: answered("checks", "ยูนิต", "checks", "<โหลด & แช่>")},
	{name: "text-two-questions",
		en:    `{"agent":"@alice:example.org","questions":[{"id":"target","header":"Target","question":"Where should this deploy?","options":[{"label":"Staging"},{"label":"Production"}]},{"id":"window","header":"When","question":"When should it go out?","options":[{"label":"Now"},{"label":"Tonight","description":"After 22:00 UTC"}]}]}`,
		th:    `{"locale":"th","questions":[{"id":"target","header":"เป้าหมาย","question":"จะปล่อยขึ้นที่ไหน?","options":[{"label":"สเตจจิ้ง"},{"label":"โปรดักชัน"}]},{"id":"window","header":"เวลา","question":"ควรปล่อยเมื่อไร?","options":[{"label":"ตอนนี้"},{"label":"คืนนี้","description":"หลัง 22:00 UTC"}]}]}`,
		end:   askbridge.NoAnswer("", askbridge.ReasonSkipped, ""),
		thEnd: askbridge.NoAnswer("", askbridge.ReasonSkipped, "")},
}

func answered(kv ...string) askbridge.Result {
	answers := map[string][]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		answers[kv[i]] = append(answers[kv[i]], kv[i+1])
	}
	return askbridge.Answered("", answers, nil, askbridge.ViaButton)
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// planOf decodes request js and plans it for Matrix as question id.
func planOf(t *testing.T, id, js string) (engine.Plan, askbridge.Request) {
	t.Helper()
	req, err := askbridge.DecodeRequest([]byte(js))
	if err != nil {
		t.Fatalf("request %s: %v", js, err)
	}
	return engine.BuildPlan(id, req, Capabilities), req
}

// rendered is what the channel posts for a prompt and when it ends, as
// the golden file shows it.
type rendered struct {
	Prompt      renderedEvent   `json:"prompt"`
	AfterTheEnd []renderedEvent `json:"after_the_end"`
}

type renderedEvent struct {
	Type    string         `json:"type"`
	Content map[string]any `json:"content"`
}

// render is the events of a prompt of plan and of its end with status, as
// Send and Finish post them ("$prompt" stands for the prompt's event id).
func render(p engine.Plan, status string) rendered {
	const prompt = "$prompt"
	if p.Mode == engine.ModeButtons {
		return rendered{
			Prompt: renderedEvent{typePollStart, pollContent(p, "")},
			AfterTheEnd: []renderedEvent{
				{typePollEnd, pollEndContent(prompt, status)},
				{typePollStart, editContent(prompt, pollContent(p, status))},
			},
		}
	}
	return rendered{
		Prompt:      renderedEvent{typeMessage, textContent(joinText(promptLines(p), false, ""), msgText)},
		AfterTheEnd: []renderedEvent{{typeMessage, editContent(prompt, textContent(joinText(promptLines(p), true, status), msgText))}},
	}
}

// TestGolden renders every shape in English and Thai, as sent and as
// ended, under testdata/<lang>/<shape>.json (go test -update rewrites
// them).
func TestGolden(t *testing.T) {
	for _, s := range shapes {
		for _, lang := range []string{"en", "th"} {
			t.Run(lang+"/"+s.name, func(t *testing.T) {
				js, res := s.en, s.end
				if lang == "th" {
					js, res = s.th, s.thEnd
				}
				p, req := planOf(t, "q1234567", js)
				r := render(p, engine.StatusLine(req, res))
				var b strings.Builder
				enc := json.NewEncoder(&b)
				enc.SetEscapeHTML(false) // the golden file shows the HTML as sent
				enc.SetIndent("", "  ")
				if err := enc.Encode(r); err != nil {
					t.Fatal(err)
				}
				golden.Check(t, lang+"/"+s.name+".json", []byte(b.String()))
				checkSafe(t, r)
			})
		}
	}
}

// checkSafe checks what every rendered event must be: no pill, no
// markup from the agent, and m.mentions empty.
func checkSafe(t *testing.T, r rendered) {
	t.Helper()
	for _, ev := range append([]renderedEvent{r.Prompt}, r.AfterTheEnd...) {
		b, _ := json.Marshal(ev.Content)
		if strings.Contains(string(b), "matrix.to/") {
			t.Errorf("%s content holds a permalink: %s", ev.Type, b)
		}
		if h, _ := ev.Content["formatted_body"].(string); strings.Contains(h, "<b>") || strings.Contains(h, "<a ") && strings.Contains(h, "matrix") {
			t.Errorf("%s formatted_body holds the agent's markup or a pill: %s", ev.Type, h)
		}
		if m, ok := ev.Content[keyMentions].(map[string]any); !ok || len(m) != 0 {
			t.Errorf("%s content has m.mentions %v, want {}", ev.Type, ev.Content[keyMentions])
		}
	}
}

// TestPollAnswers checks that a poll's answers are the plan's buttons,
// each answer id a button payload, so a vote maps back to a tap.
func TestPollAnswers(t *testing.T) {
	p, _ := planOf(t, "q1234567", shapes[0].en)
	poll := pollContent(p, "")[keyPollStart].(map[string]any)
	answers := poll["answers"].([]map[string]any)
	buttons := p.Buttons()
	if len(answers) != len(buttons) {
		t.Fatalf("%d answers for %d buttons", len(answers), len(buttons))
	}
	for i, a := range answers {
		if a["id"] != buttons[i].Payload || a[keyText] != buttons[i].Label {
			t.Errorf("answer %d = %v, want id %q text %q", i, a, buttons[i].Payload, buttons[i].Label)
		}
	}
}

// bothTexts checks that m carries its text under both keys, equal and
// not empty.
func bothTexts(t *testing.T, what string, m map[string]any) {
	t.Helper()
	u, _ := m[keyText].(string)
	s, ok := m[keyTextStable].(string)
	if !ok || u == "" || s != u {
		t.Errorf("%s: %s = %q, %s = %q, want both, equal", what, keyText, u, keyTextStable, m[keyTextStable])
	}
}

// TestPollStableForm checks that a poll, its end and its edit carry every
// poll block and text under the unstable and the stable key, equal, so a
// client reading only the stable keys shows the same poll.
func TestPollStableForm(t *testing.T) {
	p, req := planOf(t, "q1234567", shapes[1].en)
	start := pollContent(p, "")
	bothTexts(t, "poll", start)
	unstable, _ := start[keyPollStart].(map[string]any)
	if unstable == nil || !reflect.DeepEqual(start[keyPollStartStable], start[keyPollStart]) {
		t.Fatalf("poll blocks %v and %v, want both, equal", start[keyPollStart], start[keyPollStartStable])
	}
	if unstable["kind"] != pollDisclosed || unstable["max_selections"] != 1 {
		t.Errorf("poll kind %v max_selections %v", unstable["kind"], unstable["max_selections"])
	}
	bothTexts(t, "question", unstable["question"].(map[string]any))
	answers := unstable["answers"].([]map[string]any)
	if len(answers) != len(p.Buttons()) {
		t.Fatalf("%d answers for %d buttons", len(answers), len(p.Buttons()))
	}
	for i, a := range answers {
		bothTexts(t, "answer "+a["id"].(string), a)
		if a[keyTextStable] != p.Buttons()[i].Label {
			t.Errorf("answer %d says %q, want %q", i, a[keyTextStable], p.Buttons()[i].Label)
		}
	}
	status := engine.StatusLine(req, shapes[1].end)
	end := pollEndContent("$prompt", status)
	bothTexts(t, "poll end", end)
	if _, ok := end[keyPollEnd]; !ok || !reflect.DeepEqual(end[keyPollEnd], end[keyPollEndStable]) {
		t.Errorf("poll end blocks %v and %v, want both", end[keyPollEnd], end[keyPollEndStable])
	}
	edit := editContent("$prompt", pollContent(p, status))
	bothTexts(t, "edit", edit)
	if !strings.HasPrefix(edit[keyTextStable].(string), editBodyPrefix) {
		t.Errorf("edit's text %q, want it marked as an edit", edit[keyTextStable])
	}
	nc := edit[keyNewContent].(map[string]any)
	bothTexts(t, "edit's new content", nc)
	if !reflect.DeepEqual(nc[keyPollStart], nc[keyPollStartStable]) {
		t.Errorf("edit's poll blocks differ: %v and %v", nc[keyPollStart], nc[keyPollStartStable])
	}
}

// TestTxnID checks that transaction ids are stable per question, part and
// kind, and differ between them.
func TestTxnID(t *testing.T) {
	a := txnID("q1", 0, "prompt")
	if a != txnID("q1", 0, "prompt") || len(a) != len("ab-")+24 {
		t.Fatalf("txnID not stable or wrong length: %q", a)
	}
	for _, other := range []string{txnID("q2", 0, "prompt"), txnID("q1", 1, "prompt"), txnID("q1", 0, "end")} {
		if other == a {
			t.Errorf("txnID collides: %q", other)
		}
	}
}
