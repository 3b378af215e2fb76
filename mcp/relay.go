package mcp

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/client"
)

// Platform is the place name of the calling client, as in targets (`to:
// "mcp"`: only in the client) and answerers (`mcp:<client id>`).
const Platform = askbridge.PlatformMCP

// otherSuffix ends the name of a question's free-text property in the
// form: "<question id>-other". A question id has no '-', so it never
// names another question.
const otherSuffix = "-other"

// inputKey names the one input request of a multi-round-trip call.
const inputKey = "answer"

// roundTripVersion is the first protocol version whose clients answer a
// form by calling the tool again (multi-round-trip requests): a server may
// not send them requests of its own while it serves a call.
const roundTripVersion = "2026-07-28"

// relay is a question shown in the calling client as a form too
// (elicitation), besides its places.
type relay struct {
	// form is the elicitation request.
	form *sdk.ElicitParams
	// req is the request as asked: the form's answers are read against it.
	req askbridge.Request
	// by is the client, as the person who answers there.
	by askbridge.Person
	// only: the request's one place is the client (`to: "mcp"`), so a
	// decline there skips the question.
	only bool
	// rounds: the client answers by calling again (protocol 2026-07-28);
	// else the server asks it with elicitation/create while it waits.
	rounds bool
}

// onlyClient reports whether req asks only in the calling client.
func onlyClient(req askbridge.Request) bool {
	return len(req.To) == 1 && req.To[0] == Platform
}

// relayOf says whether call's question req is shown in the client too,
// and how. nil when it is not: the operator switched the relay off, the
// client declared no form elicitation, or req names who may answer (or
// needs a quorum) and the client is not among them. A request only for
// the client that cannot be shown there is an error saying why.
func (s *Server) relayOf(call *sdk.CallToolRequest, req askbridge.Request) (*relay, error) {
	only := onlyClient(req)
	by := clientPerson(call.ClientInfo())
	why := ""
	switch caps := call.ClientCapabilities(); {
	case s.opts.NoRelay:
		why = "the operator switched showing questions in the client off (ASKUSER_MCP_ELICIT=off)"
	case caps == nil || caps.Elicitation == nil || (caps.Elicitation.Form == nil && caps.Elicitation.URL != nil):
		why = "this client cannot show forms (it did not declare the elicitation capability)"
	case (len(req.Answerers) > 0 || req.Quorum > 0) && !slices.Contains(req.Answerers, Platform+":"+by.ID):
		why = fmt.Sprintf("answerers does not name this client (%s:%s)", Platform, by.ID)
	}
	if why != "" {
		if only {
			return nil, fmt.Errorf(`ask_user: nothing was asked: to "mcp" asks only in this client, but %s. Ask in a chat instead (leave out to)`, why)
		}
		return nil, nil
	}
	return &relay{
		form: formOf(req, only), req: req, by: by, only: only,
		rounds: call.ProtocolVersion() >= roundTripVersion,
	}, nil
}

// clientPerson is the calling client as a person who answers: its name
// made an answerer id (letters, digits and "_.@+-"; anything else becomes
// '-'), and its title or name to show.
func clientPerson(info *sdk.Implementation) askbridge.Person {
	name, title := "", ""
	if info != nil {
		name, title = strings.TrimSpace(info.Name), strings.TrimSpace(info.Title)
	}
	id := strings.Map(func(r rune) rune {
		if r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_.@+-", r)) {
			return r
		}
		return '-'
	}, name)
	id = strings.TrimLeft(id, "_.@+-")
	if len(id) > 128 {
		id = id[:128]
	}
	if id == "" {
		id = "client"
	}
	show := title
	if show == "" {
		show = name
	}
	if utf8.RuneCountInString(show) > askbridge.MaxAgentChars {
		show = ""
	}
	return askbridge.Person{Platform: Platform, ID: id, Name: show}
}

// formOf is the form that shows req in the client: per question a choice
// among its options (one, or several for a multi-select question) and a
// free-text "other answer"; none is required, since either answers. The
// message names the agent, says where else the question is, and carries
// the context and the questions.
func formOf(req askbridge.Request, only bool) *sdk.ElicitParams {
	props := object{}
	for _, q := range req.Questions {
		labels := make([]string, len(q.Options))
		var about []string
		for i, o := range q.Options {
			labels[i] = o.Label
			if o.Description != "" {
				about = append(about, o.Label+": "+o.Description)
			}
		}
		desc := q.Question
		if len(about) > 0 {
			desc += "\n" + strings.Join(about, "\n")
		}
		choice := object{"type": "string", "title": q.Header, "description": desc, "enum": labels}
		if q.MultiSelect {
			choice = object{"type": "array", "title": q.Header, "description": desc + "\n(Pick one or more.)",
				"items": object{"type": "string", "enum": labels}, "uniqueItems": true}
		}
		props[q.ID] = choice
		props[q.ID+otherSuffix] = object{"type": "string", "title": q.Header + ": other answer",
			"description": "Or answer in your own words (this replaces the choice above).", "maxLength": askbridge.MaxQuestionChars * 4}
	}
	var b strings.Builder
	if req.Agent != "" {
		fmt.Fprintf(&b, "Question from %s", req.Agent)
	} else {
		b.WriteString("A question for you")
	}
	if only {
		b.WriteString(":")
	} else {
		b.WriteString(", also asked in the chat: the first answer, here or there, counts.")
	}
	if req.Context != "" {
		b.WriteString("\n\n" + req.Context)
	}
	for i, q := range req.Questions {
		if len(req.Questions) > 1 {
			fmt.Fprintf(&b, "\n\n%d. %s", i+1, q.Question)
		} else {
			b.WriteString("\n\n" + q.Question)
		}
	}
	return &sdk.ElicitParams{Mode: "form", Message: b.String(), RequestedSchema: object{"type": "object", "properties": props}}
}

