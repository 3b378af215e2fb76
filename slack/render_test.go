package slack

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/rivo/uniseg"
	"github.com/slack-go/slack"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
	"github.com/askbridge/askbridge/internal/golden"
	"github.com/askbridge/askbridge/locale"
)

// shown is what a golden file holds: each message as chat.postMessage (or
// chat.update) sends it.
type shown struct {
	Text   string        `json:"text"`
	Blocks []slack.Block `json:"blocks"`
}

func pretty(t *testing.T, msgs []message) []byte {
	t.Helper()
	var all []shown
	for _, m := range msgs {
		all = append(all, shown(m))
	}
	// Through a generic value, so the file shows "<" and "&" as they are
	// rather than as \u003c and \u0026 (the blocks marshal themselves).
	raw, err := json.Marshal(all)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	// Invisible format characters (U+200B ZERO WIDTH SPACE, U+2060 WORD
	// JOINER) are written as escapes, so a reader sees them.
	var out strings.Builder
	for _, r := range b.String() {
		if unicode.Is(unicode.Cf, r) {
			fmt.Fprintf(&out, "\\u%04x", r)
			continue
		}
		out.WriteRune(r)
	}
	return []byte(out.String())
}

func decode(t *testing.T, body string) askbridge.Request {
	t.Helper()
	req, err := askbridge.DecodeRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func plan(t *testing.T, id, body string) engine.Plan {
	t.Helper()
	ch := &Channel{}
	return engine.BuildPlan(id, decode(t, body), ch.Capabilities())
}

// shapes are the prompts the goldens show, each in English (body) and in
// Thai (th, "locale":"th", with Thai headers, questions and labels).
var shapes = []struct{ name, body, th string }{
	{"single_select",
		`{"questions":[{"id":"deploy_target","header":"Target","question":"Where should this deploy?","options":[{"label":"Staging (Recommended)"},{"label":"Production"}]}]}`,
		`{"locale":"th","questions":[{"id":"deploy_target","header":"เป้าหมาย","question":"จะปล่อยขึ้นที่ไหน?","options":[{"label":"สเตจจิ้ง (แนะนำ)"},{"label":"โปรดักชัน"}]}]}`},
	{"single_select_descriptions",
		`{"agent":"deploy-bot","questions":[{"id":"deploy_target","header":"Target","question":"Where should this deploy?","options":[{"label":"Staging (Recommended)","description":"Safer default"},{"label":"Production","description":"Live traffic & real users"},{"label":"Canary <5%>","description":"A slice of production"}]}]}`,
		`{"locale":"th","agent":"deploy-bot","questions":[{"id":"deploy_target","header":"เป้าหมาย","question":"จะปล่อยขึ้นที่ไหน?","options":[{"label":"สเตจจิ้ง (แนะนำ)","description":"ค่าเริ่มต้นที่ปลอดภัยกว่า"},{"label":"โปรดักชัน","description":"ผู้ใช้จริง & ทราฟฟิกจริง"},{"label":"คานารี <5%>","description":"ส่วนหนึ่งของโปรดักชัน"}]}]}`},
	{"multi_select",
		`{"questions":[{"id":"checks","header":"Checks","question":"Which checks should run?","multiSelect":true,"options":[{"label":"Unit"},{"label":"Integration"},{"label":"Load","description":"Slow: about 20 minutes"}]}]}`,
		`{"locale":"th","questions":[{"id":"checks","header":"การตรวจ","question":"จะรันการตรวจอะไรบ้าง?","multiSelect":true,"options":[{"label":"ยูนิต"},{"label":"อินทิเกรชัน"},{"label":"โหลด","description":"ช้า: ประมาณ 20 นาที"}]}]}`},
	{"two_questions",
		`{"questions":[{"id":"target","header":"Target","question":"Where?","options":[{"label":"Staging"},{"label":"Production"}]},{"id":"checks","header":"Checks","question":"Which checks?","multiSelect":true,"options":[{"label":"Unit"},{"label":"Load"}]}]}`,
		`{"locale":"th","questions":[{"id":"target","header":"เป้าหมาย","question":"ที่ไหน?","options":[{"label":"สเตจจิ้ง"},{"label":"โปรดักชัน"}]},{"id":"checks","header":"การตรวจ","question":"ตรวจอะไรบ้าง?","multiSelect":true,"options":[{"label":"ยูนิต"},{"label":"โหลด"}]}]}`},
	{"three_questions",
		`{"agent":"release <!channel> bot","questions":[{"id":"target","header":"Target","question":"Where? Ask <@U0BOSS> if unsure.","options":[{"label":"Staging"},{"label":"Production"}]},{"id":"checks","header":"Checks","question":"Which checks?","multiSelect":true,"options":[{"label":"Unit"},{"label":"Integration"},{"label":"Load"}]},{"id":"notify","header":"Notify","question":"Who hears about it?","options":[{"label":"Team","description":"#deploys & <!here>"},{"label":"Nobody"}]}]}`,
		`{"locale":"th","agent":"release <!channel> bot","questions":[{"id":"target","header":"เป้าหมาย","question":"ที่ไหน? ถาม <@U0BOSS> ถ้าไม่แน่ใจ","options":[{"label":"สเตจจิ้ง"},{"label":"โปรดักชัน"}]},{"id":"checks","header":"การตรวจ","question":"ตรวจอะไรบ้าง?","multiSelect":true,"options":[{"label":"ยูนิต"},{"label":"อินทิเกรชัน"},{"label":"โหลด"}]},{"id":"notify","header":"แจ้ง","question":"ใครต้องรู้บ้าง?","options":[{"label":"ทีม","description":"#deploys & <!here>"},{"label":"ไม่มีใคร"}]}]}`},
	{"long_split", longRequest("en"), longRequest("th")},
	{"context", withContext(`Target`, buildContext), withContext(`th`, buildContextTH)},
	{"context_long", withContext(`Target`, longContext("en")), withContext(`th`, longContext("th"))},
}

// buildContext is the agent's context of the build-failure example: bold,
// code, a code block, a link, and an attempt at @everyone.
const (
	buildContext   = "Build **#4812** failed on `main`:\n```\nTestPay … FAIL\n```\nSee [the log](https://ci.example.com/4812) — @everyone"
	buildContextTH = "บิลด์ **#4812** ล้มเหลวบน `main`:\n```\nTestPay … FAIL\n```\nดู[บันทึกการบิลด์](https://ci.example.com/4812) — @everyone"
)

// withContext is the one-question prompt of the context shapes, in
// English or ("th") in Thai, with context.
func withContext(lang, context string) string {
	ctx, _ := json.Marshal(context)
	if lang == "th" {
		return `{"locale":"th","agent":"ci-bot","context":` + string(ctx) + `,"questions":[{"id":"deploy_target","header":"เป้าหมาย","question":"จะปล่อยขึ้นที่ไหน?","options":[{"label":"สเตจจิ้ง (แนะนำ)"},{"label":"โปรดักชัน"}]}]}`
	}
	return `{"agent":"ci-bot","context":` + string(ctx) + `,"questions":[{"id":"deploy_target","header":"Target","question":"Where should this deploy?","options":[{"label":"Staging (Recommended)"},{"label":"Production"}]}]}`
}

// longContext is Markdown context of exactly 3,000 characters as a person
// counts them (the most a request may carry): a list of steps, a code
// block and a link, with &, < and > that escaping makes longer, so that
// it takes more than one section.
func longContext(lang string) string {
	step, lead, tail, pad := "- step %d: R&D check <%d> — **passed** in `%ds`\n", "Build **#4812** failed on `main` & <staging>:\n", "\nSee [the log](https://ci.example.com/4812) for the rest.\n\nLast lines:", " ok"
	if lang == "th" {
		step, lead, tail, pad = "- ขั้นที่ %d: ตรวจวิจัย&พัฒนา <%d> — **ผ่าน** ใน `%ds`\n", "บิลด์ **#4812** ล้มเหลวบน `main` & <staging>:\n", "\nดู[บันทึกการบิลด์](https://ci.example.com/4812) สำหรับส่วนที่เหลือ\n\nบรรทัดท้าย:", " ผ่าน"
	}
	count := uniseg.GraphemeClusterCount
	var b strings.Builder
	b.WriteString(lead)
	b.WriteString("```\nTestPay … FAIL <exit 1> & more\n```\n")
	for i := 1; ; i++ {
		line := fmt.Sprintf(step, i, i, i)
		if count(b.String()+line+tail) > askbridge.MaxContextChars-40 {
			break
		}
		b.WriteString(line)
	}
	b.WriteString(tail)
	for count(b.String()+pad) <= askbridge.MaxContextChars {
		b.WriteString(pad)
	}
	b.WriteString(strings.Repeat("!", askbridge.MaxContextChars-count(b.String())))
	return b.String()
}

// longRequest is a valid prompt whose escaped text passes a section's 3000
// characters (every & becomes &amp;), so its sections are cut.
func longRequest(lang string) string {
	amp, header, option, locale := strings.Repeat("R&D ", 120), "Budget", "Option %d & more", ""
	if lang == "th" {
		amp, header, option, locale = strings.Repeat("วิจัย&พัฒนา ", 45), "งบประมาณ", "ตัวเลือก %d & อื่น ๆ", `"locale":"th",`
	}
	desc := strings.Repeat("&", 200)
	var opts []string
	for i := range 4 {
		opts = append(opts, fmt.Sprintf(`{"label":%q,"description":%q}`, fmt.Sprintf(option, i+1), desc))
	}
	return fmt.Sprintf(`{%s"questions":[{"id":"a","header":%q,"question":%q,"options":[%s]}]}`, locale, header, strings.TrimSpace(amp), strings.Join(opts, ","))
}

// langs are the languages every golden is made in; English keeps the
// file names it always had.
var langs = []string{"en", "th"}

func goldenName(kind, lang string) string {
	if lang != "en" {
		kind += "_" + lang
	}
	return kind + ".json"
}

func body(s struct{ name, body, th string }, lang string) string {
	if lang == "th" {
		return s.th
	}
	return s.body
}

func TestGoldenPrompts(t *testing.T) {
	for _, s := range shapes {
		for _, lang := range langs {
			t.Run(s.name+"/"+lang, func(t *testing.T) {
				p := plan(t, "q-"+s.name, body(s, lang))
				if p.Locale != lang {
					t.Fatalf("plan in %q, want %q", p.Locale, lang)
				}
				msgs := render(p)
				checkLimits(t, msgs)
				golden.Check(t, goldenName("prompt_"+s.name, lang), pretty(t, msgs))
			})
		}
	}
}

// ends are the ways a question ends.
var ends = []string{"answered", "skipped", "expired", "cancelled"}

// result is how a question of req ends: answered with the last option of
// each question (and the first too when it is multi-select), or without
// an answer for the other ends.
func result(req askbridge.Request, end string) askbridge.Result {
	switch end {
	case "skipped":
		return askbridge.NoAnswer("q", askbridge.ReasonSkipped, "")
	case "expired":
		return askbridge.NoAnswer("q", askbridge.ReasonTimeout, "")
	case "cancelled":
		return askbridge.NoAnswer("q", askbridge.ReasonCancelled, "")
	}
	answers := map[string][]string{}
	for _, q := range req.Questions {
		last := q.Options[len(q.Options)-1].Label
		if q.MultiSelect {
			answers[q.ID] = []string{q.Options[0].Label, last}
		} else {
			answers[q.ID] = []string{last}
		}
	}
	return askbridge.Answered("q", answers, nil, askbridge.ViaButton)
}

// Every way a question ends, in English and Thai, for the prompt with
// descriptions (end_<end>.json); and the answered end of every other shape
// (end_answered_<shape>.json). An ended message keeps the question, part
// for part as the prompt was cut, and loses its instructions and buttons.
func TestGoldenEndStates(t *testing.T) {
	for _, s := range shapes {
		for _, lang := range langs {
			for _, end := range ends {
				described := s.name == "single_select_descriptions"
				if end != "answered" && !described {
					continue
				}
				name := "end_" + end
				if !described {
					name += "_" + s.name
				}
				t.Run(name+"/"+lang, func(t *testing.T) {
					req := decode(t, body(s, lang))
					p := plan(t, "q-end", body(s, lang))
					status := engine.StatusLine(req, result(req, end))
					msgs := renderEnded(p, status)
					checkLimits(t, msgs)
					checkEnded(t, p, render(p), msgs, status)
					golden.Check(t, goldenName(name, lang), pretty(t, msgs))
				})
			}
		}
	}
}

// The status lines the goldens show come from each language's catalog.
func TestEndStatusInThai(t *testing.T) {
	req := decode(t, shapes[1].th)
	for end, want := range map[string]string{"answered": "ตอบแล้ว: คานารี &lt;5%&gt;", "skipped": "ข้ามแล้ว", "expired": "หมดเวลาแล้ว", "cancelled": "ยกเลิกแล้ว"} {
		msgs := renderEnded(plan(t, "q", shapes[1].th), engine.StatusLine(req, result(req, end)))
		last := msgs[0].Blocks[len(msgs[0].Blocks)-1].(*slack.ContextBlock)
		if got := last.ContextElements.Elements[0].(*slack.TextBlockObject).Text; got != want {
			t.Errorf("%s: status %q, want %q", end, got, want)
		}
	}
}

// escalated is a request with an escalation step (so its prompt offers
// Seen), in English or ("th") in Thai.
func escalated(lang string) string {
	step := `"timeoutSeconds":900,"escalate":[{"afterSeconds":600,"to":"slack:C0LEAD"}]`
	if lang == "th" {
		return `{"locale":"th","agent":"deploy-bot",` + step + `,"questions":[{"id":"deploy_target","header":"เป้าหมาย","question":"จะปล่อยขึ้นที่ไหน?","options":[{"label":"สเตจจิ้ง (แนะนำ)"},{"label":"โปรดักชัน"}]}]}`
	}
	return `{"agent":"deploy-bot",` + step + `,"questions":[{"id":"deploy_target","header":"Target","question":"Where should this deploy?","options":[{"label":"Staging (Recommended)"},{"label":"Production"}]}]}`
}

// escalatedRecord is the question of escalated(lang) as the store holds
// it: asked in ops, then, by its escalation step, in lead; seen by seenBy
// when it is set.
func escalatedRecord(t *testing.T, lang string, seenBy *askbridge.Person) engine.Record {
	t.Helper()
	return engine.Record{
		ID: "q-seen", Status: askbridge.StatusPending, Request: decode(t, escalated(lang)),
		Places: []askbridge.Place{
			{Name: "slack:C0OPS", Target: askbridge.Target{Platform: Platform, Chat: "C0OPS"}},
			{Name: "slack:C0LEAD", Target: askbridge.Target{Platform: Platform, Chat: "C0LEAD"}, Step: 1},
		},
		Acknowledged: seenBy,
	}
}

// seer is who presses Seen in the goldens, in each language.
func seer(lang string) *askbridge.Person {
	if lang == "th" {
		return &askbridge.Person{Platform: Platform, ID: "USOMCHAI", Name: "สมชาย"}
	}
	return &askbridge.Person{Platform: Platform, ID: "UALICE", Name: "Alice"}
}

// The prompt of an escalation step as it is posted in the step's place
// (prompt_escalated: why it is asked there, and a Seen button), as it is
// edited once someone pressed Seen (prompt_escalated_seen: who has seen
// it, no Seen button, the options kept), and as it ends
// (end_answered_escalated_seen: the notes kept before the status line).
// Each is built through the root package, as the engine builds it.
func TestGoldenSeen(t *testing.T) {
	caps := (&Channel{}).Capabilities()
	for _, lang := range langs {
		t.Run(lang, func(t *testing.T) {
			open := escalatedRecord(t, lang, nil).PlanFor(1, caps)
			seen := escalatedRecord(t, lang, seer(lang))
			after := seen.PlanFor(1, caps)
			if len(open.Notes) != 1 || len(after.Notes) != 2 {
				t.Fatalf("notes %q, then %q", open.Notes, after.Notes)
			}
			prompt, edited := render(open), render(after)
			checkLimits(t, prompt)
			checkLimits(t, edited)
			w := locale.For(lang)
			if got := buttonLabels(prompt); got[len(got)-1] != w.Get("ButtonSeen") {
				t.Errorf("buttons %q, want Seen last", got)
			}
			if got, want := buttonLabels(edited), buttonLabels(prompt); !slices.Equal(got, want[:len(want)-1]) {
				t.Errorf("after Seen buttons %q, want %q without Seen", got, want)
			}
			golden.Check(t, goldenName("prompt_escalated", lang), pretty(t, prompt))
			golden.Check(t, goldenName("prompt_escalated_seen", lang), pretty(t, edited))

			req := seen.Request
			status := engine.StatusLine(req, result(req, "answered"))
			ended := renderEnded(after, status)
			checkLimits(t, ended)
			golden.Check(t, goldenName("end_answered_escalated_seen", lang), pretty(t, ended))
			last := ended[0].Blocks[len(ended[0].Blocks)-1]
			want := Escape(after.Notes[0]) + "\n" + Escape(after.Notes[1]) + "\n" + Escape(status)
			if blockText(last) != want || !strings.HasSuffix(ended[0].Text, "\n\n"+want) {
				t.Errorf("ended with %q, text %q; want the notes, then the status line: %q", blockText(last), ended[0].Text, want)
			}
		})
	}
}

// buttonLabels lists the labels of the buttons of a prompt's messages.
func buttonLabels(msgs []message) []string {
	var out []string
	for _, m := range msgs {
		for _, b := range m.Blocks {
			if a, ok := b.(*slack.ActionBlock); ok {
				for _, el := range a.Elements.ElementSet {
					out = append(out, el.(*slack.ButtonBlockElement).Text.Text)
				}
			}
		}
	}
	return out
}

// blockText is the text a person reads in a block: a header's, a
// section's, each element of a context block; "" for buttons.
func blockText(b slack.Block) string {
	switch b := b.(type) {
	case *slack.HeaderBlock:
		return b.Text.Text
	case *slack.SectionBlock:
		return b.Text.Text
	case *slack.ContextBlock:
		var parts []string
		for _, el := range b.ContextElements.Elements {
			if tb, ok := el.(*slack.TextBlockObject); ok {
				parts = append(parts, tb.Text)
			}
		}
		return strings.Join(parts, "\n")
	}
	return ""
}

// checkEnded holds the ended messages of plan p to the prompt they end:
// as many messages, each with the prompt's blocks of that part but for the
// instructions and the buttons, then the status line; the instructions
// nowhere, neither in a block nor in the text.
func checkEnded(t *testing.T, p engine.Plan, prompt, ended []message, status string) {
	t.Helper()
	if len(ended) != len(prompt) {
		t.Fatalf("%d ended messages for a prompt of %d", len(ended), len(prompt))
	}
	freeText, closing := Escape(p.FreeText), Escape(strings.SplitN(p.Closing, "\n", 2)[0])
	shownInstructions := false
	for k := range prompt {
		kept := []slack.Block{}
		for _, b := range prompt[k].Blocks {
			text := blockText(b)
			if strings.Contains(text, freeText) || strings.Contains(text, closing) {
				shownInstructions = true
				continue
			}
			if b.BlockType() != slack.MBTAction {
				kept = append(kept, b)
			}
		}
		blocks := ended[k].Blocks
		if len(blocks) == 0 || blocks[len(blocks)-1].BlockType() != slack.MBTContext || blockText(blocks[len(blocks)-1]) != Escape(status) {
			t.Fatalf("part %d does not end with the status line %q: %+v", k, status, blocks)
		}
		got, _ := json.Marshal(blocks[:len(blocks)-1])
		want, _ := json.Marshal(kept)
		if string(got) != string(want) {
			t.Errorf("part %d keeps\n%s\nwant the prompt's part %d without instructions and buttons:\n%s", k, got, k, want)
		}
		for _, b := range blocks {
			if b.BlockType() == slack.MBTAction {
				t.Errorf("part %d keeps its buttons", k)
			}
		}
		if text := ended[k].Text; strings.Contains(text, freeText) || strings.Contains(text, closing) || !strings.HasSuffix(text, Escape(status)) {
			t.Errorf("part %d text %q: instructions left, or no status line", k, text)
		}
	}
	if !shownInstructions {
		t.Errorf("the prompt never showed its instructions %q, %q", freeText, closing)
	}
}

// link is a Slack link the context may hold: <url> or <url|text> with an
// http, https or mailto URL. Any other "<" would be a mention.
var link = regexp.MustCompile(`<(https?://|mailto:)[^<>|]*(\|[^<>]*)?>`)

// checkLimits applies Block Kit's limits to rendered messages, and what
// Slack refuses or would parse as a mention.
func checkLimits(t *testing.T, msgs []message) {
	t.Helper()
	for i, m := range msgs {
		if len(m.Blocks) > maxBlocks {
			t.Errorf("message %d: %d blocks", i, len(m.Blocks))
		}
		if strings.TrimSpace(m.Text) == "" || engine.TextLength(m.Text) > maxTextChars {
			t.Errorf("message %d: text of %d characters", i, engine.TextLength(m.Text))
		}
		if strings.ContainsAny(m.Text, "<>") {
			t.Errorf("message %d: unescaped markup in the text %q", i, m.Text)
		}
		for _, b := range m.Blocks {
			switch b := b.(type) {
			case *slack.HeaderBlock:
				if strings.TrimSpace(b.Text.Text) == "" || len([]rune(b.Text.Text)) > maxHeaderChars {
					t.Errorf("message %d: header %q", i, b.Text.Text)
				}
			case *slack.SectionBlock:
				if n := engine.TextLength(b.Text.Text); n > maxSectionChars || strings.TrimSpace(b.Text.Text) == "" {
					t.Errorf("message %d: section of %d characters: %q", i, n, b.Text.Text)
				}
				if rest := link.ReplaceAllString(b.Text.Text, ""); strings.ContainsAny(rest, "<>") {
					t.Errorf("message %d: unescaped markup in %q", i, b.Text.Text)
				}
			case *slack.ContextBlock:
				if text := blockText(b); strings.TrimSpace(text) == "" || strings.ContainsAny(text, "<>") || engine.TextLength(text) > maxSectionChars {
					t.Errorf("message %d: context %q", i, text)
				}
			case *slack.ActionBlock:
				if len(b.Elements.ElementSet) > maxActionElements {
					t.Errorf("message %d: %d buttons in a block", i, len(b.Elements.ElementSet))
				}
				for _, el := range b.Elements.ElementSet {
					btn := el.(*slack.ButtonBlockElement)
					if len([]rune(btn.Text.Text)) > maxButtonLabel || len(btn.Value) > maxButtonValue || len(btn.ActionID) > 255 {
						t.Errorf("message %d: button over a limit: %+v", i, btn)
					}
				}
			default:
				t.Errorf("message %d: a %s block", i, b.BlockType())
			}
		}
	}
}

// A prompt of more than 50 blocks goes out as several messages, the
// buttons in the last; every message keeps within the limits.
func TestRenderSplitsPastFiftyBlocks(t *testing.T) {
	p := engine.Plan{ID: "big", Mode: engine.ModeText, Intro: "Questions for you:", FreeText: "Something else?", Closing: "Reply."}
	for i := range 60 {
		p.Sections = append(p.Sections, engine.Section{Number: i + 1, Header: "H", Question: fmt.Sprintf("Question %d?", i+1),
			Options: []askbridge.Option{{Label: "A"}, {Label: "B"}}})
	}
	for i := range 30 {
		p.Rows = append(p.Rows, []engine.Button{{Label: fmt.Sprint("B", i), Payload: askbridge.EncodePayload("big", askbridge.Choice{Kind: askbridge.ControlOption})}})
	}
	msgs := render(p)
	if len(msgs) != 2 {
		t.Fatalf("%d messages, want 2", len(msgs))
	}
	checkLimits(t, msgs)
	var actions []int
	for i, m := range msgs {
		for _, b := range m.Blocks {
			if b.BlockType() == slack.MBTAction {
				actions = append(actions, i)
			}
		}
	}
	// 30 buttons: two actions blocks (25 + 5), both in the last message.
	if fmt.Sprint(actions) != "[1 1]" {
		t.Errorf("actions blocks in messages %v", actions)
	}
	// Later parts name themselves in figures, the same in any language.
	if msgs[1].Text != "Questions for you: (2/2)" {
		t.Errorf("second text %q", msgs[1].Text)
	}
	ended := renderEnded(p, "Expired")
	checkLimits(t, ended)
	checkEnded(t, p, msgs, ended, "Expired")
}

// When the cut of a long prompt leaves the instructions and the buttons
// alone in the last message, that message shows the status line alone
// once the question ends: still the same part, never an empty block.
func TestEndedPartOfInstructionsOnly(t *testing.T) {
	p := engine.Plan{ID: "big", Mode: engine.ModeText, Intro: "คำถามถึงคุณ:", FreeText: "ไม่มีตัวเลือกที่ใช่?", Closing: "ตอบบรรทัดละหนึ่งข้อ\n1: 1"}
	// The header and 48 questions fill the first message (49 blocks).
	for i := range 48 {
		p.Sections = append(p.Sections, engine.Section{Number: i + 1, Header: "H", Question: fmt.Sprintf("คำถาม %d?", i+1),
			Options: []askbridge.Option{{Label: "ก"}, {Label: "ข"}}})
	}
	p.Rows = [][]engine.Button{{{Label: "ข้าม", Choice: askbridge.Choice{Kind: askbridge.ControlSkip}, Payload: askbridge.EncodePayload("big", askbridge.Choice{Kind: askbridge.ControlSkip})}}}
	msgs := render(p)
	if len(msgs) != 2 || len(msgs[1].Blocks) != 2 || !strings.Contains(blockText(msgs[1].Blocks[0]), "ไม่มีตัวเลือกที่ใช่?") {
		t.Fatalf("the instructions and the buttons are not alone in the last part: %s", pretty(t, msgs))
	}
	ended := renderEnded(p, "ข้ามแล้ว")
	checkLimits(t, ended)
	checkEnded(t, p, msgs, ended, "ข้ามแล้ว")
	if len(ended[1].Blocks) != 1 || ended[1].Text != "คำถามถึงคุณ: (2/2)\n\nข้ามแล้ว" {
		t.Errorf("the part of instructions only ended as %s", pretty(t, ended[1:]))
	}
}

// Blank words make no block: Slack refuses a header, section or context
// element without text (invalid_blocks).
func TestNoBlankBlocks(t *testing.T) {
	base := plan(t, "q", shapes[0].body)
	for _, c := range []struct {
		name   string
		change func(p *engine.Plan)
	}{
		{"no instructions", func(p *engine.Plan) { p.FreeText, p.Closing = "", "" }},
		{"blank instructions", func(p *engine.Plan) { p.FreeText, p.Closing = " ", "\n" }},
		{"blank intro", func(p *engine.Plan) { p.Intro = " " }},
		{"blank context", func(p *engine.Plan) { p.Context = "  \n\n " }},
		{"context of markup alone", func(p *engine.Plan) { p.Context = "****\n\n- \n" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := base
			c.change(&p)
			checkLimits(t, render(p))
			checkLimits(t, renderEnded(p, "Expired"))
		})
	}
}

// Every word of the bridge in a section comes from the plan: the hint of
// a multi-select question is the plan's MultiHint, in its language.
func TestMultiHintFromPlan(t *testing.T) {
	for _, c := range []struct {
		name string
		plan engine.Plan
		want string
	}{
		{"thai", plan(t, "q", shapes[2].th), "[การตรวจ] จะรันการตรวจอะไรบ้าง? (เลือกได้มากกว่าหนึ่งข้อ)"},
		{"english", plan(t, "q", shapes[2].body), "[Checks] Which checks should run? (choose one or more)"},
		{"the plan's own", engine.Plan{Intro: "Q:", Sections: []engine.Section{{Header: "H", Question: "Which?", Multi: true, MultiHint: "(pick any)", Options: []askbridge.Option{{Label: "A"}, {Label: "B"}}}}}, "[H] Which? (pick any)"},
	} {
		msgs := render(c.plan)
		if got := blockText(msgs[0].Blocks[1]); !strings.HasPrefix(got, c.want+"\n") {
			t.Errorf("%s: section %q, want it to start %q", c.name, got, c.want)
		}
		if c.name != "english" && strings.Contains(string(pretty(t, msgs)), "choose one or more") {
			t.Errorf("%s: English hint shown", c.name)
		}
	}
}

// The context shows between the intro and the questions as Slack mrkdwn:
// bold, code, a code block, a link that no one is notified by; the
// notification text has it as plain text. An ended message keeps it. (In
// Thai, written without spaces, markup parts a word from the link that
// follows it with U+200B: Slack formats only at word boundaries.)
func TestContext(t *testing.T) {
	for _, c := range []struct {
		lang, body, section, plain, question string
	}{
		{"en", shapes[6].body,
			"Build *#4812* failed on `main`:\n\n```TestPay … FAIL```\n\nSee <https://ci.example.com/4812|the log> — @\u2060everyone",
			"Build #4812 failed on main:\n\nTestPay … FAIL\n\nSee the log (https://ci.example.com/4812) — @\u2060everyone",
			"[Target] Where should this deploy?"},
		{"th", shapes[6].th,
			"บิลด์ *#4812* ล้มเหลวบน `main`:\n\n```TestPay … FAIL```\n\nดู\u200b<https://ci.example.com/4812|บันทึกการบิลด์> — @\u2060everyone",
			"บิลด์ #4812 ล้มเหลวบน main:\n\nTestPay … FAIL\n\nดูบันทึกการบิลด์ (https://ci.example.com/4812) — @\u2060everyone",
			"[เป้าหมาย] จะปล่อยขึ้นที่ไหน?"},
	} {
		t.Run(c.lang, func(t *testing.T) {
			p := plan(t, "q-ctx", c.body)
			msgs := render(p)
			if len(msgs) != 1 || len(msgs[0].Blocks) < 3 {
				t.Fatalf("messages %s", pretty(t, msgs))
			}
			blocks := msgs[0].Blocks
			if blocks[0].BlockType() != slack.MBTHeader || blockText(blocks[1]) != c.section || !strings.HasPrefix(blockText(blocks[2]), c.question) {
				t.Errorf("not intro, context, question:\n%s", pretty(t, msgs))
			}
			if want := Escape(p.Intro) + "\n\n" + c.plain + "\n\n" + c.question; !strings.HasPrefix(msgs[0].Text, want) {
				t.Errorf("text %q, want it to start %q", msgs[0].Text, want)
			}
			ended := renderEnded(p, "Expired")
			if blockText(ended[0].Blocks[1]) != c.section || !strings.Contains(ended[0].Text, c.plain) {
				t.Errorf("the ended message lost its context: %s", pretty(t, ended))
			}
		})
	}
}

// Context of 3,000 characters takes more than one section (escaping makes
// it longer, and Thai counts more code units than characters), all of it
// between the intro and the questions, and the prompt still fits Slack.
// With enough questions after it, the prompt is cut into messages as any
// long prompt is, and its end keeps the parts.
func TestLongContext(t *testing.T) {
	for _, lang := range langs {
		t.Run(lang, func(t *testing.T) {
			p := plan(t, "q-long", shapes[7].body)
			if lang == "th" {
				p = plan(t, "q-long", shapes[7].th)
			}
			if n := uniseg.GraphemeClusterCount(p.Context); n != askbridge.MaxContextChars {
				t.Fatalf("context of %d characters", n)
			}
			msgs := render(p)
			checkLimits(t, msgs)
			blocks := msgs[0].Blocks
			var context []string
			for _, b := range blocks[1:] {
				text := blockText(b)
				if strings.HasPrefix(text, "[") {
					break
				}
				context = append(context, text)
			}
			if len(context) < 2 {
				t.Fatalf("context in %d sections, want it cut", len(context))
			}
			all := strings.Join(context, "\n\n")
			last := p.Context[strings.LastIndex(p.Context, ":")+1:]
			if !strings.Contains(all, "#4812") || !strings.Contains(all, "<https://ci.example.com/4812|") || !strings.HasSuffix(all, last) {
				t.Errorf("context not all shown: %q", all)
			}

			// The same context before 60 questions: two messages.
			big := bigPlan()
			big.Context = p.Context
			msgs = render(big)
			ended := renderEnded(big, "Expired")
			checkLimits(t, msgs)
			checkLimits(t, ended)
			checkEnded(t, big, msgs, ended, "Expired")
			if len(msgs) != 2 || blockText(msgs[0].Blocks[1]) != context[0] {
				t.Errorf("%d messages, the first starting %q", len(msgs), blockText(msgs[0].Blocks[1]))
			}
		})
	}
}

func TestEscape(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"<!channel>", "&lt;!channel&gt;"},
		{"<@U123> & <!here|here>", "&lt;@U123&gt; &amp; &lt;!here|here&gt;"},
		{"&amp;", "&amp;amp;"},
		{"plain *bold* _it_", "plain *bold* _it_"},
	} {
		if got := Escape(c.in); got != c.want {
			t.Errorf("Escape(%q) = %q, want %q", c.in, got, c.want)
		}
		if got := unescape(Escape(c.in)); got != c.in {
			t.Errorf("unescape(Escape(%q)) = %q", c.in, got)
		}
	}
}

