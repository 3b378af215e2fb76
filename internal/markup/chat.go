package markup

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/rivo/uniseg"
)

// minLimit is the smallest block size the chat renderers work to; a lower
// limit counts as this. It leaves room for a code fence and one character.
const minLimit = 16

// wordJoiner (U+2060) goes after an "@" that starts a word, so the word
// can mention no one; it is invisible.
const wordJoiner = "\u2060"

// zeroWidthSpace (U+200B) parts markup characters that must not run
// together, such as the backticks in "```" inside a code block.
const zeroWidthSpace = "\u200B"

// dialect is what a platform's formatting looks like. A chat renderer
// lays context out in lines, each with its own complete markup, so a
// block can end after any line.
type dialect interface {
	// text is agent text as it shows literally; next is the rune that
	// follows it on the line (-1 at the end), start reports whether it
	// begins the line.
	text(s string, next rune, start bool) string
	// code is an inline code span.
	code(s string, next rune) string
	// wrap puts bold or italic markup around rendered content.
	wrap(kind spanKind, inner string) string
	// live reports whether the platform can show a link to href; a link
	// it cannot shows as its text and address.
	live(href string) bool
	// link is a live link around its rendered text.
	link(f *frame, inner string) string
	// pre is a code block.
	pre(lang, s string) string
	// prefix is a line's indentation and list marker.
	prefix(indent, marker string) string
	// width is the length of rendered text as the platform counts it
	// against its limit.
	width(s string) int
	// touch goes where formatting touches other formatting (markup) or a
	// letter (letter) and the platform needs something between them to
	// read the markup right; "" for nothing.
	touch(markup, letter bool) string
	// codeAlone reports whether inline code cannot be inside other
	// formatting (Telegram), so that formatting is closed around it.
	codeAlone() bool
}

// frame is one piece of inline formatting an atom is inside of.
type frame struct {
	kind spanKind // boldSpan, italicSpan, codeSpan or linkSpan
	href string   // link
	bare bool     // link: its text is its URL
}

// atom is the smallest part of a line: a grapheme cluster, or all of a
// link whose text is its URL. Lines are cut only between atoms.
type atom struct {
	s     string
	path  []*frame // outermost first
	space bool     // white space: a place to cut the line, dropped there
	next  rune     // first rune of the following atom on the line, or -1
}

// elem is a line of text or a code block.
type elem struct {
	code   bool
	lang   string
	text   string // code block
	indent string
	marker string // list marker ("• ", "2. ") of an item's first line
	atoms  []atom
}

// piece is a rendered line, or part of one, that fits the limit.
type piece struct {
	s    string
	w    int
	cont bool // continues the line or code block before it
}

// chat renders a Doc for a chat platform.
type chat struct {
	d dialect
}

// blocks renders each block of d, cut into blocks of at most limit as the
// dialect counts; limit <= 0 means no limit.
func (c chat) blocks(d Doc, limit int) []string {
	if limit <= 0 {
		limit = 0
	} else {
		limit = max(limit, minLimit)
	}
	var out []string
	for _, b := range d.blocks {
		var pieces []piece
		for _, e := range flatten([]*block{b}, c.d.live) {
			if e.code {
				pieces = append(pieces, c.codePieces(e.lang, e.text, limit)...)
			} else {
				pieces = append(pieces, c.linePieces(e, limit)...)
			}
		}
		out = append(out, pack(pieces, limit)...)
	}
	return out
}

