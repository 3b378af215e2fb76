package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/client"
)

// WaitToolName is the tool that waits again for a question whose ask_user
// call returned pending.
const WaitToolName = "wait_for_answer"

// DefaultMaxWait is the longest a call waits before it returns pending
// (ASKUSER_MCP_MAX_WAIT): under the 60 s after which clients built on the
// TypeScript SDK's defaults give up on a call.
const DefaultMaxWait = 50 * time.Second

// errBudget ends a wait whose budget ran out; the question goes on.
var errBudget = errors.New("the wait budget ran out")

// idPattern is the form of the ids this server gives questions
// (client.NewID): wait_for_answer and a form's answer take only those, so
// a client cannot wait on, cancel or answer an agent's question whose
// id it guessed.
var idPattern = regexp.MustCompile("^" + regexp.QuoteMeta(client.IDPrefix) + "[0-9a-f]{32}$")

// waiting is one call's wait for question id.
type waiting struct {
	c   *client.Client
	id  string
	req askbridge.Request
	w   *watched
	// start and timeout place the question's deadline for progress.
	start   time.Time
	timeout time.Duration
	// budget bounds this call's wait; the question goes on after it.
	budget time.Duration
	// rel shows the question in the client meanwhile (nil: not).
	rel *relay
	log *slog.Logger
}

// await waits for question wt.id to end, up to wt.budget, and returns the
// call's result: the question's result, pending when the budget ran out
// first (the question goes on), or a tool error. Progress goes to the
// client while it waits, and the form, when the question is relayed. A
// call cancelled, or whose HTTP request went away, or that is in flight
// when the server closes, cancels its question.
func (s *Server) await(ctx context.Context, call *sdk.CallToolRequest, wt waiting) *sdk.CallToolResult {
	callCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	defer context.AfterFunc(s.stop, func() { cancel(errStopping) })()
	if hc, ok := ctx.Value(httpRequestKey{}).(context.Context); ok {
		defer context.AfterFunc(hc, func() { cancel(errClientGone) })()
	}
	uri := questionURI(wt.id)
	s.mcp().AddResource(questionResource(wt.id, wt.req), s.readQuestion)
	defer s.mcp().RemoveResources(uri)

	stopReport := s.report(callCtx, cancel, followed{
		c: wt.c, id: wt.id, start: wt.start, timeout: wt.timeout,
		session: call.Session, token: call.Params.GetProgressToken(), w: wt.w,
	})
	waitCtx, stopWait := context.WithTimeoutCause(callCtx, wt.budget, errBudget)
	defer stopWait()
	stopRelay := s.relayWhile(waitCtx, cancel, call.Session, wt)
	// No connection is held while it waits: the follower's events wake it.
	res, err := wt.c.WaitNotified(waitCtx, wt.id, wt.w.wake, recheckEvery)
	stopRelay()
	stopReport()
	if err != nil && callCtx.Err() == nil && errors.Is(context.Cause(waitCtx), errBudget) {
		wt.log.Info("ask_user: still open when the wait budget ran out; returning pending", "budget", wt.budget)
		if wt.rel != nil && !s.declined.has(wt.id) {
			s.reshow.mark(wt.id)
		}
		return pendingResult(wt.id, wt.budget)
	}
	res, failed := s.waited(ctx, callCtx, wt.c, wt.id, wt.w, res, err, wt.log)
	if failed != nil {
		return failed
	}
	wt.log.Info("ask_user: ended", "status", res.Status, "reason", res.Reason)
	return final(res, wt.req.Questions)
}

// relayWhile shows wt's form in the client while ctx lasts, for a client
// the server may send requests to; stop ends it and waits for it. A form
// only for the client that the client cannot show ends the call (cancel
// with errNoForm); elsewhere the chat goes on without it.
func (s *Server) relayWhile(ctx context.Context, cancel context.CancelCauseFunc, session *sdk.ServerSession, wt waiting) (stop func()) {
	if wt.rel == nil || wt.rel.rounds || session == nil {
		return func() {}
	}
	rctx, end := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		err := s.show(rctx, session, wt.c, wt.id, wt.rel)
		switch {
		case err == nil:
		case errors.Is(err, errNoForm) && wt.rel.only:
			cancel(err)
		case errors.Is(err, errNoForm):
			wt.log.Info("ask_user: the client did not show the form; the question is in the chat", "err", err)
		default:
			wt.log.Warn("ask_user: handing in the client's answer failed", "err", err)
		}
	})
	return func() { end(); wg.Wait() }
}

