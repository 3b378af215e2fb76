package textparse

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// The question sets the tests parse against. fuzz_test.go uses the same
// catalogue, indexed, so every table case also seeds the fuzzer.
var (
	target = Question{ID: "deploy_target", Header: "Target", Labels: []string{"Staging (Recommended)", "Production"}}
	budget = Question{ID: "budget", Header: "Budget", Labels: []string{"Small", "Medium", "Large"}}
	region = Question{ID: "region", Header: "Region", Labels: []string{"EU", "US", "Asia"}, Multi: true}
	colors = Question{ID: "colors", Header: "Colors", Labels: []string{"Red, dark", "Blue", "Green; light", "Red"}, Multi: true}
	vote   = Question{ID: "vote", Header: "Vote", Labels: []string{"👍 Yes", "👎 No", "❤️ Love it"}}
	thai   = Question{ID: "thai", Header: "ตอบ", Labels: []string{"ใช่", "ไม่ใช่"}}
	jp     = Question{ID: "jp", Header: "質問", Labels: []string{"はい", "いいえ"}, Multi: true}
	ru     = Question{ID: "ru", Header: "Ответ", Labels: []string{"Да", "Нет"}}
	street = Question{ID: "street", Header: "Straße", Labels: []string{"Hauptstraße", "Bahnhof"}}
	city   = Question{ID: "city", Header: "Ville", Labels: []string{"Évry", "Île-de-France", "Zürich"}}
	when   = Question{ID: "start_time", Header: "Start", Labels: []string{"Morning", "Evening"}}
	link   = Question{ID: "link", Header: "Go-live", Labels: []string{"None", "Docs"}}
	skipQ  = Question{ID: "step", Header: "Step", Labels: []string{"Skip", "Run"}}
	rec    = Question{ID: "env", Header: "Env", Labels: []string{"Staging (Recommended)", "Staging"}}

	// Questions in Thai and mixed Thai/English, for i18n_test.go.
	thTarget = Question{ID: "deploy_target", Header: "เป้าหมาย", Labels: []string{"สเตจจิ้ง (แนะนำ)", "โปรดักชัน"}}
	thBudget = Question{ID: "budget", Header: "งบประมาณ", Labels: []string{"น้อย", "ปานกลาง", "มาก"}}
	thColors = Question{ID: "colors", Header: "สี", Labels: []string{"แดง", "น้ำเงิน", "เขียว"}, Multi: true}
	// thSuffix declares its suffixes unspaced and in full-width parentheses.
	thSuffix = Question{ID: "suffix", Header: "ตัวเลือก", Labels: []string{"สเตจจิ้ง(แนะนำ)", "Canary（Recommended）", "โปรดักชัน"}}
	// marks holds labels with combining marks, one declared decomposed.
	marks = Question{ID: "marks", Header: "ตั้งค่า", Labels: []string{"กั้น", "กุ้ง", "ที่นี่", "Évry", "Cafe\u0301", "น้ำ", "OK"}}
	mixed = Question{ID: "mixed", Header: "Deploy ไหม", Labels: []string{"Deploy ไป staging", "รอ review ก่อน", "ใช่ครับ"}}
	// twelve has more than nine options, for numbers of two digits.
	twelve = Question{ID: "n", Header: "N", Labels: []string{"o1", "o2", "o3", "o4", "o5", "o6", "o7", "o8", "o9", "o10", "o11", "o12"}}
	thSkip = Question{ID: "step", Header: "ขั้น", Labels: []string{"ข้าม", "รัน", "Seen"}}
)

