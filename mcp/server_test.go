package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/mcp"
)

// TestToolListed: the server lists two tools, ask_user and
// wait_for_answer; ask_user's input schema
// is the request of ask-user.md §1 with its real limits (request.go's),
// plus to, answerers and agent and nothing else, and whose description
// carries the conventions for agents; over both transports.
func TestToolListed(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			srv := newServer(t, testPrefix(), mcp.Options{})
			cs := tr.connect(t, srv, newProgress())
			list, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tl := range list.Tools {
				names = append(names, tl.Name)
			}
			if strings.Join(names, ",") != "ask_user,wait_for_answer" {
				t.Fatalf("tools %q; want ask_user, wait_for_answer", names)
			}
			tool := list.Tools[0]
			if wait := list.Tools[1]; wait.OutputSchema == nil || !strings.Contains(wait.Description, `"status":"pending"`) {
				t.Errorf("wait_for_answer: output schema %v, description %q", wait.OutputSchema, wait.Description)
			}
			var in schema
			remarshal(t, tool.InputSchema, &in)
			q := in.Properties["questions"]
			question := q.Items
			opts := question.Properties["options"]
			label := opts.Items.Properties["label"]
			checks := []struct {
				what      string
				got, want any
			}{
				{"questions.minItems", q.MinItems, askbridge.MinQuestions},
				{"questions.maxItems", q.MaxItems, askbridge.MaxQuestions},
				{"options.minItems", opts.MinItems, askbridge.MinOptions},
				{"options.maxItems", opts.MaxItems, askbridge.MaxOptions},
				{"label.maxLength", label.MaxLength, askbridge.MaxLabelChars},
				{"label.minLength", label.MinLength, 1},
				{"description.maxLength", opts.Items.Properties["description"].MaxLength, askbridge.MaxDescriptionChars},
				{"question.maxLength", question.Properties["question"].MaxLength, askbridge.MaxQuestionChars},
				{"id.pattern", question.Properties["id"].Pattern, "^[a-z][a-z0-9_]*$"},
				// Clamped as the contract says, so no bound a client
				// would refuse the call for.
				{"timeoutSeconds.minimum", in.Properties["timeoutSeconds"].Minimum, (*int)(nil)},
				{"timeoutSeconds.maximum", in.Properties["timeoutSeconds"].Maximum, (*int)(nil)},
				{"timeoutSeconds.default", in.Properties["timeoutSeconds"].Default, askbridge.DefaultTimeout},
				{"agent.maxLength", in.Properties["agent"].MaxLength, askbridge.MaxAgentChars},
				{"answerers.maxItems", in.Properties["answerers"].MaxItems, askbridge.MaxAnswerers},
				{"multiSelect.type", question.Properties["multiSelect"].Type, "boolean"},
				{"required", strings.Join(in.Required, ","), "questions"},
				{"question.required", strings.Join(question.Required, ","), "id,header,question,options"},
				{"additionalProperties", *in.AdditionalProperties && *question.AdditionalProperties && *opts.Items.AdditionalProperties, false},
			}
			for _, c := range checks {
				if !reflect.DeepEqual(toFloat(c.got), toFloat(c.want)) {
					t.Errorf("input schema %s = %v; want %v", c.what, c.got, c.want)
				}
			}
			var fields []string
			for k := range in.Properties {
				fields = append(fields, k)
			}
			if got := strings.Join(sorted(fields), ","); got != "agent,answerers,context,escalate,locale,notifyEnd,questions,quorum,remember,remindEverySeconds,timeoutSeconds,to" {
				t.Errorf("input fields %s; want agent,answerers,context,escalate,locale,notifyEnd,questions,quorum,remember,remindEverySeconds,timeoutSeconds,to", got)
			}
			if tool.OutputSchema == nil {
				t.Error("no output schema")
			}
			for _, want := range []string{"(Recommended)", `Never add an "Other" option`, "Prefer one question", "no_answer", "best judgment", "genuinely belongs to the person", `{"status":"pending","id":`, "wait_for_answer", `to "mcp"`} {
				if !strings.Contains(tool.Description, want) {
					t.Errorf("description lacks %q:\n%s", want, tool.Description)
				}
			}
			for _, r := range allReasons {
				if !strings.Contains(tool.Description, `"`+string(r)+`"`) {
					t.Errorf("description does not name the reason %q", r)
				}
			}
			timeout := in.Properties["timeoutSeconds"].Description
			if !strings.Contains(timeout, fmt.Sprintf("below %d is taken as %d", askbridge.MinTimeout, askbridge.MinTimeout)) || !strings.Contains(timeout, fmt.Sprintf("above %d as %d", askbridge.MaxTimeout, askbridge.MaxTimeout)) {
				t.Errorf("timeoutSeconds does not say how it is clamped: %q", timeout)
			}
		})
	}
}

