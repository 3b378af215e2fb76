package textparse

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// recommendedKey is the fold key of the suffix agents put on the recommended
// option (ask-user.md §1 conventions); a reply may leave it out.
var recommendedKey = foldKey("(Recommended)")

// question is a Question prepared for matching.
type question struct {
	Question
	// byKey and byShort map the fold key of a declared label, and of a label
	// without its "(Recommended)" suffix, to the label as declared. The
	// first of two labels with one key wins; blank labels are left out, so a
	// number pointing at one is free text.
	byKey, byShort map[string]string
	// maxJoin is the most parts one label can span in a multi-select reply:
	// one more than the most separators in a label.
	maxJoin int
	// maxKey is the length of the longest label fold key.
	maxKey int
	// maxJoinBytes bounds the text tried as one label, so a long reply is
	// never folded again and again. Twice the longest label leaves room for
	// extra spaces a person types inside a label.
	maxJoinBytes int
}

func newQuestion(q Question) *question {
	pq := &question{
		Question: q,
		byKey:    make(map[string]string, len(q.Labels)),
		byShort:  make(map[string]string, len(q.Labels)),
		maxJoin:  1,
	}
	longest := 0
	for _, label := range q.Labels {
		key := foldKey(label)
		if key == "" {
			continue
		}
		addFirst(pq.byKey, key, label)
		if base, ok := strings.CutSuffix(key, recommendedKey); ok && strings.TrimSpace(base) != "" {
			addFirst(pq.byShort, strings.TrimSpace(base), label)
		}
		pq.maxJoin = max(pq.maxJoin, 1+countSeps(label))
		pq.maxKey = max(pq.maxKey, len(key))
		longest = max(longest, len(label))
	}
	pq.maxJoinBytes = 2*longest + 16
	return pq
}

func addFirst(m map[string]string, key, label string) {
	if _, ok := m[key]; !ok {
		m[key] = label
	}
}

// countSeps counts the multi-select separators a label contains.
func countSeps(label string) int {
	n := 0
	for _, r := range label {
		if isPartSep(r) {
			n++
		}
	}
	return n
}

// option returns the declared label one trimmed answer picks, by number
// first and then by label, as ask-user.md §3 orders them.
func (q *question) option(s string) (string, bool) {
	if n, ok := parseNumber(s, true); ok {
		// An out-of-range number is free text (ask-user.md §3).
		return q.numbered(n)
	}
	return q.match(s)
}

// numbered returns the label of option n, counted from 1.
func (q *question) numbered(n int) (string, bool) {
	if n < 1 || n > len(q.Labels) || foldKey(q.Labels[n-1]) == "" {
		return "", false
	}
	return q.Labels[n-1], true
}

// match finds the declared label s names, ignoring case and the
// "(Recommended)" suffix. A label matched in full wins over one matched
// without its suffix, so "Staging" picks "Staging" even when "Staging
// (Recommended)" is declared too.
func (q *question) match(s string) (string, bool) {
	return q.lookup(foldKey(s))
}

// lookup finds the declared label with fold key k.
func (q *question) lookup(k string) (string, bool) {
	if label, ok := q.byKey[k]; ok {
		return label, true
	}
	label, ok := q.byShort[k]
	return label, ok
}

// declares reports whether value is one of q's declared labels.
func (q *question) declares(value string) bool {
	label, ok := q.match(value)
	return ok && label == value
}

// values reads the whole answer to q. A single-select question takes the
// whole text as one answer. A multi-select one first tries the whole text as
// one label (labels may contain commas), then splits it into parts.
func (q *question) values(text string) []string {
	s := trim(text)
	if s == "" {
		return nil
	}
	if v, ok := q.option(s); ok || !q.Multi {
		if !ok {
			v = s
		}
		return []string{v}
	}
	return q.multi(s)
}

// multi splits a multi-select answer on commas, semicolons and newlines.
// Before a part is read alone, the longest run of parts starting with it that
// names a label is taken as that label, so with labels "Red, dark" and "Blue"
// the reply "Red, dark, Blue" is both labels rather than "Red" and "dark" as
// free text. Each remaining part is a number, a label, a list of numbers
// ("1 3") or free text; empty parts are dropped and repeats are dropped,
// keeping the first.
func (q *question) multi(s string) []string {
	parts := splitParts(s)
	var set valueSet
	for i := 0; i < len(parts); {
		if label, n := q.joined(s, parts, i); n > 0 {
			set.add(label)
			i += n
			continue
		}
		part := trim(s[parts[i].start:parts[i].end])
		i++
		if part == "" {
			continue
		}
		for _, v := range q.partValues(part) {
			set.add(v)
		}
	}
	return set.list
}

// joined returns the label named by the longest run of two or more parts
// starting at parts[i], and how many parts it spans; 0 when none does. The
// run is folded once, part by part, and the scan stops as soon as it is
// longer than any label could match, so each part costs at most the length
// of the longest label.
func (q *question) joined(s string, parts []span, i int) (string, int) {
	var f folder
	best, spanned := "", 0
	from := parts[i].start
	for n := 1; n <= q.maxJoin && i+n <= len(parts); n++ {
		end := parts[i+n-1].end
		if end-parts[i].start > q.maxJoinBytes {
			break
		}
		f.add(s[from:end])
		from = end
		if len(f.key) > q.maxKey {
			break
		}
		if n < 2 {
			continue
		}
		if label, ok := q.lookup(string(f.key)); ok {
			best, spanned = label, n
		}
	}
	return best, spanned
}

