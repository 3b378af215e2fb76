package telegram_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/rivo/uniseg"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/enginetest"
	"github.com/askbridge/askbridge/internal/golden"
	"github.com/askbridge/askbridge/internal/markup"
	"github.com/askbridge/askbridge/internal/telegramtest"
	"github.com/askbridge/askbridge/locale"
	"github.com/askbridge/askbridge/telegram"
)

// goldenShape is a prompt shape of the golden files, in English and in
// Thai: the request, and how the golden file ends it.
type goldenShape struct {
	name string
	// request and th are the same question asked in English and in Thai
	// ("locale":"th").
	request, th string
	// end and thEnd end the question in the golden file.
	end, thEnd askbridge.Result
}

// goldenShapes are the prompt shapes of the golden files.
var goldenShapes = []goldenShape{
	{name: "single-select",
		request: `{"questions":[{"id":"deploy_target","header":"Target","question":"Where should this deploy?","options":[{"label":"Staging (Recommended)"},{"label":"Production"}]}]}`,
		th:      `{"locale":"th","questions":[{"id":"deploy_target","header":"เป้าหมาย","question":"จะปล่อยขึ้นที่ไหน?","options":[{"label":"สเตจจิ้ง (แนะนำ)"},{"label":"โปรดักชัน"}]}]}`,
		end:     answered("deploy_target", "Production"),
		thEnd:   answered("deploy_target", "โปรดักชัน")},
	{name: "single-select-descriptions",
		request: `{"agent":"release-bot","questions":[{"id":"deploy_target","header":"Target","question":"Where should this deploy?","options":[{"label":"Staging (Recommended)","description":"Safer default; rolls back by itself"},{"label":"Production","description":"Customers see it at once"},{"label":"Both, staged","description":"Staging first, then production after 1 h"}]}]}`,
		th:      `{"locale":"th","agent":"release-bot","questions":[{"id":"deploy_target","header":"เป้าหมาย","question":"จะปล่อยขึ้นที่ไหน?","options":[{"label":"สเตจจิ้ง (แนะนำ)","description":"ปลอดภัยกว่า ย้อนกลับได้เอง"},{"label":"โปรดักชัน","description":"ลูกค้าเห็นทันที"},{"label":"ทั้งสองแบบ ทีละขั้น","description":"สเตจจิ้งก่อน แล้วจึงโปรดักชันหลังจากนั้น 1 ชม."}]}]}`,
		end:     answered("deploy_target", "Staging (Recommended)"),
		thEnd:   answered("deploy_target", "สเตจจิ้ง (แนะนำ)")},
	{name: "multi-select",
		request: `{"questions":[{"id":"checks","header":"Checks","question":"Which checks should run?","multiSelect":true,"options":[{"label":"Unit"},{"label":"Integration","description":"About 20 minutes"},{"label":"Load"},{"label":"Security scan"}]}]}`,
		th:      `{"locale":"th","questions":[{"id":"checks","header":"การตรวจ","question":"ควรรันการตรวจอะไรบ้าง?","multiSelect":true,"options":[{"label":"ยูนิต"},{"label":"อินทิเกรชัน","description":"ประมาณ 20 นาที"},{"label":"โหลด"},{"label":"สแกนความปลอดภัย"}]}]}`,
		end:     answered("checks", "Unit", "checks", "Load"),
		thEnd:   answered("checks", "ยูนิต", "checks", "โหลด")},
	{name: "two-questions",
		request: `{"questions":[{"id":"target","header":"Target","question":"Where should this deploy?","options":[{"label":"Staging"},{"label":"Production"}]},{"id":"window","header":"When","question":"When should it go out?","options":[{"label":"Now"},{"label":"Tonight","description":"After 22:00 UTC"}]}]}`,
		th:      `{"locale":"th","questions":[{"id":"target","header":"เป้าหมาย","question":"จะปล่อยขึ้นที่ไหน?","options":[{"label":"สเตจจิ้ง"},{"label":"โปรดักชัน"}]},{"id":"window","header":"เวลา","question":"ควรปล่อยเมื่อไร?","options":[{"label":"ตอนนี้"},{"label":"คืนนี้","description":"หลัง 22:00 UTC"}]}]}`,
		end:     answered("target", "Staging", "window", "Tonight"),
		thEnd:   answered("target", "สเตจจิ้ง", "window", "คืนนี้")},
	{name: "three-questions",
		request: `{"questions":[{"id":"target","header":"Target","question":"Where?","options":[{"label":"Staging"},{"label":"Production"}]},{"id":"checks","header":"Checks","question":"Which checks?","multiSelect":true,"options":[{"label":"Unit"},{"label":"Integration"},{"label":"Load"}]},{"id":"notify","header":"Notify","question":"Who hears about it?","options":[{"label":"Team"},{"label":"Nobody"}]}]}`,
		th:      `{"locale":"th","questions":[{"id":"target","header":"เป้าหมาย","question":"ที่ไหน?","options":[{"label":"สเตจจิ้ง"},{"label":"โปรดักชัน"}]},{"id":"checks","header":"การตรวจ","question":"ตรวจอะไรบ้าง?","multiSelect":true,"options":[{"label":"ยูนิต"},{"label":"อินทิเกรชัน"},{"label":"โหลด"}]},{"id":"notify","header":"แจ้ง","question":"ใครควรได้รับแจ้ง?","options":[{"label":"ทีม"},{"label":"ไม่ต้องแจ้ง"}]}]}`,
		// Free text ("my manager") is not echoed in the status line.
		end:   answered("target", "Production", "checks", "Unit", "checks", "Integration", "notify", "my manager"),
		thEnd: answered("target", "โปรดักชัน", "checks", "ยูนิต", "checks", "อินทิเกรชัน", "notify", "หัวหน้าของฉัน")},
	{name: "long-split", request: longRequest("en"), th: longRequest("th"),
		end: askbridge.NoAnswer("", askbridge.ReasonSkipped, ""), thEnd: askbridge.NoAnswer("", askbridge.ReasonSkipped, "")},
	// The context of ask-user.md §7: Markdown with a code block, a link
	// (shown, never previewed) and an @everyone that must ping nobody.
	{name: "context",
		request: `{"agent":"ci-bot","context":` + quote(buildFailure) + `,"questions":[{"id":"next_step","header":"Next step","question":"What should I do with the failing build?","options":[{"label":"Retry (Recommended)","description":"It was flaky before"},{"label":"Revert the last commit"},{"label":"Leave it"}]}]}`,
		th:      `{"locale":"th","agent":"ci-bot","context":` + quote(buildFailure) + `,"questions":[{"id":"next_step","header":"ขั้นต่อไป","question":"จะทำอย่างไรกับบิลด์ที่ล้มเหลว?","options":[{"label":"ลองใหม่ (แนะนำ)","description":"เคยล้มแบบสุ่มมาก่อน"},{"label":"ย้อนคอมมิตล่าสุด"},{"label":"ปล่อยไว้ก่อน"}]}]}`,
		end:     answered("next_step", "Retry (Recommended)"),
		thEnd:   answered("next_step", "ลองใหม่ (แนะนำ)")},
	// The longest context a request may carry, split across messages.
	{name: "long-context",
		request: `{"agent":"ci-bot","context":` + quote(longContext("en")) + `,"questions":[{"id":"next_step","header":"Next step","question":"What should I do with the failing build?","options":[{"label":"Retry (Recommended)"},{"label":"Revert the last commit"}]}]}`,
		th:      `{"locale":"th","agent":"ci-bot","context":` + quote(longContext("th")) + `,"questions":[{"id":"next_step","header":"ขั้นต่อไป","question":"จะทำอย่างไรกับบิลด์ที่ล้มเหลว?","options":[{"label":"ลองใหม่ (แนะนำ)"},{"label":"ย้อนคอมมิตล่าสุด"}]}]}`,
		end:     askbridge.NoAnswer("", askbridge.ReasonTimeout, ""),
		thEnd:   askbridge.NoAnswer("", askbridge.ReasonTimeout, "")},
}