// answersOf reads what the person submitted in the form: per question
// its own words when given, else the options chosen. missing lists the
// headers of the questions left unanswered; the answers are then
// incomplete.
func answersOf(req askbridge.Request, content map[string]any) (answers map[string][]string, missing []string) {
	answers = map[string][]string{}
	for _, q := range req.Questions {
		var vals []string
		if own, ok := content[q.ID+otherSuffix].(string); ok && strings.TrimSpace(own) != "" {
			vals = []string{strings.TrimSpace(own)}
		} else {
			switch v := content[q.ID].(type) {
			case string:
				if v != "" {
					vals = []string{v}
				}
			case []any:
				for _, x := range v {
					if s, ok := x.(string); ok && s != "" {
						vals = append(vals, s)
					}
				}
			}
		}
		if len(vals) == 0 {
			missing = append(missing, q.Header)
			continue
		}
		answers[q.ID] = vals
	}
	return answers, missing
}

// errNoForm: the client could not show the form.
var errNoForm = errors.New("the client could not show the form")

// formRounds is how often a form is shown again for questions left
// unanswered before the relay gives up (the chat stays open).
const formRounds = 3

// hand hands in what the person did in the client's form (res) for
// question id, and reports whether the form is done with: true after an
// answer or a skip was handed in, or a decline; false when questions
// were left unanswered, with the form to show again.
func (r *relay) hand(ctx context.Context, c *client.Client, id string, res *sdk.ElicitResult) (done bool, again *sdk.ElicitParams, err error) {
	switch res.Action {
	case "accept":
		answers, missing := answersOf(r.req, res.Content)
		if len(missing) > 0 {
			f := *r.form
			f.Message = fmt.Sprintf("Please answer every question (%s is unanswered).\n\n%s", strings.Join(missing, ", "), r.form.Message)
			return false, &f, nil
		}
		return true, nil, c.Answer(ctx, id, r.by, answers)
	case "decline", "cancel":
		if r.only {
			return true, nil, c.Skip(ctx, id, r.by)
		}
		return true, nil, nil
	}
	return true, nil, fmt.Errorf("the client answered the form with action %q", res.Action)
}

// show shows the form in the client (elicitation/create) until the person
// answers, skips or declines there, or ctx ends (the question ended
// elsewhere, or the call stopped waiting: the SDK then tells the client
// the request is cancelled). It returns errNoForm when the client could
// not show it at all.
func (s *Server) show(ctx context.Context, session *sdk.ServerSession, c *client.Client, id string, r *relay) error {
	form := r.form
	for range formRounds {
		res, err := session.Elicit(ctx, form)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: %v", errNoForm, err)
		}
		done, again, err := r.hand(context.WithoutCancel(ctx), c, id, res)
		if err != nil || done {
			if err == nil && res.Action != "accept" && !r.only {
				s.log.Info("ask_user: declined in the client; the question stays open in the chat", "question", id)
				s.declined.mark(id)
			}
			return err
		}
		form = again
	}
	return nil
}

// stateKey signs the request state of a multi-round-trip call, so a
// client can hand back an answer only for a question it was asked.
func (s *Server) sign(id string) string {
	m := hmac.New(sha256.New, s.stateKey)
	m.Write([]byte(id))
	return id + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// verify returns the question id of a request state sign made.
func (s *Server) verify(state string) (string, bool) {
	id, _, ok := strings.Cut(state, ".")
	if !ok || !askbridge.ValidRequestID(id) {
		return "", false
	}
	return id, hmac.Equal([]byte(s.sign(id)), []byte(state))
}

// inputRequired is the result of a multi-round-trip call that asks the
// client to show the form of question id and call again with its answer.
func (s *Server) inputRequired(id string, r *relay) *sdk.CallToolResult {
	return &sdk.CallToolResult{
		InputRequests: sdk.InputRequestMap{inputKey: r.form},
		RequestState:  s.sign(id),
	}
}
