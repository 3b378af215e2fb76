package discord

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/markup"
	"github.com/askbridge/askbridge/locale"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func mustRequest(t *testing.T, body string) askbridge.Request {
	t.Helper()
	req, err := askbridge.DecodeRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return req
}

var long = strings.Repeat("Which of these matters most for the release, given the constraints we discussed? ", 5)

var longTH = strings.Repeat("ข้อใดสำคัญที่สุดสำหรับการปล่อยรุ่นนี้ เมื่อคิดถึงข้อจำกัดที่เราคุยกันไว้? ", 5)

// buildFailure is the context of ask-user.md §7's example, with a link and
// an @everyone.
const buildFailure = "Build **#4812** failed on `main`:\n```\nTestPay … FAIL\n```\nSee [the log](https://ci.example.com/4812) — @everyone"

// longContext is context of the most characters a request may carry
// (3,000): a paragraph, a list, a long code block and a link.
var longContext = func() string {
	var b strings.Builder
	b.WriteString("Build **#4812** failed on `main` after the merge of <@123>'s change; @here please look.\n\n")
	b.WriteString("- **unit**: 1 failure\n- *integration*: skipped\n- lint: clean, see https://ci.example.com/4812/lint\n\n```\n")
	for i := 1; b.Len() < 2850; i++ {
		fmt.Fprintf(&b, "--- FAIL: TestPay/case_%03d (0.01s)\n    pay_test.go:%d: got 402, want 200\n", i, 100+i)
	}
	b.WriteString("```\n\nSee [the log](https://ci.example.com/4812).")
	for b.Len() < askbridge.MaxContextChars {
		b.WriteString(" Retry once if it looks flaky.")
	}
	return b.String()[:askbridge.MaxContextChars]
}()