// buildFailure is the context of ask-user.md §7's example.
const buildFailure = "Build **#4812** failed on `main`:\n```\nTestPay … FAIL\n```\nSee [the log](https://ci.example.com/4812) — @everyone"

// in returns the shape's request and end in language lang ("en", "th").
func (s goldenShape) in(lang string) (string, askbridge.Result) {
	if lang == "th" {
		return s.th, s.thEnd
	}
	return s.request, s.end
}

func quote(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// answered is the result of an answer given as question id, value pairs.
func answered(kv ...string) askbridge.Result {
	answers := map[string][]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		answers[kv[i]] = append(answers[kv[i]], kv[i+1])
	}
	return askbridge.Answered("", answers, nil, askbridge.ViaButton)
}

// longRequest is a prompt too long for one message: three questions with
// the longest descriptions a request allows, full of characters to escape;
// in English, or in Thai when lang is "th".
func longRequest(lang ...string) string {
	desc, label, question, header := "R&D <notes> ", "Option %d.%d & more", "Question %d: %s?", "Part %d"
	why, locale := "which of these & why ", ""
	if len(lang) > 0 && lang[0] == "th" {
		desc, label, question, header = "R&D <บันทึก> ", "ตัวเลือก %d.%d & อื่น ๆ", "คำถามที่ %d: %s?", "ส่วนที่ %d"
		why, locale = "ข้อไหน & เพราะอะไร ", `"locale":"th",`
	}
	desc = string([]rune(strings.Repeat(desc, 16))[:190])
	var qs []string
	for q := range 3 {
		var opts []string
		for o := range 4 {
			opts = append(opts, fmt.Sprintf(`{"label":%q,"description":%q}`, fmt.Sprintf(label, q+1, o+1), desc))
		}
		qs = append(qs, fmt.Sprintf(`{"id":"q%d","header":%q,"question":%q,"options":[%s]}`,
			q+1, fmt.Sprintf(header, q+1), fmt.Sprintf(question, q+1, strings.Repeat(why, 20)), strings.Join(opts, ",")))
	}
	return `{` + locale + `"questions":[` + strings.Join(qs, ",") + `]}`
}