// catalogue lists the prompts used by the tests, by index.
var catalogue = [][]Question{
	{target},                       // 0
	{region},                       // 1
	{colors},                       // 2
	{vote},                         // 3
	{thai},                         // 4
	{jp},                           // 5
	{ru},                           // 6
	{street},                       // 7
	{city},                         // 8
	{target, budget},               // 9
	{target, budget, region},       // 10
	{when, link},                   // 11
	{skipQ},                        // 12
	{rec},                          // 13
	{target, skipQ},                // 14
	{thTarget},                     // 15
	{thTarget, thBudget},           // 16
	{thTarget, thBudget, thColors}, // 17
	{thColors},                     // 18
	{thSuffix},                     // 19
	{marks},                        // 20
	{mixed},                        // 21
	{twelve},                       // 22
	{thSkip},                       // 23
	{marks, thBudget},              // 24
}

const (
	oneTarget = iota
	oneRegion
	oneColors
	oneVote
	oneThai
	oneJP
	oneRU
	oneStreet
	oneCity
	twoQ
	threeQ
	timeLink
	oneSkipLabel
	oneRec
	twoSkipLabel
	oneThTarget
	twoTh
	threeTh
	oneThColors
	oneThSuffix
	oneMarks
	oneMixed
	oneTwelve
	oneThSkip
	marksBudget
)

// answered builds an Answer outcome from id/values pairs.
func answered(pairs ...any) Outcome {
	return Outcome{Kind: Answer, Answers: answerMap(pairs)}
}

// partial builds an Incomplete outcome: the missing ids, then id/values pairs.
func partial(missing []string, pairs ...any) Outcome {
	return Outcome{Kind: Incomplete, Answers: answerMap(pairs), Missing: missing}
}

func answerMap(pairs []any) map[string][]string {
	m := map[string][]string{}
	for i := 0; i+1 < len(pairs); i += 2 {
		m[pairs[i].(string)] = pairs[i+1].([]string)
	}
	return m
}

func vals(v ...string) []string { return v }

var (
	empty = Outcome{Kind: Empty}
	skip  = Outcome{Kind: Skip}
)

type parseCase struct {
	name   string
	prompt int // index into catalogue
	text   string
	want   Outcome
}