// shapes are the prompts the goldens record, each as an English request
// and as a Thai one ("locale":"th", Thai headers, questions and labels).
var shapes = []struct{ name, body, th string }{
	{"single_select",
		`{"questions":[{"id":"deploy_target","header":"Target","question":"Where should this deploy?","options":[{"label":"Staging (Recommended)"},{"label":"Production"}]}]}`,
		`{"locale":"th","questions":[{"id":"deploy_target","header":"เป้าหมาย","question":"จะปล่อยขึ้นที่ไหน?","options":[{"label":"สเตจจิ้ง (แนะนำ)"},{"label":"โปรดักชัน"}]}]}`},
	{"single_select_descriptions",
		`{"agent":"release-bot","questions":[{"id":"deploy_target","header":"Target","question":"Where should this deploy?","options":[{"label":"Staging (Recommended)","description":"Safer default"},{"label":"Production","description":"Goes to every user at once"},{"label":"Canary","description":"5% of traffic"},{"label":"Nowhere"}]}]}`,
		`{"locale":"th","agent":"release-bot","questions":[{"id":"deploy_target","header":"เป้าหมาย","question":"จะปล่อยขึ้นที่ไหน?","options":[{"label":"สเตจจิ้ง (แนะนำ)","description":"ปลอดภัยกว่า"},{"label":"โปรดักชัน","description":"ถึงผู้ใช้ทุกคนพร้อมกัน"},{"label":"คานารี","description":"5% ของทราฟฟิก"},{"label":"ไม่ปล่อย"}]}]}`},
	{"multi_select",
		`{"questions":[{"id":"checks","header":"Checks","question":"Which checks should run?","multiSelect":true,"options":[{"label":"Unit"},{"label":"Integration","description":"About 20 minutes"},{"label":"Load"}]}]}`,
		`{"locale":"th","questions":[{"id":"checks","header":"การตรวจ","question":"ควรรันการตรวจอะไรบ้าง?","multiSelect":true,"options":[{"label":"ยูนิต"},{"label":"อินทิเกรชัน","description":"ประมาณ 20 นาที"},{"label":"โหลด"}]}]}`},
	{"two_questions",
		`{"questions":[{"id":"target","header":"Target","question":"Where?","options":[{"label":"Staging"},{"label":"Production"}]},{"id":"when","header":"When","question":"When should it go out?","options":[{"label":"Now"},{"label":"Tonight","description":"After 22:00 UTC"}]}]}`,
		`{"locale":"th","questions":[{"id":"target","header":"เป้าหมาย","question":"ที่ไหน?","options":[{"label":"สเตจจิ้ง"},{"label":"โปรดักชัน"}]},{"id":"when","header":"เวลา","question":"ควรปล่อยเมื่อไร?","options":[{"label":"ตอนนี้"},{"label":"คืนนี้","description":"หลัง 22:00 UTC"}]}]}`},
	{"three_questions",
		`{"questions":[{"id":"target","header":"Target","question":"Where?","options":[{"label":"Staging"},{"label":"Production"}]},{"id":"checks","header":"Checks","question":"Which checks?","multiSelect":true,"options":[{"label":"Unit"},{"label":"Integration"},{"label":"Load"}]},{"id":"notify","header":"Notify","question":"Who hears about it?","options":[{"label":"Team"},{"label":"Nobody"}]}]}`,
		`{"locale":"th","questions":[{"id":"target","header":"เป้าหมาย","question":"ที่ไหน?","options":[{"label":"สเตจจิ้ง"},{"label":"โปรดักชัน"}]},{"id":"checks","header":"การตรวจ","question":"ตรวจอะไรบ้าง?","multiSelect":true,"options":[{"label":"ยูนิต"},{"label":"อินทิเกรชัน"},{"label":"โหลด"}]},{"id":"notify","header":"แจ้ง","question":"ใครควรได้รับแจ้ง?","options":[{"label":"ทีม"},{"label":"ไม่ต้องแจ้ง"}]}]}`},
	{"markup_and_mentions",
		`{"agent":"@everyone","questions":[{"id":"a","header":"<@&42>","question":"Ping @here and <@123>? **bold** _it_ ~~s~~ ` + "`code`" + ` ||spoiler|| [link](https://example.com)","options":[{"label":"# heading","description":"> quote"},{"label":"- list"},{"label":"1. item"}]}]}`,
		`{"locale":"th","agent":"@everyone","questions":[{"id":"a","header":"<@&42>","question":"แจ้ง @here และ <@123> ไหม? **ตัวหนา** _เอียง_ ~~ขีด~~ ` + "`โค้ด`" + ` ||สปอยล์|| [ลิงก์](https://example.com)","options":[{"label":"# หัวข้อ","description":"> อ้างอิง"},{"label":"- รายการ"},{"label":"1. ข้อ"}]}]}`},
	{"long_split",
		fmt.Sprintf(`{"questions":[{"id":"a","header":"First","question":%q,"options":[{"label":"Alpha","description":%q},{"label":"Beta","description":%q},{"label":"Gamma","description":%q},{"label":"Delta","description":%q}]},{"id":"b","header":"Second","question":%q,"options":[{"label":"Alpha","description":%q},{"label":"Beta","description":%q},{"label":"Gamma"},{"label":"Delta"}]},{"id":"c","header":"Third","question":%q,"multiSelect":true,"options":[{"label":"Alpha","description":%q},{"label":"Beta","description":%q},{"label":"Gamma","description":%q},{"label":"Delta","description":%q}]}]}`,
			long, strings.Repeat("a", 190), strings.Repeat("b", 190), strings.Repeat("c", 190), strings.Repeat("d", 190),
			long, strings.Repeat("e", 190), strings.Repeat("f", 190),
			long, strings.Repeat("g", 190), strings.Repeat("h", 190), strings.Repeat("i", 190), strings.Repeat("j", 190)),
		fmt.Sprintf(`{"locale":"th","questions":[{"id":"a","header":"ข้อแรก","question":%q,"options":[{"label":"ก","description":%q},{"label":"ข","description":%q},{"label":"ค","description":%q},{"label":"ง","description":%q}]},{"id":"b","header":"ข้อสอง","question":%q,"options":[{"label":"ก","description":%q},{"label":"ข","description":%q},{"label":"ค"},{"label":"ง"}]},{"id":"c","header":"ข้อสาม","question":%q,"multiSelect":true,"options":[{"label":"ก","description":%q},{"label":"ข","description":%q},{"label":"ค","description":%q},{"label":"ง","description":%q}]}]}`,
			longTH, strings.Repeat("ก", 190), strings.Repeat("ข", 190), strings.Repeat("ค", 190), strings.Repeat("ง", 190),
			longTH, strings.Repeat("จ", 190), strings.Repeat("ฉ", 190),
			longTH, strings.Repeat("ช", 190), strings.Repeat("ซ", 190), strings.Repeat("ฌ", 190), strings.Repeat("ญ", 190))},
	{"context",
		fmt.Sprintf(`{"context":%q,"questions":[{"id":"deploy_target","header":"Target","question":"Where should this deploy?","options":[{"label":"Staging (Recommended)"},{"label":"Production"}]}]}`, buildFailure),
		fmt.Sprintf(`{"locale":"th","context":%q,"questions":[{"id":"deploy_target","header":"เป้าหมาย","question":"จะปล่อยขึ้นที่ไหน?","options":[{"label":"สเตจจิ้ง (แนะนำ)"},{"label":"โปรดักชัน"}]}]}`, buildFailure)},
	{"long_context",
		fmt.Sprintf(`{"agent":"ci-bot","context":%q,"questions":[{"id":"next","header":"Next","question":"What should happen to the release?","options":[{"label":"Retry the build"},{"label":"Roll back"},{"label":"Hold"}]}]}`, longContext),
		fmt.Sprintf(`{"locale":"th","agent":"ci-bot","context":%q,"questions":[{"id":"next","header":"ถัดไป","question":"จะทำอย่างไรกับรุ่นนี้ต่อ?","options":[{"label":"บิลด์ใหม่"},{"label":"ย้อนกลับ"},{"label":"รอก่อน"}]}]}`, longContext)},
}

