package textparse

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode"

	"golang.org/x/text/unicode/norm"
	"golang.org/x/text/unicode/runenames"
)

// thaiWords are the Thai reply words, as the bridge's th catalog gives them.
var thaiWords = Words{
	Skip:        []string{"ข้าม", "ข้ามไป"},
	Acknowledge: []string{"รับทราบ", "เห็นแล้ว"},
	Recommended: []string{"(แนะนำ)"}, // given with parentheses on purpose
}

// The options the i18n cases parse with.
var (
	english    = Options{}
	shipped    = Options{Words: []Words{EnglishWords(), thaiWords}}
	shippedAck = Options{Words: []Words{EnglishWords(), thaiWords}, Acknowledge: true}
	thaiOnly   = Options{Words: []Words{thaiWords}}
	englishAck = Options{Acknowledge: true}
)

// Thai text with marks typed in other orders than the labels declare, and
// decomposed Latin letters; written with escapes so the order is visible.
const (
	kanToneFirst    = "ก\u0e49\u0e31น"             // กั้น typed ก + ้ + ั + น
	kungToneFirst   = "ก\u0e49\u0e38ง"             // กุ้ง typed ก + ้ + ุ + ง
	thiniToneFirst  = "ท\u0e48\u0e35น\u0e48\u0e35" // ที่นี่ with each tone mark before its vowel
	headerToneFirst = "ต\u0e49\u0e31งค่า"          // the header ตั้งค่า, tone mark first
	namAmFirst      = "น\u0e33\u0e49"              // น้ำ typed น + ำ + ้: not equal
	evryNFD         = "E\u0301vry"
)

type optCase struct {
	name   string
	prompt int
	opts   Options
	text   string
	want   Outcome
}