var parseCases = []parseCase{
	// Numbers.
	{"number 1", oneTarget, "1", answered("deploy_target", vals("Staging (Recommended)"))},
	{"number 2", oneTarget, "2", answered("deploy_target", vals("Production"))},
	{"number with spaces", oneTarget, "  2 \n", answered("deploy_target", vals("Production"))},
	{"out of range number is free text", oneTarget, "7", answered("deploy_target", vals("7"))},
	{"zero is free text", oneTarget, "0", answered("deploy_target", vals("0"))},
	{"negative is free text", oneTarget, "-1", answered("deploy_target", vals("-1"))},
	{"leading zero", oneTarget, "01", answered("deploy_target", vals("Staging (Recommended)"))},
	{"many leading zeros", oneTarget, "0000000000000000000002", answered("deploy_target", vals("Production"))},
	{"huge number is free text", oneTarget, "99999999999999999999999", answered("deploy_target", vals("99999999999999999999999"))},
	{"number with list dot", oneTarget, "2.", answered("deploy_target", vals("Production"))},
	{"number with paren", oneTarget, "1)", answered("deploy_target", vals("Staging (Recommended)"))},
	{"decimal is free text", oneTarget, "1.5", answered("deploy_target", vals("1.5"))},
	{"full-width digit", oneTarget, "２", answered("deploy_target", vals("Production"))},
	{"hash number is free text", oneTarget, "#1", answered("deploy_target", vals("#1"))},

	// Labels.
	{"label exact", oneTarget, "Production", answered("deploy_target", vals("Production"))},
	{"label lower case", oneTarget, "production", answered("deploy_target", vals("Production"))},
	{"label upper case", oneTarget, "PRODUCTION", answered("deploy_target", vals("Production"))},
	{"recommended suffix omitted", oneTarget, "staging", answered("deploy_target", vals("Staging (Recommended)"))},
	{"recommended suffix typed", oneTarget, "staging (recommended)", answered("deploy_target", vals("Staging (Recommended)"))},
	{"recommended suffix with doubled space", oneTarget, "Staging  (Recommended)", answered("deploy_target", vals("Staging (Recommended)"))},
	{"full label beats suffix-less match", oneRec, "staging", answered("env", vals("Staging"))},
	{"suffixed label still reachable", oneRec, "STAGING (RECOMMENDED)", answered("env", vals("Staging (Recommended)"))},
	{"label with tab and doubled space", oneRec, "staging\t  (recommended)", answered("env", vals("Staging (Recommended)"))},
	{"label inside sentence is free text", oneTarget, "production please", answered("deploy_target", vals("production please"))},

	// Free text.
	{"free text", oneTarget, "  Somewhere else entirely  ", answered("deploy_target", vals("Somewhere else entirely"))},
	{"free text multi-line kept whole", oneTarget, "Neither.\nUse the canary.", answered("deploy_target", vals("Neither.\nUse the canary."))},
	{"free text with comma not split for single-select", oneTarget, "Staging, then Production", answered("deploy_target", vals("Staging, then Production"))},
	{"free text with NUL inside", oneTarget, "a\x00b", answered("deploy_target", vals("a\x00b"))},
	{"NULs around are blank", oneTarget, "\x00 2 \x00", answered("deploy_target", vals("Production"))},
	{"invalid UTF-8 replaced", oneTarget, "caf\xe9", answered("deploy_target", vals("caf\uFFFD"))},
	{"zero-width space trimmed", oneTarget, "\u200b1\u200b", answered("deploy_target", vals("Staging (Recommended)"))},

	// Skip.
	{"skip", oneTarget, "skip", skip},
	{"SKIP", oneTarget, "SKIP", skip},
	{"Skip", oneTarget, "Skip", skip},
	{"slash skip with spaces", oneTarget, " /skip ", skip},
	{"slash Skip", oneTarget, "/Skip", skip},
	{"skip with dot", oneTarget, "skip.", skip},
	{"skip with bang", oneTarget, "Skip!", skip},
	{"slash skip with bot name", oneTarget, "/skip@ask_bot", skip},
	{"slash skip with bad bot name", oneTarget, "/skip@ ask bot", answered("deploy_target", vals("/skip@ ask bot"))},
	{"skip sentence is free text", oneTarget, "skip this one please", answered("deploy_target", vals("skip this one please"))},
	{"skip question mark is free text", oneTarget, "skip?", answered("deploy_target", vals("skip?"))},
	{"skipping is free text", oneTarget, "skipping", answered("deploy_target", vals("skipping"))},
	{"skip for several questions", threeQ, "\n Skip \n", skip},
	{"skip on one line of several is free text", twoQ, "skip\n2", answered("deploy_target", vals("skip"), "budget", vals("Medium"))},
	{"skip label picks the option", oneSkipLabel, "skip", answered("step", vals("Skip"))},
	{"slash skip still declines with skip label", oneSkipLabel, "/skip", skip},
	{"skip label in any question", twoSkipLabel, "skip", partial([]string{"step"}, "deploy_target", vals("skip"))},

	// Multi-select, one question.
	{"multi commas", oneRegion, "1, 3", answered("region", vals("EU", "Asia"))},
	{"multi semicolons", oneRegion, "eu;us", answered("region", vals("EU", "US"))},
	{"multi newlines", oneRegion, "Asia\nEU\n", answered("region", vals("Asia", "EU"))},
	{"multi CRLF", oneRegion, "Asia\r\nEU\r\n", answered("region", vals("Asia", "EU"))},
	{"multi order kept", oneRegion, "3,1,2", answered("region", vals("Asia", "EU", "US"))},
	{"multi duplicates dropped", oneRegion, "1, eu, EU, 1", answered("region", vals("EU"))},
	{"multi empties dropped", oneRegion, ",, 2 ,,;\n", answered("region", vals("US"))},
	{"multi free text mixed", oneRegion, "EU, Antarctica, 9", answered("region", vals("EU", "Antarctica", "9"))},
	{"multi free text duplicates fold", oneRegion, "Mars, mars", answered("region", vals("Mars"))},
	{"multi space-separated numbers", oneRegion, "1 3", answered("region", vals("EU", "Asia"))},
	{"multi space-separated out of range is free text", oneRegion, "1 7", answered("region", vals("1 7"))},
	{"multi full-width comma", oneRegion, "1，2", answered("region", vals("EU", "US"))},
	{"multi ideographic comma", oneJP, "はい、いいえ", answered("jp", vals("はい", "いいえ"))},
	{"multi only separators is incomplete", oneRegion, " , ; ", partial([]string{"region"})},
	{"whole message label with comma", oneColors, "red, DARK", answered("colors", vals("Red, dark"))},
	{"whole message label with semicolon", oneColors, "Green; Light", answered("colors", vals("Green; light"))},
	{"comma label inside a list", oneColors, "Red, dark, Blue", answered("colors", vals("Red, dark", "Blue"))},
	{"comma label after other parts", oneColors, "2, red, dark", answered("colors", vals("Blue", "Red, dark"))},
	{"plain red and free text", oneColors, "Red, light", answered("colors", vals("Red", "light"))},
	{"comma label by number", oneColors, "1, 4", answered("colors", vals("Red, dark", "Red"))},
	{"semicolon label inside a list", oneColors, "blue; green; light", answered("colors", vals("Blue", "Green; light"))},

	// Emoji and non-Latin text.
	{"emoji label", oneVote, "👍 yes", answered("vote", vals("👍 Yes"))},
	{"emoji label extra spaces", oneVote, "👎   NO", answered("vote", vals("👎 No"))},
	{"emoji alone is free text", oneVote, "👍", answered("vote", vals("👍"))},
	{"emoji without variation selector", oneVote, "❤ love it", answered("vote", vals("❤️ Love it"))},
	{"thai label", oneThai, "ใช่", answered("thai", vals("ใช่"))},
	{"thai other label", oneThai, " ไม่ใช่ ", answered("thai", vals("ไม่ใช่"))},
	{"thai free text", oneThai, "อาจจะ", answered("thai", vals("อาจจะ"))},
	{"japanese label", oneJP, "いいえ", answered("jp", vals("いいえ"))},
	{"japanese full-width numbers", oneJP, "１，２", answered("jp", vals("はい", "いいえ"))},
	{"cyrillic upper", oneRU, "ДА", answered("ru", vals("Да"))},
	{"cyrillic lower", oneRU, "нет", answered("ru", vals("Нет"))},
	{"german sharp s as SS", oneStreet, "HAUPTSTRASSE", answered("street", vals("Hauptstraße"))},
	{"german capital sharp s", oneStreet, "HAUPTSTRAẞE", answered("street", vals("Hauptstraße"))},
	{"accented lower", oneCity, "évry", answered("city", vals("Évry"))},
	{"accented upper", oneCity, "ZÜRICH", answered("city", vals("Zürich"))},
	{"accent missing is free text", oneCity, "Evry", answered("city", vals("Evry"))},
	{"hyphenated label", oneCity, "île-de-france", answered("city", vals("Île-de-France"))},

	// One question, keyed by habit.
	{"one question keyed by header", oneTarget, "Target: production", answered("deploy_target", vals("Production"))},
	{"one question keyed by id", oneTarget, "deploy_target = 1", answered("deploy_target", vals("Staging (Recommended)"))},
	{"one question keyed free text kept whole", oneTarget, "Target: the moon", answered("deploy_target", vals("Target: the moon"))},
	{"one question number key not stripped", oneRegion, "1 - 3", answered("region", vals("1 - 3"))},

	// Several questions, positional.
	{"positional numbers", threeQ, "1\n3\n2, 3", answered("deploy_target", vals("Staging (Recommended)"), "budget", vals("Large"), "region", vals("US", "Asia"))},
	{"positional labels", twoQ, "production\nsmall", answered("deploy_target", vals("Production"), "budget", vals("Small"))},
	{"positional CRLF", twoQ, "2\r\n1\r\n", answered("deploy_target", vals("Production"), "budget", vals("Small"))},
	{"positional lone CR", twoQ, "2\r1", answered("deploy_target", vals("Production"), "budget", vals("Small"))},
	{"positional tabs", twoQ, "\t2\t\n\t1\t", answered("deploy_target", vals("Production"), "budget", vals("Small"))},
	{"blank lines between answers ignored", threeQ, "\n1\n\n\n2\n\neu\n\n", answered("deploy_target", vals("Staging (Recommended)"), "budget", vals("Medium"), "region", vals("EU"))},
	{"blank line holds a place", threeQ, "1\n\nEU", partial([]string{"budget"}, "deploy_target", vals("Staging (Recommended)"), "region", vals("EU"))},
	{"only first answered", threeQ, "2", partial([]string{"budget", "region"}, "deploy_target", vals("Production"))},
	{"one line with commas is not split across questions", twoQ, "Staging, Small", partial([]string{"budget"}, "deploy_target", vals("Staging, Small"))},
	{"extra lines continue the last answer", twoQ, "1\nSmall\nthanks", answered("deploy_target", vals("Staging (Recommended)"), "budget", vals("Small\nthanks"))},
	{"extra lines split for last multi", threeQ, "1\n2\nEU\nUS", answered("deploy_target", vals("Staging (Recommended)"), "budget", vals("Medium"), "region", vals("EU", "US"))},
	{"time not split", timeLink, "14:30\nhttps://example.com/a-b", answered("start_time", vals("14:30"), "link", vals("https://example.com/a-b"))},
	{"windows path not split", timeLink, "1\nC:\\docs\\plan.md", answered("start_time", vals("Morning"), "link", vals("C:\\docs\\plan.md"))},

	// Several questions, keyed.
	{"keyed by number colon", twoQ, "1: 2\n2: 3", answered("deploy_target", vals("Production"), "budget", vals("Large"))},
	{"keyed by id equals", twoQ, "budget = medium\ndeploy_target = staging", answered("deploy_target", vals("Staging (Recommended)"), "budget", vals("Medium"))},
	{"keyed by id typed with spaces", twoQ, "Deploy Target: 2\nbudget: 1", answered("deploy_target", vals("Production"), "budget", vals("Small"))},
	{"keyed by header dash", twoQ, "Target - Production\nBudget - Small", answered("deploy_target", vals("Production"), "budget", vals("Small"))},
	{"keyed any case and spaces", twoQ, "  TARGET   :   2  \n BUDGET=1", answered("deploy_target", vals("Production"), "budget", vals("Small"))},
	{"keyed no spaces", twoQ, "2:1\n1:2", answered("deploy_target", vals("Production"), "budget", vals("Small"))},
	{"keyed in reverse order", threeQ, "region: asia, eu\nbudget: large\ntarget: 1", answered("deploy_target", vals("Staging (Recommended)"), "budget", vals("Large"), "region", vals("Asia", "EU"))},
	{"keyed en dash", twoQ, "Target – 2\nBudget — 1", answered("deploy_target", vals("Production"), "budget", vals("Small"))},
	{"keyed full-width colon", twoQ, "１：２\n２：１", answered("deploy_target", vals("Production"), "budget", vals("Small"))},
	{"keyed numbered list", twoQ, "1. Production\n2) Small", answered("deploy_target", vals("Production"), "budget", vals("Small"))},
	{"keyed leading zero", twoQ, "02: small\n01: 2", answered("deploy_target", vals("Production"), "budget", vals("Small"))},
	{"keyed value is time", timeLink, "Start: 14:30\nGo-live: https://example.com", answered("start_time", vals("14:30"), "link", vals("https://example.com"))},
	{"keyed header with hyphen", timeLink, "go-live - docs\nstart = evening", answered("start_time", vals("Evening"), "link", vals("Docs"))},
	{"number key then time not split", timeLink, "1:30\n2", answered("start_time", vals("1:30"), "link", vals("Docs"))},
	{"number key then range not split", twoQ, "1-2 weeks\n2 - 1", answered("deploy_target", vals("1-2 weeks"), "budget", vals("Small"))},
	{"out-of-range number key is positional", twoQ, "3: x\n2", answered("deploy_target", vals("3: x"), "budget", vals("Medium"))},
	{"keyed with empty value", twoQ, "1:\n2: small", partial([]string{"deploy_target"}, "budget", vals("Small"))},
	{"keyed single-select twice keeps first", twoQ, "1: 1\n1: 2\n2: 1", answered("deploy_target", vals("Staging (Recommended)"), "budget", vals("Small"))},
	{"keyed multi twice gathers", threeQ, "region: eu\nregion: us, eu\n1\n2", answered("deploy_target", vals("Staging (Recommended)"), "budget", vals("Medium"), "region", vals("EU", "US"))},
	{"mixed keyed and positional", threeQ, "budget: large\n2\nasia", answered("deploy_target", vals("Production"), "budget", vals("Large"), "region", vals("Asia"))},
	{"all keyed extra line ignored", twoQ, "1: 1\n2: 1\nthanks!", answered("deploy_target", vals("Staging (Recommended)"), "budget", vals("Small"))},
	{"partial keyed", threeQ, "region: EU", partial([]string{"deploy_target", "budget"}, "region", vals("EU"))},
	{"keyed value free text", twoQ, "Budget: about 5k\nTarget: 1", answered("deploy_target", vals("Staging (Recommended)"), "budget", vals("about 5k"))},
	{"dash in free text stays positional", twoQ, "e-mail me\nsmall", answered("deploy_target", vals("e-mail me"), "budget", vals("Small"))},

	// Empty.
	{"empty message", oneTarget, "", empty},
	{"whitespace only", threeQ, " \t\r\n \u00a0 ", empty},
	{"NULs only", oneTarget, "\x00\x00", empty},
}