func TestClassify(t *testing.T) {
	c := &Channel{log: discard()}
	c.state.Store(engine.StateConnected)
	for _, tc := range []struct {
		name string
		err  error
		kind engine.ErrorKind
		why  string
	}{
		{"429", &slack.RateLimitedError{RetryAfter: 3e9}, engine.RateLimited, "ratelimited"},
		{"channel_not_found", slack.SlackErrorResponse{Err: "channel_not_found"}, engine.Permanent, "channel_not_found"},
		{"not_in_channel", slack.SlackErrorResponse{Err: "not_in_channel"}, engine.Permanent, "not_in_channel"},
		{"is_archived", slack.SlackErrorResponse{Err: "is_archived"}, engine.Permanent, "is_archived"},
		{"account_inactive", slack.SlackErrorResponse{Err: "account_inactive"}, engine.Permanent, "account_inactive"},
		{"internal_error", slack.SlackErrorResponse{Err: "internal_error"}, engine.Temporary, "internal_error"},
		{"503", slack.StatusCodeError{Code: 503, Status: "503 Service Unavailable"}, engine.Temporary, "slack server error: 503 Service Unavailable"},
		{"network", context.DeadlineExceeded, engine.Temporary, "context deadline exceeded"},
		{"invalid_auth", fmt.Errorf("wrapped: %w", slack.SlackErrorResponse{Err: "invalid_auth"}), engine.Permanent, "invalid_auth"},
	} {
		se := c.classify(tc.err)
		if se.Kind != tc.kind || se.Reason != tc.why {
			t.Errorf("%s: %v %q, want %v %q", tc.name, se.Kind, se.Reason, tc.kind, tc.why)
		}
		if tc.kind == engine.RateLimited && se.RetryAfter != 3e9 {
			t.Errorf("%s: retry after %s", tc.name, se.RetryAfter)
		}
	}
	if c.State() != engine.StateBadCredentials {
		t.Errorf("invalid_auth left the state %q", c.State())
	}
}

