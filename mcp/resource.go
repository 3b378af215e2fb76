package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/client"
)

// questionScheme starts the URI of a question's resource:
// askbridge://questions/<id>.
const questionScheme = "askbridge://questions/"

func questionURI(id string) string { return questionScheme + id }

// questionTemplate is the resource template of every question.
func questionTemplate() *sdk.ResourceTemplate {
	return &sdk.ResourceTemplate{
		Name:        "question",
		Title:       "A question asked with ask_user",
		URITemplate: questionScheme + "{id}",
		Description: "The question (its request as the bridge keeps it) and where it stands: status pending until it ends, then its result.",
		MIMEType:    "application/json",
	}
}

// questionResource is the resource of a question a call waits on, listed
// while it waits.
func questionResource(id string, req askbridge.Request) *sdk.Resource {
	title := "Question"
	if len(req.Questions) > 0 {
		title = req.Questions[0].Header + ": " + req.Questions[0].Question
	}
	return &sdk.Resource{
		Name: id, Title: title, URI: questionURI(id), MIMEType: "application/json",
		Description: "An open question of ask_user: its request and where it stands.",
	}
}

// questionState is what a question's resource holds.
type questionState struct {
	ID       string            `json:"id"`
	Status   askbridge.Status  `json:"status"`
	Request  askbridge.Request `json:"request"`
	Created  int64             `json:"created,omitempty"`
	Deadline int64             `json:"deadline,omitempty"`
	Result   json.RawMessage   `json:"result,omitempty"`
}

// readQuestion serves askbridge://questions/<id> from Redis, so any
// replica serves any question, in any session.
func (s *Server) readQuestion(ctx context.Context, r *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	uri := r.Params.URI
	id, ok := strings.CutPrefix(uri, questionScheme)
	if !ok || !idPattern.MatchString(id) {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	c, err := s.opts.Client(ctx)
	if err != nil {
		return nil, err
	}
	q, found, err := c.Status(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("read question %s: %w", id, err)
	}
	if !found {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{
		URI: uri, MIMEType: "application/json", Text: string(mustJSON(stateOf(q))),
	}}}, nil
}

// stateOf is q as its resource shows it.
func stateOf(q client.Question) questionState {
	st := questionState{ID: q.ID, Status: q.Status, Request: q.Request}
	if !q.Created.IsZero() {
		st.Created = q.Created.UnixMilli()
	}
	if !q.Deadline.IsZero() {
		st.Deadline = q.Deadline.UnixMilli()
	}
	if q.Result != nil {
		st.Result = q.Result.Raw
	}
	return st
}
