package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/client"
)

// description is what the model reads before it calls ask_user: when to
// ask, how to shape the question, what comes back and what to do then
// (the conventions for agents of docs/ask-user.md §1).
var description = strings.TrimSpace(`
Ask a person a structured question in a chat they use (Telegram, Discord, Slack or the bridge's web page), and in your client's window when it shows forms, and wait for the answer. The call blocks until they answer, skip, or the question times out (default 15 minutes), or returns pending (below).

When to use it: only when the decision genuinely belongs to the person — a preference, a trade-off with real consequences, information only they have. Do not use it to ask whether to proceed or to confirm a plan you can carry out yourself.

How to ask:
- Prefer one question. Ask two or three at once only when they belong together.
- Give 2 to 4 short, distinct options. Put the option you recommend first and end its label with " (Recommended)".
- Never add an "Other" option: the person can always reply in their own words, and their text comes back as the answer.
- id is the snake_case key the answer comes back under; header is a 1–2 word label (shown cut to 12 characters); question is one sentence; set multiSelect to true when several options may be chosen.
- Leave to, answerers and agent unset unless you were told where to ask, who may answer, or what name to ask under.
- If the person has not answered within the server's wait budget (50 seconds by default, under the 60 seconds many clients allow a call), the call returns {"status":"pending","id":"…"}: the question stays open. Call wait_for_answer with that id to keep waiting; never ask again while it is pending.
- When your client can show forms, the question also appears in it as a form: the person may answer there or in the chat. to "mcp" asks only there.

What comes back (structured content; the first text line summarizes it):
- {"status":"pending","id":"<question id>"}: still open when the wait budget ran out; call wait_for_answer with the id.
- {"status":"answered","answers":{"answers":{"<question id>":["<label>", …]}}}: each value is a list of the chosen option labels, or the person's own words.
- {"status":"no_answer","reason":"timeout"|"skipped"|"cancelled"|"undeliverable"|"no_quorum"}: no answer came. Continue with your best judgment, and tell the user that no answer came and what you decided.
- A tool error means the request was refused or could not be asked; its text names the field or says what to fix. Fix it and call again; do not retry unchanged.`)

// toolFields are the fields of ask_user's arguments.
var toolFields = []string{"questions", "context", "locale", "timeoutSeconds", "to", "answerers", "agent", "remindEverySeconds", "escalate", "quorum", "remember", "notifyEnd"}

// answererPattern is request.go's rule for an answerer: "<platform>:<user
// id>" on a platform people may be named on.
const answererPattern = `^(telegram|discord|slack|email|web|mcp):\S+$`

// object is a JSON Schema object.
type object = map[string]any

// tool is ask_user's definition: the request of docs/ask-user.md §1 with the
// protocol's optional to, answerers and agent, each limit taken from
// request.go.
func tool() *sdk.Tool {
	no, yes := false, true
	return &sdk.Tool{
		Name:         ToolName,
		Title:        "Ask the user",
		Description:  description,
		InputSchema:  inputSchema(),
		OutputSchema: outputSchema(),
		Annotations: &sdk.ToolAnnotations{
			Title: "Ask the user", DestructiveHint: &no, OpenWorldHint: &yes,
		},
	}
}

// questionSchema is one question of the request: its id, header, text and
// options.
func questionSchema() object {
	option := object{
		"type": "object", "additionalProperties": false, "required": []string{"label"},
		"properties": object{
			"label": object{
				"type": "string", "minLength": 1, "maxLength": askbridge.MaxLabelChars,
				"description": `What the person picks, and what comes back as the answer. Unique within the question, ignoring case. End the recommended option's label with " (Recommended)".`,
			},
			"description": object{
				"type": "string", "maxLength": askbridge.MaxDescriptionChars,
				"description": "Optional: what choosing this option means, in a few words.",
			},
		},
	}
	return object{
		"type": "object", "additionalProperties": false,
		"required": []string{"id", "header", "question", "options"},
		"properties": object{
			"id": object{
				"type": "string", "pattern": "^[a-z][a-z0-9_]*$", "maxLength": askbridge.MaxQuestionIDChars,
				"description": "snake_case key the answer comes back under (for example deploy_target); unique within the call.",
			},
			"header": object{
				"type": "string", "minLength": 1, "maxLength": askbridge.MaxHeaderInput,
				"description": fmt.Sprintf("Short label shown above the question, 1–2 words; cut to %d characters.", askbridge.MaxHeaderGraphemes),
			},
			"question": object{
				"type": "string", "minLength": 1, "maxLength": askbridge.MaxQuestionChars,
				"description": "The question, one sentence.",
			},
			"options": object{
				"type": "array", "minItems": askbridge.MinOptions, "maxItems": askbridge.MaxOptions, "items": option,
				"description": fmt.Sprintf(`%d to %d options, the recommended one first. Never an "Other" option: the person may always answer in their own words.`, askbridge.MinOptions, askbridge.MaxOptions),
			},
			"multiSelect": object{
				"type": "boolean", "default": false,
				"description": "true lets the person pick several options.",
			},
		},
	}
}

