package locale

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// sample fills every field any message uses.
var sample = map[string]any{
	"Agent": "deploy-bot", "Labels": "Staging", "Questions": "2 (Budget)", "Example": "2: Small",
	"Who": "Alice", "Where": "slack:C01", "After": "15 min", "Left": "12 min",
	"Lead": 1, "Need": 2, "Votes": 1, "Counts": "Approve 1, Reject 0",
	"Header": "Target", "When": "2026-12-06 16:05 UTC",
	"For": "1 h", "Replies": `"keep 1h"`, "Answer": "Approve", "Key": "deploy:prod", "Until": "16:05 UTC", "Last": "15:20 UTC",
	"URL": "https://ask.example.com/a/token",
}

func TestCatalogsLoad(t *testing.T) {
	s := catalogs()
	if s.loadErr != nil {
		t.Fatal(s.loadErr)
	}
	if len(s.ids) < 40 {
		t.Fatalf("en catalog has %d messages; expected the whole catalog", len(s.ids))
	}
	if !slices.Contains(s.tags, "th") || s.tags[0] != Default {
		t.Fatalf("tags = %v; want en first and th", s.tags)
	}
}

// TestCatalogsComplete: every catalog has every message of English, in
// every plural form its language has, and every field renders.
func TestCatalogsComplete(t *testing.T) {
	ids := catalogs().ids
	for _, tag := range Tags() {
		raw := readCatalog(t, tag)
		w := For(tag)
		for _, id := range ids {
			if _, ok := raw[id]; !ok {
				t.Errorf("%s: message %s is missing", tag, id)
				continue
			}
			if _, plural := raw[id].(map[string]any); !plural {
				if text := w.Format(id, sample); text == id || strings.Contains(text, "<no value>") || text == "" {
					t.Errorf("%s: %s renders %q", tag, id, text)
				}
				continue
			}
			for _, n := range []int{0, 1, 2, 5, 21} {
				text := w.Count(id, n, sample)
				if text == id || strings.Contains(text, "<no value>") || text == "" {
					t.Errorf("%s: %s with count %d renders %q", tag, id, n, text)
				}
			}
		}
		for id := range raw {
			if !slices.Contains(ids, id) {
				t.Errorf("%s: message %s is not in the English catalog", tag, id)
			}
		}
	}
}

