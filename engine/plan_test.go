package engine

import (
	"fmt"
	"strings"
	"testing"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/internal/golden"
)

// Capabilities used in the tests, shaped like the real platforms.
var (
	capsTelegram = Capabilities{Buttons: true, ButtonsPerRow: 1, MaxButtonLabel: 64, PayloadBytes: 64, ReplyBox: true}
	capsDiscord  = Capabilities{Buttons: true, ButtonsPerRow: 5, MaxButtonLabel: 80, PayloadBytes: 100}
	capsTextOnly = Capabilities{}
)

func mustDecode(t testing.TB, s string) askbridge.Request {
	t.Helper()
	r, err := askbridge.DecodeRequest([]byte(s))
	if err != nil {
		t.Fatalf("DecodeRequest: %v", err)
	}
	return r
}

var planShapes = []struct {
	name string
	req  string
}{
	{"single", validRequest},
	{"single-agent", `{"agent":"deploy-bot","questions":[{"id":"deploy_target","header":"Target","question":"Where should this deploy?","options":[{"label":"Staging (Recommended)","description":"Safer default"},{"label":"Production"},{"label":"Both, staging first"}]}]}`},
	{"multi", `{"questions":[{"id":"checks","header":"Checks","question":"Which checks should run before release?","multiSelect":true,"options":[{"label":"Unit tests (Recommended)"},{"label":"Integration tests","description":"About 20 minutes"},{"label":"Load test"},{"label":"Security scan"}]}]}`},
	{"two", `{"questions":[{"id":"target","header":"Target","question":"Where should this deploy?","options":[{"label":"Staging"},{"label":"Production"}]},{"id":"window","header":"Window","question":"When?","options":[{"label":"Now"},{"label":"Tonight","description":"After 22:00"}]}]}`},
	{"three-mixed", `{"agent":"planner","questions":[{"id":"target","header":"Deployment target","question":"Where should this deploy?","options":[{"label":"Staging"},{"label":"Production"}]},{"id":"checks","header":"Checks","question":"Which checks?","multiSelect":true,"options":[{"label":"Unit"},{"label":"Integration"},{"label":"Load"}]},{"id":"notify","header":"Notify","question":"Who should hear about it?","options":[{"label":"Team channel"},{"label":"Nobody"}]}]}`},
}

func TestPlanGolden(t *testing.T) {
	channels := []struct {
		name string
		caps Capabilities
	}{{"telegram", capsTelegram}, {"discord", capsDiscord}, {"text", capsTextOnly}}
	for _, shape := range planShapes {
		for _, ch := range channels {
			t.Run(shape.name+"/"+ch.name, func(t *testing.T) {
				p := BuildPlan("deploy-42", mustDecode(t, shape.req), ch.caps)
				golden.Check(t, "plan/"+shape.name+"."+ch.name+".txt", []byte(renderPlan(p)))
			})
			// The same prompt with the bridge's words in Thai (the
			// agent's text stays as written), and with a context.
			t.Run(shape.name+"/"+ch.name+"/th", func(t *testing.T) {
				req := mustDecode(t, shape.req)
				req.Locale = "th"
				req.Context = "Build **#4812** failed on `main`:\n```\nTestPay … FAIL\n```\nSee [the log](https://ci.example.com/4812)."
				p := BuildPlan("deploy-42", req, ch.caps)
				golden.Check(t, "plan/"+shape.name+"."+ch.name+".th.txt", []byte(renderPlan(p)))
			})
		}
	}
}

