package web

import (
	"net/url"
	"slices"
	"testing"

	"github.com/askbridge/askbridge"
	"github.com/askbridge/askbridge/engine"
)

// linkFormRequest is a request of a single-select and a multi-select
// question, for the form's parser.
var linkFormRequest = askbridge.Request{Questions: []askbridge.Question{
	{ID: "target", Header: "Target", Question: "Where?", Options: []askbridge.Option{{Label: "Staging (Recommended)"}, {Label: "Production"}}},
	{ID: "checks", Header: "Checks", Question: "Which?", MultiSelect: true, Options: []askbridge.Option{{Label: "Unit"}, {Label: "Load"}, {Label: "Fuzz"}}},
}}

// FuzzLinkForm: any body of a link's form is read without panicking, and
// what it gives is either a problem or an answer of the question's shape:
// every question answered, one value for a single-select one, each value
// a declared label or the person's own words.
func FuzzLinkForm(f *testing.F) {
	for _, s := range []string{
		"", "do=skip", "a.target=0&a.checks=1&a.checks=2", "a.target=1&o.target=mine&a.checks=0",
		"a.target=0&a.target=1", "a.target=-1", "a.target=99999999999999999999", "a.checks=0&o.checks=%20x%20",
		"o.target=%FF%FE", "a.target=0&a.checks=2&a.checks=2&o.checks=", "%zz&a.target=0", "a.target=+1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		form, _ := url.ParseQuery(body)
		filled := parseLinkForm(linkFormRequest, form)
		if filled.skip {
			return
		}
		values, problem := filled.values(linkFormRequest, "en")
		if problem != "" {
			if values != nil {
				t.Fatalf("%q: a problem (%s) and values %v", body, problem, values)
			}
			return
		}
		for _, q := range linkFormRequest.Questions {
			vals := values[q.ID]
			if len(vals) == 0 || (!q.MultiSelect && len(vals) != 1) {
				t.Fatalf("%q: %s = %v", body, q.ID, vals)
			}
			for _, v := range vals {
				own := filled.other[q.ID]
				if v != own && !slices.ContainsFunc(q.Options, func(o askbridge.Option) bool { return o.Label == v }) {
					t.Fatalf("%q: %s has %q, neither a label nor the own words %q", body, q.ID, v, own)
				}
			}
		}
		// The engine's check takes it, or says why not (free text too
		// long, invalid UTF-8): it must not panic either.
		_, _ = engine.CheckAnswers(linkFormRequest, values)
	})
}

func TestOptionText(t *testing.T) {
	tests := []struct {
		label, text string
		rec         bool
	}{
		{"Staging (Recommended)", "Staging", true},
		{"Staging (recommended)", "Staging", true},
		{"สเตจจิ้ง (แนะนำ)", "สเตจจิ้ง", true},
		{"Staging（Recommended）", "Staging", true},
		{"(Recommended)", "(Recommended)", false},
		{"Production (EU)", "Production (EU)", false},
		{"Production", "Production", false},
	}
	for _, tc := range tests {
		t.Run(tc.label, func(t *testing.T) {
			if text, rec := optionText(tc.label); text != tc.text || rec != tc.rec {
				t.Errorf("optionText(%q) = %q, %v; want %q, %v", tc.label, text, rec, tc.text, tc.rec)
			}
		})
	}
}