// shapeRequests is every shape in every language: the golden file's name
// (the shape's, with ".th" for Thai) and the request.
func shapeRequests(t *testing.T) []struct {
	name string
	req  askbridge.Request
} {
	t.Helper()
	var out []struct {
		name string
		req  askbridge.Request
	}
	for _, s := range shapes {
		for _, l := range []struct{ suffix, body string }{{"", s.body}, {".th", s.th}} {
			out = append(out, struct {
				name string
				req  askbridge.Request
			}{s.name + l.suffix, mustRequest(t, l.body)})
		}
	}
	return out
}

// ends are the ways a question ends the goldens show: answered (the
// second option of each single-select question, the first and last of a
// multi-select one), skipped, expired, cancelled.
func ends(id string, req askbridge.Request) []struct {
	name string
	res  askbridge.Result
} {
	answers := map[string][]string{}
	for _, q := range req.Questions {
		if q.MultiSelect {
			answers[q.ID] = []string{q.Options[0].Label, q.Options[len(q.Options)-1].Label}
		} else {
			answers[q.ID] = []string{q.Options[1].Label}
		}
	}
	return []struct {
		name string
		res  askbridge.Result
	}{
		{"answered", askbridge.Answered(id, answers, nil, askbridge.ViaText)},
		{"skipped", askbridge.NoAnswer(id, askbridge.ReasonSkipped, "")},
		{"expired", askbridge.NoAnswer(id, askbridge.ReasonTimeout, "")},
		{"cancelled", askbridge.NoAnswer(id, askbridge.ReasonCancelled, "")},
	}
}

// describe renders what Discord receives for one message in a form a
// reviewer can read: the content as sent, then each row of buttons, then
// the request body.
func describe(b *strings.Builder, title string, ms *discordgo.MessageSend) {
	shows(b, title, ms.Content, ms.Components)
	body, _ := json.Marshal(ms)
	fmt.Fprintf(b, "--- body: %s\n\n", body)
}

