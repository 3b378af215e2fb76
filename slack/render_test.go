package slack

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slack-go/slack"

	"github.com/askbridge/askbridge"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run go test -update to create it): %v", err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// shown is what a golden file holds: each message as chat.postMessage (or
// chat.update) sends it.
type shown struct {
	Text   string        `json:"text"`
	Blocks []slack.Block `json:"blocks"`
}

func pretty(t *testing.T, msgs []message) []byte {
	t.Helper()
	var out []shown
	for _, m := range msgs {
		out = append(out, shown(m))
	}
	// Through a generic value, so the file shows "<" and "&" as they are
	// rather than as \u003c and \u0026 (the blocks marshal themselves).
	raw, err := json.Marshal(out)
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
	return b.Bytes()
}

func plan(t *testing.T, id, body string) askbridge.Plan {
	t.Helper()
	req, err := askbridge.DecodeRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	ch := &Channel{}
	return askbridge.BuildPlan(id, req, ch.Capabilities())
}

var shapes = []struct{ name, body string }{
	{"single_select", `{"questions":[{"id":"deploy_target","header":"Target","question":"Where should this deploy?","options":[{"label":"Staging (Recommended)"},{"label":"Production"}]}]}`},
	{"single_select_descriptions", `{"agent":"deploy-bot","questions":[{"id":"deploy_target","header":"Target","question":"Where should this deploy?","options":[{"label":"Staging (Recommended)","description":"Safer default"},{"label":"Production","description":"Live traffic & real users"},{"label":"Canary <5%>","description":"A slice of production"}]}]}`},
	{"multi_select", `{"questions":[{"id":"checks","header":"Checks","question":"Which checks should run?","multiSelect":true,"options":[{"label":"Unit"},{"label":"Integration"},{"label":"Load","description":"Slow: about 20 minutes"}]}]}`},
	{"two_questions", `{"questions":[{"id":"target","header":"Target","question":"Where?","options":[{"label":"Staging"},{"label":"Production"}]},{"id":"checks","header":"Checks","question":"Which checks?","multiSelect":true,"options":[{"label":"Unit"},{"label":"Load"}]}]}`},
	{"three_questions", `{"agent":"release <!channel> bot","questions":[{"id":"target","header":"Target","question":"Where? Ask <@U0BOSS> if unsure.","options":[{"label":"Staging"},{"label":"Production"}]},{"id":"checks","header":"Checks","question":"Which checks?","multiSelect":true,"options":[{"label":"Unit"},{"label":"Integration"},{"label":"Load"}]},{"id":"notify","header":"Notify","question":"Who hears about it?","options":[{"label":"Team","description":"#deploys & <!here>"},{"label":"Nobody"}]}]}`},
	{"long_split", longRequest()},
}

// longRequest is a valid prompt whose escaped text passes a section's 3000
// characters (every & becomes &amp;), so its sections are cut.
func longRequest() string {
	amp := strings.Repeat("R&D ", 120)
	desc := strings.Repeat("&", 200)
	var opts []string
	for i := range 4 {
		opts = append(opts, fmt.Sprintf(`{"label":"Option %d & more","description":%q}`, i+1, desc))
	}
	return fmt.Sprintf(`{"questions":[{"id":"a","header":"Budget","question":%q,"options":[%s]}]}`, strings.TrimSpace(amp), strings.Join(opts, ","))
}

func TestGoldenPrompts(t *testing.T) {
	for _, s := range shapes {
		t.Run(s.name, func(t *testing.T) {
			msgs := render(plan(t, "q-"+s.name, s.body))
			checkLimits(t, msgs)
			golden(t, "prompt_"+s.name+".json", pretty(t, msgs))
		})
	}
}

func TestGoldenEndStates(t *testing.T) {
	p := plan(t, "q-end", shapes[1].body)
	for _, end := range []struct{ name, status string }{
		{"answered", "Answered: Canary <5%>"},
		{"skipped", "Skipped"},
		{"expired", "Expired"},
		{"cancelled", "Cancelled"},
	} {
		t.Run(end.name, func(t *testing.T) {
			var msgs []message
			for _, m := range render(p) {
				msgs = append(msgs, finished(m, end.status))
			}
			checkLimits(t, msgs)
			for _, m := range msgs {
				for _, b := range m.Blocks {
					if b.BlockType() == slack.MBTAction {
						t.Errorf("an ended message keeps its buttons")
					}
				}
			}
			golden(t, "end_"+end.name+".json", pretty(t, msgs))
		})
	}
}

