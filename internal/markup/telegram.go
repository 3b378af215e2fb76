package markup

import (
	"html"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Telegram returns blocks of Telegram Bot API HTML (parse_mode HTML) using
// only <b>, <i>, <code>, <pre> and <a href>, with &, <, >, ' and " as
// entities. Each block is balanced markup on its own and at most limit
// characters as Telegram counts a message: after entity parsing (tags
// removed, entities decoded), in UTF-16 code units. A paragraph or code
// block too long for one block is cut into several, between lines or
// words and never inside a grapheme cluster, its formatting reopened in
// each. A limit from 1 to 15 counts as 16; 0 or less means no limit.
//
// The blocks are meant to be joined with a blank line ("\n\n"), and the
// caller may end a message between any two. Every "@" before a letter,
// digit or underscore is followed by U+2060 WORD JOINER, so no @username
// mentions anyone. Links are http or https to a host under a top-level
// domain; other links show as their text and address. Link previews are
// the sender's to turn off.
func (d Doc) Telegram(limit int) []string {
	return chat{telegram{}}.blocks(d, limit)
}

type telegram struct{}

func (telegram) text(s string, next rune, _ bool) string {
	return html.EscapeString(defuse(s, next))
}

func (t telegram) code(s string, next rune) string {
	return "<code>" + t.text(s, next, false) + "</code>"
}

func (telegram) wrap(kind spanKind, inner string) string {
	if kind == boldSpan {
		return "<b>" + inner + "</b>"
	}
	return "<i>" + inner + "</i>"
}

// live: Telegram refuses a message whose link it finds invalid, and
// shows a mailto link as a web address.
func (telegram) live(href string) bool { return publicHost(href) }

func (telegram) link(f *frame, inner string) string {
	return `<a href="` + html.EscapeString(f.href) + `">` + inner + "</a>"
}

func (t telegram) pre(lang, s string) string {
	if lang == "" {
		return "<pre>" + t.text(s, -1, false) + "</pre>"
	}
	return `<pre><code class="language-` + html.EscapeString(lang) + `">` + t.text(s, -1, false) + "</code></pre>"
}

func (t telegram) prefix(indent, marker string) string {
	return t.text(indent+marker, -1, false)
}

// width counts what Telegram counts: the text without tags, each entity
// as the one character it stands for, in UTF-16 code units.
func (telegram) width(s string) int {
	n := 0
	for i := 0; i < len(s); {
		switch s[i] {
		case '<':
			j := strings.IndexByte(s[i:], '>')
			if j < 0 {
				return n + utf16Len(s[i:])
			}
			i += j + 1
		case '&':
			// The renderer writes only html.EscapeString's entities, each
			// one character of the Basic Multilingual Plane.
			j := strings.IndexByte(s[i:], ';')
			if j < 0 {
				return n + utf16Len(s[i:])
			}
			n++
			i += j + 1
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			n += utf16.RuneLen(r)
			i += size
		}
	}
	return n
}

func (telegram) touch(bool, bool) string { return "" }

func (telegram) codeAlone() bool { return true }