// Notes are plain text: a name that looks like a mention is escaped in
// the notes block and in the text, and so mentions no one.
func TestNotesEscaped(t *testing.T) {
	caps := (&Channel{}).Capabilities()
	rec := escalatedRecord(t, "en", &askbridge.Person{Platform: Platform, ID: "UX", Name: "<!channel> & <@U0BOSS>"})
	p := rec.PlanFor(1, caps)
	const want = "Seen by &lt;!channel&gt; &amp; &lt;@U0BOSS&gt;"
	for _, msgs := range [][]message{render(p), renderEnded(p, "Expired")} {
		checkLimits(t, msgs)
		last := msgs[len(msgs)-1]
		var notes string
		for _, b := range last.Blocks {
			if b.BlockType() == slack.MBTContext {
				notes = blockText(b)
			}
		}
		if !strings.Contains(notes, "\n"+want) || !strings.Contains(last.Text, "\n"+want) {
			t.Errorf("notes %q, text %q; want them to show %q", notes, last.Text, want)
		}
	}
}

// noted is p with the notes of an escalation step seen by someone.
func noted(p engine.Plan) engine.Plan {
	p.Notes = []string{"No answer after 10 min, so this is asked here too.", "Seen by Alice"}
	return p
}

// Notes never move the cut of a long prompt: the prompt with notes has the
// same parts, the same blocks in each, but for one more block on the last
// part, before its buttons. Its end keeps the notes on the last part
// alone, before the status line; the other parts end with the status line.
func TestNotesOnTheLastPart(t *testing.T) {
	for _, sections := range []int{60, 95} { // the last part short, and full
		t.Run(fmt.Sprint(sections), func(t *testing.T) {
			p := bigPlan()
			p.Sections = nil
			for i := range sections {
				p.Sections = append(p.Sections, engine.Section{Number: i + 1, Header: "H", Question: fmt.Sprintf("Question %d?", i+1)})
			}
			without, with := render(p), render(noted(p))
			checkLimits(t, with)
			if len(with) != 2 || len(without) != 2 {
				t.Fatalf("%d parts with notes, %d without; want 2", len(with), len(without))
			}
			if got, want := pretty(t, with[:1]), pretty(t, without[:1]); string(got) != string(want) {
				t.Errorf("the notes changed the first part:\n%s", got)
			}
			last, plain := with[1].Blocks, without[1].Blocks
			if sections == 95 && len(last) != maxBlocks {
				t.Errorf("a full last part with notes has %d blocks, want %d", len(last), maxBlocks)
			}
			at := len(last) - 2
			if len(last) != len(plain)+1 || blockText(last[at]) != "No answer after 10 min, so this is asked here too.\nSeen by Alice" || last[at+1].BlockType() != slack.MBTAction {
				t.Fatalf("last part %s, want the notes before the buttons", pretty(t, with[1:]))
			}
			if !strings.HasSuffix(with[1].Text, "\n\nNo answer after 10 min, so this is asked here too.\nSeen by Alice") || strings.Contains(with[0].Text, "Seen by") {
				t.Errorf("texts %q, %q; want the notes at the end of the last", with[0].Text, with[1].Text)
			}
			ended := renderEnded(noted(p), "Expired")
			checkLimits(t, ended)
			if got := blockText(ended[0].Blocks[len(ended[0].Blocks)-1]); got != "Expired" {
				t.Errorf("the first part ends with %q", got)
			}
			if got := blockText(ended[1].Blocks[len(ended[1].Blocks)-1]); got != "No answer after 10 min, so this is asked here too.\nSeen by Alice\nExpired" {
				t.Errorf("the last part ends with %q", got)
			}
		})
	}
}