// longContext is a build report of exactly askbridge.MaxContextChars
// characters (grapheme clusters, as a request counts them) that Telegram
// counts as more than a message part holds: emoji take two UTF-16 units,
// and a Thai letter with its marks takes up to three.
func longContext(lang string) string {
	var paras []string
	if lang == "th" {
		paras = append(paras, "บิลด์ตอนกลางคืน **#4812** ล้มเหลวบน `main` หลังจากรันไป 41 นาที")
		for i := 1; i <= 12; i++ {
			paras = append(paras, fmt.Sprintf("ขั้นที่ %d: คอมไพล์แพ็กเกจ **payments/%02d** แล้วรันชุดทดสอบที่เกี่ยวข้องทั้งหมด ผลลัพธ์ <ไม่ผ่าน> & ต้องตรวจสอบเพิ่มเติม ดู [บันทึกขั้นที่ %d](https://ci.example.com/4812/%d)", i, i, i, i))
		}
		var code strings.Builder
		code.WriteString("```\n")
		for i := 1; i <= 20; i++ {
			fmt.Fprintf(&code, "🔴 FAIL TestPay/case_%03d (0.%02ds)\n", i, i)
		}
		paras = append(paras, code.String()+"```")
		for i := 13; i <= 30; i++ {
			paras = append(paras, fmt.Sprintf("ขั้นที่ %d: ข้ามไปเพราะขั้นก่อนหน้าล้มเหลว", i))
		}
	} else {
		paras = append(paras, "Nightly build **#4812** failed on `main` after 41 min; see [the log](https://ci.example.com/4812).")
		var code strings.Builder
		code.WriteString("```\n")
		for i := 1; i <= 60; i++ {
			fmt.Fprintf(&code, "🔴 FAIL case_%03d 🕐 0.%02ds 🔁 <timeout> & retry\n", i, i)
		}
		paras = append(paras, code.String()+"```")
		for i := 1; i <= 30; i++ {
			paras = append(paras, fmt.Sprintf("Step %d: compiled **payments/%02d** and ran its _integration_ suite — @everyone was paged.", i, i))
		}
	}
	// Whole paragraphs while they fit, then words up to the limit.
	text := ""
	for _, p := range paras {
		next := p
		if text != "" {
			next = text + "\n\n" + p
		}
		if uniseg.GraphemeClusterCount(next) > askbridge.MaxContextChars {
			break
		}
		text = next
	}
	filler := "More of the log follows, cut here to fit."
	if lang == "th" {
		filler = "บันทึกส่วนที่เหลือถูกตัดออกเพื่อให้พอดี"
	}
	text += "\n\n"
	for g := uniseg.NewGraphemes(strings.Repeat(filler+" ", 100)); uniseg.GraphemeClusterCount(text) < askbridge.MaxContextChars && g.Next(); {
		text += g.Str()
	}
	// A request's context is trimmed: never end on a space.
	if strings.HasSuffix(text, " ") {
		text = strings.TrimSuffix(text, " ") + "."
	}
	return text
}

// goldenEnds are the end states shown for the single-select prompt with
// descriptions.
var goldenEnds = []struct {
	name       string
	end, thEnd askbridge.Result
}{
	{"answered", answered("deploy_target", "Staging (Recommended)"), answered("deploy_target", "สเตจจิ้ง (แนะนำ)")},
	{"skipped", askbridge.NoAnswer("", askbridge.ReasonSkipped, ""), askbridge.NoAnswer("", askbridge.ReasonSkipped, "")},
	{"expired", askbridge.NoAnswer("", askbridge.ReasonTimeout, ""), askbridge.NoAnswer("", askbridge.ReasonTimeout, "")},
	{"cancelled", askbridge.NoAnswer("", askbridge.ReasonCancelled, ""), askbridge.NoAnswer("", askbridge.ReasonCancelled, "")},
}

// goldenLangs are the catalogs the golden files are written in.
var goldenLangs = []string{"en", "th"}