var optCases = []optCase{
	// Digits of other scripts: no language words involved, so Parse reads
	// them too.
	{"thai digit", oneTarget, english, "๒", answered("deploy_target", vals("Production"))},
	{"thai digit with list dot", oneTarget, english, "๑.", answered("deploy_target", vals("Staging (Recommended)"))},
	{"thai digit with paren", oneThTarget, shipped, " ๒) ", answered("deploy_target", vals("โปรดักชัน"))},
	{"thai leading zero", oneTarget, english, "๐๒", answered("deploy_target", vals("Production"))},
	{"thai zero is free text", oneTarget, english, "๐", answered("deploy_target", vals("๐"))},
	{"thai out of range is free text", oneTarget, english, "๙", answered("deploy_target", vals("๙"))},
	{"thai two digits", oneTwelve, english, "๑๑", answered("n", vals("o11"))},
	{"arabic-indic digit", oneTarget, english, "٢", answered("deploy_target", vals("Production"))},
	{"arabic-indic two digits", oneTwelve, english, "١٢", answered("n", vals("o12"))},
	{"extended arabic-indic digit", oneTarget, english, "۲", answered("deploy_target", vals("Production"))},
	{"devanagari digit", oneTarget, english, "२", answered("deploy_target", vals("Production"))},
	{"devanagari two digits", oneTwelve, english, "१०", answered("n", vals("o10"))},
	{"bengali digit", oneTarget, english, "১", answered("deploy_target", vals("Staging (Recommended)"))},
	{"full-width two digits", oneTwelve, english, "１２", answered("n", vals("o12"))},
	{"mathematical bold digit", oneTarget, english, "𝟐", answered("deploy_target", vals("Production"))},
	{"ascii and thai mixed is free text", oneTwelve, english, "1๒", answered("n", vals("1๒"))},
	{"thai and ascii mixed is free text", oneTwelve, english, "๑2", answered("n", vals("๑2"))},
	{"two arabic scripts mixed is free text", oneTwelve, english, "١۲", answered("n", vals("١۲"))},
	{"two mathematical styles mixed is free text", oneTwelve, english, "𝟏𝟚", answered("n", vals("𝟏𝟚"))},
	{"superscript is no digit", oneTarget, english, "²", answered("deploy_target", vals("²"))},
	{"thai numeral sign is no digit", oneTarget, english, "๏", answered("deploy_target", vals("๏"))},
	{"multi thai digits with spaces", oneRegion, english, "๑ ๓", answered("region", vals("EU", "Asia"))},
	{"multi thai digits with comma", oneRegion, english, "๓,๑", answered("region", vals("Asia", "EU"))},
	{"multi arabic digits with arabic comma", oneRegion, english, "١، ٣", answered("region", vals("EU", "Asia"))},
	{"multi mixed scripts across numbers", oneRegion, english, "1 ๒ ٣", answered("region", vals("EU", "US", "Asia"))},
	{"keyed thai number keys", twoQ, english, "๑: ๒\n๒: ๑", answered("deploy_target", vals("Production"), "budget", vals("Small"))},
	{"keyed thai numbered list", twoTh, shipped, "๑. โปรดักชัน\n๒) มาก", answered("deploy_target", vals("โปรดักชัน"), "budget", vals("มาก"))},
	{"keyed devanagari number key", twoQ, english, "२ = ३\n१ - १", answered("deploy_target", vals("Staging (Recommended)"), "budget", vals("Large"))},
	{"thai time not split", timeLink, english, "๑:๓๐\n๒", answered("start_time", vals("๑:๓๐"), "link", vals("Docs"))},
	{"thai range not split", twoTh, shipped, "๑-๒ สัปดาห์\n๒ - ๑", answered("deploy_target", vals("๑-๒ สัปดาห์"), "budget", vals("น้อย"))},

	// Skip words.
	{"thai skip", oneThTarget, shipped, "ข้าม", skip},
	{"thai skip longer word", oneThTarget, shipped, "ข้ามไป", skip},
	{"thai skip with blanks and bang", oneTarget, shipped, "  ข้าม! ", skip},
	{"english skip with both languages", oneThTarget, shipped, "SKIP", skip},
	{"slash skip with thai prompt", threeTh, shipped, "/skip", skip},
	{"thai skip for several questions", threeTh, shipped, "\nข้ามไป\n", skip},
	{"thai skip in a sentence is free text", oneThTarget, shipped, "ข้ามข้อนี้", answered("deploy_target", vals("ข้ามข้อนี้"))},
	{"thai skip on one line of several is free text", twoTh, shipped, "ข้าม\n๒", answered("deploy_target", vals("ข้าม"), "budget", vals("ปานกลาง"))},
	{"thai skip unknown to english words", oneThTarget, english, "ข้าม", answered("deploy_target", vals("ข้าม"))},
	{"english skip unknown to thai words", oneThTarget, thaiOnly, "skip", answered("deploy_target", vals("skip"))},
	{"slash skip with thai words only", oneThTarget, thaiOnly, "/skip", skip},
	{"thai skip label picks the option", oneThSkip, shipped, "ข้าม", answered("step", vals("ข้าม"))},
	{"slash skip still declines with thai skip label", oneThSkip, shipped, "/skip@ask_bot", skip},

	// Acknowledge words.
	{"thai acknowledge", oneThTarget, shippedAck, "รับทราบ", Outcome{Kind: Acknowledge}},
	{"thai acknowledge other word", oneThTarget, shippedAck, " เห็นแล้ว. ", Outcome{Kind: Acknowledge}},
	{"english acknowledge", oneTarget, englishAck, "Seen", Outcome{Kind: Acknowledge}},
	{"slash seen", threeTh, shippedAck, "/seen", Outcome{Kind: Acknowledge}},
	{"slash seen with bot name", oneTarget, shippedAck, "/SEEN@ask_bot", Outcome{Kind: Acknowledge}},
	{"seen without acknowledging is free text", oneTarget, shipped, "seen", answered("deploy_target", vals("seen"))},
	{"slash seen without acknowledging is free text", oneTarget, english, "/seen", answered("deploy_target", vals("/seen"))},
	{"thai acknowledge without acknowledging is free text", oneThTarget, shipped, "รับทราบ", answered("deploy_target", vals("รับทราบ"))},
	{"seen label picks the option", oneThSkip, shippedAck, "seen", answered("step", vals("Seen"))},
	{"slash seen still acknowledges with seen label", oneThSkip, shippedAck, "/seen", Outcome{Kind: Acknowledge}},
	{"skip still declines when acknowledging", oneTarget, shippedAck, "ข้ามไป", skip},

	// Recommended suffixes.
	{"thai suffix omitted", oneThTarget, shipped, "สเตจจิ้ง", answered("deploy_target", vals("สเตจจิ้ง (แนะนำ)"))},
	{"thai suffix typed", oneThTarget, shipped, "สเตจจิ้ง (แนะนำ)", answered("deploy_target", vals("สเตจจิ้ง (แนะนำ)"))},
	{"thai suffix without space", oneThTarget, shipped, "สเตจจิ้ง(แนะนำ)", answered("deploy_target", vals("สเตจจิ้ง (แนะนำ)"))},
	{"thai suffix full-width parens", oneThTarget, shipped, "สเตจจิ้ง （แนะนำ）", answered("deploy_target", vals("สเตจจิ้ง (แนะนำ)"))},
	{"thai suffix full-width parens no space", oneThTarget, shipped, "สเตจจิ้ง（แนะนำ）", answered("deploy_target", vals("สเตจจิ้ง (แนะนำ)"))},
	{"thai suffix blanks inside parens", oneThTarget, shipped, "สเตจจิ้ง ( แนะนำ )", answered("deploy_target", vals("สเตจจิ้ง (แนะนำ)"))},
	{"english suffix on thai label", oneThTarget, shipped, "สเตจจิ้ง (Recommended)", answered("deploy_target", vals("สเตจจิ้ง (แนะนำ)"))},
	{"thai suffix on english label", oneTarget, shipped, "staging (แนะนำ)", answered("deploy_target", vals("Staging (Recommended)"))},
	{"english suffix without space", oneTarget, english, "Staging(Recommended)", answered("deploy_target", vals("Staging (Recommended)"))},
	{"english suffix full-width parens", oneTarget, english, "staging （RECOMMENDED）", answered("deploy_target", vals("Staging (Recommended)"))},
	{"thai suffix unknown to english words", oneThTarget, english, "สเตจจิ้ง", answered("deploy_target", vals("สเตจจิ้ง"))},
	{"unspaced declared suffix omitted", oneThSuffix, shipped, "สเตจจิ้ง", answered("suffix", vals("สเตจจิ้ง(แนะนำ)"))},
	{"unspaced declared suffix typed spaced", oneThSuffix, shipped, "สเตจจิ้ง (แนะนำ)", answered("suffix", vals("สเตจจิ้ง(แนะนำ)"))},
	{"full-width declared suffix omitted", oneThSuffix, shipped, "canary", answered("suffix", vals("Canary（Recommended）"))},
	{"full-width declared suffix typed ascii", oneThSuffix, shipped, "Canary (แนะนำ)", answered("suffix", vals("Canary（Recommended）"))},
	{"suffix added to plain label is free text", oneThSuffix, shipped, "โปรดักชัน (แนะนำ)", answered("suffix", vals("โปรดักชัน (แนะนำ)"))},
	{"thai suffix picks the suffixed of two", oneRec, shipped, "STAGING（แนะนำ）", answered("env", vals("Staging (Recommended)"))},
	{"unknown word in parens is free text", oneThTarget, shipped, "สเตจจิ้ง (ด่วน)", answered("deploy_target", vals("สเตจจิ้ง (ด่วน)"))},
	{"suffix alone is free text", oneThTarget, shipped, "(แนะนำ)", answered("deploy_target", vals("(แนะนำ)"))},

	// Normalisation: composition and the order of marks.
	{"thai above vowel after tone mark", oneMarks, english, kanToneFirst, answered("marks", vals("กั้น"))},
	{"thai below vowel after tone mark", oneMarks, english, kungToneFirst, answered("marks", vals("กุ้ง"))},
	{"thai two syllables tone marks first", oneMarks, english, thiniToneFirst, answered("marks", vals("ที่นี่"))},
	{"decomposed accent picks precomposed label", oneMarks, english, evryNFD, answered("marks", vals("Évry"))},
	{"decomposed accent lower case", oneMarks, english, "e\u0301VRY", answered("marks", vals("Évry"))},
	{"precomposed reply picks decomposed label as declared", oneMarks, english, "CAFÉ", answered("marks", vals("Cafe\u0301"))},
	{"free text kept as typed, marks unordered", oneMarks, english, "ก\u0e49\u0e31ด", answered("marks", vals("ก\u0e49\u0e31ด"))},
	{"free text kept as typed, decomposed", oneMarks, english, " Cre\u0300me ", answered("marks", vals("Cre\u0300me"))},
	{"sara am before tone mark is free text", oneMarks, english, namAmFirst, answered("marks", vals(namAmFirst))},
	{"full-width letters are free text", oneMarks, english, "ＯＫ", answered("marks", vals("ＯＫ"))},
	{"thai header keyed with tone mark first", marksBudget, shipped, headerToneFirst + ": " + kanToneFirst + "\nงบประมาณ: ๓", answered("marks", vals("กั้น"), "budget", vals("มาก"))},
	{"multi repeats in two mark orders dropped", oneThColors, shipped, "น้ำเงิน, น\u0e49\u0e33เงิน", answered("colors", vals("น้ำเงิน"))},

	// Mixed Thai and English; Thai has no case and no spaces between words.
	{"mixed label any case", oneMixed, english, "deploy ไป STAGING", answered("mixed", vals("Deploy ไป staging"))},
	{"mixed label extra blanks", oneMixed, english, " Deploy   ไป\tstaging ", answered("mixed", vals("Deploy ไป staging"))},
	{"mixed label other", oneMixed, english, "รอ REVIEW ก่อน", answered("mixed", vals("รอ review ก่อน"))},
	{"mixed label with spaces removed is free text", oneMixed, english, "deployไปstaging", answered("mixed", vals("deployไปstaging"))},
	{"thai label with zero-width space", oneMixed, english, "ใช่\u200bครับ", answered("mixed", vals("ใช่ครับ"))},
	{"thai label with inserted space is free text", oneMixed, english, "ใช่ ครับ", answered("mixed", vals("ใช่ ครับ"))},
	{"mixed header keys one question", oneMixed, english, "deploy ไหม: ๓", answered("mixed", vals("ใช่ครับ"))},

	// Multi-select with Thai separators.
	{"thai multi comma", oneThColors, shipped, "แดง, เขียว", answered("colors", vals("แดง", "เขียว"))},
	{"thai multi comma without space", oneThColors, shipped, "แดง,น้ำเงิน", answered("colors", vals("แดง", "น้ำเงิน"))},
	{"thai multi spaces", oneThColors, shipped, "แดง เขียว", answered("colors", vals("แดง", "เขียว"))},
	{"thai multi label and number", oneThColors, shipped, "๒ แดง", answered("colors", vals("น้ำเงิน", "แดง"))},
	{"thai multi with and is free text", oneThColors, shipped, "แดง และ เขียว", answered("colors", vals("แดง และ เขียว"))},
	{"thai multi newline", oneThColors, shipped, "เขียว\nแดง", answered("colors", vals("เขียว", "แดง"))},
	{"english multi labels with spaces", oneRegion, english, "eu us", answered("region", vals("EU", "US"))},
	{"english multi label and unknown is free text", oneRegion, english, "eu mars", answered("region", vals("eu mars"))},

	// Several questions with Thai headers.
	{"keyed thai headers", twoTh, shipped, "เป้าหมาย: สเตจจิ้ง\nงบประมาณ: ๓", answered("deploy_target", vals("สเตจจิ้ง (แนะนำ)"), "budget", vals("มาก"))},
	{"keyed thai header equals and positional", twoTh, shipped, "งบประมาณ = น้อย\n๑", answered("deploy_target", vals("สเตจจิ้ง (แนะนำ)"), "budget", vals("น้อย"))},
	{"keyed thai header full-width colon", twoTh, shipped, "เป้าหมาย：๒\nงบประมาณ – ปานกลาง", answered("deploy_target", vals("โปรดักชัน"), "budget", vals("ปานกลาง"))},
	{"keyed thai multi header", threeTh, shipped, "สี: แดง เขียว\n๒\n๑", answered("deploy_target", vals("โปรดักชัน"), "budget", vals("น้อย"), "colors", vals("แดง", "เขียว"))},
	{"keyed id with thai values", twoTh, shipped, "deploy target - ๒\nbudget: มาก", answered("deploy_target", vals("โปรดักชัน"), "budget", vals("มาก"))},
	{"thai partial keyed", threeTh, shipped, "สี: เขียว", partial([]string{"deploy_target", "budget"}, "colors", vals("เขียว"))},
}