func readCatalog(t *testing.T, tag string) map[string]any {
	t.Helper()
	buf, err := os.ReadFile(filepath.Join("catalog", tag+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(buf, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestMatch(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "en"}, {"en", "en"}, {"en-GB", "en"}, {"th", "th"}, {"th-TH", "th"},
		{"TH", "th"}, {"th-Thai-TH", "th"}, {"fr", "en"}, {"zz", "en"}, {"not a tag", "en"}, {"x-private", "en"},
	} {
		if got := Match(c.in); got != c.want {
			t.Errorf("Match(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestResolveOrder(t *testing.T) {
	if got := Resolve("th", "en", "en"); got != "th" {
		t.Errorf("request th: %q", got)
	}
	if got := Resolve("", "th", "en"); got != "th" {
		t.Errorf("route th: %q", got)
	}
	if got := Resolve("", "", "th-TH"); got != "th" {
		t.Errorf("default th-TH: %q", got)
	}
	if got := Resolve("fr", "th"); got != "en" {
		t.Errorf("request fr falls back to English, not to the route: %q", got)
	}
	if got := Resolve(); got != Default {
		t.Errorf("nothing: %q", got)
	}
}

func TestPlural(t *testing.T) {
	en := For("en")
	if got := en.Count("IntroFrom", 1, sample); got != "Question from deploy-bot:" {
		t.Errorf("one: %q", got)
	}
	if got := en.Count("IntroFrom", 3, sample); got != "Questions from deploy-bot:" {
		t.Errorf("other: %q", got)
	}
	if got := For("th").Count("IntroFrom", 3, sample); got != "คำถามจาก deploy-bot:" {
		t.Errorf("th: %q", got)
	}
}

func TestList(t *testing.T) {
	en, th := For("en"), For("th")
	for _, c := range []struct {
		w    *Words
		in   []string
		want string
	}{
		{en, nil, ""}, {en, []string{"a"}, "a"}, {en, []string{"a", "b"}, "a and b"},
		{en, []string{"a", "b", "c"}, "a, b and c"}, {th, []string{"ก", "ข"}, "ก และ ข"},
	} {
		if got := c.w.List(c.in); got != c.want {
			t.Errorf("%s List(%q) = %q, want %q", c.w.Tag(), c.in, got, c.want)
		}
	}
}

// TestTemplateDataIsData: agent text that looks like a template is shown as
// it is.
func TestTemplateDataIsData(t *testing.T) {
	got := For("en").Count("IntroFrom", 1, map[string]any{"Agent": "{{.Count}} <b>"})
	if got != "Question from {{.Count}} <b>:" {
		t.Errorf("got %q", got)
	}
}

func TestReplyWords(t *testing.T) {
	ws := ReplyWords()
	if len(ws) != len(Tags()) {
		t.Fatalf("%d word sets for %d catalogs", len(ws), len(Tags()))
	}
	var skip, ack, rec []string
	for _, w := range ws {
		skip, ack, rec = append(skip, w.Skip...), append(ack, w.Acknowledge...), append(rec, w.Recommended...)
	}
	for _, want := range []string{"skip", "ข้าม", "ข้ามไป"} {
		if !slices.Contains(skip, want) {
			t.Errorf("skip words %q lack %q", skip, want)
		}
	}
	if !slices.Contains(ack, "seen") || !slices.Contains(ack, "รับทราบ") {
		t.Errorf("acknowledge words %q", ack)
	}
	if !slices.Contains(rec, "Recommended") || !slices.Contains(rec, "แนะนำ") {
		t.Errorf("recommended words %q", rec)
	}
}

func TestUnknownID(t *testing.T) {
	if got := For("th").Get("NoSuchMessage"); got != "NoSuchMessage" {
		t.Errorf("got %q", got)
	}
}

// Match remembers its answers, the same as it works them out, and stops
// remembering new tags after matchedMax.
func TestMatchRemembered(t *testing.T) {
	for range 2 {
		for _, tag := range []string{"th-TH", "en-GB", "fr", "not a tag", ""} {
			if got, want := Match(tag), match(tag); got != want {
				t.Errorf("Match(%q) = %q, worked out %q", tag, got, want)
			}
		}
	}
	for i := range matchedMax + 10 {
		tag := fmt.Sprintf("x-t%d", i)
		if got := Match(tag); got != Default {
			t.Fatalf("Match(%q) = %q", tag, got)
		}
	}
	if n := matchedN.Load(); n > matchedMax {
		t.Errorf("%d tags remembered, at most %d", n, matchedMax)
	}
}

// Count's cache gives what the template gives: for each message, count
// and fields apart, never a text cached for other fields; fields that are
// not strings are not cached; it stops growing at countedMax.
func TestCountCached(t *testing.T) {
	en := newWords(catalogs(), "en")
	for range 2 {
		if got := en.Count("IntroFrom", 1, map[string]any{"Agent": "a"}); got != "Question from a:" {
			t.Errorf("a, 1: %q", got)
		}
		if got := en.Count("IntroFrom", 3, map[string]any{"Agent": "a"}); got != "Questions from a:" {
			t.Errorf("a, 3: %q", got)
		}
		if got := en.Count("IntroFrom", 1, map[string]any{"Agent": "b"}); got != "Question from b:" {
			t.Errorf("b, 1: %q", got)
		}
		if got := en.Count("IntroAnon", 2, nil); got != For("en").Count("IntroAnon", 2, nil) {
			t.Errorf("anonymous: %q", got)
		}
	}
	before := en.countedN.Load()
	if before != 4 {
		t.Errorf("%d texts cached, want 4", before)
	}
	if got := en.Count("TallyAbstained", 2, map[string]any{"Extra": 1}); got == "" {
		t.Error("no text for a call with a field that is not a string")
	}
	if en.countedN.Load() != before {
		t.Error("a call with a field that is not a string was cached")
	}
	for i := range countedMax + 10 {
		agent := fmt.Sprint("agent-", i)
		if got := en.Count("IntroFrom", 1, map[string]any{"Agent": agent}); got != "Question from "+agent+":" {
			t.Fatalf("%s: %q", agent, got)
		}
	}
	if n := en.countedN.Load(); n > countedMax {
		t.Errorf("%d texts cached, at most %d", n, countedMax)
	}
}