// newGoldenRig is a channel on a fake with the ops group.
func newGoldenRig(t *testing.T) (*telegramtest.Server, *telegram.Channel) {
	t.Helper()
	fake := telegramtest.New(telegramtest.Options{})
	t.Cleanup(fake.Close)
	fake.AddChat(opsGroup, "supergroup", "Ops")
	ch, err := telegram.New(telegram.Config{Token: fake.Token, APIURL: fake.URL, ChatPace: 1, GlobalPace: 1}, enginetest.NewMemCoord(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return fake, ch
}

// ending is how a question asked with req and ended with res is shown:
// the status line in the request's words, as the engine writes it.
func ending(plan engine.Plan, req askbridge.Request, res askbridge.Result) engine.Ending {
	return engine.Ending{Plan: plan, Outcome: res.Outcome(), Status: engine.StatusLine(req, res)}
}

// sendAndFinish shows a request through the real channel and library on
// the fake, then ends it with res, checks what a person sees in both
// states, and renders both.
func sendAndFinish(t *testing.T, id, request string, res askbridge.Result) string {
	t.Helper()
	req, err := askbridge.DecodeRequest([]byte(request))
	if err != nil {
		t.Fatal(err)
	}
	fake, ch := newGoldenRig(t)
	plan := engine.BuildPlan(id, req, ch.Capabilities())
	refs, err := sendAll(context.Background(), ch, fmt.Sprint(opsGroup), plan)
	if err != nil {
		t.Fatal(err)
	}
	sent := fake.BotMessages(opsGroup)
	checkQuiet(t, "sent", sent)
	end := ending(plan, req, res)
	var b strings.Builder
	fmt.Fprintf(&b, "# %d message(s) as sent\n\n", len(refs))
	renderChat(&b, sent)
	for _, ref := range refs {
		if err := ch.Finish(context.Background(), ref, end); err != nil {
			t.Fatal(err)
		}
	}
	// Finishing again changes nothing: Telegram's "message is not
	// modified" counts as success.
	edited := fake.Stats().Edited
	for _, ref := range refs {
		if err := ch.Finish(context.Background(), ref, end); err != nil {
			t.Errorf("finish again: %v", err)
		}
	}
	if fake.Stats().Edited != edited {
		t.Error("finishing again edited a message")
	}
	ended := fake.BotMessages(opsGroup)
	checkQuiet(t, "ended", ended)
	checkEnded(t, plan, end.Status, sent, ended)
	fmt.Fprintf(&b, "# after the end: %q\n\n", end.Status)
	renderChat(&b, ended)
	return b.String()
}

// checkQuiet fails the test when a message would notify anyone or unfurl
// a link.
func checkQuiet(t *testing.T, when string, msgs []telegramtest.Message) {
	t.Helper()
	for i, m := range msgs {
		if len(m.Mentions) != 0 || len(m.TextMentions) != 0 {
			t.Errorf("%s message %d mentions %v %v", when, i+1, m.Mentions, m.TextMentions)
		}
		if m.LinkPreview {
			t.Errorf("%s message %d shows a link preview", when, i+1)
		}
	}
}

// checkEnded checks that each ended message is the message it was, the
// instructions left out (with the blank line they leave, when another
// follows: the notes), with the status line under it and no buttons.
func checkEnded(t *testing.T, plan engine.Plan, status string, sent, ended []telegramtest.Message) {
	t.Helper()
	if len(ended) != len(sent) {
		t.Fatalf("%d messages after the end, %d sent", len(ended), len(sent))
	}
	instructions := append([]string{plan.FreeText}, strings.Split(plan.Closing, "\n")...)
	for i := range sent {
		var kept []string
		for _, l := range strings.Split(sent[i].Text, "\n") {
			blankAgain := l == "" && len(kept) > 0 && kept[len(kept)-1] == ""
			if !slices.Contains(instructions, l) && !blankAgain {
				kept = append(kept, l)
			}
		}
		want := strings.TrimRight(strings.Join(kept, "\n"), "\n")
		if want != "" {
			want += "\n\n"
		}
		want += status
		if got := ended[i].Text; got != want {
			t.Errorf("message %d after the end:\n%s\nwant\n%s", i+1, got, want)
		}
		if len(ended[i].Keyboard) != 0 {
			t.Errorf("message %d keeps its buttons", i+1)
		}
	}
}

// renderChat writes messages the way a reviewer reads them: the text a
// person sees, the buttons row by row with their callback data, the reply
// box, and the HTML that was sent.
func renderChat(b *strings.Builder, msgs []telegramtest.Message) {
	for i, m := range msgs {
		fmt.Fprintf(b, "## message %d (%d characters)\n%s\n", i+1, len([]rune(m.Text)), m.Text)
		if len(m.Keyboard) > 0 {
			b.WriteString("\n### keyboard\n")
			for _, row := range m.Keyboard {
				var cells, data []string
				for _, btn := range row {
					cells = append(cells, "[ "+btn.Text+" ]")
					data = append(data, btn.Data)
				}
				fmt.Fprintf(b, "%-60s %s\n", strings.Join(cells, " "), strings.Join(data, " "))
			}
		}
		if m.ForceReply {
			fmt.Fprintf(b, "\n### reply box\nselective: %v, placeholder: %q\n", m.Selective, m.Placeholder)
		}
		fmt.Fprintf(b, "\n### html\n%s\n\n", m.HTML)
	}
}

func TestGoldenPromptShapes(t *testing.T) {
	t.Parallel()
	for _, lang := range goldenLangs {
		for _, tt := range goldenShapes {
			t.Run(lang+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				request, end := tt.in(lang)
				golden.Check(t, lang+"/prompt-"+tt.name+".golden", []byte(sendAndFinish(t, "golden-"+tt.name, request, end)))
			})
		}
	}
}

func TestGoldenEndStates(t *testing.T) {
	t.Parallel()
	for _, lang := range goldenLangs {
		for _, tt := range goldenEnds {
			t.Run(lang+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				request, _ := goldenShapes[1].in(lang)
				end := tt.end
				if lang == "th" {
					end = tt.thEnd
				}
				golden.Check(t, lang+"/end-"+tt.name+".golden", []byte(sendAndFinish(t, "golden-end", request, end)))
			})
		}
	}
}

