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
// or positional. A partial reply is Incomplete, and Correction says what to
// send back.
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
	fmt.Println(textparse.Correction(o, qs))
	// Output:
	// answer map[budget:[Large] deploy_target:[Production] region:[EU US]]
	// incomplete map[deploy_target:[Production]] [budget region]
	// Missing answers for 2 (Budget) and 3 (Region). Reply with one line per question, e.g. "2: Small".
}
