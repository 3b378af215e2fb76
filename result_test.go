package askbridge

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/askbridge/askbridge/internal/golden"
)

func TestResultGolden(t *testing.T) {
	created := time.UnixMilli(1767261600000)
	ended := created.Add(42 * time.Second)
	alice := &Person{Platform: "telegram", ID: "1001", Name: "Alice"}
	_, verr := DecodeRequest([]byte(`{"questions":[{"id":"a","header":"H","question":"Q?","options":[{"label":"A"}]}]}`))
	tests := []struct {
		name string
		res  Result
	}{
		{"answered-one", Answered("deploy-42", map[string][]string{"deploy_target": {"Staging (Recommended)"}}, alice, ViaButton).Stamp(created, ended)},
		{"answered-multi", Answered("checks-7", map[string][]string{"checks": {"Unit tests (Recommended)", "Load test"}}, alice, ViaText).Stamp(created, ended)},
		{"answered-free-text", Answered("deploy-43", map[string][]string{"deploy_target": {"the canary pool"}}, &Person{Platform: "web", ID: "web", Name: "web page"}, ViaWeb).Stamp(created, ended)},
		{"answered-several", Answered("plan-1", map[string][]string{"target": {"Staging"}, "checks": {"Unit", "Load"}, "notify": {"Nobody"}}, alice, ViaText).Stamp(created, ended)},
		{"skipped", NoAnswer("deploy-44", ReasonSkipped, "").Stamp(created, ended)},
		{"timeout", NoAnswer("deploy-45", ReasonTimeout, "").Stamp(created, ended)},
		{"cancelled", NoAnswer("deploy-46", ReasonCancelled, "").Stamp(created, ended)},
		{"undeliverable", NoAnswer("deploy-47", ReasonUndeliverable, "telegram: Bad Request: chat not found").Stamp(created, ended)},
		{"validation-error", Refused("deploy-48", verr).Stamp(created, created)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.MarshalIndent(tt.res, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, "result/"+tt.name+".json", append(got, '\n'))
			checkSeedShape(t, got)
		})
	}
}

// checkSeedShape checks the keys every agent relies on: status, and for an
// answer answers.answers.<id> as arrays of strings.
func checkSeedShape(t *testing.T, doc []byte) {
	t.Helper()
	var seed struct {
		Status  string `json:"status"`
		Answers *struct {
			Answers map[string][]string `json:"answers"`
		} `json:"answers"`
	}
	if err := json.Unmarshal(doc, &seed); err != nil {
		t.Fatalf("seed shape: %v", err)
	}
	switch seed.Status {
	case "answered":
		if seed.Answers == nil || len(seed.Answers.Answers) == 0 {
			t.Errorf("answered without answers.answers: %s", doc)
		}
	case "no_answer", "error":
		if seed.Answers != nil {
			t.Errorf("%s with answers: %s", seed.Status, doc)
		}
	default:
		t.Errorf("unknown status %q", seed.Status)
	}
}

func TestResultOutcome(t *testing.T) {
	tests := []struct {
		res  Result
		want Outcome
	}{
		{Answered("a", nil, nil, ViaText), OutcomeAnswered},
		{NoAnswer("a", ReasonSkipped, ""), OutcomeSkipped},
		{NoAnswer("a", ReasonTimeout, ""), OutcomeExpired},
		{NoAnswer("a", ReasonCancelled, ""), OutcomeCancelled},
		{NoAnswer("a", ReasonUndeliverable, "x"), OutcomeUndeliverable},
		{Refused("a", errors.New("bad")), OutcomeRejected},
	}
	for _, tt := range tests {
		if got := tt.res.Outcome(); got != tt.want {
			t.Errorf("%+v: outcome %q, want %q", tt.res, got, tt.want)
		}
	}
}