// allReasons are the reasons a question ends without an answer.
var allReasons = []askbridge.Reason{askbridge.ReasonTimeout, askbridge.ReasonSkipped, askbridge.ReasonCancelled, askbridge.ReasonUndeliverable, askbridge.ReasonNoQuorum}

// TestDocsNameTheTool: docs/mcp.md's section on the tool names every field
// of its input schema and every reason a question ends without an
// answer, so the page and the schema cannot drift apart.
func TestDocsNameTheTool(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "mcp.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## The tool\n")
	if !ok {
		t.Fatal(`docs/mcp.md has no "## The tool" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var in schema
	remarshal(t, mcp.ToolForTest().InputSchema, &in)
	for name, p := range in.Properties {
		if !strings.Contains(section, "`"+name+"`") {
			t.Errorf("docs/mcp.md's tool section does not name the field `%s`", name)
		}
		for sub := range p.Properties {
			if !strings.Contains(section, "`"+sub+"`") {
				t.Errorf("docs/mcp.md's tool section does not name `%s` of `%s`", sub, name)
			}
		}
	}
	for _, r := range allReasons {
		if !strings.Contains(section, "`"+string(r)+"`") {
			t.Errorf("docs/mcp.md's tool section does not name the reason `%s`", r)
		}
	}
}

// schema is the part of a JSON Schema the test reads.
type schema struct {
	Type                 string             `json:"type"`
	Properties           map[string]*schema `json:"properties"`
	Items                *schema            `json:"items"`
	Required             []string           `json:"required"`
	AdditionalProperties *bool              `json:"additionalProperties"`
	MinItems, MaxItems   *int
	MinLength, MaxLength *int
	Minimum, Maximum     *int
	Default              any
	Pattern              string
	Description          string
}

func remarshal(t *testing.T, from, to any) {
	t.Helper()
	b, err := json.Marshal(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, to); err != nil {
		t.Fatal(err)
	}
}

// toFloat makes numbers of any type (and pointers to them) comparable.
func toFloat(v any) any {
	switch n := v.(type) {
	case *int:
		if n == nil {
			return nil
		}
		return float64(*n)
	case int:
		return float64(n)
	case float64:
		return n
	}
	return v
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// TestAnswered: a call answered on the web page returns the result: its
// structured content is the result JSON the bridge stored, its first text
// line the summary; a call naming no agent asks under the client's name;
// and a client that sent no progress token gets no progress; over both
// transports.
func TestAnswered(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			prefix := testPrefix()
			br := startBridge(t, prefix)
			srv := newServer(t, prefix, mcp.Options{})
			p := newProgress()
			cs := tr.connect(t, srv, p)
			args := deployArgs()
			args["context"] = "Build **#4812** failed on `main`"
			args["locale"] = "th-TH"
			args["remindEverySeconds"] = 600
			call := callAsync(context.Background(), cs, &sdk.CallToolParams{Name: "ask_user", Arguments: args})
			id := br.waitShown(t)
			br.answer(t, id, `{"answers":{"deploy_target":["Production"]}}`)
			r := await(t, call, 20*time.Second)
			if r.err != nil {
				t.Fatal(r.err)
			}
			if r.res.IsError {
				t.Fatalf("tool error: %v", text(r.res))
			}
			q := waitEnded(t, prefix, id)
			if q.Result == nil {
				t.Fatal("the question hash holds no result")
			}
			got, err := json.Marshal(r.res.StructuredContent)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(asJSON(t, got), asJSON(t, q.Result.Raw)) {
				t.Errorf("structured content %s; want the result %s", got, q.Result.Raw)
			}
			lines := text(r.res)
			if len(lines) == 0 || lines[0] != "answered: deploy_target = Production" {
				t.Errorf("text %q; want the summary first", lines)
			}
			if q.Request.Agent != "test-agent" {
				t.Errorf("asked as agent %q; want the client's name", q.Request.Agent)
			}
			// The context and the language reach the bridge, the language
			// resolved to the catalog that shows it.
			if q.Request.Context != args["context"] || q.Request.Locale != "th" {
				t.Errorf("context %q, locale %q; want the call's, in th", q.Request.Context, q.Request.Locale)
			}
			if q.Request.RemindEverySeconds != 600 {
				t.Errorf("remindEverySeconds %d; want the call's 600", q.Request.RemindEverySeconds)
			}
			if n := len(p.list()); n != 0 {
				t.Errorf("%d progress notifications without a progress token", n)
			}
		})
	}
}

// TestProgress: while a call waits, a client that sent a progress token
// gets notifications at the interval (here 200ms), each with more progress
// than the last, the timeout as the total, and a message that says where
// the question is (shown on the web page) and how long is left; over both
// transports.
func TestProgress(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			prefix := testPrefix()
			br := startBridge(t, prefix)
			srv := newServer(t, prefix, mcp.Options{ProgressEvery: 200 * time.Millisecond})
			p := newProgress()
			cs := tr.connect(t, srv, p)
			args := deployArgs()
			args["timeoutSeconds"] = 600
			call := callAsync(context.Background(), cs, &sdk.CallToolParams{
				Name: "ask_user", Arguments: args, Meta: sdk.Meta{"progressToken": "tok-1"},
			})
			id := br.waitShown(t)
			deadline := time.After(10 * time.Second)
			for shown := 0; shown < 3; {
				select {
				case <-p.seen:
				case <-deadline:
					t.Fatalf("progress so far: %v", messages(p.list()))
				}
				shown = 0
				for _, n := range p.list() {
					if strings.HasPrefix(n.Message, "Shown on the web page; waiting for the answer — ") {
						shown++
					}
				}
			}
			br.answer(t, id, `{"answers":{"deploy_target":["Staging (Recommended)"]}}`)
			r := await(t, call, 20*time.Second)
			if r.err != nil || r.res.IsError {
				t.Fatalf("call: %v %v", r.err, r.res)
			}
			got := p.list()
			last := -1.0
			for _, n := range got {
				if n.ProgressToken != "tok-1" || n.Total != 600 || n.Progress <= last {
					t.Errorf("notification %+v after progress %v", n, last)
				}
				last = n.Progress
				if !strings.Contains(n.Message, " left") {
					t.Errorf("message %q does not say how long is left", n.Message)
				}
			}
			if m := got[len(got)-1].Message; !strings.Contains(m, "m ") || !strings.HasSuffix(m, "s left") {
				t.Errorf("last message %q; want the time left as 9m 5xs", m)
			}
		})
	}
}

func messages(ns []*sdk.ProgressNotificationParams) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.Message)
	}
	return out
}

// TestCancelCancelsQuestion: a client that cancels its call (its context
// ends) cancels the question: the question hash ends no_answer, reason
// cancelled. Over both transports, and over HTTP with an older protocol,
// whose cancel notification a stateless server cannot route (the aborted
// HTTP request does it).
func TestCancelCancelsQuestion(t *testing.T) {
	cases := []struct {
		name     string
		versions []string
		connect  func(*testing.T, *mcp.Server, *progress) *sdk.ClientSession
	}{
		{"in-memory", nil, inMemory},
		{"streamable-http", nil, overHTTP},
		{"streamable-http-2025-11-25", []string{"2025-11-25"}, overHTTP},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			prefix := testPrefix()
			br := startBridge(t, prefix)
			o := mcp.Options{}
			if tc.versions != nil {
				mcp.SpeakOnly(&o, tc.versions...)
			}
			srv := newServer(t, prefix, o)
			cs := tc.connect(t, srv, newProgress())
			if tc.versions != nil && cs.InitializeResult().ProtocolVersion != tc.versions[0] {
				t.Fatalf("spoke %s; want %s", cs.InitializeResult().ProtocolVersion, tc.versions[0])
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			call := callAsync(ctx, cs, &sdk.CallToolParams{Name: "ask_user", Arguments: deployArgs()})
			id := br.waitShown(t)
			cancel()
			if r := await(t, call, 10*time.Second); !errors.Is(r.err, context.Canceled) {
				t.Errorf("cancelled call returned %v, %v", r.res, r.err)
			}
			q := waitEnded(t, prefix, id)
			if q.Status != askbridge.StatusNoAnswer || q.Result == nil || q.Result.Reason != askbridge.ReasonCancelled {
				t.Errorf("question ended %s %+v; want no_answer, cancelled", q.Status, q.Result)
			}
		})
	}
}

// TestCloseCancelsCalls: closing the server (the bridge stopping, `bridge
// mcp`'s client going away) cancels the calls in flight, which return the
// cancelled result; a call after Close is a tool error.
func TestCloseCancelsCalls(t *testing.T) {
	prefix := testPrefix()
	br := startBridge(t, prefix)
	srv := newServer(t, prefix, mcp.Options{})
	cs := inMemory(t, srv, newProgress())
	call := callAsync(context.Background(), cs, &sdk.CallToolParams{Name: "ask_user", Arguments: deployArgs()})
	br.waitShown(t)
	srv.Close()
	r := await(t, call, 15*time.Second)
	if r.err != nil || r.res.IsError {
		t.Fatalf("call: %v %v", r.err, text(r.res))
	}
	if lines := text(r.res); !strings.HasPrefix(lines[0], "no_answer (cancelled): ") {
		t.Errorf("summary %q", lines[0])
	}
	again, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "ask_user", Arguments: deployArgs()})
	if err != nil || !again.IsError || !strings.Contains(text(again)[0], "shutting down") {
		t.Errorf("call after Close: %v %v", err, again)
	}
}