// TestGoldenSeen: a prompt that offers Seen, as an escalation step posts it
// (with the line saying why it is asked there); the same prompt once Alice
// pressed Seen (the line saying so, the Seen button gone, the others kept);
// and the ended question, which keeps both lines above the status line.
func TestGoldenSeen(t *testing.T) {
	t.Parallel()
	for _, lang := range goldenLangs {
		t.Run(lang, func(t *testing.T) {
			t.Parallel()
			request, res := goldenShapes[1].in(lang)
			rec := escalatedRecord(t, "golden-seen", request)
			fake, ch := newReachRig(t, telegramtest.Options{})
			ctx := context.Background()
			open := rec.PlanFor(1, ch.Capabilities())
			refs, err := sendAll(ctx, ch, fmt.Sprint(leadChat), open)
			if err != nil {
				t.Fatal(err)
			}
			sent := fake.BotMessages(leadChat)
			checkQuiet(t, "sent", sent)
			w := locale.For(lang)
			if got := buttonTexts(sent[0]); len(got) == 0 || got[len(got)-1] != w.Get("ButtonSeen") {
				t.Errorf("buttons %q: no Seen at the end", got)
			}
			if len(open.Notes) != 1 || !strings.HasSuffix(sent[0].Text, w.Get("ClosingButtons")+"\n\n"+open.Notes[0]) {
				t.Errorf("the prompt does not end with the instructions, then why it is asked here:\n%s", sent[0].Text)
			}
			var b strings.Builder
			fmt.Fprintf(&b, "# %d message(s) as sent in %s by escalation step 1\n\n", len(refs), rec.Places[1].Name)
			renderChat(&b, sent)

			seenBy := personOf(alice)
			rec.Acknowledged = &seenBy
			seen := rec.PlanFor(1, ch.Capabilities())
			for _, ref := range refs {
				if err := ch.Update(ctx, ref, seen); err != nil {
					t.Fatal(err)
				}
			}
			updated := fake.BotMessages(leadChat)
			checkQuiet(t, "updated", updated)
			if got, want := buttonTexts(updated[0]), withoutSeen(sent[0], lang); !slices.Equal(got, want) {
				t.Errorf("buttons after Seen %q, want %q", got, want)
			}
			if want := "\n\n" + open.Notes[0] + "\n" + w.Format("SeenBy", map[string]any{"Who": "Alice"}); !strings.HasSuffix(updated[0].Text, want) {
				t.Errorf("the prompt after Seen does not end with %q:\n%s", want, updated[0].Text)
			}
			// Updating again changes nothing.
			edited := fake.Stats().Edited
			for _, ref := range refs {
				if err := ch.Update(ctx, ref, seen); err != nil {
					t.Errorf("update again: %v", err)
				}
			}
			if fake.Stats().Edited != edited {
				t.Error("updating again edited a message")
			}
			fmt.Fprintf(&b, "# after %s pressed Seen\n\n", seenBy.Name)
			renderChat(&b, updated)

			// Answered in the leads' chat, by Bob: the status line says
			// who and where, as for every question shown in several
			// places.
			answeredBy := personOf(bob)
			res.AnsweredBy, res.Place = &answeredBy, rec.Places[1].Name
			end := ending(seen, rec.Request, res)
			for _, ref := range refs {
				if err := ch.Finish(ctx, ref, end); err != nil {
					t.Fatal(err)
				}
			}
			ended := fake.BotMessages(leadChat)
			checkQuiet(t, "ended", ended)
			checkEnded(t, seen, end.Status, updated, ended)
			fmt.Fprintf(&b, "# after the end: %q\n\n", end.Status)
			renderChat(&b, ended)
			golden.Check(t, lang+"/prompt-seen.golden", []byte(b.String()))
		})
	}
}