// partValues reads one trimmed part of a multi-select answer. Besides a
// number, a label or free text, a part of several in-range numbers separated
// by spaces ("1 3") picks each of them: people type that as often as "1, 3",
// and as free text it would mean nothing.
func (q *question) partValues(part string) []string {
	if v, ok := q.option(part); ok {
		return []string{v}
	}
	fields := strings.FieldsFunc(part, isBlank)
	if len(fields) < 2 {
		return []string{part}
	}
	picked := make([]string, 0, len(fields))
	for _, f := range fields {
		n, ok := parseNumber(f, false)
		label, in := q.numbered(n)
		if !ok || !in {
			return []string{part}
		}
		picked = append(picked, label)
	}
	return picked
}

// valueSet collects values in order and drops repeats. Values are compared by
// fold key, so the free texts "Later" and "later" count once too.
type valueSet struct {
	list []string
	seen map[string]bool
}

func (s *valueSet) add(v string) {
	key := foldKey(v)
	if key == "" {
		// A value of only invisible characters: compare it as it is.
		key = "\x00" + v
	}
	if s.seen[key] {
		return
	}
	if s.seen == nil {
		s.seen = make(map[string]bool)
	}
	s.seen[key] = true
	s.list = append(s.list, v)
}

func (s *valueSet) addAll(vs []string) {
	for _, v := range vs {
		s.add(v)
	}
}

// span is a part of a text, by byte offsets.
type span struct{ start, end int }

// splitParts splits s at every multi-select separator.
func splitParts(s string) []span {
	var parts []span
	start := 0
	for i, r := range s {
		if isPartSep(r) {
			parts = append(parts, span{start, i})
			start = i + len(string(r))
		}
	}
	return append(parts, span{start, len(s)})
}

// isPartSep reports whether r separates the choices of a multi-select answer:
// the comma, semicolon and newline of ask-user.md §3, plus the full-width
// comma and semicolon and the ideographic comma that Chinese and Japanese
// keyboards type, and the Arabic comma.
func isPartSep(r rune) bool {
	switch r {
	case ',', ';', '\n', '，', '；', '、', '،':
		return true
	}
	return false
}

// parseNumber reads an option or question number: ASCII or full-width digits
// (Japanese and Chinese keyboards type "１"), leading zeros allowed. With
// dotted set, one trailing "." or ")" is allowed too, as people copy the
// "1." of a numbered list. Large numbers saturate rather than overflow; they
// are out of range either way.
func parseNumber(s string, dotted bool) (int, bool) {
	if dotted && len(s) > 1 && (s[len(s)-1] == '.' || s[len(s)-1] == ')') {
		s = s[:len(s)-1]
	}
	if s == "" {
		return 0, false
	}
	const saturated = 1 << 20
	n := 0
	for _, r := range s {
		d, ok := digit(r)
		if !ok {
			return 0, false
		}
		n = min(n*10+d, saturated)
	}
	return n, true
}

// digit returns the value of an ASCII or full-width decimal digit.
func digit(r rune) (int, bool) {
	switch {
	case r >= '0' && r <= '9':
		return int(r - '0'), true
	case r >= '０' && r <= '９':
		return int(r - '０'), true
	}
	return 0, false
}

// isBlank reports whether r is blank at the edge of an answer: Unicode white
// space, control characters (NUL included), and the invisible zero-width
// space, word joiner and byte-order mark that pasted text carries.
func isBlank(r rune) bool {
	return unicode.IsSpace(r) || unicode.IsControl(r) || r == '\u200b' || r == '\u2060' || r == '\ufeff'
}

// trim removes blank characters from both ends of s.
func trim(s string) string {
	return strings.TrimFunc(s, isBlank)
}

// isIgnorable reports whether r is left out when comparing text: emoji
// variation selectors (keyboards differ on "❤" versus "❤️") and the
// zero-width space, word joiner and byte-order mark.
func isIgnorable(r rune) bool {
	return r == '\ufe0e' || r == '\ufe0f' || r == '\u200b' || r == '\u2060' || r == '\ufeff'
}

// foldKey returns the form of s used to compare a reply with a label or key:
// blank characters at the ends dropped and runs inside collapsed to one
// space, ignorable characters dropped, and every letter replaced by one
// representative of its Unicode simple case-folding orbit, which is what
// strings.EqualFold compares. On top of simple folding, ß and ẞ become "ss",
// so "STRASSE" matches "Straße"; other full foldings (ligatures such as "ﬁ")
// are not applied, nor is Unicode normalisation (a precomposed "é" differs
// from "e" plus a combining accent), nor any locale rule such as Turkish
// dotted I.
func foldKey(s string) string {
	var f folder
	f.add(s)
	return string(f.key)
}

// folder builds a fold key a piece at a time, so a growing prefix of a line
// is folded once rather than again for every candidate.
type folder struct {
	key   []byte
	space bool // blanks seen since the last character written
}

func (f *folder) add(s string) {
	for _, r := range s {
		f.addRune(r)
	}
}

func (f *folder) addRune(r rune) {
	switch {
	case isIgnorable(r):
		return
	case isBlank(r):
		f.space = true
		return
	}
	if f.space && len(f.key) > 0 {
		f.key = append(f.key, ' ')
	}
	f.space = false
	if r == 'ß' || r == 'ẞ' {
		f.key = utf8.AppendRune(f.key, foldRune('s'))
		f.key = utf8.AppendRune(f.key, foldRune('s'))
		return
	}
	f.key = utf8.AppendRune(f.key, foldRune(r))
}

// foldRune returns the smallest rune of r's simple case-folding orbit, so two
// runes that strings.EqualFold calls equal fold to the same rune.
func foldRune(r rune) rune {
	least := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		least = min(least, f)
	}
	return least
}
