package markup

import "strings"

// Slack returns blocks of Slack mrkdwn for section blocks (whose text
// Slack caps at 3,000 characters): *bold*, _italic_, `code`, ```code
// blocks``` and <url|text> links to http, https or mailto. Each block is
// at most limit characters of the escaped mrkdwn, counted in UTF-16 code
// units, which is never less than the count in runes. A paragraph or code
// block too long for one block is cut into several, between lines or
// words and never inside a grapheme cluster, its formatting reopened in
// each. A limit from 1 to 15 counts as 16; 0 or less means no limit. The
// blocks are meant to be joined with a blank line ("\n\n"), and the caller
// may end a message between any two.
//
// &, < and > are escaped as &amp;, &lt; and &gt;, so no <!channel>,
// <!here>, <@U…>, <#C…> or <!subteam…> can be written, and every "@"
// before a letter, digit or underscore is followed by U+2060 WORD JOINER,
// for a message sent with link_names. Slack has no escape for *, _ and ~,
// which show as written; a backtick in inline code shows as U+02CB
// MODIFIER LETTER GRAVE ACCENT, and runs of backticks elsewhere are parted
// by U+200B ZERO WIDTH SPACE. Unfurling is the sender's to turn off.
func (d Doc) Slack(limit int) []string {
	return chat{slack{}}.blocks(d, limit)
}

type slack struct{}

var slackEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// text escapes &, < and >, and parts runs of backticks so that none
// opens a code block. An "@" at the end gets a word joiner too: markup
// such as the "_" of italic may follow it. A ">" that starts a line gets
// a zero width space before it, so it does not quote the line.
func (slack) text(s string, next rune, start bool) string {
	if start && strings.HasPrefix(s, ">") {
		s = zeroWidthSpace + s
	}
	s = slackEscaper.Replace(defuse(s, next))
	if strings.HasSuffix(s, "@") {
		s += wordJoiner
	}
	if strings.Contains(s, "``") {
		s = strings.ReplaceAll(strings.ReplaceAll(s, "``", "`"+zeroWidthSpace+"`"), "``", "`"+zeroWidthSpace+"`")
	}
	return s
}

// code is inline code; Slack's cannot hold a backtick, so one shows as
// U+02CB MODIFIER LETTER GRAVE ACCENT.
func (slack) code(t string, next rune) string {
	return "`" + slackEscaper.Replace(defuse(strings.ReplaceAll(t, "`", "\u02CB"), next)) + "`"
}

func (slack) wrap(kind spanKind, inner string) string {
	if kind == boldSpan {
		return "*" + inner + "*"
	}
	return "_" + inner + "_"
}

func (slack) live(string) bool { return true }

// link is <url|text>, or <url> when the text is the URL as written.
func (slack) link(f *frame, inner string) string {
	u := strings.ReplaceAll(f.href, "&", "&amp;")
	if inner == u {
		return "<" + u + ">"
	}
	return "<" + u + "|" + inner + ">"
}

// pre is a code block: backticks inside are parted by U+200B ZERO WIDTH
// SPACE, so none ends it early.
func (slack) pre(_ string, t string) string {
	var b strings.Builder
	prev := rune(-1)
	for _, r := range slackEscaper.Replace(defuse(t, -1)) {
		if r == '`' && (prev == '`' || prev == -1) {
			b.WriteString(zeroWidthSpace)
		}
		b.WriteRune(r)
		prev = r
	}
	if prev == '`' {
		b.WriteString(zeroWidthSpace)
	}
	return "```" + b.String() + "```"
}

func (s slack) prefix(indent, marker string) string {
	return s.text(indent+marker, -1, false)
}

func (slack) width(s string) int { return utf16Len(s) }

// touch: Slack formats only at word boundaries, which a zero width space
// makes.
func (slack) touch(bool, bool) string { return zeroWidthSpace }

func (slack) codeAlone() bool { return false }