// boxInbox opens a reply box for every tap, in the words of lang, and
// keeps the box it is handed.
type boxInbox struct {
	plan engine.Plan
	lang string
	box  engine.MessageRef
}

func (b *boxInbox) Tap(context.Context, engine.Tap) engine.TapReply {
	return engine.TapReply{Notice: engine.NoticeOther, Locale: b.lang, Action: engine.TapOpenReply,
		QuestionID: b.plan.ID, ReplyTo: b.plan.Sections[0].Question}
}

func (b *boxInbox) Reply(context.Context, engine.TextReply) engine.ReplyOutcome {
	return engine.ReplyOutcome{}
}

func (b *boxInbox) Attach(_ context.Context, _ string, ref engine.MessageRef) error {
	b.box = ref
	return nil
}

// TestGoldenReplyBox: the reply box an "Other…" tap opens in a group, in
// the question's language, and the same box once the question ended: what
// it asked, no longer telling anyone to reply, and the status line.
func TestGoldenReplyBox(t *testing.T) {
	t.Parallel()
	for _, lang := range goldenLangs {
		t.Run(lang, func(t *testing.T) {
			t.Parallel()
			request, res := goldenShapes[0].in(lang)
			req, err := askbridge.DecodeRequest([]byte(request))
			if err != nil {
				t.Fatal(err)
			}
			fake, ch := newGoldenRig(t)
			plan := engine.BuildPlan("golden-box", req, ch.Capabilities())
			refs, err := sendAll(context.Background(), ch, fmt.Sprint(opsGroup), plan)
			if err != nil {
				t.Fatal(err)
			}
			prompt := fake.BotMessages(opsGroup)[0]
			in := &boxInbox{plan: plan, lang: plan.Locale}
			query := tapOther(t, fake, ch, in, prompt)
			msgs := fake.BotMessages(opsGroup)
			if len(msgs) != 2 || in.box.Part != engine.PartReplyBox {
				t.Fatalf("%d messages, box %+v: no reply box attached", len(msgs), in.box)
			}
			w := locale.For(lang)
			box := msgs[1]
			if a, _ := fake.Answer(query); a.Text != engine.NoticeOther.Text(lang) {
				t.Errorf("the tap was answered %q", a.Text)
			}
			if !box.ForceReply || !box.Selective || box.Placeholder != w.Get("ReplyBoxPlaceholder") || !slices.Equal(box.TextMentions, []int64{alice.ID}) {
				t.Errorf("reply box %+v", box)
			}
			if !strings.Contains(box.Text, w.Get("ReplyBoxHint")) {
				t.Errorf("the box does not say %q: %q", w.Get("ReplyBoxHint"), box.Text)
			}
			// The box mentions the tapper, and nobody else.
			if len(box.Mentions) != 0 || box.LinkPreview {
				t.Errorf("the box mentions %v, link preview %v", box.Mentions, box.LinkPreview)
			}
			var b strings.Builder
			b.WriteString("# the prompt, and the box an \"Other…\" tap by Alice opened\n\n")
			renderChat(&b, msgs)
			end := ending(plan, req, res)
			for _, ref := range append(refs, in.box) {
				if err := ch.Finish(context.Background(), ref, end); err != nil {
					t.Fatal(err)
				}
			}
			closed := fake.BotMessages(opsGroup)[1]
			if strings.Contains(closed.Text, w.Get("ReplyBoxHint")) || !strings.HasSuffix(closed.Text, "\n\n"+end.Status) {
				t.Errorf("the closed box shows %q", closed.Text)
			}
			if len(closed.Mentions) != 0 || closed.LinkPreview {
				t.Errorf("the closed box mentions %v, link preview %v", closed.Mentions, closed.LinkPreview)
			}
			fmt.Fprintf(&b, "# after the end: %q\n\n", end.Status)
			renderChat(&b, fake.BotMessages(opsGroup))
			golden.Check(t, lang+"/reply-box.golden", []byte(b.String()))
		})
	}
}