func TestParseWith(t *testing.T) {
	seen := map[string]bool{}
	for _, tc := range parseCases {
		seen[tc.name] = true
	}
	for _, tc := range optCases {
		if seen[tc.name] {
			t.Fatalf("duplicate case name %q", tc.name)
		}
		seen[tc.name] = true
		t.Run(tc.name, func(t *testing.T) {
			got := ParseWith(tc.text, catalogue[tc.prompt], tc.opts)
			if !sameOutcome(got, tc.want) {
				t.Errorf("ParseWith(%+q) =\n  %+v\nwant\n  %+v", tc.text, got, tc.want)
			}
		})
	}
}

// TestParseIsEnglishParseWith checks that Parse is ParseWith with English
// words: every table case of Parse gives the same with explicit English
// words, and with the shipped words too (no English case depends on the
// absence of Thai words).
func TestParseIsEnglishParseWith(t *testing.T) {
	explicit := Options{Words: []Words{EnglishWords()}}
	for _, tc := range parseCases {
		qs := catalogue[tc.prompt]
		for _, o := range []Options{explicit, shipped} {
			if got := ParseWith(tc.text, qs, o); !sameOutcome(got, tc.want) {
				t.Errorf("%s: ParseWith(%q, %+v) = %+v, want %+v", tc.name, tc.text, o.Words, got, tc.want)
			}
		}
	}
}