// pendingResult is the result of a call whose budget ran out before the
// question ended: not an error; the model calls wait_for_answer.
func pendingResult(id string, budget time.Duration) *sdk.CallToolResult {
	raw := mustJSON(map[string]string{"status": string(askbridge.StatusPending), "id": id})
	return &sdk.CallToolResult{
		Content: []sdk.Content{
			&sdk.TextContent{Text: fmt.Sprintf(`pending: the question is still open after %s (the person has not answered yet; it stays open until its timeout). Call %s with {"id":%q} to keep waiting for the answer. Do not ask the question again.`, budget.Round(time.Second), WaitToolName, id)},
			&sdk.TextContent{Text: string(raw)},
		},
		StructuredContent: json.RawMessage(raw),
	}
}

// resume is a call that comes back with the answer of the form it
// returned (multi-round-trip requests): the answer is handed in, or the
// form returned again for questions left unanswered, and then the call
// waits for the question's end as ask_user does.
func (s *Server) resume(ctx context.Context, call *sdk.CallToolRequest) *sdk.CallToolResult {
	id, ok := s.verify(call.Params.RequestState)
	if !ok {
		return toolError("ask_user: the form's answer came back with a state this server did not give out (behind one address, every replica needs the same ASKUSER_HTTP_TOKEN), so it was not used. Call ask_user again.")
	}
	c, err := s.opts.Client(ctx)
	if err != nil {
		return toolError("ask_user: " + err.Error())
	}
	w := s.events.add(c, id)
	defer s.events.remove(id, w)
	// The form may come back before a bridge has taken the request.
	q, failed := s.taken(ctx, c, id, w)
	if failed != nil {
		return failed
	}
	log := s.log.With("question", id)
	if q.Result != nil {
		return final(*q.Result, q.Request.Questions)
	}
	rel := &relay{req: q.Request, by: clientPerson(call.ClientInfo()), only: onlyClient(q.Request), rounds: true}
	rel.form = formOf(q.Request, rel.only)
	if res, ok := call.Params.InputResponses[inputKey].(*sdk.ElicitResult); ok {
		done, again, err := rel.hand(ctx, c, id, res)
		if err != nil {
			return toolError(fmt.Sprintf("ask_user: handing in the answer given in the client failed: %v (Redis: %s). Call %s with {\"id\":%q}.", err, s.opts.Redis, WaitToolName, id))
		}
		if !done {
			rel.form = again
			return s.inputRequired(id, rel)
		}
		if res.Action != "accept" && !rel.only {
			log.Info("ask_user: declined in the client; the question stays open in the chat")
		}
	}
	return s.await(ctx, call, waiting{
		c: c, id: id, req: q.Request, w: w, start: q.Created, timeout: q.Deadline.Sub(q.Created),
		budget: s.opts.MaxWait, log: log,
	})
}

// taken waits for a bridge to take question id, which this server asked
// (woken by its events, looking every recheck), up to NotTakenAfter: the
// question, or a tool error when none took it (it is then cancelled).
func (s *Server) taken(ctx context.Context, c *client.Client, id string, w *watched) (client.Question, *sdk.CallToolResult) {
	giveUp := time.NewTimer(s.opts.NotTakenAfter)
	defer giveUp.Stop()
	for {
		q, found, err := c.Status(ctx, id)
		switch {
		case err != nil:
			return q, toolError(fmt.Sprintf("ask_user: reading question %s failed: %v (Redis: %s). Call %s with {\"id\":%q}.", id, err, s.opts.Redis, WaitToolName, id))
		case found:
			return q, nil
		}
		select {
		case <-w.wake:
		case <-time.After(200 * time.Millisecond):
		case <-giveUp.C:
			_ = c.Cancel(context.WithoutCancel(ctx), id)
			return q, toolError(fmt.Sprintf("ask_user: no bridge took the question within %s, so it was withdrawn. Is a bridge running on this Redis (%s), with the same ASKUSER_REDIS_PREFIX? Start one, then call again.", s.opts.NotTakenAfter, s.opts.Redis))
		case <-ctx.Done():
			_ = c.Cancel(context.WithoutCancel(ctx), id)
			return q, toolError("ask_user: the call was cancelled before a bridge took the question, and the question with it")
		}
	}
}

