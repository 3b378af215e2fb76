package telegram_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/internal/telegramtest"
	"github.com/askbridge/askbridge/telegram"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// goldenShapes are the prompt shapes of the golden files.
var goldenShapes = []struct {
	name, request, status string
}{
	{"single-select", `{"questions":[{"id":"deploy_target","header":"Target","question":"Where should this deploy?","options":[{"label":"Staging (Recommended)"},{"label":"Production"}]}]}`,
		"Answered: Production"},
	{"single-select-descriptions", `{"agent":"release-bot","questions":[{"id":"deploy_target","header":"Target","question":"Where should this deploy?","options":[{"label":"Staging (Recommended)","description":"Safer default; rolls back by itself"},{"label":"Production","description":"Customers see it at once"},{"label":"Both, staged","description":"Staging first, then production after 1 h"}]}]}`,
		"Answered: Staging (Recommended)"},
	{"multi-select", `{"questions":[{"id":"checks","header":"Checks","question":"Which checks should run?","multiSelect":true,"options":[{"label":"Unit"},{"label":"Integration","description":"About 20 minutes"},{"label":"Load"},{"label":"Security scan"}]}]}`,
		"Answered: Unit, Load"},
	{"two-questions", `{"questions":[{"id":"target","header":"Target","question":"Where should this deploy?","options":[{"label":"Staging"},{"label":"Production"}]},{"id":"window","header":"When","question":"When should it go out?","options":[{"label":"Now"},{"label":"Tonight","description":"After 22:00 UTC"}]}]}`,
		"Answered: Staging, Tonight"},
	{"three-questions", `{"questions":[{"id":"target","header":"Target","question":"Where?","options":[{"label":"Staging"},{"label":"Production"}]},{"id":"checks","header":"Checks","question":"Which checks?","multiSelect":true,"options":[{"label":"Unit"},{"label":"Integration"},{"label":"Load"}]},{"id":"notify","header":"Notify","question":"Who hears about it?","options":[{"label":"Team"},{"label":"Nobody"}]}]}`,
		"Answered: Production, Unit, Integration"},
	{"long-split", longRequest(), "Skipped"},
}

// longRequest is a prompt too long for one message: three questions with
// the longest descriptions a request allows, full of characters to escape.
func longRequest() string {
	desc := strings.Repeat("R&D <notes> ", 16)[:190]
	var qs []string
	for q := range 3 {
		var opts []string
		for o := range 4 {
			opts = append(opts, fmt.Sprintf(`{"label":"Option %d.%d & more","description":%q}`, q+1, o+1, desc))
		}
		qs = append(qs, fmt.Sprintf(`{"id":"q%d","header":"Part %d","question":"Question %d: %s?","options":[%s]}`,
			q+1, q+1, q+1, strings.Repeat("which of these & why ", 20), strings.Join(opts, ",")))
	}
	return `{"questions":[` + strings.Join(qs, ",") + `]}`
}

// goldenEnds are the end states shown for the single-select prompt.
var goldenEnds = []struct{ name, status string }{
	{"answered", "Answered: Staging (Recommended)"},
	{"skipped", "Skipped"},
	{"expired", "Expired"},
	{"cancelled", "Cancelled"},
}

// sendAndFinish shows a request through the real channel and library on
// the fake, then ends it with status, and renders both states.
func sendAndFinish(t *testing.T, id, request, status string) string {
	t.Helper()
	req, err := askbridge.DecodeRequest([]byte(request))
	if err != nil {
		t.Fatal(err)
	}
	fake := telegramtest.New(telegramtest.Options{})
	defer fake.Close()
	fake.AddChat(opsGroup, "supergroup", "Ops")
	ch, err := telegram.New(telegram.Config{Token: fake.Token, APIURL: fake.URL, ChatPace: 1, GlobalPace: 1}, newMemCoord(), nil)
	if err != nil {
		t.Fatal(err)
	}
	plan := askbridge.BuildPlan(id, req, ch.Capabilities())
	refs, err := sendAll(context.Background(), ch, fmt.Sprint(opsGroup), plan)
	if err != nil {
		t.Fatal(err)
	}
	end := askbridge.Ending{Plan: plan, Status: status}
	var b strings.Builder
	fmt.Fprintf(&b, "# %d message(s) as sent\n\n", len(refs))
	renderChat(&b, fake.BotMessages(opsGroup))
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
	fmt.Fprintf(&b, "# after the end: %q\n\n", status)
	renderChat(&b, fake.BotMessages(opsGroup))
	return b.String()
}

// renderChat writes messages the way a reviewer reads them: the text a
// person sees, the buttons row by row with their callback data, and the
// HTML that was sent.
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
		fmt.Fprintf(b, "\n### html\n%s\n\n", m.HTML)
	}
}

func checkGolden(t *testing.T, name, got string) {
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
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it); got:\n%s", path, got)
	}
}

func TestGoldenPromptShapes(t *testing.T) {
	t.Parallel()
	for _, tt := range goldenShapes {
		t.Run(tt.name, func(t *testing.T) {
			checkGolden(t, "prompt-"+tt.name, sendAndFinish(t, "golden-"+tt.name, tt.request, tt.status))
		})
	}
}

func TestGoldenEndStates(t *testing.T) {
	t.Parallel()
	for _, tt := range goldenEnds {
		t.Run(tt.name, func(t *testing.T) {
			checkGolden(t, "end-"+tt.name, sendAndFinish(t, "golden-end", goldenShapes[1].request, tt.status))
		})
	}
}

func TestLongPromptSplitsAndEveryPartIsEdited(t *testing.T) {
	t.Parallel()
	req, err := askbridge.DecodeRequest([]byte(longRequest()))
	if err != nil {
		t.Fatal(err)
	}
	parts := telegram.PromptParts(askbridge.BuildPlan("long", req, telegram.Capabilities))
	if len(parts) < 2 {
		t.Fatalf("the long prompt fits one message (%d characters)", askbridge.TextLength(parts[0]))
	}
	out := sendAndFinish(t, "long", longRequest(), "Answered: Option 1.1 & more")
	if n := strings.Count(out, "\n\nAnswered: Option 1.1 & more\n"); n != len(parts) {
		t.Errorf("%d of %d parts show the status line", n, len(parts))
	}
}

// TestOverlongPlanStillFits sends a plan no valid request makes (one
// question line of 10,000 characters to escape) and checks that every part
// is taken by the fake, status line included.
func TestOverlongPlanStillFits(t *testing.T) {
	t.Parallel()
	fake := telegramtest.New(telegramtest.Options{})
	defer fake.Close()
	fake.AddChat(opsGroup, "supergroup", "Ops")
	ch, err := telegram.New(telegram.Config{Token: fake.Token, APIURL: fake.URL, ChatPace: 1, GlobalPace: 1}, newMemCoord(), nil)
	if err != nil {
		t.Fatal(err)
	}
	plan := askbridge.Plan{ID: "huge", Mode: askbridge.ModeText, Intro: "Question for you:", FreeText: "Free text.", Closing: "Reply.",
		Sections: []askbridge.Section{{Header: "H", Question: strings.Repeat("<&> 🙂 ", 1500)}}}
	refs, err := sendAll(context.Background(), ch, fmt.Sprint(opsGroup), plan)
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) < 3 {
		t.Fatalf("%d parts", len(refs))
	}
	for _, ref := range refs {
		if err := ch.Finish(context.Background(), ref, askbridge.Ending{Plan: plan, Status: strings.Repeat("Answered: x & y, ", 40)}); err != nil {
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
