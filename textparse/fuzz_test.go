package textparse

import (
	"slices"
	"testing"
	"unicode/utf8"
)

// FuzzParse checks what must hold for any reply: Parse never panics, every
// value is a declared label or non-empty trimmed valid UTF-8 text, no
// question has a value twice or a single-select question two values, Missing
// names only known questions and is non-empty exactly for Incomplete, and
// Correction speaks exactly when something is missing.
//
// The fuzzer also varies the prompt: shape picks one from the test catalogue,
// and a non-empty label or header is added to, or replaces that of, its first
// question.
func FuzzParse(f *testing.F) {
	for _, tc := range parseCases {
		f.Add(tc.text, "", "", uint8(tc.prompt))
	}
	f.Add("x, y", "x, y", "", uint8(oneColors))
	f.Add("Key: 1", "", "Key", uint8(twoQ))
	f.Add("1", " ", " ", uint8(oneTarget))
	f.Add("\ufe0f", "\ufe0f", "\ufe0f", uint8(threeQ))
	f.Fuzz(func(t *testing.T, text, label, header string, shape uint8) {
		qs := fuzzPrompt(label, header, shape)
		o := Parse(text, qs)
		checkOutcome(t, qs, o)
		if again := Parse(text, qs); !sameOutcome(o, again) {
			t.Fatalf("Parse is not deterministic: %+v then %+v", o, again)
		}
		if c := Correction(o, qs); (c != "") != (o.Kind == Incomplete) {
			t.Fatalf("Correction %q for kind %v", c, o.Kind)
		}
	})
}

// fuzzPrompt builds a prompt from the catalogue without touching the
// catalogue's own slices.
func fuzzPrompt(label, header string, shape uint8) []Question {
	qs := slices.Clone(catalogue[int(shape)%len(catalogue)])
	first := qs[0]
	first.Labels = slices.Clone(first.Labels)
	if label != "" {
		first.Labels = append(first.Labels, label)
	}
	if header != "" {
		first.Header = header
	}
	qs[0] = first
	return qs
}

func checkOutcome(t *testing.T, qs []Question, o Outcome) {
	t.Helper()
	switch o.Kind {
	case Empty, Skip:
		if o.Answers != nil || o.Missing != nil {
			t.Fatalf("%v outcome carries answers %q or missing %q", o.Kind, o.Answers, o.Missing)
		}
		return
	case Answer, Incomplete:
	default:
		t.Fatalf("unknown kind %d", int(o.Kind))
	}
	if (len(o.Missing) > 0) != (o.Kind == Incomplete) {
		t.Fatalf("kind %v with missing %q", o.Kind, o.Missing)
	}
	next := 0 // Missing must follow question order
	for _, id := range o.Missing {
		i := indexOf(qs[next:], id)
		if i < 0 {
			t.Fatalf("missing %q is not a question id in order: %q", id, o.Missing)
		}
		next += i + 1
		if _, ok := o.Answers[id]; ok {
			t.Fatalf("%q is both answered and missing", id)
		}
	}
	for id, values := range o.Answers {
		i := indexOf(qs, id)
		if i < 0 {
			t.Fatalf("answer for unknown id %q", id)
		}
		checkValues(t, qs[i], values)
	}
	if o.Kind == Answer && len(o.Answers) != len(qs) {
		t.Fatalf("Answer with %d of %d questions answered", len(o.Answers), len(qs))
	}
}

func checkValues(t *testing.T, q Question, values []string) {
	t.Helper()
	if len(values) == 0 {
		t.Fatalf("question %q present with no values", q.ID)
	}
	if !q.Multi && len(values) != 1 {
		t.Fatalf("single-select question %q has values %q", q.ID, values)
	}
	seen := map[string]bool{}
	for _, v := range values {
		if seen[v] {
			t.Fatalf("question %q has %q twice: %q", q.ID, v, values)
		}
		seen[v] = true
		if slices.Contains(q.Labels, v) {
			continue
		}
		if v == "" || trim(v) != v || !utf8.ValidString(v) {
			t.Fatalf("question %q has value %q: neither a label nor trimmed text", q.ID, v)
		}
	}
}
