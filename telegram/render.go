package telegram

import (
	"html"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/rivo/uniseg"

	"github.com/askbridge/askbridge"
)

// Limits of the Bot API that shape what is sent.
const (
	// messageChars: Telegram: sendMessage text is 1-4096 characters after
	// entities parsing.
	messageChars = 4096
	// statusReserve is kept free in every part of a prompt so the status
	// line fits when the message is edited at the end: "Answered: " and up
	// to 3 × 4 labels of 64 characters (ask-user.md §1) come to about 800.
	statusReserve = 1000
	// partLimit is the longest part of a prompt, as Telegram counts it.
	partLimit = messageChars - statusReserve
	// placeholderChars: Telegram: ForceReply input_field_placeholder is
	// 1-64 characters.
	placeholderChars = 64
	// noticeChars: Telegram: answerCallbackQuery text is 0-200 characters.
	noticeChars = 200
)

// wordJoiner (U+2060) after an "@" keeps Telegram from reading a mention,
// so agent text never pings anyone; it is invisible.
const wordJoiner = "\u2060"

// esc makes agent text safe for parse_mode HTML: &, <, > and quotes become
// entities, and "@name" can no longer mention (and notify) anyone.
func esc(s string) string {
	return html.EscapeString(defuseMentions(s))
}

// defuseMentions puts a word joiner after every "@" that starts a word
// character, which breaks Telegram's @username (and @all-style) mentions.
func defuseMentions(s string) string {
	if !strings.Contains(s, "@") {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		b.WriteRune(r)
		if r != '@' {
			continue
		}
		next, _ := utf8.DecodeRuneInString(s[i+1:])
		if next == '_' || unicode.IsLetter(next) || unicode.IsDigit(next) {
			b.WriteString(wordJoiner)
		}
	}
	return b.String()
}

// promptParts renders a plan as the HTML text of its messages, in order.
// Each part holds at most partLimit characters as Telegram counts them
// (after entities parsing), and is cut only between lines, preferring a
// blank line; every tag opens and closes on one line, so a cut never
// breaks the markup.
func promptParts(p askbridge.Plan) []string {
	var lines []string
	add := func(prefix, plain, suffix string) {
		line := prefix + esc(plain) + suffix
		if plainLen(line) <= partLimit {
			lines = append(lines, line)
			return
		}
		// Only a plan that breaks the request limits gets here: cut the
		// text itself into pieces that fit.
		for _, piece := range askbridge.SplitText(plain, partLimit-plainLen(prefix+suffix)) {
			lines = append(lines, prefix+esc(piece)+suffix)
		}
	}
	add("<b>", p.Intro, "</b>")
	for _, s := range p.Sections {
		lines = append(lines, "")
		prefix := ""
		if s.Number > 0 {
			prefix = strconv.Itoa(s.Number) + ") "
		}
		title := s.Question
		if s.Multi {
			title += " (choose one or more)"
		}
		add(prefix+"<b>["+esc(s.Header)+"]</b> ", title, "")
		for i, o := range s.Options {
			add("", askbridge.OptionLine(i, o), "")
		}
	}
	lines = append(lines, "")
	add("<i>", p.FreeText, "</i>")
	for _, line := range strings.Split(p.Closing, "\n") {
		add("", line, "")
	}
	return packLines(lines, partLimit)
}

// packLines joins lines into parts of at most limit characters (as
// plainLen counts), cutting at the last blank line of a full part when it
// has one.
func packLines(lines []string, limit int) []string {
	var parts []string
	var cur []string
	size := func(ls []string) int {
		n := max(len(ls)-1, 0) // the newlines
		for _, l := range ls {
			n += plainLen(l)
		}
		return n
	}
	emit := func(ls []string) {
		for len(ls) > 0 && ls[len(ls)-1] == "" {
			ls = ls[:len(ls)-1]
		}
		if len(ls) > 0 {
			parts = append(parts, strings.Join(ls, "\n"))
		}
	}
	for _, l := range lines {
		if len(cur) > 0 && size(append(cur[:len(cur):len(cur)], l)) > limit {
			carry := []string(nil)
			if i := lastBlank(cur); i > 0 {
				cur, carry = cur[:i], cur[i+1:]
			}
			emit(cur)
			cur = carry
		}
		if len(cur) == 0 && l == "" {
			continue
		}
		cur = append(cur, l)
	}
	emit(cur)
	return parts
}