// TestBadRequest: a request that fails validation is a tool error naming
// the field, at once, and nothing is pushed to the bridge.
func TestBadRequest(t *testing.T) {
	prefix := testPrefix()
	startBridge(t, prefix)
	srv := newServer(t, prefix, mcp.Options{})
	cs := inMemory(t, srv, newProgress())
	oneOption := deployArgs()
	oneOption["questions"].([]any)[0].(map[string]any)["options"] = []any{map[string]any{"label": "Only"}}
	badID := deployArgs()
	badID["questions"].([]any)[0].(map[string]any)["id"] = "Deploy Target"
	withPrompt := deployArgs()
	withPrompt["prompt"] = "Build failed"
	withID := deployArgs()
	withID["id"] = "mine"
	withCallback := deployArgs()
	withCallback["callback"] = "https://agents.example.com/hook"
	fractional := deployArgs()
	fractional["timeoutSeconds"] = 12.5
	cases := []struct {
		name string
		args map[string]any
		want string
	}{
		{"one option", oneOption, "questions[0].options must contain 2 to 4 options (got 1)"},
		{"bad question id", badID, "questions[0].id must be snake_case"},
		{"unknown field", withPrompt, `"prompt" is not a known field`},
		{"request id", withID, `"id" is not a known field of ask_user (it takes questions, context, locale, timeoutSeconds, to, answerers, agent, remindEverySeconds, escalate, quorum, remember, notifyEnd)`},
		{"result callback", withCallback, `"callback" is not a known field of ask_user`},
		{"fractional timeout", fractional, "timeoutSeconds must be an integer"},
		{"no questions", map[string]any{}, "questions is required"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "ask_user", Arguments: tc.args})
			if err != nil {
				t.Fatal(err)
			}
			if !res.IsError || !strings.Contains(text(res)[0], tc.want) {
				t.Errorf("result %v %q; want a tool error with %q", res.IsError, text(res), tc.want)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("the error took %s", d)
			}
		})
	}
	if n, err := rdb(t).XLen(context.Background(), prefix+"requests").Result(); err != nil || n != 0 {
		t.Errorf("requests stream holds %d entries (%v); want none", n, err)
	}
}

