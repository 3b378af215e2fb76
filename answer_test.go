package askbridge

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

const validAnswer = `{"id":"deploy-42","by":{"platform":"mcp","id":"alice@example.com","name":" Alice "},"answers":{"deploy_target":["Production"]}}`

func TestDecodeAnswerEntry(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  AnswerEntry
	}{
		{"answer", validAnswer, AnswerEntry{
			ID: "deploy-42", By: Person{Platform: "mcp", ID: "alice@example.com", Name: "Alice"},
			Answers: map[string][]string{"deploy_target": {"Production"}},
		}},
		{"skip, no name", `{"id":"q:1","by":{"platform":"mcp","id":"c1"},"skip":true}`, AnswerEntry{
			ID: "q:1", By: Person{Platform: "mcp", ID: "c1"}, Skip: true,
		}},
		{"several questions, own words and an empty list", `{"id":"q","by":{"platform":"mcp","id":"c"},"answers":{"a":["1, 3","my words"],"b":[]}}`, AnswerEntry{
			ID: "q", By: Person{Platform: "mcp", ID: "c"}, Answers: map[string][]string{"a": {"1, 3", "my words"}, "b": {}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeAnswerEntry([]byte(tt.input))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestDecodeAnswerEntryRejects(t *testing.T) {
	by := `"by":{"platform":"mcp","id":"c"}`
	tests := []struct {
		name  string
		input string
		want  string // the exact, whole error message
	}{
		{"empty", ``, "answer is empty: expected a JSON object"},
		{"not JSON", `{"id":`, "answer is not valid JSON: unexpected end of input"},
		{"a list", `[]`, "answer must be a JSON object (got a list)"},
		{"more after it", `{"id":"q",` + by + `,"skip":true} {}`, "answer must be a single JSON object, found more after it"},
		{"not UTF-8", "\"\xff\"", "answer is not valid UTF-8"},
		{"too large", `"` + strings.Repeat("x", MaxEntryBytes) + `"`, "answer must be at most 69632 bytes (got 69634)"},
		{"unknown fields", `{"id":"q","by":{"platform":"mcp","id":"c","role":"x"},"skip":true,"ID":"q"}`,
			`"ID" is not a known field; by."role" is not a known field`},
		{"no id", `{` + by + `,"skip":true}`, "id is required"},
		{"id a number", `{"id":7,` + by + `,"skip":true}`, "id must be a string"},
		{"bad id", `{"id":"no spaces",` + by + `,"skip":true}`,
			"id must be a question id: 1 to 128 characters of letters, digits, '_', '.', ':' or '-', starting with a letter or digit"},
		{"no by", `{"id":"q","skip":true}`, `by is required: who answered, {"platform":"mcp","id":"…"}`},
		{"by a string", `{"id":"q","by":"mcp:c","skip":true}`, "by must be a JSON object (got a string)"},
		{"another platform", `{"id":"q","by":{"platform":"web","id":"c"},"skip":true}`,
			`by.platform must be "mcp" (got "web"): an answer entry hands in an answer given in the agent's own client`},
		{"no platform nor id", `{"id":"q","by":{},"skip":true}`, "by.platform is required; by.id is required"},
		{"bad person id", `{"id":"q","by":{"platform":"mcp","id":"-c"},"skip":true}`,
			"by.id must be 1 to 128 letters, digits, '_', '.', '@', '+' or '-', starting with a letter or digit"},
		{"name a number", `{"id":"q","by":{"platform":"mcp","id":"c","name":1},"skip":true}`, "by.name must be a string"},
		{"name too long", `{"id":"q","by":{"platform":"mcp","id":"c","name":"` + strings.Repeat("é", MaxNameChars+1) + `"},"skip":true}`,
			"by.name must be at most 128 characters"},
		{"name with a line break", `{"id":"q","by":{"platform":"mcp","id":"c","name":"a\nb"},"skip":true}`,
			"by.name must not contain control characters or line breaks"},
		{"both", `{"id":"q",` + by + `,"skip":true,"answers":{"a":["x"]}}`, "answers and skip: give one of them, not both"},
		{"neither", `{"id":"q",` + by + `}`, `answers or skip is required: the person's answers, or "skip": true`},
		{"skip false", `{"id":"q",` + by + `,"skip":false}`, "skip must be true when present (leave it out and give answers to answer)"},
		{"skip a string", `{"id":"q",` + by + `,"skip":"yes"}`, "skip must be true when present (leave it out and give answers to answer)"},
		{"answers a list", `{"id":"q",` + by + `,"answers":["x"]}`, "answers must be a JSON object (got a list)"},
		{"no answers", `{"id":"q",` + by + `,"answers":{}}`, "answers must answer 1 to 3 questions (got 0)"},
		{"too many answers", `{"id":"q",` + by + `,"answers":{"a":[],"b":[],"c":[],"d":[]}}`, "answers must answer 1 to 3 questions (got 4)"},
		{"not a question id", `{"id":"q",` + by + `,"answers":{"Target":["x"],"` + strings.Repeat("a", 70) + `":["x"]}}`,
			`answers: "Target" is not a question id; answers: "` + strings.Repeat("a", 64) + `…" is not a question id`},
		{"a value not a list", `{"id":"q",` + by + `,"answers":{"a":"x"}}`, "answers.a must be a list of strings (got a string)"},
		{"an item not a string", `{"id":"q",` + by + `,"answers":{"a":["x",2,null]}}`, "answers.a[1] must be a string; answers.a[2] must be a string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeAnswerEntry([]byte(tt.input))
			var verr *ValidationError
			if !errors.As(err, &verr) {
				t.Fatalf("error %v, want a *ValidationError", err)
			}
			if err.Error() != tt.want {
				t.Fatalf("error\n got %s\nwant %s", err, tt.want)
			}
		})
	}
}

func TestCheckAnswerBy(t *testing.T) {
	for _, ok := range []Person{{Platform: "mcp", ID: "c"}, {Platform: "mcp", ID: "a.b+c@d-e_f", Name: "Ada"}} {
		if err := CheckAnswerBy(ok); err != nil {
			t.Errorf("%+v: %v", ok, err)
		}
	}
	for _, bad := range []Person{{}, {Platform: "web", ID: "c"}, {Platform: "mcp"}, {Platform: "mcp", ID: "a b"}, {Platform: "mcp", ID: "c", Name: "a\tb"}} {
		if err := CheckAnswerBy(bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

func FuzzDecodeAnswerEntry(f *testing.F) {
	for _, s := range []string{validAnswer, `{"id":"q","by":{"platform":"mcp","id":"c"},"skip":true}`, `{}`, `null`,
		`{"id":"q","by":{"platform":"mcp","id":"c"},"answers":{"a":[""]}}`, "\xff", `{"answers":{"a":[1e400]}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := DecodeAnswerEntry(data)
		if err != nil {
			var verr *ValidationError
			if !errors.As(err, &verr) || len(verr.Problems) == 0 {
				t.Fatalf("error without problems: %v", err)
			}
			return
		}
		// An accepted entry obeys every rule.
		if !ValidRequestID(a.ID) || CheckAnswerBy(a.By) != nil {
			t.Fatalf("accepted id %q, by %+v", a.ID, a.By)
		}
		if a.Skip == (len(a.Answers) > 0) || len(a.Answers) > MaxQuestions {
			t.Fatalf("accepted skip %v with %d answers", a.Skip, len(a.Answers))
		}
		for id := range a.Answers {
			if !questionIDPattern.MatchString(id) {
				t.Fatalf("accepted question id %q", id)
			}
		}
		// What it decoded encodes to an entry that decodes the same.
		again, err := DecodeAnswerEntry(mustJSON(t, a))
		if err != nil {
			t.Fatalf("its own encoding refused: %v", err)
		}
		if !reflect.DeepEqual(normalNil(again), normalNil(a)) {
			t.Fatalf("decoded %+v, then %+v", a, again)
		}
	})
}

// normalNil makes an entry's empty lists nil, which an encoding round
// trip may turn one into the other.
func normalNil(a AnswerEntry) AnswerEntry {
	for k, v := range a.Answers {
		if len(v) == 0 {
			a.Answers[k] = nil
		}
	}
	return a
}
