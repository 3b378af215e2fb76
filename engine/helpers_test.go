package engine

import (
	"encoding/json"
	"testing"
)

// validRequest is a well-formed one-question request.
const validRequest = `{"questions":[{"id":"deploy_target","header":"Target","question":"Where should this deploy?","options":[{"label":"Staging (Recommended)","description":"Safer default"},{"label":"Production"}]}]}`

// withQuestion builds a one-question request around a question object.
func withQuestion(q string) string {
	return `{"questions":[` + q + `]}`
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
