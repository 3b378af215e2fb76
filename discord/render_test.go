package discord

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/askbridge/askbridge"
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

var shapes = []struct{ name, body string }{
	{"single_select", `{"questions":[{"id":"deploy_target","header":"Target","question":"Where should this deploy?","options":[{"label":"Staging (Recommended)"},{"label":"Production"}]}]}`},
	{"single_select_descriptions", `{"agent":"release-bot","questions":[{"id":"deploy_target","header":"Target","question":"Where should this deploy?","options":[{"label":"Staging (Recommended)","description":"Safer default"},{"label":"Production","description":"Goes to every user at once"},{"label":"Canary","description":"5% of traffic"},{"label":"Nowhere"}]}]}`},
	{"multi_select", `{"questions":[{"id":"checks","header":"Checks","question":"Which checks should run?","multiSelect":true,"options":[{"label":"Unit"},{"label":"Integration","description":"About 20 minutes"},{"label":"Load"}]}]}`},
	{"two_questions", `{"questions":[{"id":"target","header":"Target","question":"Where?","options":[{"label":"Staging"},{"label":"Production"}]},{"id":"when","header":"When","question":"When should it go out?","options":[{"label":"Now"},{"label":"Tonight","description":"After 22:00 UTC"}]}]}`},
	{"three_questions", `{"questions":[{"id":"target","header":"Target","question":"Where?","options":[{"label":"Staging"},{"label":"Production"}]},{"id":"checks","header":"Checks","question":"Which checks?","multiSelect":true,"options":[{"label":"Unit"},{"label":"Integration"},{"label":"Load"}]},{"id":"notify","header":"Notify","question":"Who hears about it?","options":[{"label":"Team"},{"label":"Nobody"}]}]}`},
	{"markup_and_mentions", `{"agent":"@everyone","questions":[{"id":"a","header":"<@&42>","question":"Ping @here and <@123>? **bold** _it_ ~~s~~ ` + "`code`" + ` ||spoiler|| [link](https://example.com)","options":[{"label":"# heading","description":"> quote"},{"label":"- list"},{"label":"1. item"}]}]}`},
	{"long_split", fmt.Sprintf(`{"questions":[{"id":"a","header":"First","question":%q,"options":[{"label":"Alpha","description":%q},{"label":"Beta","description":%q},{"label":"Gamma","description":%q},{"label":"Delta","description":%q}]},{"id":"b","header":"Second","question":%q,"options":[{"label":"Alpha","description":%q},{"label":"Beta","description":%q},{"label":"Gamma"},{"label":"Delta"}]},{"id":"c","header":"Third","question":%q,"multiSelect":true,"options":[{"label":"Alpha","description":%q},{"label":"Beta","description":%q},{"label":"Gamma","description":%q},{"label":"Delta","description":%q}]}]}`,
		long, strings.Repeat("a", 190), strings.Repeat("b", 190), strings.Repeat("c", 190), strings.Repeat("d", 190),
		long, strings.Repeat("e", 190), strings.Repeat("f", 190),
		long, strings.Repeat("g", 190), strings.Repeat("h", 190), strings.Repeat("i", 190), strings.Repeat("j", 190))},
}

// describe renders what Discord receives for one message in a form a
// reviewer can read: the content as sent, then each row of buttons, then
// the request body.
func describe(b *strings.Builder, title string, ms *discordgo.MessageSend) {
	fmt.Fprintf(b, "=== %s (%d characters) ===\n%s\n", title, askbridge.TextLength(ms.Content), ms.Content)
	for i, row := range ms.Components {
		fmt.Fprintf(b, "--- row %d:", i+1)
		for _, c := range row.(discordgo.ActionsRow).Components {
			btn := c.(discordgo.Button)
			style := map[discordgo.ButtonStyle]string{discordgo.PrimaryButton: "primary", discordgo.SecondaryButton: "secondary"}[btn.Style]
			fmt.Fprintf(b, " [%s %q custom_id=%s]", style, btn.Label, btn.CustomID)
		}
		b.WriteString("\n")
	}
	body, _ := json.Marshal(ms)
	fmt.Fprintf(b, "--- body: %s\n\n", body)
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

// TestGoldenPrompts records every prompt shape as sent, and its end states.
func TestGoldenPrompts(t *testing.T) {
	for _, shape := range shapes {
		t.Run(shape.name, func(t *testing.T) {
			req := mustRequest(t, shape.body)
			plan := askbridge.BuildPlan("golden-"+shape.name, req, caps)
			parts := renderParts(plan)
			var b strings.Builder
			for i, part := range parts {
				ms := &discordgo.MessageSend{Content: part, AllowedMentions: noPings()}
				if i == len(parts)-1 {
					ms.Components = components(plan)
				}
				if n := askbridge.TextLength(part); n > maxContent {
					t.Errorf("part %d is %d characters", i+1, n)
				}
				describe(&b, fmt.Sprintf("message %d of %d", i+1, len(parts)), ms)
			}
			golden(t, shape.name, b.String())
		})
	}
}

func TestGoldenEndStates(t *testing.T) {
	req := mustRequest(t, shapes[1].body)
	id := "golden-end"
	plan := askbridge.BuildPlan(id, req, caps)
	content := renderParts(plan)[0]
	ends := []struct {
		name string
		res  askbridge.Result
	}{
		{"answered", askbridge.Answered(id, map[string][]string{"deploy_target": {"Production"}}, nil, askbridge.ViaButton)},
		{"answered_free_text", askbridge.Answered(id, map[string][]string{"deploy_target": {"somewhere else"}}, nil, askbridge.ViaText)},
		{"skipped", askbridge.NoAnswer(id, askbridge.ReasonSkipped, "")},
		{"expired", askbridge.NoAnswer(id, askbridge.ReasonTimeout, "")},
		{"cancelled", askbridge.NoAnswer(id, askbridge.ReasonCancelled, "")},
	}
	var b strings.Builder
	for _, end := range ends {
		edited := finished(content, askbridge.StatusLine(req, end.res))
		none := []discordgo.MessageComponent{}
		edit := &discordgo.MessageEdit{Content: &edited, Components: &none, AllowedMentions: noPings()}
		body, _ := json.Marshal(edit)
		fmt.Fprintf(&b, "=== %s ===\n%s\n--- body: %s\n\n", end.name, edited, body)
		if again := finished(edited, askbridge.StatusLine(req, end.res)); again != edited {
			t.Errorf("%s: finishing twice changed the message", end.name)
		}
	}
	golden(t, "end_states", b.String())
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

func TestFinishedFitsTheLimit(t *testing.T) {
	content := strings.Repeat("x", maxContent-5) + `\*`
	got := finished(content, "Answered: "+strings.Repeat("y", 300))
	if n := askbridge.TextLength(got); n > maxContent {
		t.Errorf("finished message is %d characters", n)
	}
	if !strings.HasSuffix(got, statusSuffix("Answered: "+strings.Repeat("y", 300))) {
		t.Error("the status line was cut")
	}
}
