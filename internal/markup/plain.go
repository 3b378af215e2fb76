package markup

import "strings"

// Plain returns the text with the Markdown syntax removed, for plain-text
// fallbacks such as a notification preview or a text-only channel: a link
// as "text (url)" (its URL alone when that is its text), list items with
// "•" or their number, code as it is. Nothing is escaped for any platform,
// but every "@" before a letter, digit or underscore is followed by U+2060
// WORD JOINER, so it mentions no one.
func (d Doc) Plain() string {
	return strings.Join(chat{plain{}}.blocks(d, 0), "\n\n")
}

type plain struct{}

func (plain) text(s string, next rune, _ bool) string { return defuse(s, next) }

func (plain) code(s string, next rune) string { return defuse(s, next) }

func (plain) wrap(_ spanKind, inner string) string { return inner }

// live: plain text has no links, each shows as its text and address.
func (plain) live(string) bool { return false }

func (plain) link(_ *frame, inner string) string { return inner }

func (plain) pre(_ string, s string) string { return defuse(s, -1) }

func (plain) prefix(indent, marker string) string { return indent + marker }

func (plain) width(s string) int { return utf16Len(s) }

func (plain) touch(bool, bool) string { return "" }

func (plain) codeAlone() bool { return false }