// shows renders a message's content and each row of its buttons.
func shows(b *strings.Builder, title, content string, rows []discordgo.MessageComponent) {
	fmt.Fprintf(b, "=== %s (%d characters) ===\n%s\n", title, engine.TextLength(content), content)
	for i, row := range rows {
		fmt.Fprintf(b, "--- row %d:", i+1)
		for _, c := range row.(discordgo.ActionsRow).Components {
			btn := c.(discordgo.Button)
			style := map[discordgo.ButtonStyle]string{discordgo.PrimaryButton: "primary", discordgo.SecondaryButton: "secondary"}[btn.Style]
			fmt.Fprintf(b, " [%s %q custom_id=%s]", style, btn.Label, btn.CustomID)
		}
		b.WriteString("\n")
	}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the golden file (run go test -update and review the diff):\n%s", path, got)
	}
}

// TestGoldenPrompts records every prompt shape, in English and in Thai,
// as sent, then every message of it as edited when the question ends each
// way.
func TestGoldenPrompts(t *testing.T) {
	for _, shape := range shapeRequests(t) {
		t.Run(shape.name, func(t *testing.T) {
			id := "golden-" + strings.TrimSuffix(shape.name, ".th")
			plan := engine.BuildPlan(id, shape.req, caps)
			parts := renderParts(plan)
			var b strings.Builder
			for i, part := range parts {
				ms := &discordgo.MessageSend{Content: part, AllowedMentions: noPings(), Flags: noEmbeds}
				if i == len(parts)-1 {
					ms.Components = components(plan)
				}
				if n := engine.TextLength(part); n > partLimit {
					t.Errorf("part %d is %d characters", i+1, n)
				}
				describe(&b, fmt.Sprintf("message %d of %d", i+1, len(parts)), ms)
			}
			for _, end := range ends(id, shape.req) {
				status := engine.StatusLine(shape.req, end.res)
				for i := range parts {
					edited, ok := endedPart(plan, i, status)
					if !ok {
						t.Fatalf("%s: no part %d", end.name, i)
					}
					fmt.Fprintf(&b, "=== %s: message %d of %d (%d characters) ===\n%s\n\n", end.name, i+1, len(parts), engine.TextLength(edited), edited)
				}
			}
			// Every edit is the same but for its content.
			none := []discordgo.MessageComponent{}
			body, _ := json.Marshal(&discordgo.MessageEdit{Components: &none, AllowedMentions: noPings(), Flags: noEmbeds})
			fmt.Fprintf(&b, "--- every edit: %s\n", body)
			golden(t, shape.name, b.String())
		})
	}
}

// TestGoldenEndStates records the edit of an ended prompt in full, in
// English and in Thai, for each way a question ends.
func TestGoldenEndStates(t *testing.T) {
	for _, l := range []struct{ name, body string }{{"end_states", shapes[1].body}, {"end_states.th", shapes[1].th}} {
		t.Run(l.name, func(t *testing.T) {
			req := mustRequest(t, l.body)
			id := "golden-end"
			plan := engine.BuildPlan(id, req, caps)
			all := ends(id, req)
			free := map[string][]string{"deploy_target": {"somewhere else"}}
			all = append(all[:1], append([]struct {
				name string
				res  askbridge.Result
			}{{"answered_free_text", askbridge.Answered(id, free, nil, askbridge.ViaText)}}, all[1:]...)...)
			var b strings.Builder
			for _, end := range all {
				edited, _ := endedPart(plan, 0, engine.StatusLine(req, end.res))
				none := []discordgo.MessageComponent{}
				edit := &discordgo.MessageEdit{Content: &edited, Components: &none, AllowedMentions: noPings(), Flags: noEmbeds}
				body, _ := json.Marshal(edit)
				fmt.Fprintf(&b, "=== %s ===\n%s\n--- body: %s\n\n", end.name, edited, body)
			}
			golden(t, l.name, b.String())
		})
	}
}

