package textparse

import (
	"strings"
	"unicode/utf8"
)

// prompt is the question list prepared for one Parse call.
type prompt struct {
	qs    []*question
	words *vocab
	// keys maps the fold key of a question id (also with spaces for
	// underscores) or header to the question's index. An id wins over a
	// header, and an earlier question over a later
	// one, so a header that happens to equal another question's id cannot
	// steal its line.
	keys map[string]int
	// keyLens holds the byte lengths of the keys, and maxKey the largest
	// (at least maxNumberKey): a line is only looked up where its folded
	// prefix has one of these lengths, and scanned no further than maxKey.
	keyLens map[int]bool
	maxKey  int
}

// maxNumberKey is the longest question-number key accepted, in bytes: a
// prompt has at most 3 questions (ask-user.md §1), and 12 bytes leave room
// for a leading zero or two in any script (a digit takes at most 4 bytes).
const maxNumberKey = 12

func newPrompt(qs []Question, words *vocab) *prompt {
	p := &prompt{
		qs:      make([]*question, len(qs)),
		words:   words,
		keys:    make(map[string]int, 2*len(qs)),
		keyLens: make(map[int]bool, 2*len(qs)),
		maxKey:  maxNumberKey,
	}
	for i, q := range qs {
		p.qs[i] = newQuestion(q, words)
	}
	for _, pick := range []func(Question) string{
		func(q Question) string { return q.ID },
		// People type "deploy target" for the id deploy_target.
		func(q Question) string { return strings.ReplaceAll(q.ID, "_", " ") },
		func(q Question) string { return q.Header },
	} {
		for i, q := range qs {
			k := foldKey(pick(q))
			if _, taken := p.keys[k]; k == "" || taken {
				continue
			}
			p.keys[k] = i
			p.keyLens[len(k)] = true
			p.maxKey = max(p.maxKey, len(k))
		}
	}
	return p
}

// command says whether the whole message is a skip or an acknowledgement
// rather than an answer: a skip word or acknowledge word of any language
// given (compared like labels), or the command "/skip" or "/seen" in any
// case, with blanks around and trailing "." or "!" ignored. Telegram adds
// the bot's name to a command sent in a group ("/skip@ask_bot"), so that
// form counts too. Acknowledging counts only with Options.Acknowledge. A bare
// word is an answer instead when some question declares an option it names
// (an option "Skip", "ข้าม" or "Seen"): the person then most likely means
// that option, and the command still works.
func (p *prompt) command(text string) (Kind, bool) {
	s := trim(strings.TrimRight(trim(text), ".!"))
	if cmd, ok := strings.CutPrefix(s, "/"); ok {
		if name, bot, found := strings.Cut(cmd, "@"); found {
			if !isBotName(bot) {
				return 0, false
			}
			cmd = name
		}
		switch {
		case strings.EqualFold(cmd, skipCommand):
			return Skip, true
		case p.words.acknowledge && strings.EqualFold(cmd, acknowledgeCommand):
			return Acknowledge, true
		}
		return 0, false
	}
	if !p.words.mayBeWord(s) {
		return 0, false
	}
	k := foldKey(s)
	switch {
	case p.words.skip[k] && !p.names(k):
		return Skip, true
	case p.words.acknowledge && p.words.ack[k] && !p.names(k):
		return Acknowledge, true
	}
	return 0, false
}

// names reports whether some question has an option the fold key k names.
func (p *prompt) names(k string) bool {
	for _, q := range p.qs {
		if _, ok := q.lookup(k); ok {
			return true
		}
	}
	return false
}

// isBotName reports whether s looks like a Telegram bot username: letters,
// digits and underscores (Telegram: 5-32 of them; any length is accepted
// here, the check only keeps "/skip@ whatever" from counting).
func isBotName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

// single reads the reply to a one-question prompt: the whole message is the
// answer. One exception: a person used to several-question prompts may key
// the answer ("Target: staging"); when the message is keyed by the question's
// id or header and the value names declared options only, the key is dropped.
// A number key is not accepted here, since "1 - 3" reads as a range.
func (p *prompt) single(text string) []string {
	q := p.qs[0]
	if qi, value, ok := p.keyed(trim(text), false); ok && qi == 0 {
		values := q.values(value)
		if len(values) > 0 && allDeclared(q, values) {
			return values
		}
	}
	return q.values(text)
}

func allDeclared(q *question, values []string) bool {
	for _, v := range values {
		if !q.declares(v) {
			return false
		}
	}
	return true
}

// lines reads the reply to a several-question prompt: one line per question,
// keyed or positional.
//
// A keyed line answers the question it names; a question keyed twice keeps
// the first answer if single-select and gathers both if multi-select. The
// other lines are positional and fill the questions not keyed, in order.
// Blank lines: when the positional lines that are not blank are exactly as
// many as the questions left, blank lines are ignored (people put blank lines
// between answers); otherwise every blank line holds a place, so leaving a
// line empty skips a question and keeps the later answers aligned. More
// positional lines than questions left continue the answer of the last one
// (a multi-select question then splits them). When every question is keyed,
// unkeyed lines are ignored.
func (p *prompt) lines(text string) [][]string {
	sets := make([]valueSet, len(p.qs))
	keyed := make([]bool, len(p.qs))
	var positional []string
	for _, line := range strings.Split(trim(text), "\n") {
		line = trim(line)
		qi, value, ok := p.keyed(line, true)
		if !ok {
			positional = append(positional, line)
			continue
		}
		keyed[qi] = true
		if p.qs[qi].Multi || len(sets[qi].list) == 0 {
			sets[qi].addAll(p.qs[qi].values(value))
		}
	}
	var free []int
	for i, k := range keyed {
		if !k {
			free = append(free, i)
		}
	}
	slots := placeLines(positional, len(free))
	for j, qi := range free {
		if j >= len(slots) {
			break
		}
		if j == len(free)-1 {
			sets[qi].addAll(p.qs[qi].values(strings.Join(slots[j:], "\n")))
			break
		}
		sets[qi].addAll(p.qs[qi].values(slots[j]))
	}
	values := make([][]string, len(p.qs))
	for i := range sets {
		values[i] = sets[i].list
	}
	return values
}