// question reads question id for a call that names it: the client, the
// question, or the tool error to return (the question is unknown, or
// Redis could not be read).
func (s *Server) question(ctx context.Context, id string) (*client.Client, client.Question, *sdk.CallToolResult) {
	c, err := s.opts.Client(ctx)
	if err != nil {
		return nil, client.Question{}, toolError(WaitToolName + ": " + err.Error())
	}
	q, found, err := c.Status(ctx, id)
	switch {
	case err != nil:
		return nil, q, toolError(fmt.Sprintf("%s: reading question %s failed: %v (Redis: %s). Call again.", WaitToolName, id, err, s.opts.Redis))
	case !found:
		return nil, q, toolError(fmt.Sprintf("%s: there is no question %s: the id is wrong, or the question ended longer ago than the bridge keeps results. Do not wait for it; continue with your best judgment.", WaitToolName, id))
	}
	return c, q, nil
}

// waitTool is wait_for_answer's definition.
func waitTool() *sdk.Tool {
	no, yes := false, true
	return &sdk.Tool{
		Name:  WaitToolName,
		Title: "Wait for the answer",
		Description: strings.TrimSpace(fmt.Sprintf(`
Wait again for the answer to a question ask_user asked, when ask_user returned {"status":"pending","id":…}: the question is still open and the person may still answer. Pass that id. The call waits up to waitSeconds (at most the server's wait budget, %s by default) and returns the same results as ask_user: answered, no_answer, or pending again (then call %s again with the same id). Never ask the question again while it is pending.`, DefaultMaxWait, WaitToolName)),
		InputSchema: object{
			"type": "object", "additionalProperties": false, "required": []string{"id"},
			"properties": object{
				"id": object{"type": "string", "pattern": idPattern.String(),
					"description": "The id ask_user returned with status pending."},
				"waitSeconds": object{"type": "integer", "minimum": 1,
					"description": "Optional: wait at most this long (seconds) before returning pending again; the server's budget caps it."},
			},
		},
		OutputSchema: outputSchema(),
		Annotations:  &sdk.ToolAnnotations{Title: "Wait for the answer", ReadOnlyHint: true, DestructiveHint: &no, OpenWorldHint: &yes},
	}
}

// waitArgs are wait_for_answer's arguments.
type waitArgs struct {
	ID          string `json:"id"`
	WaitSeconds int    `json:"waitSeconds"`
}

// waitForAnswer is the wait_for_answer handler: it waits for a question
// asked earlier (by this server or any other on the same Redis, in this
// session or another) as ask_user does, up to the budget, showing the
// form again in a client that lost it when the earlier call returned.
func (s *Server) waitForAnswer(ctx context.Context, call *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	return s.slotted(ctx, func() *sdk.CallToolResult {
		var args waitArgs
		dec := json.NewDecoder(strings.NewReader(string(call.Params.Arguments)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&args); err != nil || !idPattern.MatchString(args.ID) || args.WaitSeconds < 0 {
			return toolError(fmt.Sprintf(`%s: the arguments must be {"id":"<the id ask_user returned with status pending>"} and optionally "waitSeconds" (a whole number of seconds, at least 1); got %.200s`, WaitToolName, call.Params.Arguments))
		}
		c, q, failed := s.question(ctx, args.ID)
		if failed != nil {
			return failed
		}
		if q.Result != nil {
			return final(*q.Result, q.Request.Questions)
		}
		budget := s.opts.MaxWait
		if args.WaitSeconds > 0 {
			budget = min(budget, time.Duration(args.WaitSeconds)*time.Second)
		}
		var rel *relay
		if s.reshow.take(args.ID) {
			rel, _ = s.relayOf(call, q.Request)
		}
		w := s.events.add(c, args.ID)
		defer s.events.remove(args.ID, w)
		return s.await(ctx, call, waiting{
			c: c, id: args.ID, req: q.Request, w: w, start: q.Created, timeout: q.Deadline.Sub(q.Created),
			budget: budget, rel: rel, log: s.log.With("question", args.ID),
		})
	}), nil
}

// idSet is a small set of question ids, each kept for a day at most.
type idSet struct {
	mu  sync.Mutex
	ids map[string]time.Time
}

// maxIDs bounds an idSet: past it, the entries older than a day go.
const maxIDs = 1024

func (m *idSet) mark(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ids == nil {
		m.ids = map[string]time.Time{}
	}
	now := time.Now()
	if len(m.ids) >= maxIDs {
		for k, at := range m.ids {
			if now.Sub(at) > 24*time.Hour {
				delete(m.ids, k)
			}
		}
	}
	if len(m.ids) < 4*maxIDs {
		m.ids[id] = now
	}
}

func (m *idSet) has(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.ids[id]
	return ok
}

// take reports whether id is in the set, and removes it.
func (m *idSet) take(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.ids[id]
	delete(m.ids, id)
	return ok
}