func TestParse(t *testing.T) {
	if len(parseCases) < 80 {
		t.Fatalf("only %d table cases", len(parseCases))
	}
	seen := map[string]bool{}
	for _, tc := range parseCases {
		if seen[tc.name] {
			t.Fatalf("duplicate case name %q", tc.name)
		}
		seen[tc.name] = true
		t.Run(tc.name, func(t *testing.T) {
			got := Parse(tc.text, catalogue[tc.prompt])
			if !sameOutcome(got, tc.want) {
				t.Errorf("Parse(%q) =\n  %+v\nwant\n  %+v", tc.text, got, tc.want)
			}
		})
	}
}

// sameOutcome compares outcomes treating nil and empty maps and slices alike.
func sameOutcome(a, b Outcome) bool {
	if a.Kind != b.Kind || len(a.Missing) != len(b.Missing) || len(a.Answers) != len(b.Answers) {
		return false
	}
	if len(a.Missing) > 0 && !reflect.DeepEqual(a.Missing, b.Missing) {
		return false
	}
	return len(a.Answers) == 0 || reflect.DeepEqual(a.Answers, b.Answers)
}

func TestParseNoQuestions(t *testing.T) {
	if got := Parse("anything", nil); got.Kind != Answer || len(got.Answers) != 0 || len(got.Missing) != 0 {
		t.Errorf("Parse with no questions = %+v, want an empty Answer", got)
	}
	if got := Parse("/skip", nil); got.Kind != Skip {
		t.Errorf("Parse(/skip) with no questions = %+v, want Skip", got)
	}
}