func lastBlank(ls []string) int {
	for i := len(ls) - 1; i > 0; i-- {
		if ls[i] == "" {
			return i
		}
	}
	return -1
}

// tagRe matches the tags the renderer writes.
var tagRe = regexp.MustCompile(`<[^>]*>`)

// plainLen is the length Telegram counts for rendered HTML: tags dropped,
// entities decoded, in UTF-16 code units.
func plainLen(h string) int {
	return askbridge.TextLength(html.UnescapeString(tagRe.ReplaceAllString(h, "")))
}

// withStatus is a part of an ended prompt: its text kept, the status line
// added in bold.
func withStatus(part, status string) string {
	return part + "\n\n<b>" + esc(status) + "</b>"
}

// replyBoxText is the text of the force-reply message an "Other…" tap
// opens. In a group it mentions the tapper by id, which (with selective)
// shows the reply box to that person only.
func replyBoxText(question string, tapper askbridge.Person, group bool) string {
	text := "Your answer to: <i>" + esc(question) + "</i>\nReply to this message."
	if group {
		return `<a href="tg://user?id=` + html.EscapeString(tapper.ID) + `">` + esc(displayName(tapper)) + "</a>, " + lowerFirst(text)
	}
	return text
}

// replyBoxClosed is what the reply box message shows once the question
// has ended.
func replyBoxClosed(question, status string) string {
	return "Your answer to: <i>" + esc(question) + "</i>\n\n<b>" + esc(status) + "</b>"
}

func displayName(p askbridge.Person) string {
	if p.Name != "" {
		return p.Name
	}
	return "you"
}

func lowerFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToLower(r)) + s[n:]
}

// inlineKeyboard is Telegram's InlineKeyboardMarkup with callback buttons
// only. It is used instead of models.InlineKeyboardMarkup, whose buttons
// always carry an empty copy_text object.
type inlineKeyboard struct {
	InlineKeyboard [][]inlineButton `json:"inline_keyboard"`
}

type inlineButton struct {
	Text         string `json:"text"`
	CallbackData string `json:"callback_data"`
}

// keyboard renders the plan's rows, one row per option then the controls
// (Telegram: callback_data is 1-64 bytes; the payloads are 21). It is nil
// when the plan has no buttons.
func keyboard(p askbridge.Plan) *inlineKeyboard {
	if len(p.Rows) == 0 {
		return nil
	}
	kb := &inlineKeyboard{}
	for _, row := range p.Rows {
		var r []inlineButton
		for _, b := range row {
			r = append(r, inlineButton{Text: b.Label, CallbackData: b.Payload})
		}
		kb.InlineKeyboard = append(kb.InlineKeyboard, r)
	}
	return kb
}

// noKeyboard removes an inline keyboard in an edit.
var noKeyboard = &inlineKeyboard{InlineKeyboard: [][]inlineButton{}}

// cutText cuts s to at most n characters as Telegram counts them (UTF-16
// code units), on a grapheme boundary, ending it with "…" when cut.
func cutText(s string, n int) string {
	if askbridge.TextLength(s) <= n {
		return s
	}
	var b strings.Builder
	g := uniseg.NewGraphemes(s)
	used := 1 // the "…"
	for g.Next() {
		w := askbridge.TextLength(g.Str())
		if used+w > n {
			break
		}
		b.WriteString(g.Str())
		used += w
	}
	return b.String() + "…"
}
