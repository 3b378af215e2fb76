package markup

import "strings"

// Discord returns blocks of Discord message markdown, each at most limit
// UTF-16 code units of raw content. A paragraph or code block too long for
// one block is cut into several, between lines or words and never inside
// a grapheme cluster, its formatting reopened in each (a long code block
// becomes several fenced ones). A limit from 1 to 15 counts as 16; 0 or
// less means no limit. The blocks are meant to be joined with a blank line
// ("\n\n"), and the caller may end a message between any two.
//
// Agent text is escaped so it formats only as its Markdown asked. Links
// are http or https, written [link text](<url>) or <url> so Discord shows
// no embed; other links, and web addresses left in text, show as text. No
// mention can work: "@" and "<" in text are escaped, and in code an "@"
// before a letter, digit or underscore, or a "<" before "@" or "#", gets
// U+2060 WORD JOINER after it. A run of backticks inside code is parted by
// U+200B ZERO WIDTH SPACE, so it cannot end the code early.
func (d Doc) Discord(limit int) []string {
	return chat{discord{}}.blocks(d, limit)
}

type discord struct{}

// text escapes every character Discord's markdown could read as markup
// with a backslash, which Discord hides before ASCII punctuation: "<" so
// <@id>, <@&role>, <#channel> and <t:…> stay text, "@" so @everyone and
// @here are not even highlighted, ":" before "//" so no bare URL becomes a
// link (or an embed), and at the start of a line what would open a list.
func (discord) text(s string, next rune, start bool) string {
	var b strings.Builder
	b.Grow(len(s) + len(s)/4)
	lead, digits := start, false
	for i, r := range s {
		switch r {
		case '\\', '*', '_', '~', '`', '|', '[', ']', '(', ')', '<', '>', '#', '@':
			b.WriteByte('\\')
		case '-', '+':
			if lead && !digits {
				b.WriteByte('\\')
			}
		case '.':
			if lead && digits {
				b.WriteByte('\\')
			}
		case ':':
			if strings.HasPrefix(s[i+1:], "//") {
				b.WriteByte('\\')
			}
		}
		b.WriteRune(r)
		if r == '@' && isWordRune(nextRune(s, i, next)) {
			b.WriteString(wordJoiner)
		}
		switch {
		case r >= '0' && r <= '9':
			digits = true
		case r == ' ' || r == '\t':
			lead = lead && !digits
		default:
			lead = false
		}
	}
	return b.String()
}

// codeText is text inside Discord code, where nothing is markup but a
// backtick: no run of backticks is left to end the code, and no mention
// is left whole.
func codeText(s string, next rune) string {
	var b strings.Builder
	prev := rune(-1)
	for i, r := range s {
		if r == '`' && prev == '`' {
			b.WriteString(zeroWidthSpace)
		}
		b.WriteRune(r)
		n := nextRune(s, i, next)
		if r == '@' && isWordRune(n) || r == '<' && (n == '@' || n == '#') {
			b.WriteString(wordJoiner)
		}
		prev = r
	}
	return b.String()
}

func (discord) code(s string, next rune) string {
	c := codeText(s, next)
	if !strings.Contains(c, "`") {
		return "`" + c + "`"
	}
	// Single backticks inside: a double fence, spaced off a backtick at
	// either end (Discord drops that space).
	if strings.HasPrefix(c, "`") {
		c = " " + c
	}
	if strings.HasSuffix(c, "`") {
		c += " "
	}
	return "``" + c + "``"
}

func (discord) wrap(kind spanKind, inner string) string {
	if kind == boldSpan {
		return "**" + inner + "**"
	}
	return "*" + inner + "*"
}

// discordURL keeps a URL from ending Discord's link syntax early and from
// holding an "@".
var discordURL = strings.NewReplacer("(", "%28", ")", "%29", "@", "%40")

// live: Discord makes links of web addresses only.
func (discord) live(href string) bool { return strings.HasPrefix(href, "http") }

func (discord) link(f *frame, inner string) string {
	u := discordURL.Replace(f.href)
	if f.bare {
		return "<" + u + ">"
	}
	return "[" + inner + "](<" + u + ">)"
}

func (discord) pre(lang, s string) string {
	return "```" + lang + "\n" + codeText(s, -1) + "\n```"
}

func (d discord) prefix(indent, marker string) string {
	return d.text(indent+marker, -1, true)
}

func (discord) width(s string) int { return utf16Len(s) }

func (discord) touch(markup, _ bool) string {
	if markup {
		return zeroWidthSpace
	}
	return ""
}

func (discord) codeAlone() bool { return false }