// pack joins pieces, a line apart, into blocks of at most limit; a piece
// that continues a cut line or code block starts a new one.
func pack(pieces []piece, limit int) []string {
	var out []string
	var cur strings.Builder
	w := 0
	for _, p := range pieces {
		if cur.Len() > 0 && !p.cont && (limit == 0 || w+1+p.w <= limit) {
			cur.WriteString("\n" + p.s)
			w += 1 + p.w
			continue
		}
		if cur.Len() > 0 {
			out = append(out, cur.String())
			cur.Reset()
		}
		cur.WriteString(p.s)
		w = p.w
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// flatten lays blocks out as lines and code blocks: list items get their
// marker and nested lists their indentation. Links that are not live
// become text.
func flatten(blocks []*block, live func(string) bool) []elem {
	var out []elem
	var walk func(blocks []*block, indent, marker string)
	walk = func(blocks []*block, indent, marker string) {
		pad := indent + strings.Repeat(" ", utf8.RuneCountInString(marker))
		// line adds a line, the first one with the marker.
		line := func(atoms []atom) {
			if marker != "" {
				out = append(out, elem{indent: indent, marker: marker, atoms: atoms})
				marker = ""
				return
			}
			out = append(out, elem{indent: pad, atoms: atoms})
		}
		for _, b := range blocks {
			switch b.kind {
			case paraBlock:
				for _, l := range lines(b.spans, live) {
					line(l)
				}
			case codeBlock:
				if marker != "" {
					line(nil)
				}
				out = append(out, elem{code: true, lang: b.lang, text: b.code})
			case listBlock:
				if marker != "" {
					line(nil)
				}
				for i, item := range b.items {
					m := "• "
					if b.ordered {
						m = strconv.Itoa(b.start+i) + ". "
					}
					walk(item, pad, m)
				}
			}
		}
		if marker != "" {
			line(nil)
		}
	}
	walk(blocks, "", "")
	return out
}

// lines cuts spans at their line breaks into lines of atoms, without the
// spaces at either end of a line and without empty lines. A link that is
// not live is its text, followed by its address unless that is its text.
func lines(spans []span, live func(string) bool) [][]atom {
	var out [][]atom
	var cur []atom
	end := func() {
		cur = joinClusters(cur)
		for len(cur) > 0 && cur[0].space {
			cur = cur[1:]
		}
		for len(cur) > 0 && cur[len(cur)-1].space {
			cur = cur[:len(cur)-1]
		}
		if len(cur) > 0 {
			setNext(cur, -1)
			out = append(out, cur)
		}
		cur = nil
	}
	var walk func(spans []span, path []*frame)
	walk = func(spans []span, path []*frame) {
		for _, s := range spans {
			switch s.kind {
			case textSpan:
				cur = appendGraphemes(cur, s.text, path)
			case breakSpan:
				end()
			case boldSpan, italicSpan:
				walk(s.kids, with(path, &frame{kind: s.kind}))
			case codeSpan:
				cur = appendGraphemes(cur, s.text, with(path, &frame{kind: codeSpan}))
			case linkSpan:
				if !live(s.href) {
					cur = appendGraphemes(cur, linkText(s.text, s.href, s.bare), path)
					continue
				}
				p := with(path, &frame{kind: linkSpan, href: s.href, bare: s.bare})
				if s.bare {
					cur = append(cur, atom{s: s.text, path: p})
				} else {
					cur = appendGraphemes(cur, s.text, p)
				}
			}
		}
	}
	walk(spans, nil)
	end()
	return out
}

// joinClusters merges atoms that share a grapheme cluster of the line,
// such as a letter and a combining mark after the end of its bold, into
// the first one, so no cut can fall inside the cluster.
func joinClusters(atoms []atom) []atom {
	if len(atoms) < 2 {
		return atoms
	}
	line := concat(atoms)
	bounds := make(map[int]bool, len(atoms))
	state, pos := -1, 0
	for rest := line; rest != ""; {
		var g string
		g, rest, _, state = uniseg.FirstGraphemeClusterInString(rest, state)
		pos += len(g)
		bounds[pos] = true
	}
	out := atoms[:1:1]
	pos = len(atoms[0].s)
	for _, a := range atoms[1:] {
		if bounds[pos] {
			out = append(out, a)
		} else {
			last := &out[len(out)-1]
			last.s += a.s
			last.space = !strings.ContainsFunc(last.s, notBreakable)
		}
		pos += len(a.s)
	}
	return out
}

// linkText is a link as plain text.
func linkText(text, href string, bare bool) string {
	if bare {
		return text
	}
	return text + " (" + href + ")"
}

func with(path []*frame, f *frame) []*frame {
	return append(path[:len(path):len(path)], f)
}

// appendGraphemes adds s to atoms, a grapheme cluster per atom.
func appendGraphemes(atoms []atom, s string, path []*frame) []atom {
	state := -1
	for s != "" {
		var g string
		g, s, _, state = uniseg.FirstGraphemeClusterInString(s, state)
		atoms = append(atoms, atom{s: g, path: path, space: !strings.ContainsFunc(g, notBreakable)})
	}
	return atoms
}

// breakable reports whether a line may be cut at r: white space, except
// the no-break spaces.
func breakable(r rune) bool {
	return unicode.IsSpace(r) && r != '\u00A0' && r != '\u2007' && r != '\u202F'
}

func notBreakable(r rune) bool { return !breakable(r) }

// setNext records in each atom the rune after it; last follows the last.
func setNext(atoms []atom, last rune) {
	for i := range atoms {
		if i+1 < len(atoms) {
			atoms[i].next, _ = utf8.DecodeRuneInString(atoms[i+1].s)
		} else {
			atoms[i].next = last
		}
	}
}

// render is atoms as markup: runs of atoms in the same frame at depth
// share its markup. start reports whether the atoms begin their line.
func (c chat) render(atoms []atom, depth int, start bool) string {
	var b strings.Builder
	inFrame := func(a atom) bool { return len(a.path) > depth }
	for k := 0; k < len(atoms); {
		if !inFrame(atoms[k]) {
			m := k + 1
			for m < len(atoms) && !inFrame(atoms[m]) {
				m++
			}
			b.WriteString(c.d.text(concat(atoms[k:m]), atoms[m-1].next, start && k == 0))
			k = m
			continue
		}
		f := atoms[k].path[depth]
		m := k + 1
		for m < len(atoms) && inFrame(atoms[m]) && atoms[m].path[depth] == f {
			m++
		}
		var s string
		switch f.kind {
		case codeSpan:
			s = c.d.code(concat(atoms[k:m]), atoms[m-1].next)
		case linkSpan:
			s = c.d.link(f, c.render(atoms[k:m], depth+1, false))
		default:
			s = c.d.wrap(f.kind, c.render(atoms[k:m], depth+1, false))
		}
		if k > 0 {
			if inFrame(atoms[k-1]) {
				b.WriteString(c.d.touch(true, false))
			} else if wordy(lastRune(atoms[k-1].s)) {
				b.WriteString(c.d.touch(false, true))
			}
		}
		b.WriteString(s)
		if m < len(atoms) && !inFrame(atoms[m]) && wordy(firstRune(atoms[m].s)) {
			b.WriteString(c.d.touch(false, true))
		}
		k = m
	}
	return b.String()
}

func concat(atoms []atom) string {
	var b strings.Builder
	for _, a := range atoms {
		b.WriteString(a.s)
	}
	return b.String()
}

func firstRune(s string) rune {
	r, _ := utf8.DecodeRuneInString(s)
	return r
}

func lastRune(s string) rune {
	r, _ := utf8.DecodeLastRuneInString(s)
	return r
}

// wordy reports whether r is part of a word: a letter, digit or mark.
func wordy(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)
}

// linePieces renders a line, cut at spaces (or, in a word longer than a
// block, between grapheme clusters) into pieces that fit limit. Each
// piece has its own complete markup.
func (c chat) linePieces(e elem, limit int) []piece {
	atoms := e.atoms
	if c.d.codeAlone() {
		atoms = codeAlone(atoms)
	}
	pre := c.d.prefix(e.indent, e.marker)
	start := e.marker == ""
	s := pre + c.render(atoms, 0, start)
	if w := c.d.width(s); limit == 0 || w <= limit {
		return []piece{{s: s, w: w}}
	}
	contPre := c.d.prefix(e.indent+strings.Repeat(" ", utf8.RuneCountInString(e.marker)), "")
	var out []piece
	for len(atoms) > 0 {
		p, st := pre, start
		if len(out) > 0 {
			p, st = contPre, true
		}
		budget := limit - c.d.width(p)
		if budget < limit/2 {
			p, st, budget = "", true, limit
		}
		fits := func(n int) bool {
			return n == 0 || c.d.width(c.render(atoms[:n], 0, st)) <= budget
		}
		n := longest(min(len(atoms), budget), fits)
		if n == 0 {
			var ok bool
			if atoms, ok = degrade(atoms); !ok {
				n = 1 // a single rune wider than any block: nothing else to do
			} else {
				continue
			}
		}
		cut, next := n, n
		if n < len(atoms) {
			if atoms[n].space {
				next = n + 1
			} else {
				for i := n - 1; i > 0; i-- {
					if atoms[i].space && fits(i) {
						cut, next = i, i+1
						break
					}
				}
			}
		}
		head := atoms[:cut]
		for len(head) > 0 && head[len(head)-1].space {
			head = head[:len(head)-1]
		}
		atoms = atoms[next:]
		for len(atoms) > 0 && atoms[0].space {
			atoms = atoms[1:]
		}
		if len(head) == 0 {
			continue
		}
		s := p + c.render(head, 0, st)
		out = append(out, piece{s: s, w: c.d.width(s), cont: len(out) > 0})
	}
	return out
}

// codeAlone takes inline code out of the formatting around it.
func codeAlone(atoms []atom) []atom {
	out := make([]atom, len(atoms))
	copy(out, atoms)
	for i, a := range out {
		for _, f := range a.path {
			if f.kind == codeSpan {
				out[i].path = []*frame{f}
				break
			}
		}
	}
	return out
}

// degrade makes the first atom, too wide for a block of its own, smaller:
// a link becomes its text and URL as plain text, formatting is dropped,
// and last a grapheme cluster is cut into runes. ok is false when the
// atom is a single rune already.
func degrade(atoms []atom) (out []atom, ok bool) {
	a := atoms[0]
	for i, f := range a.path {
		if f.kind != linkSpan {
			continue
		}
		m := 1
		for m < len(atoms) && len(atoms[m].path) > i && atoms[m].path[i] == f {
			m++
		}
		path := append(a.path[:i:i], a.path[i+1:]...)
		repl := appendGraphemes(nil, linkText(concat(atoms[:m]), f.href, f.bare), path)
		setNext(repl, atoms[m-1].next)
		return append(repl, atoms[m:]...), true
	}
	if len(a.path) > 0 {
		out = append([]atom{a}, atoms[1:]...)
		out[0].path = nil
		return out, true
	}
	if utf8.RuneCountInString(a.s) > 1 {
		var repl []atom
		for _, r := range a.s {
			repl = append(repl, atom{s: string(r), space: breakable(r)})
		}
		setNext(repl, a.next)
		return append(repl, atoms[1:]...), true
	}
	return atoms, false
}

// longest is the largest n in [0, hi] for which fits holds, given that it
// holds for 0 and, but for small bumps, keeps holding as n shrinks.
func longest(hi int, fits func(int) bool) int {
	if fits(hi) {
		return hi
	}
	lo := 0
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if fits(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// codePieces renders a code block, cut between lines (or, in a line
// longer than a block, between grapheme clusters, after a space when it
// can) into code blocks that each fit limit.
func (c chat) codePieces(lang, s string, limit int) []piece {
	whole := c.d.pre(lang, s)
	if w := c.d.width(whole); limit == 0 || w <= limit {
		return []piece{{s: whole, w: w}}
	}
	if c.d.width(c.d.pre(lang, "x")) > limit/2 {
		lang = ""
	}
	fitsText := func(t string) bool { return c.d.width(c.d.pre(lang, t)) <= limit }
	var out []piece
	emit := func(t string) {
		if strings.TrimFunc(t, unicode.IsSpace) == "" {
			return // a piece of nothing but white space would show nothing
		}
		p := c.d.pre(lang, t)
		out = append(out, piece{s: p, w: c.d.width(p), cont: len(out) > 0})
	}
	ls := strings.Split(s, "\n")
	for len(ls) > 0 {
		n := longest(len(ls), func(n int) bool { return n == 0 || fitsText(strings.Join(ls[:n], "\n")) })
		if n > 0 {
			emit(strings.Join(ls[:n], "\n"))
			ls = ls[n:]
			continue
		}
		// The first line alone is too long: cut it.
		line := ls[0]
		cuts := graphemeEnds(line)
		m := longest(min(len(cuts), limit), func(m int) bool { return m == 0 || fitsText(line[:cuts[m-1]]) })
		if m == 0 {
			// One grapheme cluster wider than a block: cut it into runes.
			cuts = runeEnds(line)
			m = max(1, longest(min(len(cuts), limit), func(m int) bool { return m == 0 || fitsText(line[:cuts[m-1]]) }))
		}
		end := cuts[m-1]
		for i := m - 1; i > m/2; i-- {
			if r, _ := utf8.DecodeLastRuneInString(line[:cuts[i-1]]); breakable(r) {
				end = cuts[i-1]
				break
			}
		}
		emit(line[:end])
		ls[0] = line[end:]
		if ls[0] == "" {
			ls = ls[1:]
		}
	}
	return out
}

// graphemeEnds is the byte offset after each grapheme cluster of s.
func graphemeEnds(s string) []int {
	var ends []int
	state, pos := -1, 0
	for rest := s; rest != ""; {
		var g string
		g, rest, _, state = uniseg.FirstGraphemeClusterInString(rest, state)
		pos += len(g)
		ends = append(ends, pos)
	}
	return ends
}

// runeEnds is the byte offset after each rune of s.
func runeEnds(s string) []int {
	var ends []int
	for i, r := range s {
		ends = append(ends, i+utf8.RuneLen(r))
	}
	return ends
}

// utf16Len counts s in UTF-16 code units, as Telegram and Discord count.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// isWordRune reports whether r, after an "@", makes a mention: a letter,
// digit or underscore.
func isWordRune(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

// defuse puts a word joiner after every "@" followed by a letter, digit or
// underscore; next is the rune after s (-1 for none).
func defuse(s string, next rune) string {
	if !strings.Contains(s, "@") {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		b.WriteRune(r)
		if r == '@' && isWordRune(nextRune(s, i, next)) {
			b.WriteString(wordJoiner)
		}
	}
	return b.String()
}

// nextRune is the rune after the one at s[i], or next at the end of s.
func nextRune(s string, i int, next rune) rune {
	_, size := utf8.DecodeRuneInString(s[i:])
	if i+size >= len(s) {
		return next
	}
	r, _ := utf8.DecodeRuneInString(s[i+size:])
	return r
}