func TestEscape(t *testing.T) {
	cases := []struct{ in, want string }{
		{"plain words", "plain words"},
		{"@everyone @here", `\@everyone \@here`},
		{"<@123> <@&4> <#5>", `\<\@123\> \<\@&4\> \<\#5\>`},
		{"**b** __u__ ~~s~~ `c` ||x||", `\*\*b\*\* \_\_u\_\_ \~\~s\~\~ \` + "`c\\`" + ` \|\|x\|\|`},
		{"# h\n> q\n- l\n+ p\n12. n\n-# small", "\\# h\n\\> q\n\\- l\n\\+ p\n12\\. n\n\\-\\# small"},
		{"a-b 3.5 x.", "a-b 3.5 x."},
		{`back\slash`, `back\\slash`},
		{"[t](u)", `\[t\]\(u\)`},
	}
	for _, c := range cases {
		if got := escape(c.in); got != c.want {
			t.Errorf("escape(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestFinishedFitsTheLimit: a status line longer than the room kept for
// it still fits: the last lines give way to "…", and a status too long
// for any message is cut.
func TestFinishedFitsTheLimit(t *testing.T) {
	req := mustRequest(t, shapes[6].body) // long_split
	plan := engine.BuildPlan("fits", req, caps)
	parts := layout(plan)
	for _, status := range []string{"Answered: " + strings.Repeat("y", 300), "Answered: " + strings.Repeat("*", 3000)} {
		for i, part := range parts {
			got := finished(part, status)
			if n := engine.TextLength(got); n > maxContent {
				t.Errorf("part %d: finished message is %d characters", i, n)
			}
			if !strings.HasSuffix(got, "\n\n"+statusLine(status)) {
				t.Errorf("part %d: the status line is not under the text", i)
			}
			if trailingBackslashes(strings.TrimSuffix(got, "\n\n"+statusLine(status)))%2 == 1 {
				t.Errorf("part %d: the text ends in an escaping backslash", i)
			}
		}
	}
	if st := statusLine("Answered: " + strings.Repeat("*", 3000)); engine.TextLength(st) > maxContent/2 {
		t.Errorf("a status line of %d characters", engine.TextLength(st))
	}
	// One line longer than the room: cut.
	line := []line{{text: strings.Repeat("x", partLimit-5) + `\*`}}
	got := finished(line, "Answered: "+strings.Repeat("y", 300))
	if n := engine.TextLength(got); n > maxContent || !strings.Contains(got, "…\n\n**Answered") {
		t.Errorf("a long line finished as %d characters ending %q", n, got[len(got)-40:])
	}
}

// TestPartsEndBetweenLines: for every shape in every language, each part
// of the prompt leaves room for the status line and ends between lines
// (every option line and every block of context is whole in one part, the
// instructions too), and each ended part is that part less its
// instructions, with the status line: as many parts, none telling anyone
// to reply or tap.
func TestPartsEndBetweenLines(t *testing.T) {
	for _, shape := range shapeRequests(t) {
		t.Run(shape.name, func(t *testing.T) {
			plan := engine.BuildPlan("parts", shape.req, caps)
			parts := renderParts(plan)
			whole := []string{escape(plan.FreeText) + "\n" + escape(plan.Closing)}
			for _, s := range plan.Sections {
				for i, o := range s.Options {
					whole = append(whole, fmt.Sprintf("%d\\. %s", i+1, escape(o.Label)))
				}
			}
			if plan.Context != "" {
				// The context's blocks for a part of its own: each is
				// whole in the prompt, cut no further.
				for _, b := range markup.Parse(plan.Context).Discord(partLimit) {
					whole = append(whole, strings.Split(b, "\n")...)
				}
			}
			for _, w := range whole {
				in := 0
				for _, p := range parts {
					if strings.Contains(p, w) {
						in++
					}
				}
				if in == 0 {
					t.Errorf("no part holds %q whole", w)
				}
			}
			if !strings.HasSuffix(parts[len(parts)-1], whole[0]) {
				t.Errorf("the last part does not end with the instructions:\n%s", parts[len(parts)-1])
			}
			status := engine.StatusLine(shape.req, askbridge.NoAnswer("parts", askbridge.ReasonCancelled, ""))
			for i, p := range parts {
				if n := engine.TextLength(p); n > partLimit {
					t.Errorf("part %d is %d characters", i, n)
				}
				got, ok := endedPart(plan, i, status)
				want := strings.TrimSuffix(strings.TrimSuffix(p, whole[0]), "\n\n")
				if want == "" {
					want = statusLine(status)
				} else {
					want += "\n\n" + statusLine(status)
				}
				if !ok || got != want {
					t.Errorf("ended part %d:\n%s\nwant\n%s", i, got, want)
				}
			}
			if _, ok := endedPart(plan, len(parts), status); ok {
				t.Error("an ended part past the last")
			}
		})
	}
}

// TestInstructionsAlone: a prompt whose instructions fall in a part of
// their own ends with that part showing the status line alone, and a
// question is never parted from its first option.
func TestInstructionsAlone(t *testing.T) {
	desc := strings.Repeat("d", 190)
	var qs []string
	for i := range 2 {
		qs = append(qs, fmt.Sprintf(`{"id":"q%d","header":"H%d","question":"Which one, really?","options":[{"label":"A","description":%q},{"label":"B","description":%q},{"label":"C","description":%q},{"label":"D","description":%q}]}`, i, i, desc, desc, desc, desc))
	}
	req := mustRequest(t, `{"locale":"th","questions":[`+strings.Join(qs, ",")+`]}`)
	plan := engine.BuildPlan("alone", req, caps)
	parts := renderParts(plan)
	instr := escape(plan.FreeText) + "\n" + escape(plan.Closing)
	if len(parts) != 2 || parts[1] != instr {
		t.Fatalf("%d parts, the last:\n%s\nwant the instructions alone", len(parts), parts[len(parts)-1])
	}
	if got, _ := endedPart(plan, 1, "ข้ามแล้ว"); got != "**ข้ามแล้ว**" {
		t.Errorf("the instructions' part ended as %q", got)
	}
	if got, _ := endedPart(plan, 0, "ข้ามแล้ว"); got != parts[0]+"\n\n**ข้ามแล้ว**" {
		t.Errorf("the first part ended as:\n%s", got)
	}

	// A question that would end a part goes to the next with its options:
	// with the first questions a little longer each time, the third one's
	// first line comes to fit at the end of the first part, its first
	// option not.
	pushed := false
	for pad := range 60 {
		third := `{"id":"q2","header":"H2","question":"And this?","options":[{"label":"Yes, this one"},{"label":"No"}]}`
		first := strings.Replace(qs[0], "Which one, really?", "Which one, really?"+strings.Repeat(" x", pad), 1)
		plan := engine.BuildPlan("glue", mustRequest(t, `{"questions":[`+first+","+qs[1]+","+third+`]}`), caps)
		for i, p := range renderParts(plan) {
			if strings.HasSuffix(p, "**H2** And this?") {
				t.Errorf("pad %d: part %d ends with a question without its options", pad, i)
			}
			if i > 0 && strings.HasPrefix(p, "3\\) **H2** And this?\n1\\. Yes, this one") {
				pushed = true
			}
		}
	}
	if !pushed {
		t.Error("no prompt tried has a question that starts a part")
	}
}

// seenRecord is a question whose request has an escalation step, so its
// prompts offer Seen: body is the request, shown in a first place and,
// from the step on, in a second.
func seenRecord(t *testing.T, body string) engine.Record {
	t.Helper()
	req := mustRequest(t, body)
	first := askbridge.Target{Platform: Platform, Chat: "1000000000000000002"}
	step := askbridge.Target{Platform: Platform, Chat: "1000000000000000003"}
	return engine.Record{ID: "golden-seen", Status: askbridge.StatusPending, Request: req, Target: first, Places: []askbridge.Place{
		{Name: first.String(), Target: first},
		{Name: step.String(), Target: step, Step: 1},
	}}
}

// seenShapes are the requests of the Seen goldens: the single-select
// shape with descriptions, escalated after 10 minutes.
var seenShapes = []struct{ name, body string }{
	{"seen", strings.Replace(shapes[1].body, `{"agent"`, `{"timeoutSeconds":900,"escalate":[{"afterSeconds":600,"to":"discord:1000000000000000003"}],"agent"`, 1)},
	{"seen.th", strings.Replace(shapes[1].th, `{"locale":"th"`, `{"locale":"th","timeoutSeconds":900,"escalate":[{"afterSeconds":600,"to":"discord:1000000000000000003"}]`, 1)},
}

// seenBy is who presses Seen in the tests: a name with markup in it.
var seenBy = askbridge.Person{Platform: Platform, ID: "42", Name: "alice_b"}

// describeEdit renders an edit as describe renders a post.
func describeEdit(b *strings.Builder, title string, edit *discordgo.MessageEdit) {
	shows(b, title, *edit.Content, *edit.Components)
	body, _ := json.Marshal(edit)
	fmt.Fprintf(b, "--- body: %s\n\n", body)
}

// TestGoldenSeen records, in English and in Thai, the prompt of a request
// with an escalation step where the step asks (the note saying why, a Seen
// button), as Update edits it once someone pressed Seen (a "Seen by" note,
// no Seen button, the options kept), and as Finish edits it when the
// question is answered after that (the notes kept, above the status).
func TestGoldenSeen(t *testing.T) {
	for _, l := range seenShapes {
		t.Run(l.name, func(t *testing.T) {
			rec := seenRecord(t, l.body)
			w := locale.For(rec.Request.Locale)
			open := rec.PlanFor(1, caps)
			rec.Acknowledged = &seenBy
			seen := rec.PlanFor(1, caps)
			if len(renderParts(open)) != 1 || len(renderParts(seen)) != 1 {
				t.Fatalf("%d and %d parts, want one", len(renderParts(open)), len(renderParts(seen)))
			}
			var b strings.Builder
			ms := &discordgo.MessageSend{Content: renderParts(open)[0], Components: components(open), AllowedMentions: noPings(), Flags: noEmbeds}
			describe(&b, "where step 1 asks", ms)
			seenID := askbridge.EncodePayload(rec.ID, askbridge.Choice{Kind: askbridge.ControlSeen})
			if got := buttons(components(open)); len(got) != 6 || got[5] != "secondary "+w.Get("ButtonSeen")+" "+seenID {
				t.Errorf("buttons %q, want the options, Skip and a secondary Seen", got)
			}

			comps := components(seen)
			edit := &discordgo.MessageEdit{Content: &renderParts(seen)[0], Components: &comps, AllowedMentions: noPings(), Flags: noEmbeds}
			describeEdit(&b, "after Seen (Update)", edit)
			note := escape(w.Format("SeenBy", map[string]any{"Who": seenBy.Name}))
			if got := buttons(comps); !slices.Equal(got, buttons(components(open))[:5]) {
				t.Errorf("buttons after Seen %q, want those before less Seen", got)
			}
			if want := ms.Content + "\n" + note; *edit.Content != want {
				t.Errorf("after Seen:\n%s\nwant\n%s", *edit.Content, want)
			}

			q := rec.Request.Questions[0]
			answered := askbridge.Answered(rec.ID, map[string][]string{q.ID: {q.Options[1].Label}}, &seenBy, askbridge.ViaButton)
			status := engine.StatusLine(rec.Request, answered)
			content, _ := endedPart(seen, 0, status)
			none := []discordgo.MessageComponent{}
			describeEdit(&b, "answered after Seen (Finish)", &discordgo.MessageEdit{Content: &content, Components: &none, AllowedMentions: noPings(), Flags: noEmbeds})
			why := escape(w.Format("EscalatedWhy", map[string]any{"After": engine.HumanDuration(w, 10*time.Minute)}))
			if !strings.HasSuffix(content, "\n\n"+why+"\n"+note+"\n\n"+statusLine(status)) || strings.Contains(content, escape(open.Closing)) || !strings.Contains(status, q.Options[1].Label) {
				t.Errorf("the answered message does not end with the notes, then the status, without instructions:\n%s", content)
			}
			golden(t, l.name, b.String())
		})
	}
}

// buttons lists rendered buttons as "<style> <label> <custom_id>".
func buttons(rows []discordgo.MessageComponent) []string {
	var out []string
	for _, row := range rows {
		for _, c := range row.(discordgo.ActionsRow).Components {
			btn := c.(discordgo.Button)
			style := map[discordgo.ButtonStyle]string{discordgo.PrimaryButton: "primary", discordgo.SecondaryButton: "secondary"}[btn.Style]
			out = append(out, style+" "+btn.Label+" "+btn.CustomID)
		}
	}
	return out
}

// TestNotes: a plan's notes go under the instructions of the last part,
// escaped so that none pings or formats; they never move a line to another
// part; a message with notes stays within Discord's limit, a note too long
// for its room being cut; and an ended part keeps its notes, whole, above
// the status line, whatever gives way.
func TestNotes(t *testing.T) {
	plan := longPlan(t)
	before := renderParts(plan)
	plan.Notes = []string{"Seen by <@123> @everyone **x**", "- a list\nof two lines"}
	parts := renderParts(plan)
	if len(parts) != len(before) || len(layout(plan)) != len(before) {
		t.Fatalf("%d parts with notes, %d without", len(parts), len(before))
	}
	for i := range len(parts) - 1 {
		if parts[i] != before[i] {
			t.Errorf("part %d changed with the notes", i)
		}
	}
	notes := "\n\nSeen by \\<\\@123\\> \\@everyone \\*\\*x\\*\\*\n\\- a list of two lines"
	if last := parts[len(parts)-1]; last != before[len(before)-1]+notes {
		t.Errorf("the last part:\n%s\nwant the notes under\n%s", last, before[len(before)-1])
	}
	ended, _ := endedPart(plan, len(parts)-1, "Skipped")
	if !strings.HasSuffix(ended, notes+"\n\n**Skipped**") {
		t.Errorf("the ended last part:\n%s", ended)
	}
	if ended, _ := endedPart(plan, 0, "Skipped"); strings.Contains(ended, "Seen by") {
		t.Errorf("the first part shows the notes once ended:\n%s", ended)
	}

	// A last part full to the limit: the notes take the room left.
	full := line{text: strings.Repeat("x", partLimit)}
	long := []string{strings.Repeat("n", 150), strings.Repeat("*", 150)}
	got := join(append([]line{full}, noteLines(long, maxContent-partLimit-2)...))
	if n := engine.TextLength(got); n > maxContent || !strings.HasSuffix(got, "…") || !strings.Contains(got, "\n\n"+long[0]+"\n\\*") {
		t.Errorf("a full part with long notes: %d characters ending %q", n, got[len(got)-60:])
	}
	if lines := noteLines([]string{strings.Repeat("y", 3000)}, noteRoom); len(lines) != 1 || engine.TextLength(lines[0].text) != noteRoom {
		t.Errorf("a note of 3000 characters: %d lines", len(lines))
	}
	// Ended with a status of the most characters: the notes stay whole.
	status := "Answered: " + strings.Repeat("*", 3000)
	for i := range parts {
		got, _ := endedPart(plan, i, status)
		if n := engine.TextLength(got); n > maxContent {
			t.Errorf("ended part %d is %d characters", i, n)
		}
		if i == len(parts)-1 && !strings.Contains(got, notes+"\n\n"+statusLine(status)) {
			t.Errorf("ended part %d lost its notes", i)
		}
	}
}