// TestRefusedByBridge: a request the bridge itself refuses (an unknown
// route) is a tool error with the bridge's message, at once; its
// structured content is the bridge's error result.
func TestRefusedByBridge(t *testing.T) {
	prefix := testPrefix()
	startBridge(t, prefix)
	srv := newServer(t, prefix, mcp.Options{DefaultTo: "nowhere"})
	cs := inMemory(t, srv, newProgress())
	start := time.Now()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "ask_user", Arguments: deployArgs()})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(text(res)[0], `the bridge refused the request: to: unknown route "nowhere"`) {
		t.Errorf("result %v %q", res.IsError, text(res))
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the refusal took %s", d)
	}
	var sc struct{ Status, Error string }
	remarshal(t, res.StructuredContent, &sc)
	if sc.Status != "error" || !strings.Contains(sc.Error, "unknown route") {
		t.Errorf("structured content %+v", sc)
	}
	// The call's own `to` wins over the default.
	args := deployArgs()
	args["to"] = "web"
	call := callAsync(context.Background(), cs, &sdk.CallToolParams{Name: "ask_user", Arguments: args})
	// Sleep: a call that returned at once would have by now; there is no event to wait for.
	time.Sleep(300 * time.Millisecond)
	select {
	case r := <-call:
		t.Fatalf("a call to web returned at once: %v %v", r.err, text(r.res))
	default:
	}
	srv.Close()
	await(t, call, 15*time.Second)
}