// TestStatusLineLanguages: the status line is in the question's language,
// labels joined as the catalog joins a list.
func TestStatusLineLanguages(t *testing.T) {
	req := mustDecode(t, planShapes[2].req)
	res := askbridge.Answered("q", map[string][]string{"checks": {"Unit tests (Recommended)", "Load test", "my own words"}}, nil, askbridge.ViaText)
	for _, c := range []struct {
		locale string
		res    askbridge.Result
		want   string
	}{
		{"en", res, "Answered: Unit tests (Recommended), Load test"},
		{"th", res, "ตอบแล้ว: Unit tests (Recommended), Load test"},
		{"th", askbridge.Answered("q", map[string][]string{"checks": {"free"}}, nil, askbridge.ViaText), "ตอบแล้ว"},
		{"th", askbridge.NoAnswer("q", askbridge.ReasonSkipped, ""), "ข้ามแล้ว"},
		{"th", askbridge.NoAnswer("q", askbridge.ReasonTimeout, ""), "หมดเวลาแล้ว"},
		{"th", askbridge.NoAnswer("q", askbridge.ReasonCancelled, ""), "ยกเลิกแล้ว"},
		{"th", askbridge.NoAnswer("q", askbridge.ReasonUndeliverable, "gone"), "ส่งไม่สำเร็จ"},
		{"fr", askbridge.NoAnswer("q", askbridge.ReasonSkipped, ""), "Skipped"},
	} {
		req.Locale = c.locale
		if got := StatusLine(req, c.res); got != c.want {
			t.Errorf("%s %s: %q, want %q", c.locale, c.res.Outcome(), got, c.want)
		}
	}
}

// renderPlan shows the plan text and its buttons the way a reviewer reads
// them.
func renderPlan(p Plan) string {
	var b strings.Builder
	b.WriteString(p.Text())
	b.WriteString("\n")
	for _, row := range p.Rows {
		b.WriteString("\n")
		for i, btn := range row {
			if i > 0 {
				b.WriteString(" ")
			}
			fmt.Fprintf(&b, "[ %s ]", btn.Label)
		}
	}
	if len(p.Rows) > 0 {
		b.WriteString("\n")
	}
	return b.String()
}

func TestPlanMode(t *testing.T) {
	single := mustDecode(t, validRequest)
	tests := []struct {
		name         string
		req          askbridge.Request
		caps         Capabilities
		wantMode     Mode
		wantButtons  []string
		wantNoInText string
	}{
		{"single on telegram", single, capsTelegram, ModeButtons, []string{"Staging (Recommended)", "Production", "Other…", "Skip"}, ""},
		{"single on discord has no Other", single, capsDiscord, ModeButtons, []string{"Staging (Recommended)", "Production", "Skip"}, ""},
		{"single on text channel", single, capsTextOnly, ModeText, nil, "Tap"},
		{"payload too small for buttons", single, Capabilities{Buttons: true, PayloadBytes: 10}, ModeText, nil, "Tap"},
		{"multi gets Skip only", mustDecode(t, planShapes[2].req), capsTelegram, ModeText, []string{"Skip"}, "Tap"},
		{"several get Skip only", mustDecode(t, planShapes[3].req), capsDiscord, ModeText, []string{"Skip"}, "Tap"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := BuildPlan("q", tt.req, tt.caps)
			if p.Mode != tt.wantMode {
				t.Errorf("mode %v, want %v", p.Mode, tt.wantMode)
			}
			var labels []string
			for _, b := range p.Buttons() {
				labels = append(labels, b.Label)
				if len(b.Payload) > tt.caps.PayloadBytes {
					t.Errorf("payload %q longer than %d bytes", b.Payload, tt.caps.PayloadBytes)
				}
				got, err := askbridge.DecodePayload(b.Payload)
				if err != nil || got.Choice != b.Choice || !got.Matches("q") {
					t.Errorf("payload %q does not decode to %+v: %+v %v", b.Payload, b.Choice, got, err)
				}
			}
			if strings.Join(labels, "|") != strings.Join(tt.wantButtons, "|") {
				t.Errorf("buttons %q, want %q", labels, tt.wantButtons)
			}
			if tt.wantNoInText != "" && strings.Contains(p.Text(), tt.wantNoInText) {
				t.Errorf("text mentions %q:\n%s", tt.wantNoInText, p.Text())
			}
			if !strings.Contains(p.Text(), `"skip"`) {
				t.Errorf("text does not tell how to skip:\n%s", p.Text())
			}
		})
	}
}