// TestDigitRuns checks the assumption digit rests on: every range of
// unicode.Nd has stride 1 and is made of whole runs of ten starting at a
// zero, so (r - lo) % 10 is each digit's value. The values are checked
// against the Unicode character names ("THAI DIGIT TWO").
func TestDigitRuns(t *testing.T) {
	names := []string{"ZERO", "ONE", "TWO", "THREE", "FOUR", "FIVE", "SIX", "SEVEN", "EIGHT", "NINE"}
	var ranges []unicode.Range32
	for _, r := range unicode.Nd.R16 {
		ranges = append(ranges, unicode.Range32{Lo: uint32(r.Lo), Hi: uint32(r.Hi), Stride: uint32(r.Stride)})
	}
	ranges = append(ranges, unicode.Nd.R32...)
	count := 0
	for _, rg := range ranges {
		if rg.Stride != 1 || (rg.Hi-rg.Lo+1)%10 != 0 {
			t.Errorf("Nd range %U-%U stride %d is not whole runs of ten", rg.Lo, rg.Hi, rg.Stride)
		}
		for r := rune(rg.Lo); r <= rune(rg.Hi); r++ {
			count++
			v, zero, ok := digit(r)
			if !ok {
				t.Fatalf("digit(%U) not a digit", r)
			}
			name := runenames.Name(r)
			if !strings.HasSuffix(name, "DIGIT "+names[v]) && !strings.HasSuffix(name, " "+names[v]) {
				t.Errorf("digit(%U %q) = %d, but its name is %q", r, r, v, name)
			}
			if zero != r-rune(v) {
				t.Errorf("digit(%U) zero %U, want %U", r, zero, r-rune(v))
			}
			if int(r-rune(rg.Lo))%10 == 0 && v != 0 {
				t.Errorf("run at %U starts at value %d", r, v)
			}
		}
	}
	if count < 600 {
		t.Errorf("only %d Nd digits", count)
	}
	// And nothing outside Nd is a digit: the other numbers (No, Nl) and
	// the Thai letters around the Thai digits.
	for _, r := range []rune{'²', '½', 'Ⅻ', '①', '๏', '๚', 'a', '٫', 0x0E50 - 1, 0x0E59 + 1} {
		if _, _, ok := digit(r); ok {
			t.Errorf("digit(%U %q) is a digit", r, r)
		}
	}
}

