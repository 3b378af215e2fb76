package mcp

import (
	"reflect"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/client"
)

func twoQuestions() askbridge.Request {
	return askbridge.Request{Agent: "deploy-bot", Questions: []askbridge.Question{
		{ID: "target", Header: "Target", Question: "Where?", Options: []askbridge.Option{{Label: "Staging"}, {Label: "Production", Description: "Live"}}},
		{ID: "checks", Header: "Checks", Question: "Which checks?", MultiSelect: true, Options: []askbridge.Option{{Label: "Unit"}, {Label: "E2E"}}},
	}}
}

// TestAnswersOf: own words replace the choice; a multi-select question
// takes every option picked; an unanswered question is named.
func TestAnswersOf(t *testing.T) {
	req := twoQuestions()
	for _, tc := range []struct {
		content map[string]any
		want    map[string][]string
		missing []string
	}{
		{map[string]any{"target": "Production", "checks": []any{"Unit", "E2E"}}, map[string][]string{"target": {"Production"}, "checks": {"Unit", "E2E"}}, nil},
		{map[string]any{"target": "Production", "target-other": "  Canary first ", "checks": []any{"Unit"}}, map[string][]string{"target": {"Canary first"}, "checks": {"Unit"}}, nil},
		{map[string]any{"target": "Staging", "checks": []any{}}, map[string][]string{"target": {"Staging"}}, []string{"Checks"}},
		{map[string]any{"target-other": "   ", "checks-other": "none"}, map[string][]string{"checks": {"none"}}, []string{"Target"}},
		{nil, map[string][]string{}, []string{"Target", "Checks"}},
	} {
		got, missing := answersOf(req, tc.content)
		if !reflect.DeepEqual(got, tc.want) || !reflect.DeepEqual(missing, tc.missing) {
			t.Errorf("%v: %v, missing %v; want %v, missing %v", tc.content, got, missing, tc.want, tc.missing)
		}
	}
}

// TestFormOf: a property per question (a string enum, or an array of one
// for multi-select) and an "other" box each, none required; the message
// names the agent and each question. The SDK's own check of form schemas
// passes it.
func TestFormOf(t *testing.T) {
	f := formOf(twoQuestions(), false)
	props := f.RequestedSchema.(object)["properties"].(object)
	if len(props) != 4 {
		t.Fatalf("%d properties; want 4: %v", len(props), props)
	}
	if props["target"].(object)["enum"] == nil || props["checks"].(object)["type"] != "array" || props["checks-other"] == nil {
		t.Errorf("properties %v", props)
	}
	if _, ok := f.RequestedSchema.(object)["required"]; ok {
		t.Error("the form requires a property")
	}
	for _, want := range []string{"Question from deploy-bot", "1. Where?", "2. Which checks?", "also asked in the chat"} {
		if !strings.Contains(f.Message, want) {
			t.Errorf("message %q lacks %q", f.Message, want)
		}
	}
	if only := formOf(twoQuestions(), true); strings.Contains(only.Message, "chat") {
		t.Errorf("a form only for the client mentions the chat: %q", only.Message)
	}
}

// TestClientPerson: a client's name becomes an answerer id the bridge
// accepts.
func TestClientPerson(t *testing.T) {
	for _, tc := range []struct {
		info *sdk.Implementation
		want askbridge.Person
	}{
		{&sdk.Implementation{Name: "claude-code"}, askbridge.Person{Platform: "mcp", ID: "claude-code", Name: "claude-code"}},
		{&sdk.Implementation{Name: "Visual Studio Code", Title: "VS Code"}, askbridge.Person{Platform: "mcp", ID: "Visual-Studio-Code", Name: "VS Code"}},
		{&sdk.Implementation{Name: "  -x/y "}, askbridge.Person{Platform: "mcp", ID: "x-y", Name: "-x/y"}},
		{nil, askbridge.Person{Platform: "mcp", ID: "client"}},
	} {
		if got := clientPerson(tc.info); got != tc.want {
			t.Errorf("%+v: %+v; want %+v", tc.info, got, tc.want)
		}
	}
}

// TestRequestState: a state signed by one server verifies there and at a
// server with the same key, not at another, nor altered.
func TestRequestState(t *testing.T) {
	a := &Server{stateKey: []byte("k1")}
	b := &Server{stateKey: []byte("k1")}
	other := &Server{stateKey: []byte("k2")}
	id := client.NewID()
	st := a.sign(id)
	if got, ok := b.verify(st); !ok || got != id {
		t.Errorf("same key: %q %v", got, ok)
	}
	if _, ok := other.verify(st); ok {
		t.Error("another key verified the state")
	}
	forged := client.NewID() + st[strings.Index(st, "."):]
	if _, ok := a.verify(forged); ok {
		t.Error("a state for another id verified")
	}
	for _, bad := range []string{"", ".", id, "x." + st} {
		if _, ok := a.verify(bad); ok {
			t.Errorf("%q verified", bad)
		}
	}
}
