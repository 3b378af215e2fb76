package askbridge

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

const validRequest = `{"questions":[{"id":"deploy_target","header":"Target","question":"Where should this deploy?","options":[{"label":"Staging (Recommended)","description":"Safer default"},{"label":"Production"}]}]}`

// withQuestion builds a one-question request around a question object.
func withQuestion(q string) string {
	return `{"questions":[` + q + `]}`
}

const twoOptions = `"options":[{"label":"A"},{"label":"B"}]`

func TestDecodeRequestRejects(t *testing.T) {
	long := func(n int) string { return strings.Repeat("x", n) }
	tests := []struct {
		name  string
		input string
		want  string // the exact, whole error message
	}{
		{"empty", ``, "request is empty: expected a JSON object"},
		{"whitespace", " \n\t", "request is empty: expected a JSON object"},
		{"null", `null`, "request must be a JSON object (got null)"},
		{"array", `[1,2]`, "request must be a JSON object (got a list)"},
		{"string", `"ask"`, "request must be a JSON object (got a string)"},
		{"number", `42`, "request must be a JSON object (got a number)"},
		{"bad json", `{"questions":`, "request is not valid JSON: unexpected end of input"},
		{"syntax", `{"questions" 1}`, "request is not valid JSON: invalid character '1' after object key (at byte 14)"},
		{"binary junk", "\x00\xff\xfe", "request is not valid UTF-8"},
		{"trailing data", validRequest + `{}`, "request must be a single JSON object, found more after it"},
		{"too large", `{"agent":"` + long(MaxRequestBytes) + `"}`, "request must be at most 65536 bytes (got 65548)"},
		{"unknown top field", `{"questions":[],"prompt":"x"}`, `"prompt" is not a known field; questions must contain 1 to 3 questions (got 0)`},
		{"questions missing", `{}`, "questions is required: a list of 1 to 3 questions"},
		{"questions not list", `{"questions":{}}`, "questions must be a list of 1 to 3 questions"},
		{"no questions", `{"questions":[]}`, "questions must contain 1 to 3 questions (got 0)"},
		{"four questions", `{"questions":[1,2,3,4]}`, "questions must contain 1 to 3 questions (got 4)"},
		{"question not object", `{"questions":["x"]}`, "questions[0] must be a JSON object (got a string)"},
		{"unknown question field", withQuestion(`{"id":"a","header":"H","question":"Q?",` + twoOptions + `,"isOther":true}`), `questions[0]."isOther" is not a known field`},
		{"id missing", withQuestion(`{"header":"H","question":"Q?",` + twoOptions + `}`), "questions[0].id is required"},
		{"id not string", withQuestion(`{"id":7,"header":"H","question":"Q?",` + twoOptions + `}`), "questions[0].id must be a string"},
		{"id camel", withQuestion(`{"id":"deployTarget","header":"H","question":"Q?",` + twoOptions + `}`), "questions[0].id must be snake_case: a lowercase letter, then lowercase letters, digits or '_' (for example, deploy_target)"},
		{"id digit first", withQuestion(`{"id":"1a","header":"H","question":"Q?",` + twoOptions + `}`), "questions[0].id must be snake_case: a lowercase letter, then lowercase letters, digits or '_' (for example, deploy_target)"},
		{"id too long", withQuestion(`{"id":"` + long(65) + `","header":"H","question":"Q?",` + twoOptions + `}`), "questions[0].id must be at most 64 characters"},
		{"duplicate id", `{"questions":[{"id":"a","header":"H","question":"Q?",` + twoOptions + `},{"id":"a","header":"H2","question":"Q?",` + twoOptions + `}]}`, `questions[1].id "a" is already used by questions[0]`},
		{"headers equal once cut", `{"questions":[{"id":"a","header":"Deployment target","question":"Q?",` + twoOptions + `},{"id":"b","header":"DEPLOYMENT TARGETS","question":"Q?",` + twoOptions + `}]}`,
			`questions[0].header and questions[1].header are both "DEPLOYMENT T" once cut to 12 characters: make them differ within their first 12`},
		{"Thai headers equal once cut", `{"questions":[{"id":"a","header":"สภาพแวดล้อมที่จะปล่อย","question":"Q?",` + twoOptions + `},{"id":"b","header":"สภาพแวดล้อมที่จะทดสอบ","question":"Q?",` + twoOptions + `}]}`,
			`questions[0].header and questions[1].header are both "สภาพแวดล้อมที่จ" once cut to 12 characters: make them differ within their first 12`},
		{"Thai label of 65 characters as one sees them", withQuestion(`{"id":"a","header":"H","question":"Q?","options":[{"label":"` + strings.Repeat("ที่", 65) + `"},{"label":"B"}]}`), "questions[0].options[0].label must be at most 64 characters"},
		{"header empty", withQuestion(`{"id":"a","header":"  ","question":"Q?",` + twoOptions + `}`), "questions[0].header must not be empty"},
		{"header absurd", withQuestion(`{"id":"a","header":"` + long(201) + `","question":"Q?",` + twoOptions + `}`), "questions[0].header must be at most 200 characters"},
		{"question empty", withQuestion(`{"id":"a","header":"H","question":"",` + twoOptions + `}`), "questions[0].question must not be empty"},
		{"question missing", withQuestion(`{"id":"a","header":"H",` + twoOptions + `}`), "questions[0].question is required"},
		{"question too long", withQuestion(`{"id":"a","header":"H","question":"` + long(501) + `",` + twoOptions + `}`), "questions[0].question must be at most 500 characters"},
		{"question control", withQuestion(`{"id":"a","header":"H","question":"Q\u0007?",` + twoOptions + `}`), "questions[0].question must not contain control characters"},
		{"options missing", withQuestion(`{"id":"a","header":"H","question":"Q?"}`), "questions[0].options is required: a list of 2 to 4 options"},
		{"options not list", withQuestion(`{"id":"a","header":"H","question":"Q?","options":"A,B"}`), "questions[0].options must be a list of 2 to 4 options"},
		{"one option", withQuestion(`{"id":"a","header":"H","question":"Q?","options":[{"label":"A"}]}`), "questions[0].options must contain 2 to 4 options (got 1)"},
		{"five options", withQuestion(`{"id":"a","header":"H","question":"Q?","options":[{"label":"A"},{"label":"B"},{"label":"C"},{"label":"D"},{"label":"E"}]}`), "questions[0].options must contain 2 to 4 options (got 5)"},
		{"option not object", withQuestion(`{"id":"a","header":"H","question":"Q?","options":["A",{"label":"B"}]}`), "questions[0].options[0] must be a JSON object (got a string)"},
		{"unknown option field", withQuestion(`{"id":"a","header":"H","question":"Q?","options":[{"label":"A","value":1},{"label":"B"}]}`), `questions[0].options[0]."value" is not a known field`},
		{"label empty", withQuestion(`{"id":"a","header":"H","question":"Q?","options":[{"label":" "},{"label":"B"}]}`), "questions[0].options[0].label must not be empty"},
		{"label missing", withQuestion(`{"id":"a","header":"H","question":"Q?","options":[{"description":"d"},{"label":"B"}]}`), "questions[0].options[0].label is required"},
		{"label too long", `{"questions":[{"id":"a","header":"H","question":"Q?",` + twoOptions + `},{"id":"b","header":"H2","question":"Q?","options":[{"label":"` + long(65) + `"},{"label":"B"}]}]}`, "questions[1].options[0].label must be at most 64 characters"},
		{"label duplicate case", withQuestion(`{"id":"a","header":"H","question":"Q?","options":[{"label":"Yes"},{"label":"YES"}]}`), `questions[0].options[1].label "YES" repeats questions[0].options[0].label (labels must be unique, ignoring case)`},
		{"description not string", withQuestion(`{"id":"a","header":"H","question":"Q?","options":[{"label":"A","description":3},{"label":"B"}]}`), "questions[0].options[0].description must be a string"},
		{"description too long", withQuestion(`{"id":"a","header":"H","question":"Q?","options":[{"label":"A","description":"` + long(201) + `"},{"label":"B"}]}`), "questions[0].options[0].description must be at most 200 characters"},
		{"multiSelect string", withQuestion(`{"id":"a","header":"H","question":"Q?",` + twoOptions + `,"multiSelect":"yes"}`), "questions[0].multiSelect must be a boolean"},
		{"timeout float", `{"questions":[{"id":"a","header":"H","question":"Q?",` + twoOptions + `}],"timeoutSeconds":12.5}`, "timeoutSeconds must be an integer number of seconds (got 12.5)"},
		{"timeout string", `{"questions":[{"id":"a","header":"H","question":"Q?",` + twoOptions + `}],"timeoutSeconds":"60"}`, "timeoutSeconds must be an integer number of seconds"},
		{"timeout exponent", `{"questions":[{"id":"a","header":"H","question":"Q?",` + twoOptions + `}],"timeoutSeconds":6e1}`, "timeoutSeconds must be an integer number of seconds (got 6e1)"},
		{"request id bad", `{"id":"has space","questions":[{"id":"a","header":"H","question":"Q?",` + twoOptions + `}]}`, "id must be 1 to 128 characters of letters, digits, '_', '.', ':' or '-', starting with a letter or digit"},
		{"request id braces", `{"id":"{x}","questions":[{"id":"a","header":"H","question":"Q?",` + twoOptions + `}]}`, "id must be 1 to 128 characters of letters, digits, '_', '.', ':' or '-', starting with a letter or digit"},
		{"request id long", `{"id":"` + long(129) + `","questions":[{"id":"a","header":"H","question":"Q?",` + twoOptions + `}]}`, "id must be 1 to 128 characters of letters, digits, '_', '.', ':' or '-', starting with a letter or digit"},
		{"request id number", `{"id":5,"questions":[{"id":"a","header":"H","question":"Q?",` + twoOptions + `}]}`, "id must be a string"},
		{"to empty", `{"to":" ","questions":[{"id":"a","header":"H","question":"Q?",` + twoOptions + `}]}`, "to must not be empty when present"},
		{"to spaces", `{"to":"telegram: 1","questions":[{"id":"a","header":"H","question":"Q?",` + twoOptions + `}]}`, "to must not contain spaces or control characters"},
		{"to long", `{"to":"` + long(201) + `","questions":[{"id":"a","header":"H","question":"Q?",` + twoOptions + `}]}`, "to must be at most 200 characters"},
		{"agent long", `{"agent":"` + long(65) + `","questions":[{"id":"a","header":"H","question":"Q?",` + twoOptions + `}]}`, "agent must be at most 64 characters"},
		{"agent newline", `{"agent":"a\nb","questions":[{"id":"a","header":"H","question":"Q?",` + twoOptions + `}]}`, "agent must not contain control characters or line breaks"},
		{"answerers not list", `{"answerers":"telegram:1","questions":[{"id":"a","header":"H","question":"Q?",` + twoOptions + `}]}`, `answerers must be a list of "<platform>:<user id>" strings`},
		{"answerer no platform", `{"answerers":["1234"],"questions":[{"id":"a","header":"H","question":"Q?",` + twoOptions + `}]}`, `answerers[0] must be "<platform>:<user id>" with platform one of telegram, discord, slack, matrix, email, web, mcp`},
		{"answerer unknown platform", `{"answerers":["irc:bob"],"questions":[{"id":"a","header":"H","question":"Q?",` + twoOptions + `}]}`, `answerers[0] must be "<platform>:<user id>" with platform one of telegram, discord, slack, matrix, email, web, mcp`},
		{"answerer not string", `{"answerers":[1],"questions":[{"id":"a","header":"H","question":"Q?",` + twoOptions + `}]}`, "answerers[0] must be a string"},
		{"several problems", withQuestion(`{"id":"A","header":"","question":"Q?","options":[{"label":"x"}]}`), "questions[0].id must be snake_case: a lowercase letter, then lowercase letters, digits or '_' (for example, deploy_target); questions[0].header must not be empty; questions[0].options must contain 2 to 4 options (got 1)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeRequest([]byte(tt.input))
			if err == nil {
				t.Fatalf("DecodeRequest accepted %q", tt.input)
			}
			var verr *ValidationError
			if !errors.As(err, &verr) {
				t.Fatalf("error %T is not a *ValidationError", err)
			}
			if err.Error() != tt.want {
				t.Errorf("error:\n got %s\nwant %s", err.Error(), tt.want)
			}
		})
	}
}

