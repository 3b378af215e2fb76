package textparse

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

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
// zero-width space, word joiner and byte-order mark (Thai text carries
// zero-width spaces as word-break hints, since Thai puts no spaces between
// words).
func isIgnorable(r rune) bool {
	return r == '\ufe0e' || r == '\ufe0f' || r == '\u200b' || r == '\u2060' || r == '\ufeff'
}

// foldKey returns the form of s used to compare a reply with a label, a key
// or a reply word. In order:
//
//   - The text is put in Unicode Normalization Form C, so a precomposed "é"
//     equals "e" plus a combining acute, and combining marks of different
//     classes typed in either order are equal (Thai: a below vowel and a
//     tone mark, "กุ้" either way round).
//   - Blank characters at the ends are dropped and runs inside collapse to
//     one space; ignorable characters are dropped.
//   - Every letter becomes one representative of its Unicode simple
//     case-folding orbit, which is what strings.EqualFold compares; on top of
//     that ß and ẞ become "ss", so "STRASSE" matches "Straße". Scripts
//     without case, such as Thai, are unchanged.
//   - Thai marks written above or below one consonant are put in one order:
//     vowel marks (ั ิ ี ึ ื ุ ู ฺ ็), then tone marks (่ ้ ๊ ๋), then the other
//     signs (์ ํ ๎). NFC leaves an above vowel and a tone mark in the order
//     typed (the above vowels have canonical combining class 0, which
//     canonical ordering never crosses), yet Thai keyboards accept either
//     order and it looks the same, so "กั้" typed as ก + ้ + ั equals
//     ก + ั + ้.
//
// Not applied: full case foldings (ligatures such as "ﬁ"), compatibility
// normalisation (NFKC: full-width "Ａ" differs from "A"), locale rules such
// as Turkish dotted I, and reordering around the spacing vowel ำ (น + ำ + ้
// differs from น + ้ + ำ).
func foldKey(s string) string {
	var f folder
	f.add(s)
	return string(f.bytes())
}

// maxSegment bounds, in bytes, the text held for composition before it is
// normalised. Normalised text never holds more than 30 combining marks in a
// row (Unicode's stream-safe format puts a U+034F after 30), which is at
// most 124 bytes with its base; only a longer run typed raw is cut, and
// compares approximately.
const maxSegment = 160

// maxMarks bounds the Thai marks held for reordering: a real syllable has at
// most three, and the bound keeps the insertion sort cheap on hostile text.
const maxMarks = 32

// folder builds a fold key a piece at a time, so a growing prefix of a line
// is folded once rather than again for every candidate. Text flows through
// three stages: seg holds the current normalisation segment (a character
// that starts one and what may combine with it); once complete it is
// normalised and each character case-folded; Thai marks then wait in marks
// until the next base character, and the rest goes to key.
//
// bytes flushes every stage. It gives the exact key of the text added so far
// when that text ends before a character that starts a new segment and is
// not a Thai mark — the end of the text, or any separator Parse splits at
// (",", ":", "-", a newline …), which is where Parse reads a key.
type folder struct {
	key   []byte
	space bool // blanks seen since the last character written
	segs  int  // segments started, as counted by segments
	seg   []byte
	marks []rune
	buf   []byte // scratch for normalising seg
}

func (f *folder) add(s string) {
	for _, r := range s {
		f.addRune(r)
	}
}

// addUpTo adds s as long as at most limit segments have been started in
// all, and reports whether all of s was added.
func (f *folder) addUpTo(s string, limit int) bool {
	for _, r := range s {
		if f.addRune(r); f.segs > limit {
			return false
		}
	}
	return true
}

func (f *folder) addRune(r rune) {
	if len(f.seg) == 0 || startsSegment(r) || len(f.seg) >= maxSegment {
		f.flushSeg()
		f.segs++
	}
	f.seg = utf8.AppendRune(f.seg, r)
}