func TestParseNumber(t *testing.T) {
	tests := []struct {
		in     string
		dotted bool
		want   int
		ok     bool
	}{
		{"12", false, 12, true},
		{"๑๒", false, 12, true},
		{"٠٧", false, 7, true},
		{"१२३", false, 123, true},
		{"１２", false, 12, true},
		{"๒.", true, 2, true},
		{"๒.", false, 0, false},
		{"๒)", true, 2, true},
		{"1๒", false, 0, false},
		{"๑2", false, 0, false},
		{"٢۲", false, 0, false},
		{"", false, 0, false},
		{".", true, 0, false},
		{"๒๒๒๒๒๒๒๒๒๒๒๒๒๒๒๒", false, 1 << 20, true},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s/%v", tc.in, tc.dotted), func(t *testing.T) {
			got, ok := parseNumber(tc.in, tc.dotted)
			if got != tc.want || ok != tc.ok {
				t.Errorf("parseNumber(%q, %v) = %d, %v; want %d, %v", tc.in, tc.dotted, got, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestFoldKeyEquality documents what the comparison calls equal and what it
// does not, with real Thai and Latin cases.
func TestFoldKeyEquality(t *testing.T) {
	tests := []struct {
		name  string
		a, b  string
		equal bool
	}{
		{"above vowel and tone mark", "ก\u0e31\u0e49น", kanToneFirst, true},
		{"below vowel and tone mark (NFC reorders)", "ก\u0e38\u0e49ง", kungToneFirst, true},
		{"two syllables", "ที่นี่", thiniToneFirst, true},
		{"vowel shortener and thanthakhat", "ก\u0e47\u0e4c", "ก\u0e4c\u0e47", true},
		{"below vowel and thanthakhat", "พันธุ์", "พันธ\u0e4c\u0e38", true},
		{"marks stay with their consonant", "ก\u0e49ข\u0e31", "ก\u0e31ข\u0e49", false},
		{"sara am and tone mark", "น้ำ", namAmFirst, false},
		{"precomposed and decomposed", "Évry", evryNFD, true},
		{"case and decomposition", "évry", evryNFD, true},
		{"combining marks of two classes", "a\u0323\u0301", "a\u0301\u0323", true},
		{"vietnamese precomposed and decomposed", "Việt", "Vie\u0323\u0302t", true},
		{"hangul syllable and jamo", "한", "\u1112\u1161\u11ab", true},
		{"kelvin sign", "\u212a", "k", true},
		{"ohm sign", "\u2126", "ω", true},
		{"full-width is compatibility only", "ＯＫ", "OK", false},
		{"ligature is compatibility only", "ﬁ", "fi", false},
		{"thai zero-width space", "ใช่\u200bครับ", "ใช่ครับ", true},
		{"thai blank runs", "รอ  review\tก่อน", "รอ REVIEW ก่อน", true},
		{"thai inserted space", "ใช่ ครับ", "ใช่ครับ", false},
		{"sharp s", "Straße", "STRASSE", true},
		{"blank before a mark", "ก \u0e49", "ก\u0e49", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ka, kb := foldKey(tc.a), foldKey(tc.b)
			if (ka == kb) != tc.equal {
				t.Errorf("foldKey(%+q) = %+q, foldKey(%+q) = %+q; equal %v, want %v", tc.a, ka, tc.b, kb, ka == kb, tc.equal)
			}
		})
	}
}

// TestFolderPieces checks the promise Parse relies on: folding a text piece
// by piece, reading the key before each separator, gives the key of the
// whole text so far.
func TestFolderPieces(t *testing.T) {
	texts := []string{
		"ก\u0e49\u0e31น, กุ้ง; e\u0301, Straße",
		"Staging (แนะนำ), 한\u1112\u1161, a\u0301\u0323",
		"key\u0301: value\u0323 - more",
		"ก\u0e48\u0e48\u0e48\u0e48\u0e31, x",
	}
	for _, text := range texts {
		var f folder
		from := 0
		for i, r := range text {
			if !isPartSep(r) && r != ':' && r != '-' {
				continue
			}
			f.add(text[from:i])
			from = i
			if got, want := string(f.bytes()), foldKey(text[:i]); got != want {
				t.Errorf("folding %+q in pieces: %+q, want %+q", text[:i], got, want)
			}
		}
	}
}

func TestCutRecommended(t *testing.T) {
	v := newVocab(shipped)
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"Staging (Recommended)", "Staging", true},
		{"Staging(Recommended)", "Staging", true},
		{"Staging （แนะนำ）", "Staging", true},
		{"สเตจจิ้ง(แนะนำ）", "สเตจจิ้ง", true},
		{"a (b) (recommended)", "a (b)", true},
		{"Staging (recommended) now", "", false},
		{"(แนะนำ)", "", false},
		{"Staging (Other)", "", false},
		{"Staging Recommended", "", false},
		{"Staging (", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, ok := v.cutRecommended(tc.in)
			if got != tc.want || ok != tc.ok {
				t.Errorf("cutRecommended(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestWordsAreInjected checks that the words come only from Options: a
// language's words are understood exactly when given, and EnglishWords
// returns a fresh value each time.
func TestWordsAreInjected(t *testing.T) {
	klingon := Words{Skip: []string{"Qagh"}, Acknowledge: []string{"lu'"}, Recommended: []string{"QaQ"}}
	qs := []Question{{ID: "q", Labels: []string{"ghIq (QaQ)", "yIH"}}}
	o := Options{Words: []Words{klingon}, Acknowledge: true}
	tests := []struct {
		text string
		opts Options
		want Kind
		val  string
	}{
		{"qagh", o, Skip, ""},
		{"LU'", o, Acknowledge, ""},
		{"ghIq", o, Answer, "ghIq (QaQ)"},
		{"skip", o, Answer, "skip"},
		{"qagh", Options{Acknowledge: true}, Answer, "qagh"},
		{"ghIq", Options{}, Answer, "ghIq"},
	}
	for _, tc := range tests {
		got := ParseWith(tc.text, qs, tc.opts)
		if got.Kind != tc.want || (tc.val != "" && !slices.Equal(got.Answers["q"], []string{tc.val})) {
			t.Errorf("ParseWith(%q) = %+v, want %v %q", tc.text, got, tc.want, tc.val)
		}
	}
	w := EnglishWords()
	w.Skip[0] = "changed"
	if EnglishWords().Skip[0] != "skip" {
		t.Error("EnglishWords shares its slices")
	}
}

func TestExampleRecommendedForms(t *testing.T) {
	th := Options{Words: []Words{EnglishWords(), {Recommended: []string{"แนะนำ"}}}}
	for _, c := range []struct {
		label string
		o     Options
		want  string
	}{
		{"Staging (Recommended)", Options{}, "Staging"},
		{"Staging(Recommended)", Options{}, "Staging"},
		{"Staging （RECOMMENDED）", Options{}, "Staging"},
		{"สเตจจิ้ง (แนะนำ)", th, "สเตจจิ้ง"},
		{"สเตจจิ้ง (แนะนำ)", Options{}, "สเตจจิ้ง (แนะนำ)"},
		{"  Production  ", Options{}, "Production"},
		{"(Recommended)", Options{}, "(Recommended)"},
	} {
		q := Question{ID: "env", Header: "Env", Labels: []string{c.label, "Other"}}
		if got := Example(q, c.o); got != c.want {
			t.Errorf("label %q: Example = %q, want %q", c.label, got, c.want)
		}
	}
	if got := Example(Question{ID: "notes", Labels: []string{" ", ""}}, Options{}); got != "" {
		t.Errorf("no label: Example = %q", got)
	}
}

// TestNormalisedRepliesAgree runs every table case in NFC, in NFD and with
// the Thai marks swapped, and checks each gives the same options.
func TestNormalisedRepliesAgree(t *testing.T) {
	for _, tc := range optCases {
		qs := catalogue[tc.prompt]
		base := ParseWith(tc.text, qs, tc.opts)
		for _, variant := range []string{norm.NFC.String(tc.text), norm.NFD.String(tc.text), swapThaiMarks(tc.text)} {
			if err := equivalent(qs, base, ParseWith(variant, qs, tc.opts)); err != nil {
				t.Errorf("%s: %+q against %+q: %v", tc.name, tc.text, variant, err)
			}
		}
	}
}