// inputSchema is the request: its questions and the optional fields.
func inputSchema() object {
	// place is one place of `to`: a route name or a target.
	place := object{"type": "string", "minLength": 1, "maxLength": askbridge.MaxToChars, "pattern": `^\S+$`}
	return object{
		"type": "object", "additionalProperties": false, "required": []string{"questions"},
		"properties": object{
			"questions": object{
				"type": "array", "minItems": askbridge.MinQuestions, "maxItems": askbridge.MaxQuestions, "items": questionSchema(),
				"description": fmt.Sprintf("%d to %d questions shown together; prefer one.", askbridge.MinQuestions, askbridge.MaxQuestions),
			},
			"context": object{
				"type": "string", "maxLength": askbridge.MaxContextChars,
				"description": fmt.Sprintf("Optional: what the person needs to decide, shown above the questions (a failing test's output, a diff summary), in Markdown: bold, italic, inline code, code blocks, links, bullet lists. At most %d characters. Keep questions short and put detail here.", askbridge.MaxContextChars),
			},
			"locale": object{
				"type": "string", "maxLength": askbridge.MaxLocaleChars,
				"description": `Optional: the language of the bridge's own words around your question (instructions, buttons, status), as a tag such as "en" or "th". Write your questions and options in the person's language yourself. Default: the place's language.`,
			},
			"timeoutSeconds": object{
				"type": "integer", "default": askbridge.DefaultTimeout,
				"description": fmt.Sprintf("How long to wait for an answer, in seconds (default %d). A value below %d is taken as %d, one above %d as %d.", askbridge.DefaultTimeout, askbridge.MinTimeout, askbridge.MinTimeout, askbridge.MaxTimeout, askbridge.MaxTimeout),
			},
			"to": object{
				"description": fmt.Sprintf("Where to ask: a route name from the bridge's configuration, or a target such as web, telegram:<chat id>, discord:<channel id>, slack:<channel id>, email:<address>, or mcp (only in your client's window, as a form; the client must show forms); or a list of up to %d of them, to ask in all at once (the first answer anywhere wins). Default: the bridge's default place. Set it only when told where to ask.", askbridge.MaxPlaces),
				"anyOf":       []any{place, object{"type": "array", "minItems": 1, "maxItems": askbridge.MaxPlaces, "uniqueItems": true, "items": place}},
			},
			"remindEverySeconds": object{
				"type": "integer", "minimum": askbridge.MinRemindEvery,
				"description": fmt.Sprintf("Optional: remind the person this often (seconds, at least %d, below timeoutSeconds) while the question is open and nobody pressed Seen; at most %d reminders.", askbridge.MinRemindEvery, askbridge.MaxReminders),
			},
			"quorum": object{
				"type": "integer", "minimum": 2, "maximum": askbridge.MaxAnswerers,
				"description": "Optional: how many of the answerers must give the same answer before you get it (each answers once; a skip abstains). Needs answerers. The result then lists every vote in votes, and ends no_answer with reason no_quorum when agreement became impossible. Set it only when told several people must agree.",
			},
			"remember": object{
				"type": "object", "additionalProperties": false, "required": []string{"key", "offer"},
				"properties": object{
					"key": object{"type": "string", "minLength": 1, "maxLength": askbridge.MaxRememberKeyChars, "pattern": `^[A-Za-z0-9][A-Za-z0-9_.:-]*$`},
					"offer": object{
						"type": "array", "minItems": askbridge.MinOffers, "maxItems": askbridge.MaxOffers,
						"items": object{"type": "integer", "minimum": askbridge.MinStandingSeconds, "maximum": askbridge.MaxStandingSeconds},
					},
				},
				"description": "Optional: offer the person who answers with options to keep that answer standing for one of the offer's durations (seconds, increasing); a later ask with the same agent, key and the same question ids and options is then answered at once, with via standing. Not with quorum. Set it only when told the same decision may stand.",
			},
			"notifyEnd": object{
				"type":        "boolean",
				"description": "Optional: when the question is asked by email (to email:<address>), also send each address a short email when it ends, saying who answered. Set it only when told to.",
			},
			"escalate": object{
				"type": "array", "minItems": 1, "maxItems": askbridge.MaxSteps,
				"items": object{
					"type": "object", "additionalProperties": false, "required": []string{"afterSeconds", "to"},
					"properties": object{
						"afterSeconds": object{"type": "integer", "minimum": 1},
						"to":           object{"anyOf": []any{place, object{"type": "array", "minItems": 1, "maxItems": askbridge.MaxPlaces, "uniqueItems": true, "items": place}}},
					},
				},
				"description": "Optional: escalation steps. afterSeconds after asking (increasing, below timeoutSeconds), if still open and nobody pressed Seen, the question is also shown in the step's places. Set it only when told to escalate.",
			},
			"answerers": object{
				"type": "array", "maxItems": askbridge.MaxAnswerers, "uniqueItems": true,
				"items":       object{"type": "string", "pattern": answererPattern, "maxLength": askbridge.MaxAnswererChars},
				"description": `Who may answer, as "<platform>:<user id>" (telegram, discord, slack or web; mcp:<client name> is the person at this client); narrows what the place allows. Set it only when told who should answer.`,
			},
			"agent": object{
				"type": "string", "maxLength": askbridge.MaxAgentChars,
				"description": `Who is asking, shown to the person as "Question from <agent>:". Default: the name this server was configured with, or your client's name.`,
			},
		},
	}
}