// segments counts the normalisation segments of s, but stops counting past
// limit: a segment is a character that starts one (see startsSegment)
// with the characters after it that may combine with it, as the folder
// holds them. The count is the same for s in NFC and in NFD, and with Thai
// marks in another order, so a bound on it treats those alike.
func segments(s string, limit int) int {
	n, held := 0, 0
	for _, r := range s {
		if held == 0 || startsSegment(r) || held >= maxSegment {
			n, held = n+1, 0
			if n > limit {
				break
			}
		}
		held += utf8.RuneLen(r)
	}
	return n
}

// bytes returns the key of everything added so far; see folder.
func (f *folder) bytes() []byte {
	f.flushSeg()
	f.flushMarks()
	return f.key
}

// startsSegment reports whether r never combines with what precedes it
// under NFC, so the text before it normalises on its own.
func startsSegment(r rune) bool {
	if r < utf8.RuneSelf {
		return true
	}
	var b [utf8.UTFMax]byte
	n := utf8.EncodeRune(b[:], r)
	return norm.NFC.Properties(b[:n]).BoundaryBefore()
}

func (f *folder) flushSeg() {
	if len(f.seg) == 0 {
		return
	}
	seg := f.seg
	if len(seg) == 1 { // ASCII is normal
		f.fold(rune(seg[0]))
		f.seg = f.seg[:0]
		return
	}
	if !norm.NFC.IsNormal(seg) {
		f.buf = norm.NFC.Append(f.buf[:0], seg...)
		seg = f.buf
	}
	for len(seg) > 0 {
		r, size := utf8.DecodeRune(seg)
		seg = seg[size:]
		f.fold(r)
	}
	f.seg = f.seg[:0]
}

// fold case-folds one normalised character and passes it on.
func (f *folder) fold(r rune) {
	if r < utf8.RuneSelf && r > ' ' && r != 0x7f && !f.space && len(f.marks) == 0 {
		// Printable ASCII with nothing held back: a letter's fold orbit
		// is its two cases (and for "k" and "s" a symbol above ASCII), so
		// its least member is the upper case.
		if r >= 'a' && r <= 'z' {
			r -= 'a' - 'A'
		}
		f.key = append(f.key, byte(r))
		return
	}
	switch {
	case isIgnorable(r):
		return
	case isBlank(r):
		f.space = true
		return
	}
	if f.space {
		f.flushMarks()
		if len(f.key) > 0 {
			f.key = append(f.key, ' ')
		}
		f.space = false
	}
	if r == 'ß' || r == 'ẞ' {
		f.put(foldRune('s'))
		f.put(foldRune('s'))
		return
	}
	f.put(foldRune(r))
}

// put writes a folded character, holding Thai marks back to order them.
func (f *folder) put(r rune) {
	if thaiMarkRank(r) > 0 {
		if len(f.marks) >= maxMarks {
			f.flushMarks()
		}
		f.marks = append(f.marks, r)
		return
	}
	f.flushMarks()
	f.key = utf8.AppendRune(f.key, r)
}

// flushMarks writes the held Thai marks in rank order, keeping the typed
// order within a rank (a stable insertion sort of at most maxMarks).
func (f *folder) flushMarks() {
	m := f.marks
	for i := 1; i < len(m); i++ {
		for j := i; j > 0 && thaiMarkRank(m[j]) < thaiMarkRank(m[j-1]); j-- {
			m[j], m[j-1] = m[j-1], m[j]
		}
	}
	for _, r := range m {
		f.key = utf8.AppendRune(f.key, r)
	}
	f.marks = f.marks[:0]
}

// thaiMarkRank orders the Thai marks written above or below a consonant: 1
// for the vowel marks and the vowel shortener ็, 2 for the tone marks, 3 for
// the other signs (thanthakhat, nikhahit, yamakkan); 0 for anything else.
func thaiMarkRank(r rune) int {
	switch {
	case r == '\u0e31', r >= '\u0e34' && r <= '\u0e3a', r == '\u0e47':
		return 1
	case r >= '\u0e48' && r <= '\u0e4b':
		return 2
	case r >= '\u0e4c' && r <= '\u0e4e':
		return 3
	}
	return 0
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