// placeLines applies the blank-line rule of lines: it returns the non-blank
// lines when they are exactly as many as the free questions, and all the
// lines otherwise.
func placeLines(positional []string, free int) []string {
	nonBlank := make([]string, 0, len(positional))
	for _, line := range positional {
		if line != "" {
			nonBlank = append(nonBlank, line)
		}
	}
	if len(nonBlank) == free {
		return nonBlank
	}
	return positional
}

// keyed reports whether line starts with a key naming a question, and returns
// that question's index and the value after the separator. Separators are
// tried left to right, and the first that follows a known key wins, so
// "Go-live: yes" is keyed by a header "Go-live". Only a known key splits a
// line: "14:30" stays text unless 14 is a question number, and even then
// times, URLs, paths and ranges are not split (see isSeparator). With
// numbers set, a question number keys a line, also as "1." or "1)" followed
// by a space, the way numbered lists are typed.
func (p *prompt) keyed(line string, numbers bool) (int, string, bool) {
	// The prefix before each separator is folded as the scan goes, so a long
	// line costs no more than its first maxKey folded bytes.
	var prefix folder
	for i := 0; i < len(line) && len(prefix.key) <= p.maxKey; {
		r, size := utf8.DecodeRuneInString(line[i:])
		if r == '\n' {
			break
		}
		if isSeparator(line, i, r, size, numbers) {
			// A separator starts a normalisation segment and is no Thai
			// mark, so the prefix's key is exact here (see folder).
			if qi, ok := p.lookup(prefix.bytes(), numbers, isListMark(r)); ok {
				return qi, line[i+size:], true
			}
		}
		prefix.addRune(r)
		i += size
	}
	return 0, "", false
}

// isSeparator reports whether the rune r at line[i:i+size] may end a key:
// ":", "=" and "-" (ask-user.md §3), the en and em dashes that phones put in
// place of "-", and the full-width colon and equals sign of Chinese and
// Japanese keyboards; with numbers set, also a list mark "." or ")" followed
// by a space.
func isSeparator(line string, i int, r rune, size int, numbers bool) bool {
	after := line[i+size:]
	switch r {
	case ':', '：':
		return !isTimeOrPath(line[:i], after)
	case '-', '–', '—':
		return !isRange(line[:i], after)
	case '=', '＝':
		return true
	case '.', ')':
		return numbers && after != "" && (after[0] == ' ' || after[0] == '\t')
	}
	return false
}

// isListMark reports whether r is a separator only a number key may use.
func isListMark(r rune) bool { return r == '.' || r == ')' }

// isTimeOrPath reports whether a colon between before and after is part of a
// value rather than a key separator: a URL ("https://x"), a Windows path
// ("C:\dir") or a time ("14:30", "9:05pm", "14:30:15", also in the digits
// of another script, "๑๔:๓๐").
func isTimeOrPath(before, after string) bool {
	if strings.HasPrefix(after, "/") || strings.HasPrefix(after, `\`) {
		return true
	}
	if !endsInDigit(before) {
		return false
	}
	r1, n1 := utf8.DecodeRuneInString(after)
	r2, n2 := utf8.DecodeRuneInString(after[n1:])
	r3, _ := utf8.DecodeRuneInString(after[n1+n2:])
	return isDigit(r1) && isDigit(r2) && !isDigit(r3)
}

// isRange reports whether a dash sits between two digits with no space, as in
// a range or a date ("1-2 weeks", "2026-05-01", "๑-๒ สัปดาห์"), where it is
// not a separator.
func isRange(before, after string) bool {
	r, _ := utf8.DecodeRuneInString(after)
	return endsInDigit(before) && isDigit(r)
}

// endsInDigit reports whether s ends in a decimal digit of any script.
func endsInDigit(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return isDigit(r)
}

// lookup finds the question a folded key names: its 1-based number (when
// numbers is set), its id, or its header, ignoring case and surrounding
// blanks. With listMark set, only a number is accepted.
func (p *prompt) lookup(key []byte, numbers, listMark bool) (int, bool) {
	if len(key) == 0 {
		return 0, false
	}
	// Digits of every script fold to themselves: no digit has a case or a
	// canonical decomposition.
	if len(key) <= maxNumberKey {
		if n, ok := parseNumber(string(key), false); ok && numbers && n >= 1 && n <= len(p.qs) {
			return n - 1, true
		}
	}
	if listMark || !p.keyLens[len(key)] {
		return 0, false
	}
	qi, ok := p.keys[string(key)]
	return qi, ok
}