// outputSchema is the result the call returns as structured content.
func outputSchema() object {
	return object{
		"type": "object", "required": []string{"status"},
		"properties": object{
			"status": object{"type": "string", "enum": []string{string(askbridge.StatusAnswered), string(askbridge.StatusNoAnswer), string(askbridge.StatusPending), string(askbridge.StatusError)}},
			"answers": object{
				"type": "object",
				"properties": object{"answers": object{
					"type":                 "object",
					"additionalProperties": object{"type": "array", "items": object{"type": "string"}},
				}},
			},
			"reason":         object{"type": "string"},
			"error":          object{"type": "string"},
			"id":             object{"type": "string"},
			"answeredBy":     object{"type": "object"},
			"via":            object{"type": "string"},
			"createdAt":      object{"type": "integer"},
			"endedAt":        object{"type": "integer"},
			"place":          object{"type": "string"},
			"acknowledgedBy": object{"type": "object"},
			"votes":          object{"type": "array", "items": object{"type": "object"}},
		},
	}
}

// Why a call was cancelled, besides its client's cancellation.
var (
	errNotTaken   = errors.New("no bridge took the request")
	errStopping   = errors.New("the MCP server is stopping")
	errClientGone = errors.New("the client's HTTP request went away")
)

// askUser is the ask_user handler.
func (s *Server) askUser(ctx context.Context, call *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	return s.slotted(ctx, func() *sdk.CallToolResult {
		if call.Params.RequestState != "" {
			return s.resume(ctx, call)
		}
		return s.ask(ctx, call)
	}), nil
}

// slotted runs a call in one of the MaxCalls slots: a tool error when the
// server is closing or every slot is taken.
func (s *Server) slotted(ctx context.Context, run func() *sdk.CallToolResult) *sdk.CallToolResult {
	if !s.enter() {
		return toolError("ask_user: the server is shutting down; nothing was asked. Call again when it is back.")
	}
	defer s.calls.Done()
	if !s.callSlot(ctx) {
		return toolError(s.busyText())
	}
	defer s.freeSlot()
	return run()
}

// ask pushes the call's request and waits for its end, up to the wait
// budget; a question also shown in the client as a form (relay) is shown
// there meanwhile, or, for a client that answers forms by calling again,
// the form is what the call returns at once.
func (s *Server) ask(ctx context.Context, call *sdk.CallToolRequest) *sdk.CallToolResult {
	req, err := s.request(call.Params.Arguments, call.ClientInfo())
	if err != nil {
		return toolError(err.Error())
	}
	rel, err := s.relayOf(call, req)
	if err != nil {
		return toolError(err.Error())
	}
	c, err := s.opts.Client(ctx)
	if err != nil {
		return toolError("ask_user: nothing was asked: " + err.Error())
	}
	req.ID = client.NewID()
	start := time.Now()
	// Followed before it is pushed, so no event of it is missed.
	w := s.events.add(c, req.ID)
	defer s.events.remove(req.ID, w)
	// One XADD, not cut short: a push that reached Redis is then always
	// waited for, or cancelled.
	id, err := c.Push(context.WithoutCancel(ctx), req)
	if err != nil {
		return toolError(fmt.Sprintf("ask_user: nothing was asked: %v (Redis: %s).", err, s.opts.Redis))
	}
	log := s.log.With("question", id)
	log.Info("ask_user: asked", "agent", req.Agent, "to", req.To, "in client", rel != nil)
	if rel != nil {
		// The form waits for a bridge to take the question: one it
		// refuses is never shown, and the form's answer finds it.
		q, failed := s.taken(ctx, c, id, w)
		switch {
		case failed != nil:
			return failed
		case q.Status != askbridge.StatusPending:
			rel = nil
		case rel.rounds:
			return s.inputRequired(id, rel)
		}
	}
	return s.await(ctx, call, waiting{
		c: c, id: id, req: req, w: w, start: start, timeout: time.Duration(req.TimeoutSeconds) * time.Second,
		budget: s.opts.MaxWait, rel: rel, log: log,
	})
}