func TestParseLongText(t *testing.T) {
	tests := []struct {
		name string
		text string
		want int // bytes of the free-text value
	}{
		{"at the limit", strings.Repeat("a", MaxTextBytes), MaxTextBytes},
		{"over the limit", strings.Repeat("a", MaxTextBytes+10), MaxTextBytes},
		// 3-byte characters: the cut falls inside one and backs off to its start.
		{"cut on a character boundary", strings.Repeat("ใ", MaxTextBytes/3+5), MaxTextBytes / 3 * 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Parse(tc.text, []Question{target})
			v := got.Answers["deploy_target"]
			if got.Kind != Answer || len(v) != 1 || len(v[0]) != tc.want {
				t.Errorf("Parse(long) kind %v, %d values, first %d bytes; want one of %d bytes", got.Kind, len(v), lenFirst(v), tc.want)
			}
		})
	}
}

func lenFirst(v []string) int {
	if len(v) == 0 {
		return -1
	}
	return len(v[0])
}

func TestParseManyParts(t *testing.T) {
	// A long comma list of one option stays one value, and no work blows up.
	text := strings.Repeat("1, eu, ", 20000)
	got := Parse(text, []Question{region})
	if got.Kind != Answer || !reflect.DeepEqual(got.Answers["region"], []string{"EU"}) {
		t.Errorf("Parse(long list) = %+v, want region [EU]", got)
	}
}