func TestDecodeRequestNormalises(t *testing.T) {
	tests := []struct {
		name  string
		input string
		check func(t *testing.T, r Request)
	}{
		{"default timeout", validRequest, func(t *testing.T, r Request) {
			if r.TimeoutSeconds != 900 {
				t.Errorf("timeout %d, want 900", r.TimeoutSeconds)
			}
		}},
		{"timeout clamped low", `{"timeoutSeconds":5,"questions":[{"id":"a","header":"H","question":"Q?",` + twoOptions + `}]}`, func(t *testing.T, r Request) {
			if r.TimeoutSeconds != 30 {
				t.Errorf("timeout %d, want 30", r.TimeoutSeconds)
			}
		}},
		{"timeout clamped negative", `{"timeoutSeconds":-100,"questions":[{"id":"a","header":"H","question":"Q?",` + twoOptions + `}]}`, func(t *testing.T, r Request) {
			if r.TimeoutSeconds != 30 {
				t.Errorf("timeout %d, want 30", r.TimeoutSeconds)
			}
		}},
		{"timeout clamped high", `{"timeoutSeconds":86400,"questions":[{"id":"a","header":"H","question":"Q?",` + twoOptions + `}]}`, func(t *testing.T, r Request) {
			if r.TimeoutSeconds != 3600 {
				t.Errorf("timeout %d, want 3600", r.TimeoutSeconds)
			}
		}},
		{"timeout huge integer", `{"timeoutSeconds":123456789012345678901234567890,"questions":[{"id":"a","header":"H","question":"Q?",` + twoOptions + `}]}`, func(t *testing.T, r Request) {
			if r.TimeoutSeconds != 3600 {
				t.Errorf("timeout %d, want 3600", r.TimeoutSeconds)
			}
		}},
		{"timeout kept", `{"timeoutSeconds":45,"questions":[{"id":"a","header":"H","question":"Q?",` + twoOptions + `}]}`, func(t *testing.T, r Request) {
			if r.TimeoutSeconds != 45 {
				t.Errorf("timeout %d, want 45", r.TimeoutSeconds)
			}
		}},
		{"trimmed", withQuestion(`{"id":" a ","header":"  Head ","question":"  Q?  ","options":[{"label":" A ","description":"  "},{"label":"B","description":" d "}]}`), func(t *testing.T, r Request) {
			q := r.Questions[0]
			if q.ID != "a" || q.Header != "Head" || q.Question != "Q?" || q.Options[0].Label != "A" {
				t.Errorf("not trimmed: %+v", q)
			}
			if q.Options[0].Description != "" || q.Options[1].Description != "d" {
				t.Errorf("descriptions: %+v", q.Options)
			}
		}},
		{"header cut to 12", withQuestion(`{"id":"a","header":"Deployment target","question":"Q?",` + twoOptions + `}`), func(t *testing.T, r Request) {
			if got := r.Questions[0].Header; got != "Deployment t" {
				t.Errorf("header %q", got)
			}
		}},
		{"header emoji not split", withQuestion(`{"id":"a","header":"Family 👨‍👩‍👧‍👦 time","question":"Q?",` + twoOptions + `}`), func(t *testing.T, r Request) {
			if got := r.Questions[0].Header; got != "Family 👨‍👩‍👧‍👦 tim" {
				t.Errorf("header %q", got)
			}
		}},
		{"header accent not split", withQuestion(`{"id":"a","header":"Cafe\u0301s de Paris","question":"Q?",` + twoOptions + `}`), func(t *testing.T, r Request) {
			if got := r.Questions[0].Header; got != "Cafe\u0301s de Par" {
				t.Errorf("header %q", got)
			}
		}},
		{"header cut then trimmed", withQuestion(`{"id":"a","header":"Eleven char  rest","question":"Q?",` + twoOptions + `}`), func(t *testing.T, r Request) {
			if got := r.Questions[0].Header; got != "Eleven char" {
				t.Errorf("header %q", got)
			}
		}},
		{"label of 64 accepted", withQuestion(`{"id":"a","header":"H","question":"Q?","options":[{"label":"` + strings.Repeat("é", 64) + `"},{"label":"B"}]}`), func(t *testing.T, r Request) {
			if len([]rune(r.Questions[0].Options[0].Label)) != 64 {
				t.Errorf("label changed")
			}
		}},
		{"multiSelect false omitted", withQuestion(`{"id":"a","header":"H","question":"Q?",` + twoOptions + `,"multiSelect":false}`), func(t *testing.T, r Request) {
			if r.Questions[0].MultiSelect {
				t.Errorf("multiSelect set")
			}
		}},
		{"protocol fields", `{"id":"deploy-42","to":"telegram:123","agent":" deploy-bot ","answerers":["telegram:1","telegram:1","slack:U2"],"questions":[{"id":"a","header":"H","question":"Q?",` + twoOptions + `,"multiSelect":true}]}`, func(t *testing.T, r Request) {
			if r.ID != "deploy-42" || r.To.String() != "telegram:123" || r.Agent != "deploy-bot" {
				t.Errorf("fields: %+v", r)
			}
			if strings.Join(r.Answerers, ",") != "telegram:1,slack:U2" {
				t.Errorf("answerers %v", r.Answerers)
			}
			if !r.Questions[0].MultiSelect {
				t.Errorf("multiSelect lost")
			}
		}},
		{"three questions", `{"questions":[{"id":"a","header":"H","question":"Q?",` + twoOptions + `},{"id":"b","header":"H2","question":"Q?",` + twoOptions + `},{"id":"c","header":"H3","question":"Q?",` + twoOptions + `}]}`, func(t *testing.T, r Request) {
			if len(r.Questions) != 3 {
				t.Errorf("questions %d", len(r.Questions))
			}
		}},
		{"a Thai label counted as one sees it", withQuestion(`{"id":"a","header":"H","question":"Q?","options":[{"label":"` + strings.Repeat("ที่", 64) + `"},{"label":"B"}]}`), func(t *testing.T, r Request) {
			if got := r.Questions[0].Options[0].Label; got != strings.Repeat("ที่", 64) {
				t.Errorf("label %q", got)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := DecodeRequest([]byte(tt.input))
			if err != nil {
				t.Fatalf("DecodeRequest: %v", err)
			}
			tt.check(t, r)
		})
	}
}

func TestCutGraphemes(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"abc", 12, "abc"},
		{"", 3, ""},
		{"🇫🇷🇩🇪🇮🇹", 2, "🇫🇷🇩🇪"},
		{"ไทยภาษา", 3, "ไทย"},
		{"e\u0301e\u0301e\u0301", 2, "e\u0301e\u0301"},
	}
	for _, tt := range tests {
		if got := CutGraphemes(tt.in, tt.n); got != tt.want {
			t.Errorf("CutGraphemes(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}

func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{validRequest, `{}`, `null`, `[]`, `{"questions":[{"id":"a"}]}`, "\xff", `{"timeoutSeconds":1e400}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := DecodeRequest(data)
		if err != nil {
			var verr *ValidationError
			if !errors.As(err, &verr) || len(verr.Problems) == 0 {
				t.Fatalf("error without problems: %v", err)
			}
			return
		}
		// An accepted request obeys every rule.
		if n := len(r.Questions); n < MinQuestions || n > MaxQuestions {
			t.Fatalf("accepted %d questions", n)
		}
		if r.TimeoutSeconds < MinTimeout || r.TimeoutSeconds > MaxTimeout {
			t.Fatalf("timeout %d out of range", r.TimeoutSeconds)
		}
		ids := map[string]bool{}
		for _, q := range r.Questions {
			if ids[q.ID] || !questionIDPattern.MatchString(q.ID) {
				t.Fatalf("bad id %q", q.ID)
			}
			ids[q.ID] = true
			if q.Header == "" || q.Question == "" || len(q.Options) < MinOptions || len(q.Options) > MaxOptions {
				t.Fatalf("bad question %+v", q)
			}
			labels := map[string]bool{}
			for _, o := range q.Options {
				if o.Label == "" || labels[strings.ToLower(o.Label)] {
					t.Fatalf("bad label %q", o.Label)
				}
				labels[strings.ToLower(o.Label)] = true
			}
		}
		// Normalising is stable: the normalised form decodes to itself.
		again, err := DecodeRequest(mustJSON(t, r))
		if err != nil {
			t.Fatalf("normalised request refused: %v", err)
		}
		if string(mustJSON(t, again)) != string(mustJSON(t, r)) {
			t.Fatalf("normalising is not stable")
		}
	})
}

// The callback field is checked for its form: an http(s) URL with a host,
// at most MaxCallbackBytes, without credentials, a fragment or spaces.
func TestDecodeRequestCallback(t *testing.T) {
	with := func(cb string) string {
		return `{"callback":` + strings.TrimSpace(cb) + `,"questions":[{"id":"q","header":"Q","question":"Go?",` + twoOptions + `}]}`
	}
	good := "https://agents.example.com/hooks/askbridge?run=42"
	req, err := DecodeRequest([]byte(with(`"` + good + `"`)))
	if err != nil || req.Callback != good {
		t.Fatalf("DecodeRequest = %+v, %v; want callback %q", req, err, good)
	}
	for _, tc := range []struct{ name, value, want string }{
		{"not a string", `42`, "callback must be a string"},
		{"ftp", `"ftp://agents.example.com/x"`, "callback: must be an https:// URL"},
		{"relative", `"/hooks/askbridge"`, "callback: must be an https:// URL"},
		{"no host", `"https:///x"`, "callback: must name a host"},
		{"credentials", `"https://user:pw@agents.example.com/"`, "callback: must not carry a user name or password"},
		{"fragment", `"https://agents.example.com/#x"`, "callback: must not have a fragment"},
		{"space", `"https://agents.example.com/a b"`, "callback: must not contain spaces"},
		{"bad port", `"https://agents.example.com:0/"`, "callback: port"},
		{"too long", `"https://agents.example.com/` + strings.Repeat("a", MaxCallbackBytes) + `"`, "callback: must be at most 2048 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeRequest([]byte(with(tc.value)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestDecodeRequestContextAndLocale(t *testing.T) {
	with := func(fields string) string {
		return `{` + fields + `,"questions":[{"id":"q","header":"Q","question":"Go?",` + twoOptions + `}]}`
	}
	ctx := "Build **#4812** failed on `main`:\r\n```\nTestPay … FAIL\n```"
	req, err := DecodeRequest([]byte(with(`"context":` + string(mustJSON(t, "  "+ctx+"\n")) + `,"locale":" th-TH "`)))
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.ReplaceAll(ctx, "\r\n", "\n"); req.Context != want || req.Locale != "th-TH" {
		t.Fatalf("context %q locale %q", req.Context, req.Locale)
	}
	// 3,000 characters as a person counts them: Thai with marks is more
	// code points than that and still fits.
	thai := strings.Repeat("ที่", 3000)
	if _, err := DecodeRequest([]byte(with(`"context":"` + thai + `"`))); err != nil {
		t.Errorf("3,000 Thai characters: %v", err)
	}
	if req, err := DecodeRequest([]byte(with(`"locale":"fr"`))); err != nil || req.Locale != "fr" {
		t.Errorf("an unknown language is no error (it falls back when shown): %v", err)
	}
	for _, tc := range []struct{ name, fields, want string }{
		{"context too long", `"context":"` + strings.Repeat("x", 3001) + `"`, "context must be at most 3000 characters (got 3001)"},
		{"context control", `"context":"a\u0007b"`, "context must not contain control characters other than line breaks and tabs"},
		{"context not a string", `"context":["a"]`, "context must be a string"},
		{"locale not a tag", `"locale":"Thai please"`, `locale must be a language tag such as "en" or "th"`},
		{"locale empty", `"locale":""`, `locale must be a language tag`},
		{"locale not a string", `"locale":7`, "locale must be a string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeRequest([]byte(with(tc.fields)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestValidLocale(t *testing.T) {
	for _, ok := range []string{"en", "th", "th-TH", "zh-Hant-TW", "fr"} {
		if !ValidLocale(ok) {
			t.Errorf("ValidLocale(%q) = false", ok)
		}
	}
	for _, bad := range []string{"", "english please", "th_TH!", strings.Repeat("a", 40), "<script>"} {
		if ValidLocale(bad) {
			t.Errorf("ValidLocale(%q) = true", bad)
		}
	}
}

// TestDecodeRequestManyProblems: a request with thousands of problems (a
// 65 KB request of unknown keys) is refused naming the first
// MaxProblems, in order, and how many more there are, in an error whose
// length does not grow with the request: the refusal is kept in the
// result, the events stream and the log. An unknown key longer than a
// line is named by its first bytes.
func TestDecodeRequestManyProblems(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"questions":[{"id":"a","header":"H","question":"Q?",` + twoOptions + `}]`)
	n := 0
	for b.Len() < MaxRequestBytes-2100 {
		fmt.Fprintf(&b, `,"k%05d":1`, n)
		n++
	}
	b.WriteString(`,"` + strings.Repeat("z", 2000) + `":1}`)
	n++
	_, err := DecodeRequest([]byte(b.String()))
	var verr *ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("error %v (%T), want a *ValidationError", err, err)
	}
	msg := err.Error()
	var first []string
	for i := range MaxProblems {
		first = append(first, fmt.Sprintf(`"k%05d" is not a known field`, i))
	}
	want := strings.Join(first, "; ") + fmt.Sprintf("; … and %d more", n-MaxProblems)
	if msg != want {
		t.Errorf("error of %d problems:\n got %.400s… (%d bytes)\nwant %s", n, msg, len(msg), want)
	}
	if len(msg) > 2000 {
		t.Errorf("error of %d bytes", len(msg))
	}

	// One problem with a long name.
	_, err = DecodeRequest([]byte(`{"` + strings.Repeat("z", 2000) + `":1,"questions":[{"id":"a","header":"H","question":"Q?",` + twoOptions + `}]}`))
	if want := `"` + strings.Repeat("z", 64) + `…" is not a known field`; err == nil || err.Error() != want {
		t.Errorf("long unknown key: error %v, want %s", err, want)
	}
}

// TestEmailAnswerers: answerers may name email addresses, kept in their one
// form; a malformed one is refused naming it.
func TestEmailAnswerers(t *testing.T) {
	req, err := DecodeRequest([]byte(`{"to":"email:Alice@Example.com","answerers":["email:Alice@Example.com"],"questions":[{"id":"a","header":"A","question":"Ok?","options":[{"label":"Yes"},{"label":"No"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(req.Answerers) != 1 || req.Answerers[0] != "email:alice@example.com" {
		t.Fatalf("answerers %q", req.Answerers)
	}
	_, err = DecodeRequest([]byte(`{"answerers":["email:alice"],"questions":[{"id":"a","header":"A","question":"Ok?","options":[{"label":"Yes"},{"label":"No"}]}]}`))
	if err == nil || !strings.Contains(err.Error(), "answerers[0]") {
		t.Fatalf("err = %v, want one naming answerers[0]", err)
	}
}
