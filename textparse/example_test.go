package textparse_test

import (
	"fmt"

	"github.com/askbridge/askbridge/textparse"
)

// One single-select question: the whole message is the answer. A number, a
// label in any case (the "(Recommended)" suffix may be left out) or free text.
func ExampleParse() {
	qs := []textparse.Question{{
		ID:     "deploy_target",
		Header: "Target",
		Labels: []string{"Staging (Recommended)", "Production"},
	}}
	for _, reply := range []string{"2", "staging", "the canary cluster", "/skip"} {
		o := textparse.Parse(reply, qs)
		fmt.Printf("%-20q %v %q\n", reply, o.Kind, o.Answers["deploy_target"])
	}
	// Output:
	// "2"                  answer ["Production"]
	// "staging"            answer ["Staging (Recommended)"]
	// "the canary cluster" answer ["the canary cluster"]
	// "/skip"              skip []
}

// A multi-select question: the reply is split on commas, semicolons and
// newlines, except where joined parts name a label that contains a comma.
// Order is kept and repeats are dropped.
func ExampleParse_multiSelect() {
	qs := []textparse.Question{{
		ID:     "colors",
		Header: "Colors",
		Labels: []string{"Red, dark", "Blue", "Green"},
		Multi:  true,
	}}
	o := textparse.Parse("3, red, dark; blue, green, Teal", qs)
	fmt.Println(o.Kind, o.Answers["colors"])
	// Output:
	// answer [Green Red, dark Blue Teal]
}

// Several questions: one line per question, keyed by number, id or header,
// or positional. A partial reply is Incomplete: Missing names what to ask
// for again, and Example gives a line to copy.
func ExampleParse_severalQuestions() {
	qs := []textparse.Question{
		{ID: "deploy_target", Header: "Target", Labels: []string{"Staging (Recommended)", "Production"}},
		{ID: "budget", Header: "Budget", Labels: []string{"Small", "Large"}},
		{ID: "region", Header: "Region", Labels: []string{"EU", "US"}, Multi: true},
	}
	o := textparse.Parse("region: eu, us\n2\nlarge", qs)
	fmt.Println(o.Kind, o.Answers)

	o = textparse.Parse("Target - production", qs)
	fmt.Println(o.Kind, o.Answers, o.Missing)
	fmt.Println(textparse.Example(qs[0], textparse.Options{}))
	// Output:
	// answer map[budget:[Large] deploy_target:[Production] region:[EU US]]
	// incomplete map[deploy_target:[Production]] [budget region]
	// Staging
}

// Replies are understood in every language given at once, whatever the
// language the prompt was shown in: digits of any script, each language's
// skip and acknowledge words, and its "(Recommended)" suffix, which may be
// left out or typed with full-width parentheses. Marks typed in another
// order still match; the answer is the label exactly as declared.
func ExampleParseWith() {
	thai := textparse.Words{
		Skip:        []string{"ข้าม", "ข้ามไป"},
		Acknowledge: []string{"รับทราบ", "เห็นแล้ว"},
		Recommended: []string{"แนะนำ"},
	}
	opts := textparse.Options{
		Words:       []textparse.Words{textparse.EnglishWords(), thai},
		Acknowledge: true, // the request has reminders (ask-user.md §5)
	}
	qs := []textparse.Question{{
		ID:     "deploy_target",
		Header: "เป้าหมาย",
		Labels: []string{"สเตจจิ้ง (แนะนำ)", "โปรดักชัน", "กั้นไว้ก่อน"},
	}}
	for _, reply := range []string{
		"๒",        // Thai digit two
		"٢",        // Arabic-Indic digit two
		"สเตจจิ้ง", // the label without its suffix
		"สเตจจิ้ง（แนะนำ）",       // full-width parentheses, no space
		"ก\u0e49\u0e31นไว้ก่อน", // tone mark typed before the vowel
		"ข้าม",    // skip
		"รับทราบ", // acknowledge
		"1๒",      // two scripts in one number: free text
	} {
		o := textparse.ParseWith(reply, qs, opts)
		fmt.Printf("%-11v %q\n", o.Kind, o.Answers["deploy_target"])
	}
	// Output:
	// answer      ["โปรดักชัน"]
	// answer      ["โปรดักชัน"]
	// answer      ["สเตจจิ้ง (แนะนำ)"]
	// answer      ["สเตจจิ้ง (แนะนำ)"]
	// answer      ["กั้นไว้ก่อน"]
	// skip        []
	// acknowledge []
	// answer      ["1๒"]
}

// Several questions keyed by Thai headers, with Thai digits and a Thai
// multi-select list separated by spaces.
func ExampleParseWith_thaiHeaders() {
	opts := textparse.Options{Words: []textparse.Words{textparse.EnglishWords(), {Recommended: []string{"แนะนำ"}}}}
	qs := []textparse.Question{
		{ID: "deploy_target", Header: "เป้าหมาย", Labels: []string{"สเตจจิ้ง (แนะนำ)", "โปรดักชัน"}},
		{ID: "colors", Header: "สี", Labels: []string{"แดง", "น้ำเงิน", "เขียว"}, Multi: true},
	}
	o := textparse.ParseWith("สี: แดง เขียว\nเป้าหมาย：๑", qs, opts)
	fmt.Println(o.Kind, o.Answers)
	// Output:
	// answer map[colors:[แดง เขียว] deploy_target:[สเตจจิ้ง (แนะนำ)]]
}
