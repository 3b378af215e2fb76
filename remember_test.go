package askbridge

import (
	"strings"
	"testing"
)

func TestDecodeRemember(t *testing.T) {
	q := `"questions":[{"id":"a","header":"A","question":"A?","options":[{"label":"X"},{"label":"Y"}]}]`
	tests := []struct {
		name     string
		remember string
		extra    string
		want     string // a problem's text; "" for none
	}{
		{"ok", `{"key":"deploy:prod","offer":[3600,86400]}`, "", ""},
		{"no key", `{"offer":[3600]}`, "", "remember.key is required"},
		{"bad key", `{"key":"no spaces","offer":[3600]}`, "", "remember.key must be"},
		{"long key", `{"key":"` + strings.Repeat("k", 129) + `","offer":[3600]}`, "", "remember.key must be"},
		{"no offer", `{"key":"k"}`, "", "remember.offer is required"},
		{"empty offer", `{"key":"k","offer":[]}`, "", "remember.offer must be a list of 1 to 3"},
		{"four offers", `{"key":"k","offer":[60,120,180,240]}`, "", "remember.offer must be a list of 1 to 3"},
		{"short", `{"key":"k","offer":[59]}`, "", "remember.offer[0] must be 60 to 2592000 seconds"},
		{"long", `{"key":"k","offer":[2592001]}`, "", "remember.offer[0] must be 60 to 2592000 seconds"},
		{"not increasing", `{"key":"k","offer":[3600,3600]}`, "", "remember.offer[1] must be greater than remember.offer[0]"},
		{"not a number", `{"key":"k","offer":["1h"]}`, "", "remember.offer[0] must be an integer"},
		{"unknown field", `{"key":"k","offer":[60],"x":1}`, "", `remember."x" is not a known field`},
		{"with quorum", `{"key":"k","offer":[60]}`, `"quorum":2,`, "remember cannot be used with quorum"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := DecodeRequest([]byte(`{` + tc.extra + `"remember":` + tc.remember + `,` + q + `}`))
			if tc.want == "" {
				if err != nil || req.Remember == nil || req.Remember.Key != "deploy:prod" || req.Remember.Longest().Hours() != 24 {
					t.Fatalf("DecodeRequest = %+v, %v", req.Remember, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v; want %q", err, tc.want)
			}
		})
	}
}

func TestShape(t *testing.T) {
	a := []Question{{ID: "t", Question: "Deploy 1?", Options: []Option{{Label: "Yes"}, {Label: "No"}}}}
	b := []Question{{ID: "t", Question: "Deploy 2?", Header: "H", Options: []Option{{Label: "Yes", Description: "d"}, {Label: "No"}}}}
	if Shape(a) != Shape(b) {
		t.Error("texts should not change the shape")
	}
	for name, c := range map[string][]Question{
		"order": {{ID: "t", Options: []Option{{Label: "No"}, {Label: "Yes"}}}},
		"id":    {{ID: "u", Options: []Option{{Label: "Yes"}, {Label: "No"}}}},
		"multi": {{ID: "t", MultiSelect: true, Options: []Option{{Label: "Yes"}, {Label: "No"}}}},
	} {
		if Shape(c) == Shape(a) {
			t.Errorf("%s should change the shape", name)
		}
	}
}

func TestDecodeRevokeEntry(t *testing.T) {
	tests := []struct {
		in, want string
		ok       RevokeEntry
	}{
		{`{"agent":"ci","key":"deploy:prod"}`, "", RevokeEntry{Agent: "ci", Key: "deploy:prod"}},
		{`{"key":"k"}`, "", RevokeEntry{Key: "k"}},
		{`{"agent":"ci"}`, "key is required", RevokeEntry{}},
		{`{"key":"a b"}`, "key must be a remember.key", RevokeEntry{}},
		{`{"key":"k","extra":1}`, `"extra" is not a known field`, RevokeEntry{}},
		{`{"key":"k","agent":"a\nb"}`, "agent must not contain control", RevokeEntry{}},
		{`[]`, "revoke must be a JSON object", RevokeEntry{}},
		{`{`, "revoke is not valid JSON", RevokeEntry{}},
	}
	for _, tc := range tests {
		got, err := DecodeRevokeEntry([]byte(tc.in))
		if tc.want == "" {
			if err != nil || got != tc.ok {
				t.Errorf("%s: %+v, %v", tc.in, got, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v; want %q", tc.in, err, tc.want)
		}
	}
}

func FuzzDecodeRevokeEntry(f *testing.F) {
	for _, s := range []string{`{"agent":"ci","key":"deploy:prod"}`, `{"key":"k"}`, `{"key":1}`, `null`, `{"key":"k","agent":"{}%"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := DecodeRevokeEntry(data)
		if err != nil {
			return
		}
		if !ValidRememberKey(r.Key) || hasControl(r.Agent) {
			t.Fatalf("accepted %q as %+v", data, r)
		}
	})
}

func TestStandingTag(t *testing.T) {
	k := Keys{Prefix: "p:"}
	for agent, want := range map[string]string{
		"":      "p:standing:{%}:k",
		"ci":    "p:standing:{ci}:k",
		"a{b}%": "p:standing:{a%7Bb%7D%25}:k",
		"%":     "p:standing:{%25}:k",
	} {
		if got := k.Standing(agent, "k"); got != want {
			t.Errorf("Standing(%q) = %q; want %q", agent, got, want)
		}
	}
}
