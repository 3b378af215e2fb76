package textparse

import (
	"strings"
)

// Words are the reply words of one language that Parse understands
// (ask-user.md §3 and §7). The caller takes them from its message catalogs;
// the package itself knows only English, as [EnglishWords], which is what
// [Parse] uses. Each word is compared like a label: Unicode-normalised, in
// any case, with runs of blanks collapsed.
type Words struct {
	// Skip are the whole-message replies that decline the prompt, e.g.
	// "skip"; Thai "ข้าม" and "ข้ามไป".
	Skip []string
	// Acknowledge are the whole-message replies that acknowledge the
	// question without answering it (ask-user.md §5), e.g. "seen"; Thai
	// "รับทราบ" and "เห็นแล้ว". They count only when [Options.Acknowledge]
	// is set.
	Acknowledge []string
	// Recommended are the words agents put in parentheses after the
	// recommended option (ask-user.md §1 conventions), e.g. "Recommended";
	// Thai "แนะนำ". A word given with its parentheses, as "(Recommended)",
	// is read the same.
	Recommended []string
	// Keep are the words that open a reply keeping an answer for a while
	// (ask-user.md §9, ParseKeep), e.g. "keep"; Thai "จำไว้".
	Keep []string
}

// EnglishWords returns the English reply words: "skip", "seen",
// "(Recommended)" and "keep". It returns a new value each time, so a caller may extend
// it freely.
func EnglishWords() Words {
	return Words{
		Skip:        []string{"skip"},
		Acknowledge: []string{"seen"},
		Recommended: []string{"Recommended"},
		Keep:        []string{"keep"},
	}
}

// Options tune [ParseWith]. The zero value parses exactly like [Parse].
type Options struct {
	// Words are the reply words understood, one value per language, all of
	// them at once whatever the prompt's language (ask-user.md §7). When
	// empty, the words are [EnglishWords]; otherwise they are exactly those
	// given, so a caller passing its catalogs includes English among them.
	// The commands "/skip" and "/seen" are understood whatever the words.
	Words []Words
	// Acknowledge lets a whole-message acknowledge word or "/seen" be an
	// [Acknowledge] outcome. Set it when the question can be acknowledged
	// (ask-user.md §5: the request has reminders or escalation steps);
	// otherwise those replies are read like any other text.
	Acknowledge bool
}

// Commands understood in every language: Telegram bot commands are Latin
// letters, digits and underscores, so a catalog cannot translate them.
const (
	skipCommand        = "skip"
	acknowledgeCommand = "seen"
)

// vocab is the Words of one Parse call prepared for matching: every word as
// a fold key.
type vocab struct {
	skip, ack, recommended map[string]bool
	acknowledge            bool
	// maxWord is the most normalisation segments of a skip or acknowledge
	// word.
	maxWord int
	// maxRecommended is the longest recommended word key, in bytes.
	maxRecommended int
}

func newVocab(o Options) *vocab {
	ws := o.Words
	if len(ws) == 0 {
		ws = []Words{EnglishWords()}
	}
	v := &vocab{
		skip:        map[string]bool{},
		ack:         map[string]bool{},
		recommended: map[string]bool{},
		acknowledge: o.Acknowledge,
	}
	for _, w := range ws {
		v.maxWord = max(v.maxWord, addKeys(v.skip, w.Skip), addKeys(v.ack, w.Acknowledge))
		for _, r := range w.Recommended {
			r = trim(r)
			if inner, ok := inParens(r); ok {
				r = inner
			}
			addKeys(v.recommended, []string{r})
			v.maxRecommended = max(v.maxRecommended, len(foldKey(r)))
		}
	}
	return v
}

// addKeys adds the fold keys of words to m and returns the most
// normalisation segments of one.
func addKeys(m map[string]bool, words []string) int {
	longest := 0
	for _, w := range words {
		if k := foldKey(w); k != "" {
			m[k] = true
			longest = max(longest, segments(k, len(k)))
		}
	}
	return longest
}

// mayBeWord reports whether s, trimmed, is short enough to be a skip or
// acknowledge word, so a long reply is not folded only to be compared with
// them. Length counts normalisation segments, the same whatever form the
// text is typed in; a word typed with extra blanks inside stays well within
// twice its length.
func (v *vocab) mayBeWord(s string) bool {
	limit := 2*v.maxWord + 16
	return segments(s, limit) <= limit
}

// cutRecommended returns s without a recommended suffix: a known word in
// parentheses at the end of s, ASCII "(…)" or full-width "（…）" (the Thai,
// Chinese and Japanese keyboards type those), with or without blanks before
// the parenthesis and inside it. It reports false when s has no such suffix
// or nothing is left before it. s may be a fold key or text as typed; the
// result is trimmed.
func (v *vocab) cutRecommended(s string) (string, bool) {
	s = trim(s)
	open := lastOpenParen(s)
	if open < 0 {
		return "", false
	}
	inner, ok := inParens(s[open:])
	if !ok || !v.recommended[foldKey(inner)] {
		return "", false
	}
	base := trim(s[:open])
	return base, base != ""
}

// lastOpenParen returns the byte offset of the last "(" or "（" in s, or -1.
func lastOpenParen(s string) int {
	return max(strings.LastIndex(s, "("), strings.LastIndex(s, "（"))
}

// inParens returns what s holds between an opening parenthesis at its start
// and a closing one at its end, ASCII or full-width in any pairing.
func inParens(s string) (string, bool) {
	var body string
	switch {
	case strings.HasPrefix(s, "("):
		body = s[len("("):]
	case strings.HasPrefix(s, "（"):
		body = s[len("（"):]
	default:
		return "", false
	}
	if inner, ok := strings.CutSuffix(body, ")"); ok {
		return inner, true
	}
	return strings.CutSuffix(body, "）")
}