// TestParseHugeInputs feeds Parse text at the size limit built to defeat
// its bounds: floods of separators, long keyed lines, labels full of commas.
// Each must parse (the test timeout is the guard) and keep the invariants.
func TestParseHugeInputs(t *testing.T) {
	if testing.Short() {
		t.Skip("inputs of MaxTextBytes against every prompt (a minute under -race): full tier (go test without -short)")
	}
	commaLabels := Question{
		ID:     strings.Repeat("a", 1000),
		Header: "h",
		Labels: []string{strings.Repeat(",", 64), strings.Repeat(", \n", 20), "x"},
		Multi:  true,
	}
	prompts := append(slices.Clone(catalogue), []Question{commaLabels, target}, []Question{commaLabels})
	texts := map[string]string{
		"dashes":       strings.Repeat("-", MaxTextBytes),
		"commas":       strings.Repeat(",", MaxTextBytes),
		"newlines":     strings.Repeat("\n", MaxTextBytes),
		"number keys":  strings.Repeat("1:", MaxTextBytes/2),
		"mixed":        strings.Repeat("a-b:c=d, e;\n", MaxTextBytes/12),
		"spaced dash":  strings.Repeat(" -", MaxTextBytes/2),
		"keyed lines":  strings.Repeat("region: a\n", MaxTextBytes/10),
		"distinct":     distinctLines(MaxTextBytes / 16),
		"no separator": strings.Repeat("x", 2*MaxTextBytes),
	}
	for name, text := range texts {
		for i, qs := range prompts {
			checkOutcome(t, qs, Parse(text, qs))
			if t.Failed() {
				t.Fatalf("%s with prompt %d", name, i)
			}
		}
	}
}

// distinctLines returns n keyed lines with distinct free-text values, which
// a multi-select question must gather without rescanning what it has.
func distinctLines(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "region: r%d\n", i)
	}
	return b.String()
}

func TestKindString(t *testing.T) {
	tests := []struct {
		kind Kind
		want string
	}{
		{Empty, "empty"}, {Answer, "answer"}, {Skip, "skip"}, {Incomplete, "incomplete"}, {Kind(42), "invalid"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			if got := tc.kind.String(); got != tc.want {
				t.Errorf("Kind(%d).String() = %q, want %q", int(tc.kind), got, tc.want)
			}
		})
	}
}

// BenchmarkParse parses a typical three-question reply.
func BenchmarkParse(b *testing.B) {
	qs := []Question{target, budget, region}
	text := "Target: staging\n2\nEU, asia\n"
	b.ReportAllocs()
	for b.Loop() {
		Parse(text, qs)
	}
}