// checkLimits applies Block Kit's limits to rendered messages.
func checkLimits(t *testing.T, msgs []message) {
	t.Helper()
	for i, m := range msgs {
		if len(m.Blocks) > maxBlocks {
			t.Errorf("message %d: %d blocks", i, len(m.Blocks))
		}
		if m.Text == "" || askbridge.TextLength(m.Text) > maxTextChars {
			t.Errorf("message %d: text of %d characters", i, askbridge.TextLength(m.Text))
		}
		for _, b := range m.Blocks {
			switch b := b.(type) {
			case *slack.SectionBlock:
				if n := askbridge.TextLength(b.Text.Text); n > maxSectionChars {
					t.Errorf("message %d: section of %d characters", i, n)
				}
				if strings.ContainsAny(b.Text.Text, "<>") {
					t.Errorf("message %d: unescaped markup in %q", i, b.Text.Text)
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
			}
		}
	}
}

// A prompt of more than 50 blocks goes out as several messages, the
// buttons in the last; every message keeps within the limits.
func TestRenderSplitsPastFiftyBlocks(t *testing.T) {
	p := askbridge.Plan{ID: "big", Mode: askbridge.ModeText, Intro: "Questions for you:", FreeText: "Something else?", Closing: "Reply."}
	for i := range 60 {
		p.Sections = append(p.Sections, askbridge.Section{Number: i + 1, Header: "H", Question: fmt.Sprintf("Question %d?", i+1),
			Options: []askbridge.Option{{Label: "A"}, {Label: "B"}}})
	}
	for i := range 30 {
		p.Rows = append(p.Rows, []askbridge.Button{{Label: fmt.Sprint("B", i), Payload: askbridge.EncodePayload("big", askbridge.Choice{Kind: askbridge.ControlOption})}})
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
	if !strings.Contains(msgs[1].Text, "part 2 of 2") {
		t.Errorf("second text %q", msgs[1].Text)
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
	c.state.Store(askbridge.StateConnected)
	for _, tc := range []struct {
		name string
		err  error
		kind askbridge.ErrorKind
		why  string
	}{
		{"429", &slack.RateLimitedError{RetryAfter: 3e9}, askbridge.RateLimited, "ratelimited"},
		{"channel_not_found", slack.SlackErrorResponse{Err: "channel_not_found"}, askbridge.Permanent, "channel_not_found"},
		{"not_in_channel", slack.SlackErrorResponse{Err: "not_in_channel"}, askbridge.Permanent, "not_in_channel"},
		{"is_archived", slack.SlackErrorResponse{Err: "is_archived"}, askbridge.Permanent, "is_archived"},
		{"account_inactive", slack.SlackErrorResponse{Err: "account_inactive"}, askbridge.Permanent, "account_inactive"},
		{"internal_error", slack.SlackErrorResponse{Err: "internal_error"}, askbridge.Temporary, "internal_error"},
		{"503", slack.StatusCodeError{Code: 503, Status: "503 Service Unavailable"}, askbridge.Temporary, "slack server error: 503 Service Unavailable"},
		{"network", context.DeadlineExceeded, askbridge.Temporary, "context deadline exceeded"},
		{"invalid_auth", fmt.Errorf("wrapped: %w", slack.SlackErrorResponse{Err: "invalid_auth"}), askbridge.Permanent, "invalid_auth"},
	} {
		se := c.classify(tc.err)
		if se.Kind != tc.kind || se.Reason != tc.why {
			t.Errorf("%s: %v %q, want %v %q", tc.name, se.Kind, se.Reason, tc.kind, tc.why)
		}
		if tc.kind == askbridge.RateLimited && se.RetryAfter != 3e9 {
			t.Errorf("%s: retry after %s", tc.name, se.RetryAfter)
		}
	}
	if c.State() != askbridge.StateBadCredentials {
		t.Errorf("invalid_auth left the state %q", c.State())
	}
}