// tapOther feeds the channel Alice's tap on the prompt's "Other…" button
// as Telegram delivers it, waits for the work it started, and returns the
// callback query's id.
func tapOther(t *testing.T, fake *telegramtest.Server, ch *telegram.Channel, in engine.Inbox, prompt telegramtest.Message) string {
	t.Helper()
	var data string
	for _, row := range prompt.Keyboard {
		for _, btn := range row {
			if strings.HasSuffix(btn.Data, ":o") {
				data = btn.Data
			}
		}
	}
	// The fake registers the query (the update it queues is not polled).
	q, err := fake.TapData(opsGroup, prompt.ID, alice, data)
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(map[string]any{
		"update_id": 1,
		"callback_query": map[string]any{
			"id": q, "from": map[string]any{"id": alice.ID, "is_bot": false, "first_name": alice.FirstName},
			"message": map[string]any{"message_id": prompt.ID, "date": 1700000000, "chat": map[string]any{"id": opsGroup, "type": "supergroup"}},
			"data":    data,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.HandleUpdateJSON(context.Background(), in, body); err != nil {
		t.Fatal(err)
	}
	return q
}

func TestLongPromptSplitsAndEveryPartIsEdited(t *testing.T) {
	t.Parallel()
	req, err := askbridge.DecodeRequest([]byte(longRequest()))
	if err != nil {
		t.Fatal(err)
	}
	parts := telegram.PromptParts(engine.BuildPlan("long", req, telegram.Capabilities))
	if len(parts) < 2 {
		t.Fatalf("the long prompt fits one message (%d characters)", engine.TextLength(parts[0]))
	}
	out := sendAndFinish(t, "long", longRequest(), answered("q1", "Option 1.1 & more"))
	if n := strings.Count(out, "\n\nAnswered: Option 1.1 & more\n"); n != len(parts) {
		t.Errorf("%d of %d parts show the status line", n, len(parts))
	}
}

// TestLongContextSplitsBetweenBlocks: the longest context is cut into
// messages only between its blocks, each message within Telegram's limit
// and balanced (the fake refuses any other), and every block arrives once,
// in order, after the intro and before the question.
func TestLongContextSplitsBetweenBlocks(t *testing.T) {
	t.Parallel()
	for _, lang := range goldenLangs {
		t.Run(lang, func(t *testing.T) {
			t.Parallel()
			shape := goldenShapes[slices.IndexFunc(goldenShapes, func(s goldenShape) bool { return s.name == "long-context" })]
			request, _ := shape.in(lang)
			req, err := askbridge.DecodeRequest([]byte(request))
			if err != nil {
				t.Fatal(err)
			}
			if n := uniseg.GraphemeClusterCount(req.Context); n != askbridge.MaxContextChars {
				t.Fatalf("the context has %d characters, want %d", n, askbridge.MaxContextChars)
			}
			plan := engine.BuildPlan("ctx", req, telegram.Capabilities)
			parts := telegram.PromptParts(plan)
			blocks := markup.Parse(req.Context).Telegram(4096 - 1000)
			var at []int // the part each block is in
			for _, block := range blocks {
				i := slices.IndexFunc(parts, func(p string) bool { return strings.Contains(p, block) })
				if i < 0 {
					t.Fatalf("block %q is in no part whole", block)
				}
				at = append(at, i)
			}
			if !slices.IsSorted(at) || at[0] != 0 || at[len(at)-1] == 0 {
				t.Errorf("the blocks are in parts %v: want the context to start in the first and go on in the next", at)
			}
			intro := strings.Index(parts[0], "<b>"+plan.Intro+"</b>")
			if first := strings.Index(parts[0], blocks[0]); intro != 0 || first < intro {
				t.Errorf("the context does not follow the intro:\n%s", parts[0])
			}
			lastBlock := at[len(at)-1]
			question := slices.IndexFunc(parts, func(p string) bool { return strings.Contains(p, plan.Sections[0].Question) })
			if question < lastBlock || question == lastBlock &&
				strings.Index(parts[question], plan.Sections[0].Question) < strings.Index(parts[question], blocks[len(blocks)-1]) {
				t.Errorf("the question (part %d) does not follow the context (last block in part %d)", question, lastBlock)
			}
			fake, ch := newGoldenRig(t)
			if _, err := sendAll(context.Background(), ch, fmt.Sprint(opsGroup), plan); err != nil {
				t.Fatalf("Telegram refused a part: %v", err)
			}
			for i, m := range fake.BotMessages(opsGroup) {
				if engine.TextLength(m.Text) > 4096-1000 {
					t.Errorf("part %d has %d characters", i, engine.TextLength(m.Text))
				}
			}
		})
	}
}

// TestPartOfOnlyInstructions: when the instructions alone take the last
// message, the ended question shows that message as its status line alone,
// and every other part keeps its text and its number.
func TestPartOfOnlyInstructions(t *testing.T) {
	t.Parallel()
	for _, lang := range goldenLangs {
		t.Run(lang, func(t *testing.T) {
			t.Parallel()
			w := locale.For(lang)
			// A context just long enough to push the instructions into a
			// part of their own.
			var req askbridge.Request
			var plan engine.Plan
			var parts []string
			for n := 2500; ; n++ {
				if n > askbridge.MaxContextChars {
					t.Fatal("no context length leaves the instructions alone")
				}
				request := fmt.Sprintf(`{"locale":%q,"context":%q,"questions":[{"id":"a","header":"H","question":"Q?","options":[{"label":"A"},{"label":"B"}]}]}`,
					lang, strings.Repeat("x", n))
				var err error
				if req, err = askbridge.DecodeRequest([]byte(request)); err != nil {
					t.Fatal(err)
				}
				plan = engine.BuildPlan("alone", req, telegram.Capabilities)
				parts = telegram.PromptParts(plan)
				if len(parts) == 2 && strings.HasPrefix(parts[1], "<i>") {
					break
				}
			}
			fake, ch := newGoldenRig(t)
			refs, err := sendAll(context.Background(), ch, fmt.Sprint(opsGroup), plan)
			if err != nil {
				t.Fatal(err)
			}
			sent := fake.BotMessages(opsGroup)
			if !strings.HasPrefix(sent[1].Text, w.Get("FreeText")) || len(sent[1].Keyboard) == 0 {
				t.Fatalf("the last part is not the instructions with the buttons:\n%s", sent[1].Text)
			}
			end := ending(plan, req, askbridge.NoAnswer("", askbridge.ReasonCancelled, ""))
			for _, ref := range refs {
				if err := ch.Finish(context.Background(), ref, end); err != nil {
					t.Fatal(err)
				}
			}
			ended := fake.BotMessages(opsGroup)
			if ended[0].Text != sent[0].Text+"\n\n"+w.Get("StatusCancelled") {
				t.Errorf("the first part after the end:\n%s", ended[0].Text)
			}
			if ended[1].Text != w.Get("StatusCancelled") || len(ended[1].Keyboard) != 0 {
				t.Errorf("the part of the instructions after the end: %q %v", ended[1].Text, ended[1].Keyboard)
			}
		})
	}
}

// TestOverlongPlanStillFits sends a plan no valid request makes (one
// question line of 10,000 characters to escape) and checks that every part
// is taken by the fake, status line included.
func TestOverlongPlanStillFits(t *testing.T) {
	t.Parallel()
	fake, ch := newGoldenRig(t)
	plan := engine.Plan{ID: "huge", Mode: engine.ModeText, Intro: "Question for you:", FreeText: "Free text.", Closing: "Reply.",
		Sections: []engine.Section{{Header: "H", Question: strings.Repeat("<&> 🙂 ", 1500)}}}
	refs, err := sendAll(context.Background(), ch, fmt.Sprint(opsGroup), plan)
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) < 3 {
		t.Fatalf("%d parts", len(refs))
	}
	for _, ref := range refs {
		if err := ch.Finish(context.Background(), ref, engine.Ending{Plan: plan, Status: strings.Repeat("Answered: x & y, ", 40)}); err != nil {
			t.Fatal(err)
		}
	}
	total := 0
	for _, m := range fake.BotMessages(opsGroup) {
		total += strings.Count(m.Text, "🙂")
	}
	if total != 1500 {
		t.Errorf("%d of 1500 pieces arrived", total)
	}
}

// TestNoLinkPreviews: no message the channel posts or edits unfurls a
// link: the prompt, its end, the reply box (open and closed) and a
// notification, each with a link in it.
func TestNoLinkPreviews(t *testing.T) {
	t.Parallel()
	req, err := askbridge.DecodeRequest([]byte(`{"context":"See https://ci.example.com/4812","questions":[{"id":"a","header":"Build","question":"Retry https://ci.example.com/4812?","options":[{"label":"Yes"},{"label":"No"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	fake, ch := newGoldenRig(t)
	plan := engine.BuildPlan("links", req, ch.Capabilities())
	refs, err := sendAll(context.Background(), ch, fmt.Sprint(opsGroup), plan)
	if err != nil {
		t.Fatal(err)
	}
	in := &boxInbox{plan: plan, lang: plan.Locale}
	tapOther(t, fake, ch, in, fake.BotMessages(opsGroup)[0])
	if err := ch.Notify(context.Background(), fmt.Sprint(opsGroup), "", "The log: https://ci.example.com/4812"); err != nil {
		t.Fatal(err)
	}
	msgs := fake.BotMessages(opsGroup)
	if len(msgs) != 3 {
		t.Fatalf("%d messages, want the prompt, the box and the notification", len(msgs))
	}
	checkQuiet(t, "sent", []telegramtest.Message{msgs[0], msgs[2]})
	if msgs[1].LinkPreview {
		t.Error("the reply box shows a link preview")
	}
	end := ending(plan, req, answered("a", "Yes"))
	for _, ref := range append(refs, in.box) {
		if err := ch.Finish(context.Background(), ref, end); err != nil {
			t.Fatal(err)
		}
	}
	for i, m := range fake.BotMessages(opsGroup)[:2] {
		if m.Edits == 0 || m.LinkPreview {
			t.Errorf("message %d after the end: %d edits, link preview %v", i+1, m.Edits, m.LinkPreview)
		}
	}
}

func (*boxInbox) Locale() string { return "en" }