// final is the call's result for a question that ended with res.
func final(res client.Result, questions []askbridge.Question) *sdk.CallToolResult {
	return &sdk.CallToolResult{
		Content: []sdk.Content{
			&sdk.TextContent{Text: summary(res.Result, questions)},
			&sdk.TextContent{Text: string(res.Raw)},
		},
		StructuredContent: res.Raw,
	}
}

// waited turns what the wait of question id returned (res, err) into the
// call's outcome: the result when the question ended (cancelled with the
// call included), else the tool error to return (failed).
func (s *Server) waited(ctx, callCtx context.Context, c *client.Client, id string, w *watched, res client.Result, err error, log *slog.Logger) (_ client.Result, failed *sdk.CallToolResult) {
	var refused *client.RefusedError
	switch {
	case err == nil:
	case errors.As(err, &refused):
		log.Info("ask_user: refused", "error", refused.Message)
		out := toolError(fmt.Sprintf("ask_user: the bridge refused the request: %s. Fix it and call again.", refused.Message))
		out.StructuredContent = res.Raw
		return res, out
	case callCtx.Err() != nil:
		cause := context.Cause(callCtx)
		bg := context.WithoutCancel(ctx)
		if errors.Is(cause, errNotTaken) {
			// Nobody would show it; a bridge started later must not.
			_ = c.Cancel(bg, id)
			log.Warn("ask_user: no bridge took the request", "redis", s.opts.Redis)
			return res, toolError(fmt.Sprintf("ask_user: no bridge took the question within %s, so it was withdrawn and nobody saw it. Is a bridge running on this Redis (%s), with the same ASKUSER_REDIS_PREFIX? Start one (`askbridge`) or point this server at the bridge's Redis, then call again.",
				s.opts.NotTakenAfter, s.opts.Redis))
		}
		if errors.Is(cause, errNoForm) {
			// A question only for the client, which could not show it.
			res, _ = cancelAndWait(bg, c, id, w)
			log.Warn("ask_user: the client could not show the form; the question was cancelled", "err", cause)
			return res, toolError(fmt.Sprintf("ask_user: %v, and the question was only for this client (to \"mcp\"), so it was cancelled. Ask in a chat instead (leave out to).", cause))
		}
		log.Info("ask_user: call cancelled; cancelling the question", "cause", cause)
		res, err = cancelAndWait(bg, c, id, w)
		if err != nil {
			return res, toolError(fmt.Sprintf("ask_user: the call was cancelled (%v) and question %s with it, but its result did not come back: %v", cause, id, err))
		}
	case errors.Is(err, client.ErrNoResult):
		_ = c.Cancel(context.WithoutCancel(ctx), id)
		return res, toolError(fmt.Sprintf("ask_user: %v (Redis: %s). No answer can be expected: continue with your best judgment and say so.", err, s.opts.Redis))
	default:
		return res, toolError(fmt.Sprintf("ask_user: waiting for question %s failed: %v (Redis: %s).", id, err, s.opts.Redis))
	}
	return res, nil
}

// cancelAndWait cancels question id and waits up to
// client.DefaultCancelGrace for its result (the cancelled one, or an
// answer that came first), woken by the follower like the call's wait.
func cancelAndWait(ctx context.Context, c *client.Client, id string, w *watched) (client.Result, error) {
	if err := c.Cancel(ctx, id); err != nil {
		return client.Result{}, err
	}
	gctx, stop := context.WithTimeoutCause(ctx, client.DefaultCancelGrace, fmt.Errorf("no result came within %s of the cancel", client.DefaultCancelGrace))
	defer stop()
	res, err := c.WaitNotified(gctx, id, w.wake, time.Second)
	if err != nil && gctx.Err() != nil {
		return client.Result{}, context.Cause(gctx)
	}
	return res, err
}

