package textparse

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// FuzzParse checks what must hold for any reply: Parse never panics, every
// value is a declared label or non-empty trimmed valid UTF-8 text, no
// question has a value twice or a single-select question two values, Missing
// names only known questions and is non-empty exactly for Incomplete, and
// Example gives a declared label (or nothing) for every question.
//
// The fuzzer also varies the prompt: shape picks one from the test catalogue,
// and a non-empty label or header is added to, or replaces that of, its first
// question; opts picks the options (see fuzzOptions).
func FuzzParse(f *testing.F) {
	for _, tc := range parseCases {
		f.Add(tc.text, "", "", uint8(tc.prompt), uint8(0))
	}
	for _, tc := range optCases {
		f.Add(tc.text, "", "", uint8(tc.prompt), optionsIndex(f, tc.opts))
	}
	f.Add("x, y", "x, y", "", uint8(oneColors), uint8(0))
	f.Add("Key: 1", "", "Key", uint8(twoQ), uint8(1))
	f.Add("1", " ", " ", uint8(oneTarget), uint8(2))
	f.Add("\ufe0f", "\ufe0f", "\ufe0f", uint8(threeQ), uint8(3))
	f.Add("ข้าม", "ข้าม", "ข้าม", uint8(twoTh), uint8(2))
	f.Fuzz(func(t *testing.T, text, label, header string, shape, opts uint8) {
		qs := fuzzPrompt(label, header, shape)
		o := fuzzOptions(opts)
		got := ParseWith(text, qs, o)
		checkOutcome(t, qs, got)
		if got.Kind == Acknowledge && !o.Acknowledge {
			t.Fatalf("Acknowledge without Options.Acknowledge")
		}
		if again := ParseWith(text, qs, o); !sameOutcome(got, again) {
			t.Fatalf("ParseWith is not deterministic: %+v then %+v", got, again)
		}
		if len(o.Words) == 0 && !o.Acknowledge {
			if p := Parse(text, qs); !sameOutcome(got, p) {
				t.Fatalf("Parse %+v differs from ParseWith with zero Options %+v", p, got)
			}
		}
		for _, q := range qs {
			if ex := Example(q, o); ex != "" && !slices.ContainsFunc(q.Labels, func(l string) bool { return strings.Contains(l, ex) }) {
				t.Fatalf("Example %q is not from a label of %q", ex, q.Labels)
			}
		}
	})
}

// FuzzNormalization checks that how a reply is encoded does not change what
// it picks: the reply in NFC, in NFD, and with Thai above vowels and tone
// marks swapped give the same outcome, with the same declared labels, and
// free texts that differ only as the reply did. The label under test is
// also tried as the reply, in each form.
func FuzzNormalization(f *testing.F) {
	for _, tc := range optCases {
		f.Add(tc.text, "", uint8(tc.prompt), optionsIndex(f, tc.opts))
	}
	f.Add("CAFÉ, e\u0301vry", "Café, Évry", uint8(oneColors), uint8(0))
	f.Add("ก\u0e49\u0e31น", "ก\u0e31\u0e49น (แนะนำ)", uint8(oneThColors), uint8(1))
	f.Add("한, 1", "한", uint8(oneRegion), uint8(0))
	f.Add("ตั้งค่า: กั้น\n๒", "", uint8(marksBudget), uint8(2))
	f.Fuzz(func(t *testing.T, text, label string, shape, opts uint8) {
		// Normalisation forms are defined on valid text: Parse makes a
		// reply valid first, and labels come from JSON strings.
		text, label = strings.ToValidUTF8(text, "\ufffd"), strings.ToValidUTF8(label, "\ufffd")
		qs := fuzzPrompt(label, "", shape)
		o := fuzzOptions(opts)
		for _, reply := range []string{text, label} {
			nfc := norm.NFC.String(reply)
			want := ParseWith(nfc, qs, o)
			for _, variant := range []string{norm.NFD.String(reply), swapThaiMarks(nfc), norm.NFC.String(swapThaiMarks(reply))} {
				if err := equivalent(qs, want, ParseWith(variant, qs, o)); err != nil {
					t.Fatalf("%+q against %+q: %v", nfc, variant, err)
				}
			}
		}
	})
}

// fuzzOptionSets are the options the fuzz targets pick from.
var fuzzOptionSets = []Options{english, shipped, shippedAck, thaiOnly, englishAck}

func fuzzOptions(i uint8) Options { return fuzzOptionSets[int(i)%len(fuzzOptionSets)] }

// optionsIndex finds o in fuzzOptionSets, to seed the fuzzers; a seed
// case whose options are not in the set fails the target.
func optionsIndex(f *testing.F, o Options) uint8 {
	for i, s := range fuzzOptionSets {
		if fmt.Sprint(s) == fmt.Sprint(o) {
			return uint8(i)
		}
	}
	f.Fatalf("options %+v not in fuzzOptionSets", o)
	return 0
}

// swapThaiMarks returns s with every Thai above or below vowel that is
// directly followed by a tone mark moved after it, and every tone mark
// directly followed by such a vowel moved after it: the two orders a Thai
// keyboard accepts for one syllable.
func swapThaiMarks(s string) string {
	rs := []rune(s)
	for i := 0; i+1 < len(rs); i++ {
		a, b := thaiMarkRank(rs[i]), thaiMarkRank(rs[i+1])
		if (a == 1 && b == 2) || (a == 2 && b == 1) {
			rs[i], rs[i+1] = rs[i+1], rs[i]
			i++
		}
	}
	return string(rs)
}

// equivalent reports how got differs from want beyond what encoding the
// reply differently may change: the kind, the missing questions and every
// declared label chosen must be the same, and a free text must have the same
// fold key.
func equivalent(qs []Question, want, got Outcome) error {
	if want.Kind != got.Kind || !slices.Equal(want.Missing, got.Missing) || len(want.Answers) != len(got.Answers) {
		return fmt.Errorf("got %+v, want %+v", got, want)
	}
	for id, wv := range want.Answers {
		gv, ok := got.Answers[id]
		if !ok || len(gv) != len(wv) {
			return fmt.Errorf("%s: got %+q, want %+q", id, gv, wv)
		}
		labels := qs[indexOf(qs, id)].Labels
		for i := range wv {
			if slices.Contains(labels, wv[i]) || slices.Contains(labels, gv[i]) {
				if wv[i] != gv[i] {
					return fmt.Errorf("%s: option %+q, want %+q", id, gv[i], wv[i])
				}
				continue
			}
			if foldKey(wv[i]) != foldKey(gv[i]) {
				return fmt.Errorf("%s: free text %+q, want one like %+q", id, gv[i], wv[i])
			}
		}
	}
	return nil
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
	case Empty, Skip, Acknowledge:
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

func indexOf(qs []Question, id string) int {
	return slices.IndexFunc(qs, func(q Question) bool { return q.ID == id })
}