// TestNotTaken: with no bridge on the Redis, a call fails after
// NotTakenAfter with a tool error that says no bridge took it and names
// the Redis, and the request is withdrawn (a cancel follows it on the
// stream).
func TestNotTaken(t *testing.T) {
	prefix := testPrefix()
	srv := newServer(t, prefix, mcp.Options{NotTakenAfter: time.Second})
	cs := inMemory(t, srv, newProgress())
	start := time.Now()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "ask_user", Arguments: deployArgs()})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(text(res)[0], "no bridge took the question within 1s") || !strings.Contains(text(res)[0], prefix) {
		t.Errorf("result %v %q", res.IsError, text(res))
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s; want about NotTakenAfter", d)
	}
	entries, err := rdb(t).XRange(context.Background(), prefix+"requests", "-", "+").Result()
	if err != nil || len(entries) != 2 || entries[1].Values["cancel"] == nil {
		t.Errorf("requests stream %v (%v); want the ask and its cancel", entries, err)
	}
}

// TestDefaultsChecked: a default route or agent the bridge would refuse
// is refused by New, naming the field.
func TestDefaultsChecked(t *testing.T) {
	cases := []struct {
		name string
		o    mcp.Options
		want string
	}{
		{"route with a space", mcp.Options{DefaultTo: "two words"}, "to must not contain spaces"},
		{"agent with a line break", mcp.Options{DefaultAgent: "a\nb"}, "agent must not contain control characters"},
		{"agent too long", mcp.Options{DefaultAgent: strings.Repeat("x", 65)}, "agent must be at most 64 characters"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.Client = newServerClient
			if _, err := mcp.New(tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New: %v; want %q", err, tc.want)
			}
		})
	}
	if _, err := mcp.New(mcp.Options{}); err == nil || !strings.Contains(err.Error(), "Client is required") {
		t.Errorf("New without a client: %v", err)
	}
}

// TestSummary: the one-line text of each kind of result.
func TestSummary(t *testing.T) {
	qs := []askbridge.Question{{ID: "target"}, {ID: "regions"}}
	cases := []struct {
		name string
		res  askbridge.Result
		want string
	}{
		{"answered, question order", askbridge.Answered("x", map[string][]string{"regions": {"eu", "us"}, "target": {"Production"}}, nil, askbridge.ViaWeb),
			"answered: target = Production; regions = eu, us"},
		{"timeout", askbridge.NoAnswer("x", askbridge.ReasonTimeout, ""),
			"no_answer (timeout): nobody answered in time; continue with your best judgment and tell the user no answer came"},
		{"skipped", askbridge.NoAnswer("x", askbridge.ReasonSkipped, ""),
			"no_answer (skipped): the person skipped the question; continue with your best judgment and tell the user no answer came"},
		{"undeliverable", askbridge.NoAnswer("x", askbridge.ReasonUndeliverable, "chat not found"),
			"no_answer (undeliverable): the question could not be shown to anyone (chat not found); continue with your best judgment and tell the user no answer came"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := mcp.Summary(tc.res, qs); got != tc.want {
				t.Errorf("summary\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}