// request decodes a call's arguments into a request, with the bridge's
// own validator, after filling in the default route and agent. Its error
// names every bad field.
func (s *Server) request(args json.RawMessage, info *sdk.Implementation) (askbridge.Request, error) {
	fields := map[string]json.RawMessage{}
	if len(args) > 0 {
		if err := json.Unmarshal(args, &fields); err != nil {
			return askbridge.Request{}, fmt.Errorf("ask_user: the arguments must be a JSON object with questions (and optionally %s): %v", strings.Join(toolFields[1:], ", "), err)
		}
	}
	// Only the fields of the schema: the protocol's others (the id, a
	// result callback) are this server's business, not the model's.
	var unknown []string
	for k := range fields {
		if !slices.Contains(toolFields, k) {
			unknown = append(unknown, strconv.Quote(k))
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return askbridge.Request{}, fmt.Errorf("ask_user: the request is invalid: %s is not a known field of ask_user (it takes %s). Remove it and call again",
			strings.Join(unknown, ", "), strings.Join(toolFields, ", "))
	}
	if _, ok := fields["to"]; !ok && s.opts.DefaultTo != "" {
		fields["to"] = mustJSON(s.opts.DefaultTo)
	}
	if _, ok := fields["agent"]; !ok {
		if a := s.agentOf(info); a != "" {
			fields["agent"] = mustJSON(a)
		}
	}
	req, err := askbridge.DecodeRequest(mustJSON(fields))
	var bad *askbridge.ValidationError
	if errors.As(err, &bad) {
		return askbridge.Request{}, fmt.Errorf("ask_user: the request is invalid: %s. Fix these fields and call again", bad.Error())
	}
	return req, err
}

// agentOf is the agent name of a call that names none: the configured
// one, else the client's title or name when it is a valid agent name.
func (s *Server) agentOf(info *sdk.Implementation) string {
	if s.opts.DefaultAgent != "" {
		return s.opts.DefaultAgent
	}
	if info == nil {
		return ""
	}
	for _, name := range []string{info.Title, info.Name} {
		name = strings.TrimSpace(name)
		if name != "" && utf8.RuneCountInString(name) <= askbridge.MaxAgentChars && strings.IndexFunc(name, unicode.IsControl) < 0 {
			return name
		}
	}
	return ""
}

// summary is the one-line text of a result: "answered: id = label, …; id
// = …" in the order of the questions, or "no_answer (<reason>): …" with
// what to do next.
func summary(res askbridge.Result, questions []askbridge.Question) string {
	switch res.Status {
	case askbridge.StatusAnswered:
		var got map[string][]string
		if res.Answers != nil {
			got = res.Answers.Answers
		}
		var order []string
		for _, q := range questions {
			order = append(order, q.ID)
		}
		var rest []string
		for id := range got {
			if !slices.Contains(order, id) {
				rest = append(rest, id)
			}
		}
		slices.Sort(rest)
		var parts []string
		for _, id := range append(order, rest...) {
			if vals, ok := got[id]; ok {
				parts = append(parts, id+" = "+strings.Join(vals, ", "))
			}
		}
		return "answered: " + strings.Join(parts, "; ")
	case askbridge.StatusNoAnswer:
		why := map[askbridge.Reason]string{
			askbridge.ReasonTimeout:       "nobody answered in time",
			askbridge.ReasonSkipped:       "the person skipped the question",
			askbridge.ReasonCancelled:     "the question was cancelled",
			askbridge.ReasonUndeliverable: "the question could not be shown to anyone",
		}[res.Reason]
		if why == "" {
			why = "no answer came"
		}
		if res.Error != "" {
			why += " (" + res.Error + ")"
		}
		return fmt.Sprintf("no_answer (%s): %s; continue with your best judgment and tell the user no answer came", res.Reason, why)
	}
	return fmt.Sprintf("%s: %s", res.Status, res.Error)
}

// toolError is a tool error: the model reads text and may fix its call.
func toolError(text string) *sdk.CallToolResult {
	return &sdk.CallToolResult{
		IsError:           true,
		Content:           []sdk.Content{&sdk.TextContent{Text: text}},
		StructuredContent: askbridge.Result{Status: askbridge.StatusError, Error: text},
	}
}

// mustJSON encodes strings, maps of them and of JSON already decoded
// once: values that always encode.
func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
