package textparse

import (
	"strings"

	"golang.org/x/text/unicode/norm"
)

// question is a Question prepared for matching.
type question struct {
	Question
	words *vocab
	// byKey and byShort map the fold key of a declared label, and of a label
	// without its recommended suffix ("(Recommended)", "(แนะนำ)"), to the
	// label as declared. The first of two labels with one key wins; blank
	// labels are left out, so a number pointing at one is free text.
	byKey, byShort map[string]string
	// maxJoin is the most parts one label can span in a multi-select reply:
	// one more than the most separators in a label.
	maxJoin int
	// maxKey bounds the fold key of a text that may name a label: the
	// longest label fold key, plus room for a recommended suffix typed
	// another way (the longest recommended word, full-width parentheses of
	// 3 bytes each, blanks before and inside them).
	maxKey int
	// maxJoinSegs bounds the text tried as one label, so a long reply is
	// never folded again and again. It counts normalisation segments (see
	// segments), which do not change with the form a text is typed in, so
	// "é" precomposed or decomposed, or a Hangul syllable as one code point
	// or three, count the same. Twice the longest label leaves room for
	// extra spaces a person types inside a label.
	maxJoinSegs int
}

func newQuestion(q Question, words *vocab) *question {
	pq := &question{
		Question: q,
		words:    words,
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
		if base, ok := words.cutRecommended(key); ok {
			addFirst(pq.byShort, base, label)
		}
		pq.maxJoin = max(pq.maxJoin, 1+countSeps(label), 1+countSeps(norm.NFC.String(label)))
		pq.maxKey = max(pq.maxKey, len(key)+words.maxRecommended+2*len("（")+3)
		longest = max(longest, segments(label, len(label)))
	}
	pq.maxJoinSegs = 2*longest + 16
	return pq
}

func addFirst(m map[string]string, key, label string) {
	if _, ok := m[key]; !ok {
		m[key] = label
	}
}

// countSeps counts the multi-select separators a label contains. A label is
// counted as declared and in NFC, since NFC turns the Greek question mark
// U+037E into ";".
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

// match finds the declared label s names, comparing fold keys and ignoring
// a recommended suffix. A label matched in full wins over one matched
// without its suffix, so "Staging" picks "Staging" even when "Staging
// (Recommended)" is declared too.
func (q *question) match(s string) (string, bool) {
	return q.lookup(foldKey(s))
}

// lookup finds the declared label with fold key k: a label with that key,
// else a recommended label whose key without the suffix is k, else, when k
// itself ends in a recommended suffix typed another way ("Staging
// (แนะนำ)", "Staging(Recommended)", "Staging （Recommended）"), a
// recommended label named by k without it. A plain label is never picked by
// a reply that adds a suffix it does not have.
func (q *question) lookup(k string) (string, bool) {
	if label, ok := q.byKey[k]; ok {
		return label, true
	}
	if label, ok := q.byShort[k]; ok {
		return label, true
	}
	if len(q.byShort) == 0 {
		return "", false
	}
	base, ok := q.words.cutRecommended(k)
	if !ok {
		return "", false
	}
	label, ok := q.byShort[base]
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
		if !f.addUpTo(s[from:end], q.maxJoinSegs) {
			break
		}
		from = end
		// The text added ends before a separator or at the end: the key
		// is exact (see folder).
		key := f.bytes()
		if len(key) > q.maxKey {
			break
		}
		if n < 2 {
			continue
		}
		if label, ok := q.lookup(string(key)); ok {
			best, spanned = label, n
		}
	}
	return best, spanned
}

// partValues reads one trimmed part of a multi-select answer. Besides a
// number, a label or free text, a part of several blank-separated words that
// are each an in-range number or a whole label ("1 3", "eu us", Thai "แดง
// เขียว") picks each of them: people type that as often as "1, 3" — Thai
// lists are usually separated by spaces — and as free text it would mean
// nothing. If any word is neither, the part is free text.
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
		var label string
		var ok bool
		if n, isNum := parseNumber(f, false); isNum {
			label, ok = q.numbered(n)
		} else {
			label, ok = q.match(f)
		}
		if !ok {
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