func TestPlanRows(t *testing.T) {
	req := mustDecode(t, withQuestion(`{"id":"a","header":"H","question":"Q?","options":[{"label":"A"},{"label":"B"},{"label":"C"},{"label":"D"}]}`))
	tg := BuildPlan("q", req, capsTelegram)
	if len(tg.Rows) != 5 || len(tg.Rows[0]) != 1 || len(tg.Rows[4]) != 2 {
		t.Errorf("telegram rows: %s", renderPlan(tg))
	}
	dc := BuildPlan("q", req, Capabilities{Buttons: true, ButtonsPerRow: 3, PayloadBytes: 100})
	if len(dc.Rows) != 3 || len(dc.Rows[0]) != 3 || len(dc.Rows[1]) != 1 || dc.Rows[2][0].Label != "Skip" {
		t.Errorf("rows of 3: %s", renderPlan(dc))
	}
}

func TestCutLabel(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"Short", 10, "Short"},
		{"Exactly ten", 11, "Exactly ten"},
		{"A longer label here", 10, "A longer…"},
		{"👍🏽👍🏽👍🏽", 4, "👍🏽…"},
		{"anything", 0, "anything"},
	}
	for _, tt := range tests {
		if got := CutLabel(tt.in, tt.n); got != tt.want {
			t.Errorf("CutLabel(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
		if tt.n > 0 && len([]rune(CutLabel(tt.in, tt.n))) > tt.n {
			t.Errorf("CutLabel(%q, %d) too long", tt.in, tt.n)
		}
	}
}

func TestStatusLine(t *testing.T) {
	req := mustDecode(t, planShapes[4].req)
	tests := []struct {
		name string
		res  askbridge.Result
		want string
	}{
		{"labels in question order", askbridge.Answered("q", map[string][]string{"notify": {"Nobody"}, "target": {"Staging"}, "checks": {"Load", "Unit"}}, nil, askbridge.ViaText), "Answered: Staging, Load, Unit, Nobody"},
		{"free text not echoed", askbridge.Answered("q", map[string][]string{"target": {"the secret cluster"}, "checks": {"Unit"}, "notify": {"ops@x"}}, nil, askbridge.ViaText), "Answered: Unit"},
		{"only free text", askbridge.Answered("q", map[string][]string{"target": {"somewhere"}}, nil, askbridge.ViaText), "Answered"},
		{"skipped", askbridge.NoAnswer("q", askbridge.ReasonSkipped, ""), "Skipped"},
		{"expired", askbridge.NoAnswer("q", askbridge.ReasonTimeout, ""), "Expired"},
		{"cancelled", askbridge.NoAnswer("q", askbridge.ReasonCancelled, ""), "Cancelled"},
		{"undeliverable", askbridge.NoAnswer("q", askbridge.ReasonUndeliverable, "chat not found"), "Not delivered"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := StatusLine(req, tt.res); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSplitText(t *testing.T) {
	para := strings.Repeat("word ", 10) // 50 units
	tests := []struct {
		name  string
		in    string
		limit int
		want  []string
	}{
		{"fits", "hello", 10, []string{"hello"}},
		{"no limit", strings.Repeat("x", 5000), 0, []string{strings.Repeat("x", 5000)}},
		{"between paragraphs", para + "\n\n" + para, 60, []string{para, para}},
		{"between lines", "aaaa\nbbbb\ncccc", 10, []string{"aaaa\nbbbb", "cccc"}},
		{"inside a long line", "abcdefghij", 4, []string{"abcd", "efgh", "ij"}},
		{"emoji count double", "😀😀😀", 4, []string{"😀😀", "😀"}},
		{"flag kept whole", "🇫🇷🇫🇷", 5, []string{"🇫🇷", "🇫🇷"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SplitText(tt.in, tt.limit)
			for _, part := range got {
				if tt.limit > 0 && TextLength(part) > tt.limit {
					t.Errorf("part %q longer than %d", part, tt.limit)
				}
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSplitTextKeepsEverything(t *testing.T) {
	p := BuildPlan("q", mustDecode(t, planShapes[4].req), capsTextOnly)
	text := p.Text()
	for _, limit := range []int{40, 80, 200} {
		parts := SplitText(text, limit)
		joined := strings.ReplaceAll(strings.Join(parts, ""), "\n", "")
		if joined != strings.ReplaceAll(text, "\n", "") {
			t.Errorf("limit %d lost text:\n%q", limit, parts)
		}
	}
}