// A part with no instructions and no buttons, full, still fits once it
// ends: its notes share the status line's block. A status line that fills
// a text object keeps it; the notes give way.
func TestNotesWhenFull(t *testing.T) {
	p := engine.Plan{ID: "full", Mode: engine.ModeText, Intro: "Q:", Notes: []string{"Seen by Alice"}}
	for i := range 97 { // the header and 97 questions: two full parts
		p.Sections = append(p.Sections, engine.Section{Number: i + 1, Header: "H", Question: fmt.Sprintf("Question %d?", i+1)})
	}
	msgs, ended := render(p), renderEnded(p, "Expired")
	checkLimits(t, msgs)
	checkLimits(t, ended)
	if len(msgs) != 2 || len(msgs[1].Blocks) != maxBlocks || len(ended[1].Blocks) != maxBlocks {
		t.Fatalf("%d parts, the last of %d blocks, ended %d", len(msgs), len(msgs[1].Blocks), len(ended[1].Blocks))
	}
	if got := blockText(ended[1].Blocks[maxBlocks-1]); got != "Seen by Alice\nExpired" {
		t.Errorf("ended with %q", got)
	}
	long := strings.Repeat("x", maxSectionChars)
	ended = renderEnded(p, long)
	checkLimits(t, ended)
	if got := blockText(ended[1].Blocks[maxBlocks-1]); got != long {
		t.Errorf("a full status line gave way to the notes: %d characters", len(got))
	}
}
